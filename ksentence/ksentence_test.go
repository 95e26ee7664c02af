package ksentence

import (
	"crypto/md5"
	"errors"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func sentences(text string) []string {
	var out []string
	for _, s := range AppendSentences(nil, []byte(text)) {
		out = append(out, string(appendFolded(nil, []byte(text[s.Start:s.End]))))
	}
	return out
}

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"   \n\n ", nil},
		{"One sentence", []string{"One sentence"}},
		{"Hello world. How are you? Fine!", []string{"Hello world", "How are you", "Fine"}},
		{"天下大势，分久必合，合久必分。周末七国分争！并入于秦？", []string{"天下大势，分久必合，合久必分", "周末七国分争", "并入于秦"}},
		{"line one\nline two\r\nline three", []string{"line one", "line two", "line three"}},
		{"Pi is 3.14 and example.com is a site. Done", []string{"Pi is 3.14 and example.com is a site", "Done"}},
		{"He said \"stop.\" Then left.", []string{"He said \"stop", "Then left"}},
		{"他说：“走吧。”我们走了。", []string{"他说：“走吧", "我们走了"}},
		{"Wait... what?! Really……好", []string{"Wait", "what", "Really", "好"}},
		{"  spaced   out\t words .  next", []string{"spaced out words", "next"}},
		{"a；b;c,d", []string{"a；b;c,d"}},
		{"句号．全角｡半角", []string{"句号", "全角", "半角"}},
		{"end.", []string{"end"}},
		{"a.中文", []string{"a", "中文"}},
		{"中文.English next", []string{"中文", "English next"}},
	}
	for _, c := range cases {
		if got := sentences(c.in); !slices.Equal(got, c.want) {
			t.Errorf("sentences(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestLongest(t *testing.T) {
	h, _ := New(Options{K: 2})
	text := "short. a much longer sentence here. mid length one. another long sentence!"
	// Lengths: 5, 28, 15, 21. Longest two: 28, then 21.
	got := string(h.AppendLongest(nil, []byte(text)))
	if want := "a much longer sentence here\nanother long sentence"; got != want {
		t.Errorf("AppendLongest = %q, want %q", got, want)
	}
	// Ties by position: the earlier of equal lengths wins.
	h3, _ := New(Options{})
	got = string(h3.AppendLongest(nil, []byte("abc. xyz. def. 中文字。")))
	if want := "abc\nxyz\ndef"; got != want {
		t.Errorf("ties: AppendLongest = %q, want %q", got, want)
	}
	// Rune lengths, not bytes: four Han characters beat three Latin letters.
	h1, _ := New(Options{K: 1})
	if got := string(h1.AppendLongest(nil, []byte("abc. 四个汉字."))); got != "四个汉字" {
		t.Errorf("rune length: got %q, want 四个汉字", got)
	}
	// Fewer sentences than K: all of them.
	h5, _ := New(Options{K: 5})
	if got := string(h5.AppendLongest(nil, []byte("one. two"))); got != "one\ntwo" {
		t.Errorf("fewer than K: got %q", got)
	}
}

func TestSum(t *testing.T) {
	h, _ := New(Options{})
	a := "第一句比较长一些。第二句。第三句也比较长吧！第四句是最长的一句话了。"
	// Same long sentences, different short ones and spacing: duplicates.
	b := "第一句比较长一些。短。第三句也比较长吧！  第四句是最长的一句话了"
	c := "第一句比较长一些。第二句。第三句也比较长吗！第四句是最长的一句话了。"
	fa, fb, fc := h.Sum([]byte(a)), h.Sum([]byte(b)), h.Sum([]byte(c))
	if fa != fb {
		t.Errorf("texts with the same 3 longest sentences: %s != %s", fa, fb)
	}
	if fa == fc {
		t.Errorf("an edited long sentence gives the same fingerprint %s", fa)
	}
	want := md5.Sum([]byte("第四句是最长的一句话了\n第一句比较长一些\n第三句也比较长吧"))
	if fa != Fingerprint(want) {
		t.Errorf("Sum = %s, want MD5 of the longest sentences joined %x", fa, want)
	}
	if got := h.Sum(nil); got != Fingerprint(md5.Sum(nil)) {
		t.Errorf("Sum(empty) = %s, want MD5 of nothing", got)
	}
	if s := fa.String(); len(s) != 32 || string(fa.AppendHex(nil)) != s {
		t.Errorf("String = %q, AppendHex = %q", s, fa.AppendHex(nil))
	}
	if _, err := New(Options{K: -1}); !errors.Is(err, ErrK) {
		t.Errorf("New(K: -1) error %v, want ErrK", err)
	}
}

func TestSumAllocs(t *testing.T) {
	h, _ := New(Options{})
	text := []byte(strings.Repeat("这是一个测试句子，用来检查分配。Another sentence here! ", 50))
	h.Sum(text)
	if a := testing.AllocsPerRun(100, func() { h.Sum(text) }); a != 0 {
		t.Errorf("Sum allocates %v times, want 0", a)
	}
}

// FuzzSplit checks the splitter's invariants on any input: spans in order,
// inside the text, trimmed, free of terminators; Sum never panics and is
// deterministic.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"Hello. World!", "你好。世界！\n新行", "3.14...?!", "\xff\xfe.\n", "“引号。”后面"} {
		f.Add([]byte(s))
	}
	h, _ := New(Options{K: 2})
	f.Fuzz(func(t *testing.T, text []byte) {
		spans := AppendSentences(nil, text)
		prev := 0
		for _, s := range spans {
			if s.Start < prev || s.End <= s.Start || s.End > len(text) {
				t.Fatalf("span %+v out of order or bounds (prev end %d, len %d)", s, prev, len(text))
			}
			prev = s.End
			content := text[s.Start:s.End]
			for _, r := range string(content) {
				if isTerminator(r) {
					t.Fatalf("sentence %q contains terminator %q", content, r)
				}
			}
			if got := utf8.RuneCount(appendFolded(nil, content)); got != s.Runes {
				t.Fatalf("span %q: Runes = %d, folded length %d", content, s.Runes, got)
			}
		}
		first := h.Sum(text)
		h.Sum([]byte("something else. to reuse the buffers"))
		if again := h.Sum(text); again != first {
			t.Fatal("Sum is not deterministic across reuse of the Hasher")
		}
	})
}

func BenchmarkSum(b *testing.B) {
	text := []byte(strings.Repeat("这是一个测试句子，用来检查速度。Another sentence here, somewhat longer! ", 40))
	h, _ := New(Options{})
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		h.Sum(text)
	}
}
