package text

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

func mustNew(t testing.TB, o Options) *Normalizer {
	t.Helper()
	n, err := New(o)
	if err != nil {
		t.Fatalf("New(%+v): %v", o, err)
	}
	return n
}

// with returns DefaultOptions changed by f.
func with(f func(*Options)) Options {
	o := DefaultOptions()
	f(&o)
	return o
}

func TestNormalize(t *testing.T) {
	def := DefaultOptions()
	canon := with(func(o *Options) { o.PunctuationMode = PunctCanonical })
	lines := with(func(o *Options) { o.KeepNewlines = true })
	t2s := with(func(o *Options) { o.T2S = true })
	stop := with(func(o *Options) { o.StopWords = true })
	stopLines := with(func(o *Options) { o.StopWords, o.KeepNewlines = true, true })
	stopCanon := with(func(o *Options) { o.StopWords, o.PunctuationMode = true, PunctCanonical })
	html := with(func(o *Options) { o.HTML = true })
	htmlLines := with(func(o *Options) { o.HTML, o.KeepNewlines = true, true })
	custom := with(func(o *Options) { o.StopWords, o.StopWordList = true, []string{"FOO", "Ｂａｒ", "們", "的"} })
	onlyNFKC := Options{NFKC: true}
	onlyFold := Options{CaseFold: true}
	onlyWS := Options{Whitespace: true}
	noWS := with(func(o *Options) { o.Whitespace = false })
	noPunct := with(func(o *Options) { o.Punctuation = false })
	noInvisible := with(func(o *Options) { o.Invisible = false })

	tests := []struct {
		name string
		opts Options
		in   string
		want string
	}{
		{"empty", def, "", ""},
		{"ascii", def, "Hello, World!", "hello world"},
		{"trim", def, " \t a  b \n ", "a b"},
		{"only space", def, " \t\n\u3000 ", ""},
		{"only punct", def, "!?,.;", ""},
		{"fullwidth", def, "ＡＢＣ　１２３！", "abc 123"},
		{"cjk punct", def, "你好，世界！「引用」『書名』《書》、……——？；：", "你好 世界 引用 書名 書"},
		{"ligature", def, "ﬁne ① ™", "fine 1 tm"},
		{"compose", def, "Cafe\u0301 CAFÉ", "café café"},
		{"final sigma", def, "ΣΊΣΥΦΟΣ σίσυφος", "σίσυφοσ σίσυφοσ"},
		{"sharp s", def, "STRAẞE Straße", "straße straße"},
		{"dotted I", def, "İSTANBUL ıi", "İstanbul ıi"},
		{"dotted I accent", def, "İ\u0301", "İ\u0301"},
		{"kelvin", def, "\u212A", "k"},
		{"long s", def, "ſ", "s"},
		{"nbsp", def, "a\u00a0b\u2009c\u3000d", "a b c d"},
		{"invisible", def, "zero\u200Bwidth\uFEFF soft\u00ADhyphen \u200Ejoin", "zerowidth softhyphen join"},
		{"invisible compose", def, "e\u200B\u0301", "é"},
		{"control", def, "a\x00b\x1bc\u0085d", "a b c d"},
		{"invisible off", noInvisible, "a\u200Bb\x00c", "a\u200bb\x00c"},
		{"invalid utf8", def, "a\xffb\xc0", "a\ufffdb\ufffd"},
		{"symbols kept", def, "1+1=2 $5 <a> ~x^ |y` €3 😀", "1+1=2 $5 <a> ~x^ |y` €3 😀"},
		{"apostrophe", def, "don't it’s", "don t it s"},
		{"newlines folded", def, "a\r\n\r\nb", "a b"},
		{"keep newlines", lines, " a  \r\n\r\n  b \u2028c\n", "a\nb\nc"},
		{"keep newlines punct", lines, "one.\ntwo!", "one\ntwo"},
		{"canonical quotes", canon, "“a” „b“ «c» 「d」 『e』 《f》 ‘g’ ‹h›", "\"a\" \"b\" \"c\" \"d\" \"e\" \"f\" 'g' 'h'"},
		{"canonical dashes", canon, "a‐b‒c–d—e―f〜g－h", "a-b-c-d-e-f-g-h"},
		{"canonical cjk", canon, "你好，世界。一、二；三：四？五！【六】（七）・八…", "你好,世界.一,二;三:四?五!(六)(七)·八..."},
		{"punct off", noPunct, "Hello,  World!", "hello, world!"},
		{"whitespace off", noWS, " a,  b ", " a   b "},
		{"nfkc only", onlyNFKC, "ＡＢ　Ｃ！", "AB C!"},
		{"fold only", onlyFold, "AbC ÀΣ", "abc àσ"},
		{"whitespace only", onlyWS, "  A,\t\tB  ", "A, B"},
		{"zero options", Options{}, "  A\xff ", "  A\ufffd "},
		{"t2s", t2s, "這是一個測試", "这是一个测试"},
		{"t2s phrase", t2s, "乾隆年間的計畫，乾燥。", "乾隆年间的计划 干燥"},
		{"t2s stable", t2s, "變徵 变徵", "变徵 变徵"},
		{"t2s fullwidth", t2s, "ＡＢＣ：臺灣", "abc 台湾"},
		{"t2s compat ideograph", t2s, "\uF900", "岂"},
		{"stop english", stop, "The cat and THE dog, of course.", "cat dog course"},
		{"stop all", stop, "the of and", ""},
		{"stop contraction", stop, "Don't stop", "stop"},
		{"stop chinese particles", stop, "我的书呢？好了吗", "我书 好"},
		{"stop chinese tokens", stop, "我们 去 公园 因为 下雨", "去 公园 下雨"},
		{"stop chinese unsegmented", stop, "我们去公园", "我们去公园"},
		{"stop newline", stopLines, "line one the\nthe two", "line one\ntwo"},
		{"stop newline strength", stopLines, "x\nthe y", "x\ny"},
		{"stop canonical", stopCanon, "x the, y; the", "x , y;"},
		{"stop custom", custom, "foo bar baz 他們的", "baz 他"},
		{"html", html, "<p>Hello &amp; <b>World</b></p><script>x()</script><div>Two<br>three</div>", "hello world two three"},
		{"html lines", htmlLines, "<title>T</title><h1>Head</h1><p>Para, one.</p><ul><li>A<li>B</ul>", "head\npara one\na\nb"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := mustNew(t, tc.opts)
			if got := n.String(tc.in); got != tc.want {
				t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
			}
			if got := string(n.Append([]byte("prefix "), tc.in)); got != "prefix "+tc.want {
				t.Errorf("Append(%q, %q) = %q, want %q", "prefix ", tc.in, got, "prefix "+tc.want)
			}
			if got := string(n.AppendBytes(nil, []byte(tc.in))); got != tc.want {
				t.Errorf("AppendBytes(nil, %q) = %q, want %q", tc.in, got, tc.want)
			}
			if !tc.opts.HTML {
				once := n.String(tc.in)
				if twice := n.String(once); twice != once {
					t.Errorf("not idempotent: Normalize(%q) = %q, Normalize(%q) = %q", tc.in, once, once, twice)
				}
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	for _, o := range []Options{
		{KeepNewlines: true},
		{StopWords: true},
		with(func(o *Options) { o.PunctuationMode = 7 }),
		with(func(o *Options) { o.StopWords, o.StopWordList = true, []string{"two words"} }),
		with(func(o *Options) {
			o.StopWords, o.StopWordList = true, []string{"a─b"}
			o.PunctuationMode = PunctCanonical
		}),
		with(func(o *Options) {
			o.StopWords, o.StopWordList = true, []string{"it's"}
			o.PunctuationMode = PunctCanonical
		}),
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) succeeded, want an error", o)
		} else if !strings.Contains(err.Error(), ErrOptions.Error()) {
			t.Errorf("New(%+v) = %v, want it to wrap ErrOptions", o, err)
		}
	}
	// An entry that normalises to nothing is ignored.
	n := mustNew(t, with(func(o *Options) { o.StopWords, o.StopWordList = true, []string{"!!", "x"} }))
	if got := n.String("x y !!"); got != "y" {
		t.Errorf("Normalize(%q) = %q, want %q", "x y !!", got, "y")
	}
	// Options returns a copy.
	n = mustNew(t, with(func(o *Options) { o.StopWords, o.StopWordList = true, []string{"x"} }))
	n.Options().StopWordList[0] = "y"
	if got := n.Options().StopWordList[0]; got != "x" {
		t.Errorf("Options() shares StopWordList with the Normalizer: %q", got)
	}
}

func TestStopWordListsCopy(t *testing.T) {
	EnglishStopWords()[0] = "mutated"
	ChineseStopWords()[0] = "mutated"
	if EnglishStopWords()[0] == "mutated" || ChineseStopWords()[0] == "mutated" {
		t.Error("stop word lists are shared with callers")
	}
	n := mustNew(t, with(func(o *Options) { o.StopWords = true }))
	for _, w := range append(EnglishStopWords(), ChineseStopWords()...) {
		if got := n.String("keep " + w + " keep"); got != "keep keep" {
			t.Errorf("Normalize(%q) = %q, want %q", "keep "+w+" keep", got, "keep keep")
		}
	}
}

// TestCaseFoldOrbits checks foldRune over every rune: it is idempotent, maps
// every member of a case orbit to the same rune, and agrees with the
// single-character results of x/text's full case folding except where the
// package documentation says it differs.
func TestCaseFoldOrbits(t *testing.T) {
	fold := cases.Fold()
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if 0xD800 <= r && r < 0xE000 {
			continue
		}
		f := foldRune(r)
		if ff := foldRune(f); ff != f {
			t.Errorf("foldRune(foldRune(%U)) = %U, want %U", r, ff, f)
		}
		if caseless(r) && unicode.SimpleFold(r) != r {
			t.Errorf("caseless(%U) but its case orbit is not trivial", r)
		}
		if unicode.SimpleFold(r) == r {
			if f != r {
				t.Errorf("foldRune(%U) = %U, want %U (no case orbit)", r, f, r)
			}
			continue
		}
		for s := unicode.SimpleFold(r); s != r; s = unicode.SimpleFold(s) {
			if fs := foldRune(s); fs != f {
				t.Errorf("foldRune(%U) = %U but foldRune(%U) = %U, same orbit", r, f, s, fs)
			}
		}
		want := fold.String(string(r))
		if utf8.RuneCountInString(want) != 1 || want == string(f) {
			continue
		}
		if unicode.Is(unicode.Cherokee, r) {
			continue // documented differences
		}
		t.Errorf("foldRune(%U) = %q, x/text cases.Fold gives %q", r, f, want)
	}
}

// idempotenceOptions are the option sets whose idempotence is checked.
func idempotenceOptions() []Options {
	return []Options{
		DefaultOptions(),
		with(func(o *Options) { o.KeepNewlines = true }),
		with(func(o *Options) { o.PunctuationMode = PunctCanonical }),
		with(func(o *Options) { o.StopWords = true; o.T2S = true }),
		with(func(o *Options) { o.Invisible = false }),
		{NFKC: true, CaseFold: true},
		{CaseFold: true, Punctuation: true},
		{},
	}
}

// interestingRunes returns every assigned rune except most ideographs, and
// a sample of unassigned and private use ones.
func interestingRunes() []rune {
	var rs []rune
	for r := rune(0); r <= unicode.MaxRune; r++ {
		switch {
		case 0xD800 <= r && r < 0xE000:
		case unicode.Is(unicode.Ideographic, r) || (0xAC00 <= r && r <= 0xD7A3) || unicode.In(r, unicode.Co, unicode.Yi, unicode.Tangut, unicode.Nushu):
			if r%211 == 0 {
				rs = append(rs, r)
			}
		case unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf):
			rs = append(rs, r)
		default:
			if r%4099 == 0 {
				rs = append(rs, r)
			}
		}
	}
	return rs
}

// TestIdempotentRunes checks idempotence on every rune alone, after a
// letter and before combining marks, where composition can change.
func TestIdempotentRunes(t *testing.T) {
	runes := interestingRunes()
	opts := idempotenceOptions()
	if raceEnabled || testing.Short() {
		opts = opts[:2]
		var sample []rune
		for i := 0; i < len(runes); i += 5 {
			sample = append(sample, runes[i])
		}
		runes = sample
	}
	t.Logf("%d runes", len(runes))
	for i, o := range opts {
		n := mustNew(t, o)
		bad := 0
		var buf1, buf2 []byte
		for _, r := range runes {
			if bad >= 10 {
				break
			}
			for _, s := range [...]string{string(r), "A" + string(r) + "\u0301", string(r) + "\u0345\u0301x"} {
				buf1 = n.Append(buf1[:0], s)
				buf2 = n.AppendBytes(buf2[:0], buf1)
				if string(buf1) != string(buf2) {
					bad++
					t.Errorf("options %d: Normalize(%+q) = %+q, Normalize(%+q) = %+q", i, s, buf1, buf1, buf2)
				}
			}
		}
	}
}

// TestNFKCSegments compares the segment-wise NFKC with x/text's on every
// interesting rune in context.
func TestNFKCSegments(t *testing.T) {
	var sc scratch
	long := strings.Repeat("ascii ", quickSpanMin/6+1)
	var got []byte
	runes := interestingRunes()
	if raceEnabled || testing.Short() {
		var sample []rune
		for i := 0; i < len(runes); i += 5 {
			sample = append(sample, runes[i])
		}
		runes = sample
	}
	for _, r := range runes {
		for _, s := range [...]string{
			string(r), "a" + string(r) + "\u0301", "ＡＢ" + string(r) + "\u0345\u0301x", "\u1100" + string(r) + "\u1161\u11A8",
			string(r) + "\u0B3E", "e" + string(r) + string(r) + "ｶﾞ",
			"<" + string(r), "the e" + string(r) + "\u0301 end", "a\u0316" + string(r) + "b",
			// Longer than quickSpanMin, so that quickSpan skips the ASCII.
			long + "e" + string(r) + "\u0301 " + long, long + "<" + string(r) + long + string(r),
		} {
			b := []byte(s)
			got = sc.nfkc(got[:0], b)
			if sc.nfkcQuick(b) && string(got) != s {
				t.Fatalf("nfkcQuick(%+q) = true, but its NFKC form is %+q", s, got)
			}
			if want := norm.NFKC.Bytes(b); string(got) != string(want) {
				t.Fatalf("scratch.nfkc(%+q) = %+q, norm.NFKC gives %+q", s, got, want)
			}
		}
	}
}

// TestNFKCInert checks that the characters nfkc copies without lookups are
// normal starters with boundaries on both sides.
func TestNFKCInert(t *testing.T) {
	n := 0
	for r := rune(0x3000); r < 0xA000; r++ {
		b := utf8.AppendRune(nil, r)
		if !inert(b) {
			if unicode.Is(unicode.Ideographic, r) && (r >= 0x4E00 || (0x3400 <= r && r <= 0x4DBF)) {
				t.Errorf("inert(%U) = false, want true", r)
			}
			continue
		}
		n++
		p := norm.NFKC.Properties(b)
		if p.CCC() != 0 || !p.BoundaryBefore() || !p.BoundaryAfter() || len(p.Decomposition()) != 0 || !norm.NFKC.IsNormal(b) {
			t.Errorf("inert(%U) = true, but it is not an NFKC-inert starter", r)
		}
		for _, m := range []string{"\u0301", "\u3099", "\u0345", "\u20DD"} {
			s := string(r) + m
			if got := norm.NFKC.String(s); got != s {
				t.Errorf("NFKC(%+q) = %+q, want it unchanged", s, got)
			}
		}
	}
	if n != 0x4DBF-0x3400+1+0x9FFF-0x4E00+1 {
		t.Errorf("%d inert runes", n)
	}
	for _, b := range [][]byte{{0xE4}, {0xE4, 0xB8}, {0xE4, 0xB8, 0x41}, {0xEA, 0x80, 0x80}, {0xE3, 0x80, 0x80}} {
		if inert(b) {
			t.Errorf("inert(% x) = true, want false", b)
		}
	}
}

func TestFullwidthASCII(t *testing.T) {
	for r := rune(0x3000); r <= 0xFFFF; r++ {
		b := utf8.AppendRune(nil, r)
		c := fullwidthASCII(b)
		want := byte(0)
		if 0xFF01 <= r && r <= 0xFF5E {
			want = byte(r - 0xFEE0)
		} else if r == 0x3000 {
			want = ' '
		}
		if c != want {
			t.Errorf("fullwidthASCII(%U) = %q, want %q", r, c, want)
		}
		if want != 0 && norm.NFKC.String(string(r)) != string(want) {
			t.Errorf("NFKC(%U) = %q, want %q", r, norm.NFKC.String(string(r)), want)
		}
	}
}

func TestOutputIsNFKC(t *testing.T) {
	n := mustNew(t, DefaultOptions())
	for _, s := range []string{"İ\u0301", "e\u00AD\u0301", "\u01C4\u030C", "A\u0345\u0301", "ﬃ\u0301", "\u1E9B\u0323"} {
		if out := n.String(s); !norm.NFKC.IsNormalString(out) {
			t.Errorf("Normalize(%+q) = %+q, not in NFKC", s, out)
		}
	}
}

func TestAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items at random under the race detector")
	}
	en := englishSample(2000)
	zh := chineseSample(2000)
	for _, tc := range []struct {
		name string
		opts Options
		in   string
	}{
		{"default/en", DefaultOptions(), en},
		{"default/zh", DefaultOptions(), zh},
		{"t2s/zh", with(func(o *Options) { o.T2S = true }), zh},
		{"stop/en", with(func(o *Options) { o.StopWords = true; o.KeepNewlines = true }), en},
		{"canonical/zh", with(func(o *Options) { o.PunctuationMode = PunctCanonical; o.StopWords = true }), zh},
		{"refold", DefaultOptions(), strings.Repeat("e\u200B\u0301 Ǆ ", 100)},
	} {
		n := mustNew(t, tc.opts)
		dst := make([]byte, 0, 4*len(tc.in))
		dst = n.Append(dst[:0], tc.in) // warm up the pool
		if a := testing.AllocsPerRun(50, func() { dst = n.Append(dst[:0], tc.in) }); a != 0 {
			t.Errorf("%s: Append allocates %v times per call, want 0", tc.name, a)
		}
	}
}

func TestConcurrent(t *testing.T) {
	n := mustNew(t, with(func(o *Options) { o.T2S, o.StopWords = true, true }))
	inputs := []string{englishSample(300), chineseSample(300), "İ\u0301 \u200B", "x"}
	want := make([]string, len(inputs))
	for i, s := range inputs {
		want[i] = n.String(s)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			var buf []byte
			for k := range 50 {
				i := (g + k) % len(inputs)
				buf = n.Append(buf[:0], inputs[i])
				if string(buf) != want[i] {
					t.Errorf("goroutine %d: Normalize(input %d) differs from the sequential result", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"", "Hello, World!", "ＡＢＣ　１２３！", "這是一個測試，乾隆年間。", "İ\u0301", "e\u200B\u0301",
		"a\xffb", "the cat\nand the dog", "「你好」—世界…", "\u0345\u0301", "ﬃ ① ™", "变徵 薴",
		"<p>not html</p>", "STRAẞE", "x\u00AD\u0308y", "a\u3000\u2028b",
	} {
		for i := range idempotenceOptions() {
			f.Add(s, uint8(i))
		}
	}
	opts := idempotenceOptions()
	normalizers := make([]*Normalizer, len(opts))
	for i, o := range opts {
		normalizers[i] = mustNew(f, o)
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		n := normalizers[int(which)%len(normalizers)]
		once := n.String(s)
		if !utf8.ValidString(once) {
			t.Fatalf("Normalize(%+q) = %+q, not valid UTF-8", s, once)
		}
		if twice := n.String(once); twice != once {
			t.Fatalf("options %+v: Normalize(%+q) = %+q, but Normalize(%+q) = %+q", n.opts, s, once, once, twice)
		}
		if o := n.opts; o.Whitespace && (strings.HasPrefix(once, " ") || strings.HasSuffix(once, " ") || strings.Contains(once, "  ")) {
			t.Fatalf("Normalize(%+q) = %+q has untrimmed or unfolded spaces", s, once)
		}
		if o := n.opts; o.NFKC && !norm.NFKC.IsNormalString(once) {
			t.Fatalf("Normalize(%+q) = %+q is not in NFKC", s, once)
		}
		if utf8.ValidString(s) {
			var sc scratch
			b := []byte(s)
			if got, want := sc.nfkc(nil, b), norm.NFKC.Bytes(b); string(got) != string(want) {
				t.Fatalf("scratch.nfkc(%+q) = %+q, norm.NFKC gives %+q", s, got, want)
			}
		}
	})
}

// englishSample returns about size bytes of English-like text with mixed
// case, punctuation and spacing.
func englishSample(size int) string {
	words := strings.Fields(`The quick brown Fox jumps over the lazy dog, and "quotes" — dashes;
	Near-duplicate detection finds documents that are almost the same: MinHash, SimHash!
	It's 2026; prices rose 3.5% (again) — don't panic. Über café naïve façade résumé.`)
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(words[(i*7)%len(words)])
		switch i % 11 {
		case 3:
			b.WriteString("  ")
		case 10:
			b.WriteString("\n")
		default:
			b.WriteByte(' ')
		}
	}
	return b.String()
}

// chineseSample returns about size bytes of Traditional Chinese text with
// full-width punctuation, some Latin and full-width letters.
func chineseSample(size int) string {
	parts := []string{
		"這是一個測試，", "乾隆年間的計畫。", "臺灣的「資訊」與『網路』！", "中華民國萬歲？",
		"舊愛柏梁臺，新寵昭陽殿。", "ＡＢＣ１２３：", "我們的軟體；", "說明書……", "\n",
	}
	var b strings.Builder
	for i := 0; b.Len() < size; i++ {
		b.WriteString(parts[(i*5)%len(parts)])
	}
	return b.String()
}

func BenchmarkNormalize(b *testing.B) {
	en := englishSample(64 << 10)
	zh := chineseSample(64 << 10)
	html := htmlSample(64 << 10)
	for _, bc := range []struct {
		name string
		opts Options
		in   string
	}{
		{"en/default", DefaultOptions(), en},
		{"en/stopwords", with(func(o *Options) { o.StopWords = true }), en},
		{"en/html", with(func(o *Options) { o.HTML = true }), html},
		{"en/html-all", with(func(o *Options) { o.HTML, o.HTMLAll = true, true }), html},
		{"zh/default", DefaultOptions(), zh},
		{"zh/t2s", with(func(o *Options) { o.T2S = true }), zh},
		{"zh/t2s+stopwords", with(func(o *Options) { o.T2S, o.StopWords = true, true }), zh},
		{"en/none", Options{}, en},
	} {
		b.Run(bc.name, func(b *testing.B) {
			n := mustNew(b, bc.opts)
			dst := make([]byte, 0, 2*len(bc.in))
			b.SetBytes(int64(len(bc.in)))
			b.ReportAllocs()
			for b.Loop() {
				dst = n.Append(dst[:0], bc.in)
			}
		})
	}
}

func htmlSample(size int) string {
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><head><title>Sample</title><style>p{color:red}</style>")
	b.WriteString("<script>var x = '<p>not text</p>';</script></head><body>\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "<div class=\"c%d\"><h2>Section %d</h2>\n<p>%s <a href=\"/x/%d\">link &amp; more</a>&nbsp;text.</p>\n<!-- comment -->\n</div>\n",
			i%7, i, englishSample(300), i)
	}
	b.WriteString("</body></html>")
	return b.String()
}
