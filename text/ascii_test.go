package text

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"
)

// optionSets returns a Normalizer pair (fast paths on, fast paths off) for
// every valid combination of the boolean options, both punctuation modes
// and a custom stop list, without T2S (which does not see ASCII).
func optionSets(tb testing.TB) (fast, slow []*Normalizer) {
	for mask := range 1 << 10 {
		bit := func(i int) bool { return mask&(1<<i) != 0 }
		o := Options{NFKC: bit(0), CaseFold: bit(1), Whitespace: bit(2), KeepNewlines: bit(3),
			Punctuation: bit(4), Invisible: bit(5), HTML: bit(6), StopWords: bit(7)}
		if bit(8) {
			o.PunctuationMode = PunctCanonical
		}
		if bit(9) {
			if !o.StopWords {
				continue
			}
			o.StopWordList = []string{"The", "a", "x1", "$", "ß", "之"}
		}
		f, err := New(o)
		if err != nil {
			continue // KeepNewlines or StopWords without Whitespace
		}
		s := mustNew(tb, o)
		s.slow = true
		fast, slow = append(fast, f), append(slow, s)
	}
	return fast, slow
}

// asciiInputs are texts for the differential test: every ASCII byte
// between letters and at both ends, runs of separators, ASCII with
// non-ASCII runs, and the package's samples.
func asciiInputs() []string {
	var in []string
	for c := range utf8.RuneSelf {
		b := string(rune(c))
		in = append(in, b, "ab"+b+"CD", b+b+"x"+b, "The "+b+" end"+b+"\n", "é"+b+"Ä", b+"\u0301")
	}
	in = append(in,
		"", " ", "\n\n", "The QUICK brown fox, jumps; over the lazy dog! It's 3.5% -- \"quoted\"\tTAB\r\nnew line",
		"the a the x1 $ a the", "  leading and trailing  ", "Über café naïve façade résumé, cafe\u0301",
		"在 Go 语言中, the map 是 a hash table: 哈希表。Ｈｅｌｌｏ　Ｗｏｒｌｄ",
		"zero\u200Bwidth\u00ADsoft e\u0301\u0301 a\x00b\x1bc \xff\xfe invalid \u0085nel\u2028ls",
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ@[`{ abcdefghijklmnopqrstuvwxyz 0123456789",
		"<p>The <b>HTML</b> &amp; text</p>\n<div>next&nbsp;block</div>",
		englishSample(4000), chineseSample(2000),
	)
	r := rand.New(rand.NewPCG(18, 5))
	for range 200 {
		var b strings.Builder
		for range r.IntN(64) {
			switch r.IntN(8) {
			case 0:
				b.WriteString([]string{"é", "ſ", "K", "ｘ", "\u0301", "之", "\u00A0", "\u2028"}[r.IntN(8)])
			default:
				b.WriteByte(byte(r.IntN(utf8.RuneSelf)))
			}
		}
		in = append(in, b.String())
	}
	// Words, single and double spaces, punctuation and capitals, in
	// long runs.
	words := []string{"the", "Quick", "b", "42", "x9Z", " ", " ", " ", "  ", ", ", ".", "\t", "\n", "$", "é", "\u00a0"}
	for range 300 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(words[r.IntN(len(words))])
		}
		in = append(in, b.String())
	}
	return in
}

// TestASCIIFastPath checks that the ASCII fast paths (the whole-text
// shortcut of AppendBytes and runASCII) give the same bytes as the
// per-character path for every combination of options.
func TestASCIIFastPath(t *testing.T) {
	fast, slow := optionSets(t)
	inputs := asciiInputs()
	for i := range fast {
		for _, s := range inputs {
			if got, want := fast[i].String(s), slow[i].String(s); got != want {
				t.Fatalf("options %+v: Normalize(%+q) = %+q with the ASCII fast path, %+q without", fast[i].opts, s, got, want)
			}
		}
	}
}

// FuzzASCIIFastPath is TestASCIIFastPath on any input.
func FuzzASCIIFastPath(f *testing.F) {
	for _, s := range asciiInputs()[:40] {
		f.Add(s, uint16(0))
	}
	f.Add("The a b\tC\n\nD.", uint16(7))
	fast, slow := optionSets(f)
	// Padding makes the text long enough for quickSpan to skip ASCII.
	pad := strings.Repeat("Pad ", quickSpanMin/4)
	f.Fuzz(func(t *testing.T, s string, which uint16) {
		i := int(which) % len(fast)
		for _, in := range []string{s, pad + s + pad + s} {
			if got, want := fast[i].String(in), slow[i].String(in); got != want {
				t.Fatalf("options %+v: Normalize(%+q) = %+q with the ASCII fast path, %+q without", fast[i].opts, in, got, want)
			}
		}
	})
}

func TestLowerASCII(t *testing.T) {
	for n := range 40 {
		var b []byte
		for i := range n {
			b = append(b, byte((i*37+n)%utf8.RuneSelf))
		}
		want := []byte(strings.Map(func(r rune) rune {
			if 'A' <= r && r <= 'Z' {
				return r + 'a' - 'A'
			}
			return r
		}, string(b)))
		lowerASCII(b)
		if string(b) != string(want) {
			t.Errorf("lowerASCII = %q, want %q", b, want)
		}
	}
	for c := range utf8.RuneSelf {
		b := []byte(strings.Repeat(string(rune(c)), 9))
		lowerASCII(b)
		w := byte(c)
		if 'A' <= w && w <= 'Z' {
			w += 'a' - 'A'
		}
		if string(b) != strings.Repeat(string(w), 9) {
			t.Errorf("lowerASCII(%q x 9) = %q", rune(c), b)
		}
	}
}

func TestIsASCII(t *testing.T) {
	for n := range 20 {
		b := []byte(strings.Repeat("a", n))
		if !isASCII(b) {
			t.Errorf("isASCII(%q) = false", b)
		}
		for i := range n {
			c := append([]byte(nil), b...)
			c[i] = 0x80
			if isASCII(c) {
				t.Errorf("isASCII(%q) = true", c)
			}
		}
	}
}

func TestASCIIPrefixes(t *testing.T) {
	for n := range 80 {
		for k := 0; k <= n; k++ {
			b := []byte(strings.Repeat("a", k) + strings.Repeat("\xe4", n-k))
			if got := asciiPrefix(b); got != k {
				t.Errorf("asciiPrefix(%q) = %d, want %d", b, got, k)
			}
			c := []byte(strings.Repeat("\xe4", k) + strings.Repeat("a", n-k))
			if got := nonASCIIPrefix(c); got != k {
				t.Errorf("nonASCIIPrefix(%q) = %d, want %d", c, got, k)
			}
		}
	}
}

// TestCaseFoldThenCompose: a capital followed by a combining mark that
// composes only with the small letter. Before the fix the output kept
// h + U+0331, which is not in NFKC, and normalising it again gave U+1E96.
func TestCaseFoldThenCompose(t *testing.T) {
	for _, slow := range []bool{false, true} {
		n := mustNew(t, DefaultOptions())
		n.slow = slow
		for in, want := range map[string]string{
			"H\u0331":    "\u1e96",
			"xH\u0331 0": "x\u1e96 0",
			"0000000000000000000000000000000000000000000000000000000000000000000H\u03310": "0000000000000000000000000000000000000000000000000000000000000000000\u1e960",
			"T\u0308 T̈": "\u1e97 \u1e97",
			"A\u0301":    "\u00e1",
		} {
			if got := n.String(in); got != want {
				t.Errorf("slow=%v: Normalize(%+q) = %+q, want %+q", slow, in, got, want)
			}
		}
	}
}

// islandInputs are mostly-ASCII texts with non-ASCII islands that NFKC
// changes or that compose with the ASCII byte before them, after every
// kind of ASCII byte, at both ends and past quickSpanMin.
func islandInputs() []string {
	islands := []string{"\xff", "\xc3", "\xcc\x81\xff", "\u00e9\xe4\u00a0", "\xed\xa0\x80", "\u00a0", "\u0301", "\u0331", "\u0301\u0301", "\ufb01", "\uff28", "\u2026", "\u00e9",
		"\u2013", "\u212a", "\u4e4b", "\u2028", "\u212b", "\uff76\uff9e", "\u00bd", "\u00ad", "\u3000", "\u1e9e"}
	before := []string{"", "a", "e", "H", "T", "E", " ", ".", "\n", "\x00", "A\u0300"}
	pad := strings.Repeat("Pad word ", quickSpanMin/8)
	// An island whose form ends with a capital, one ASCII byte, and a
	// mark that composes with that byte: the capital meets the composed
	// character, as in the NFKC form of the whole text.
	in := []string{"\uff28e\u0301", "\uff28h\u0331", "x\uff34e\u0301 A", "\u00e9He\u0301"}
	for _, is := range islands {
		for _, b := range before {
			for _, after := range []string{"", "x", "X ", ", ", is} {
				s := b + is + after
				in = append(in, s, pad+s, s+pad, pad+s+pad+s+"Q"+is)
			}
		}
	}
	return in
}

// passBoth runs one pass of fast and slow over s (valid UTF-8) and fails
// when the output or the changed flag differ.
func passBoth(t *testing.T, fast, slow *Normalizer, s string) {
	t.Helper()
	in := []byte(s)
	sf, ss := new(scratch), &scratch{slow: true}
	gotOut, gotChanged := fast.pass([]byte("<"), in, sf, false)
	wantOut, wantChanged := slow.pass([]byte("<"), in, ss, false)
	if string(gotOut) != string(wantOut) || gotChanged != wantChanged {
		t.Fatalf("options %+v: pass(%+q) = %+q, changed %v with the fast paths, %+q, %v without",
			fast.opts, s, gotOut, gotChanged, wantOut, wantChanged)
	}
	if got, want := fast.String(s), slow.String(s); got != want {
		t.Fatalf("options %+v: Normalize(%+q) = %+q with the fast paths, %+q without", fast.opts, s, got, want)
	}
}

// TestNFKCIslands checks runNFKC (NFKC applied to the non-ASCII islands
// only) against the per-character path, which copies the whole text
// through NFKC: the same output and the same changed flag of a pass, for
// every option set with NFKC; for invalid UTF-8 (which runNFKC repairs
// island by island) the same output.
func TestNFKCIslands(t *testing.T) {
	fast, slow := optionSets(t)
	inputs := append(islandInputs(), asciiInputs()...)
	for i := range fast {
		if !fast[i].opts.NFKC || fast[i].opts.HTML {
			continue
		}
		for _, s := range inputs {
			if utf8.ValidString(s) {
				passBoth(t, fast[i], slow[i], s)
			} else if got, want := fast[i].String(s), slow[i].String(s); got != want {
				t.Fatalf("options %+v: Normalize(%+q) = %+q with the fast paths, %+q without", fast[i].opts, s, got, want)
			}
		}
	}
}

// FuzzNFKCIslands is TestNFKCIslands on any input, also padded with ASCII
// on both sides.
func FuzzNFKCIslands(f *testing.F) {
	for _, s := range islandInputs()[:60] {
		f.Add(s, uint16(0))
	}
	fast, slow := optionSets(f)
	var nf []int
	for i := range fast {
		if fast[i].opts.NFKC && !fast[i].opts.HTML {
			nf = append(nf, i)
		}
	}
	pad := strings.Repeat("Pad ", quickSpanMin/4)
	f.Fuzz(func(t *testing.T, s string, which uint16) {
		i := nf[int(which)%len(nf)]
		for _, in := range []string{s, pad + s + pad + s + "Z"} {
			if utf8.ValidString(in) {
				passBoth(t, fast[i], slow[i], in)
			} else if got, want := fast[i].String(in), slow[i].String(in); got != want {
				t.Fatalf("options %+v: Normalize(%+q) = %+q with the fast paths, %+q without", fast[i].opts, in, got, want)
			}
		}
	})
}
