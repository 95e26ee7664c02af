package shingle

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/zeebo/xxh3"
)

func TestTokens(t *testing.T) {
	tests := []struct {
		unit Unit
		in   string
		want []string
	}{
		{Word, "a rose is a rose", []string{"a", "rose", "is", "a", "rose"}},
		{Word, "  Hello,  world!  ", []string{"Hello", "world"}},
		{Word, "café naïve 42x", []string{"café", "naïve", "42x"}},
		{Word, "起初， 神创造天地。", []string{"起", "初", "神", "创", "造", "天", "地"}},
		{Word, "GPT4是模型", []string{"GPT4", "是", "模", "型"}},
		{Word, "", nil},
		{Word, "...", nil},
		{Char, "ab c", []string{"a", "b", " ", "c"}},
		{Char, "天地", []string{"天", "地"}},
		{Char, "", nil},
	}
	for _, tt := range tests {
		s, err := New(Options{Unit: tt.unit, N: 1})
		if err != nil {
			t.Fatal(err)
		}
		got := s.Tokens(nil, tt.in)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%v Tokens(%q) = %q, want %q", tt.unit, tt.in, got, tt.want)
		}
	}
}

// Seed 001: the word 4-shingle set of "a rose is a rose is a rose" has 3
// members: {a rose is a, rose is a rose, is a rose is}.
func TestSeed001FourShingles(t *testing.T) {
	s, _ := New(Options{Unit: Word, N: 4})
	set := s.AppendSet(nil, "a rose is a rose is a rose")
	if len(set) != 3 {
		t.Fatalf("4-shingle set has %d members, want 3", len(set))
	}
	want := []uint64{
		xxh3.HashStringSeed("a rose is a", DefaultSeed),
		xxh3.HashStringSeed("rose is a rose", DefaultSeed),
		xxh3.HashStringSeed("is a rose is", DefaultSeed),
	}
	slices.Sort(want)
	if !slices.Equal(set, want) {
		t.Errorf("4-shingle hashes = %x, want %x (the documented definition)", set, want)
	}
}

func TestShortTexts(t *testing.T) {
	s, _ := New(Options{Unit: Word, N: 5})
	if got := s.AppendHashes(nil, "two words"); len(got) != 1 || got[0] != xxh3.HashStringSeed("two words", DefaultSeed) {
		t.Errorf("shorter than n: got %x, want one shingle of all tokens", got)
	}
	if got := s.AppendHashes(nil, " ,;"); len(got) != 0 {
		t.Errorf("no tokens: got %d shingles, want 0", len(got))
	}
	c, _ := New(Options{Unit: Char, N: 3})
	if got := c.AppendHashes(nil, "天地"); len(got) != 1 || got[0] != xxh3.HashStringSeed("天地", DefaultSeed) {
		t.Errorf("char shorter than n: got %x", got)
	}
	if got := c.AppendHashes(nil, "abcd"); len(got) != 2 || got[1] != xxh3.HashStringSeed("bcd", DefaultSeed) {
		t.Errorf("char 3-grams of abcd: got %x", got)
	}
}

func TestSetAndBagAppend(t *testing.T) {
	s, _ := New(Options{Unit: Word, N: 1})
	prefix := []uint64{99}
	set := s.AppendSet(prefix, "b a b a c")
	if len(set) != 4 || set[0] != 99 || !slices.IsSorted(set[1:]) {
		t.Errorf("AppendSet kept prefix and sorted tail? %v", set)
	}
	bag := s.AppendBag(nil, "b a b a c")
	if len(bag) != 5 || !slices.IsSorted(bag) {
		t.Errorf("AppendBag = %v, want 5 sorted hashes", bag)
	}
}

func TestSeedChangesHashes(t *testing.T) {
	a, _ := New(Options{N: 2})
	b, _ := New(Options{N: 2, Seed: 7})
	if slices.Equal(a.AppendHashes(nil, "x y z"), b.AppendHashes(nil, "x y z")) {
		t.Error("different seeds gave equal hashes")
	}
}

func TestOptionsErrors(t *testing.T) {
	for _, n := range []int{-1, MaxN + 1} {
		if _, err := New(Options{N: n}); err == nil {
			t.Errorf("New(N=%d) succeeded, want error", n)
		}
	}
	if _, err := New(Options{Unit: 9}); err == nil {
		t.Error("New(Unit=9) succeeded, want error")
	}
	for _, s := range []string{"word", "char", "cjkword"} {
		u, err := ParseUnit(s)
		if err != nil || u.String() != s {
			t.Errorf("ParseUnit(%q) = %v, %v", s, u, err)
		}
	}
	if _, err := ParseUnit("bytes"); err == nil {
		t.Error("ParseUnit(bytes) succeeded")
	}
}

func TestHashingDoesNotAllocate(t *testing.T) {
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 20)
	for _, u := range []Unit{Word, Char} {
		s, _ := New(Options{Unit: u, N: 5})
		dst := s.AppendSet(nil, text)
		allocs := testing.AllocsPerRun(50, func() { dst = s.AppendSet(dst[:0], text) })
		if allocs != 0 {
			t.Errorf("%v AppendSet allocates %.1f times per call, want 0", u, allocs)
		}
	}
}

func FuzzShingle(f *testing.F) {
	f.Add("a rose is a rose is a rose", 3, uint8(0))
	f.Add("起初， 神創造天地。", 2, uint8(1))
	f.Add("\xff\xfe bad utf8 \xc3", 1, uint8(1))
	f.Fuzz(func(t *testing.T, text string, n int, unit uint8) {
		if n < 1 || n > MaxN {
			return
		}
		u := Unit(unit % 2) // CJKWord would load the dictionary per process: covered by its own test
		s, err := New(Options{Unit: u, N: n})
		if err != nil {
			t.Fatal(err)
		}
		toks := s.Tokens(nil, text)
		hs := s.AppendHashes(nil, text)
		switch {
		case len(toks) == 0 && len(hs) != 0:
			t.Fatalf("no tokens but %d shingles", len(hs))
		case len(toks) > 0 && len(toks) < n && len(hs) != 1:
			t.Fatalf("%d tokens < n=%d but %d shingles, want 1", len(toks), n, len(hs))
		case len(toks) >= n && len(hs) != len(toks)-n+1:
			t.Fatalf("%d tokens, n=%d: %d shingles, want %d", len(toks), n, len(hs), len(toks)-n+1)
		}
		if want := referenceHashes(text, n, u); !slices.Equal(hs, want) {
			t.Fatalf("AppendHashes(%q, n=%d, %v) = %x, the reference gives %x", text, n, u, hs, want)
		}
		set := s.AppendSet(nil, text)
		if !slices.IsSorted(set) || len(slices.Compact(slices.Clone(set))) != len(set) {
			t.Fatal("AppendSet is not sorted and distinct")
		}
	})
}

// referenceHashes is the definition of the shingle hashes, written for
// clarity: tokens from a plain rune loop, each gram its tokens joined by one
// space (Word) or concatenated (Char), hashed with XXH3 and the fixed seed.
func referenceHashes(text string, n int, u Unit) []uint64 {
	var toks []string
	start := -1
	for i, r := range text {
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
		if u == Char || isCJK(r) || !word {
			if start >= 0 {
				toks, start = append(toks, text[start:i]), -1
			}
			if u == Char || isCJK(r) {
				_, w := utf8.DecodeRuneInString(text[i:]) // an invalid byte is a token of width 1
				toks = append(toks, text[i:i+w])
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		toks = append(toks, text[start:])
	}
	sep := " "
	if u == Char {
		sep = ""
	}
	var out []uint64
	n = min(n, len(toks))
	for i := 0; n > 0 && i+n <= len(toks); i++ {
		out = append(out, xxh3.HashStringSeed(strings.Join(toks[i:i+n], sep), DefaultSeed))
	}
	return out
}

func BenchmarkShingle(b *testing.B) {
	en := strings.Repeat("It was the best of times, it was the worst of times, it was the age of wisdom. ", 13)
	zh := strings.Repeat("起初神创造天地地是空虚混沌渊面黑暗神的灵运行在水面上神说要有光就有了光", 10)
	for _, c := range []struct {
		name, text string
		unit       Unit
		n          int
	}{
		{"en/word5", en, Word, 5},
		{"en/char5", en, Char, 5},
		{"zh/word3", zh, Word, 3},
		{"zh/char3", zh, Char, 3},
	} {
		b.Run(c.name, func(b *testing.B) {
			s, _ := New(Options{Unit: c.unit, N: c.n})
			var dst []uint64
			b.SetBytes(int64(len(c.text)))
			b.ReportAllocs()
			for b.Loop() {
				dst = s.AppendSet(dst[:0], c.text)
			}
		})
	}
}

// asciiWord marks the ASCII bytes that are word characters under the
// definition of Word.
var asciiWord = func() (word [256]bool) {
	for c := range utf8.RuneSelf {
		r := rune(c)
		word[c] = unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
	}
	return word
}()

// TestWordMask8 checks the eight-byte classifier against asciiWord for
// every ASCII byte in every position, and for random words.
func TestWordMask8(t *testing.T) {
	check := func(b [8]byte) {
		t.Helper()
		var want uint64
		for k, c := range b {
			if asciiWord[c] {
				want |= 1 << k
			}
		}
		if got := wordMask8(binary.LittleEndian.Uint64(b[:])); got != want {
			t.Fatalf("wordMask8(%q) = %08b, want %08b", b, got, want)
		}
	}
	for c := range utf8.RuneSelf {
		for k := range 8 {
			b := [8]byte{'a', ' ', 'Z', '0', '~', '9', 'z', '@'}
			b[k] = byte(c)
			check(b)
			check([8]byte{byte(c), byte(c), byte(c), byte(c), byte(c), byte(c), byte(c), byte(c)})
		}
	}
	r := rand.New(rand.NewPCG(8, 8))
	for range 100000 {
		check([8]byte(binary.LittleEndian.AppendUint64(nil, r.Uint64()&0x7f7f7f7f7f7f7f7f)))
	}
}

// TestWordsAgainstReference compares the Word tokens and shingle hashes
// with the plain rune loop of referenceHashes on random texts that mix
// ASCII words and separators with non-ASCII letters, marks, CJK, dashes
// and invalid bytes at every offset of the eight-byte steps.
func TestWordsAgainstReference(t *testing.T) {
	pieces := []string{"a", "Z", "7", " ", ",", "  ", "word", "x1 ", "\t", ".\n", "é", "\u0301", "之", "–", "\u00a0", "\xff", "\xe4", "ß", "𝔘", "ｘ"}
	r := rand.New(rand.NewPCG(4, 5))
	for range 20000 {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
		}
		text := b.String()
		for _, n := range []int{1, 3, 5} {
			s, _ := New(Options{Unit: Word, N: n})
			if got, want := s.AppendHashes(nil, text), referenceHashes(text, n, Word); !slices.Equal(got, want) {
				t.Fatalf("AppendHashes(%q, n=%d) = %x, the reference gives %x (tokens %q)", text, n, got, want, s.Tokens(nil, text))
			}
		}
	}
}
