package t2s

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestLoad(t *testing.T) {
	if err := Load(); err != nil {
		t.Fatal(err)
	}
	tb := get()
	if n := len(tb.exact.m); n < 200 {
		t.Errorf("%d phrases loaded, want at least 200", n)
	}
	chars := len(tb.charsHi)
	for _, v := range tb.chars {
		if v != 0 && v != inHi {
			chars++
		}
	}
	if chars < 4000 {
		t.Errorf("%d characters loaded, want at least 4000", chars)
	}
}

func TestParseRejectsDamage(t *testing.T) {
	gzipped := func(s string) []byte {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write([]byte(s))
		zw.Close()
		return b.Bytes()
	}
	good := "neardup-t2s 1\n# c\nP 1\n計畫\t计划\nC 1\n這\t这\n"
	if _, err := parse(gzipped(good)); err != nil {
		t.Fatalf("parse(good) = %v", err)
	}
	for _, bad := range []string{
		"",
		"neardup-t2s 2\nP 1\n計畫\t计划\nC 1\n這\t这\n",
		"neardup-t2s 1\nP 2\n計畫\t计划\nC 1\n這\t这\n",
		"neardup-t2s 1\nP 1\n計畫\t计划\nC 1\n這\t这\nextra\n",
		"neardup-t2s 1\nP 1\n計\t计\nC 1\n這\t这\n",
		"neardup-t2s 1\nP 1\n計畫\t计划\nC 1\n這這\t这\n",
		"neardup-t2s 1\nP 1\n計畫\t计划\nC 1\n這\t\n",
		"neardup-t2s 1\nP 1\n計畫 计划\nC 1\n這\t这\n",
		"neardup-t2s 1\nP 1\n計畫\t计划\nC x\n這\t这\n",
	} {
		if _, err := parse(gzipped(bad)); err == nil {
			t.Errorf("parse(%q) succeeded, want an error", bad)
		}
	}
	if _, err := parse([]byte("not gzip")); err == nil {
		t.Error("parse(not gzip) succeeded, want an error")
	}
}

// Golden cases, checked against `opencc -c t2s.json` (OpenCC 1.1.6).
var golden = []struct{ in, want string }{
	{"這是一個測試", "这是一个测试"},
	{"", ""},
	{"plain ASCII, 123", "plain ASCII, 123"},
	{"计划已经是简体", "计划已经是简体"},
	{"計畫", "计划"},     // phrase: 畫 alone would be 画
	{"乾隆皇帝", "乾隆皇帝"}, // phrase protects 乾
	{"乾燥", "干燥"},     // character level
	{"變徵之聲", "变徵之声"}, // longest phrase wins over 變徵
	{"於是", "于是"},     // character level
	{"樊於期", "樊於期"},   // phrase protects 於
	{"地是空虛混沌，淵面黑暗；", "地是空虚混沌，渊面黑暗；"},
	{"長門怨\n舊愛柏梁臺，新寵昭陽殿。", "长门怨\n旧爱柏梁台，新宠昭阳殿。"},
	{"\xff這\xfe", "\xff这\xfe"}, // invalid bytes pass through
	{"變", "变"},
	{"变徵", "变征"}, // OpenCC is not idempotent here; see AppendStable
	{"薴", "苧"},   // nor here
	{"𝄞𠀀", "𝄞𠀀"}, // outside the BMP, not in the dictionary
	{"𠁞", "𠀾"},   // outside the BMP, in the dictionary
	{"欇", "𪳍"},   // BMP to outside the BMP
	{"中華民國萬歲", "中华民国万岁"},
}

func TestString(t *testing.T) {
	for _, c := range golden {
		if got := String(c.in); got != c.want {
			t.Errorf("String(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := string(Append([]byte("x"), []byte(c.in))); got != "x"+c.want {
			t.Errorf("Append(%q, %q) = %q, want %q", "x", c.in, got, "x"+c.want)
		}
	}
}

func TestStableString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"這是一個測試", "这是一个测试"},
		{"變徵", "变徵"},
		{"变徵", "变徵"},
		{"薴", "苎"},
		{"苧", "苎"},
		{"乾隆年間", "乾隆年间"},
		{"計畫", "计划"},
	} {
		if got := StableString(c.in); got != c.want {
			t.Errorf("StableString(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// dictionaryText returns every key and value of the dictionaries, one per
// line, plus each phrase with its neighbours in the sorted order glued on
// (so that matches overlap).
func dictionaryText(t testing.TB) []string {
	tb := get()
	var lines []string
	var keys []string
	for k, v := range tb.exact.m {
		keys = append(keys, k)
		lines = append(lines, k, v)
	}
	for r, v := range tb.chars {
		if v != 0 && v != inHi {
			lines = append(lines, string(rune(r)), string(rune(v)))
		}
	}
	for r, v := range tb.charsHi {
		lines = append(lines, string(r), string(v))
	}
	for i := range keys {
		j := (i + 1) % len(keys)
		lines = append(lines, keys[i]+keys[j], keys[i][:len(keys[i])/3*3]+keys[j])
	}
	return lines
}

// corpusLines reads up to max lines of Chinese text from the shared
// evaluation data, if it is present.
func corpusLines(t testing.TB, max int) []string {
	var lines []string
	for _, name := range []string{"bible-zh-scripts", "tang-editions"} {
		path := filepath.Join("..", "..", "..", "shared", "data", name, "docs.jsonl.gz")
		f, err := os.Open(path)
		if err != nil {
			t.Logf("skipping %s: %v", name, err)
			continue
		}
		defer f.Close()
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<24)
		n := 0
		for sc.Scan() && n < max/2 {
			var doc struct{ Text string }
			if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			for _, l := range strings.Split(doc.Text, "\n") {
				if l != "" {
					lines = append(lines, l)
					n++
				}
			}
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return lines
}

// TestMatchesOpenCC compares Append with the opencc binary on the whole
// dictionary and, when the shared data is present, on real Traditional text.
func TestMatchesOpenCC(t *testing.T) {
	bin, err := exec.LookPath("opencc")
	if err != nil {
		t.Skip("opencc binary not installed")
	}
	lines := append(dictionaryText(t), golden[0].in, golden[5].in, golden[7].in)
	for _, c := range golden {
		if utf8.ValidString(c.in) && !strings.Contains(c.in, "\n") && c.in != "" {
			lines = append(lines, c.in)
		}
	}
	n := 4000
	if testing.Short() {
		n = 400
	}
	lines = append(lines, corpusLines(t, n)...)
	cmd := exec.Command(bin, "-c", "t2s.json")
	cmd.Stdin = strings.NewReader(strings.Join(lines, "\n") + "\n")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("opencc: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(lines) {
		t.Fatalf("opencc returned %d lines for %d", len(want), len(lines))
	}
	bad := 0
	for i, l := range lines {
		if got := String(l); got != want[i] {
			bad++
			if bad <= 20 {
				t.Errorf("String(%q) = %q, opencc gives %q", l, got, want[i])
			}
		}
	}
	t.Logf("compared %d lines with %s", len(lines), bin)
}

func TestStableIsIdempotent(t *testing.T) {
	lines := append(dictionaryText(t), corpusLines(t, 4000)...)
	differ := 0
	for _, l := range lines {
		once := StableString(l)
		if twice := StableString(once); twice != once {
			t.Errorf("StableString(%q) = %q, but StableString(%q) = %q", l, once, once, twice)
		}
		if once != String(l) {
			differ++
		}
	}
	t.Logf("%d lines, %d where StableString differs from String", len(lines), differ)
}

func TestStableAgreesOnRealText(t *testing.T) {
	lines := corpusLines(t, 4000)
	if len(lines) == 0 {
		t.Skip("shared data not present")
	}
	for _, l := range lines {
		if got, want := StableString(l), String(l); got != want {
			t.Errorf("StableString(%q) = %q, String gives %q", l, got, want)
		}
	}
}

func TestAppendAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts are not meaningful under the race detector")
	}
	src := []byte(strings.Repeat("這是一個測試，乾隆年間計畫變徵之聲。abc ", 20))
	dst := make([]byte, 0, 4*len(src))
	Load()
	if n := testing.AllocsPerRun(100, func() { dst = Append(dst[:0], src) }); n != 0 {
		t.Errorf("Append allocates %v times per run, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { dst = AppendStable(dst[:0], src) }); n != 0 {
		t.Errorf("AppendStable allocates %v times per run, want 0", n)
	}
}

func FuzzStable(f *testing.F) {
	for _, c := range golden {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		once := StableString(s)
		if twice := StableString(once); twice != once {
			t.Errorf("StableString(%q) = %q, but StableString(%q) = %q", s, once, once, twice)
		}
		if utf8.ValidString(s) != utf8.ValidString(once) {
			t.Errorf("StableString(%q) = %q changes UTF-8 validity", s, once)
		}
		if plain := String(s); utf8.ValidString(s) != utf8.ValidString(plain) {
			t.Errorf("String(%q) = %q changes UTF-8 validity", s, plain)
		}
	})
}

func BenchmarkAppend(b *testing.B) {
	src := []byte(strings.Repeat("長門怨\n舊愛柏梁臺，新寵昭陽殿。守分辭芳輦，含情泣團扇。乾隆年間計畫。", 100))
	dst := make([]byte, 0, 2*len(src))
	Load()
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		dst = Append(dst[:0], src)
	}
	runtime.KeepAlive(dst)
}

func TestHasTraditional(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", false},
		{"plain ASCII text", false},
		{"床前明月光，疑是地上霜。", false}, // the same in both scripts
		{"举头望明月", false},
		{"舉頭望明月", true},
		{"mixed 漢字 text", true},
		{"汉字", false},
	} {
		if got := HasTraditional([]byte(c.s)); got != c.want {
			t.Errorf("HasTraditional(%q) = %v, want %v", c.s, got, c.want)
		}
	}
	// The fast path skips text without a UTF-8 lead byte in 0xE3..0xF0:
	// every character the dictionaries change must have one.
	tb := get()
	var buf [4]byte
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if s := tb.char(r); s != 0 && s != r {
			n := utf8.EncodeRune(buf[:], r)
			if n < 3 || buf[0] < 0xE3 || buf[0] > 0xF0 {
				t.Fatalf("%U (%q) converts to %q but its lead byte %#x is outside the fast path", r, r, s, buf[0])
			}
			if !HasTraditional(buf[:n]) {
				t.Fatalf("HasTraditional(%q) = false", r)
			}
		}
	}
}

// BenchmarkHasTraditional: the per-document check dedup makes with --t2s
// off, on 1 KB of English (the byte scan only) and of Chinese (a lookup a
// character).
func BenchmarkHasTraditional(b *testing.B) {
	for _, c := range []struct{ name, unit string }{
		{"ascii", "The committee approved the new budget for the parks and roads. "},
		{"english", "The committee approved the new budget — “parks” and roads. "},
		{"chinese", "床前明月光，疑是地上霜。举头望明月，低头思故乡。"},
	} {
		doc := []byte(strings.Repeat(c.unit, 1024/len(c.unit)+1)[:1024])
		b.Run(c.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				HasTraditional(doc)
			}
		})
	}
}

// ChineseWithTraditional counts Chinese text with a Traditional character,
// not other text that names something in Traditional characters.
func TestChineseWithTraditional(t *testing.T) {
	if get() == nil {
		t.Skip("no dictionary")
	}
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"舉頭望明月，低頭思故鄉。", true},
		{"举头望明月，低头思故乡。", false},
		{"Taiwan 台灣", true},
		{"The island of Taiwan (台灣) lies off the south-east coast of mainland China.", false},
		{"臺北市是首都 (Taipei City)", true},
		{"臺北市 is the capital, 台北 in short", false},
		{"plain English text", false},
		{"", false},
	} {
		if got := ChineseWithTraditional([]byte(c.s)); got != c.want {
			t.Errorf("ChineseWithTraditional(%q) = %v, want %v", c.s, got, c.want)
		}
	}
}
