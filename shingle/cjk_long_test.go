//go:build long

package shingle

import (
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestCJKWordSegmentation loads the gse dictionary (about 6 CPU-seconds),
// so it runs with the tests tagged long (scripts/check-long).
func TestCJKWordSegmentation(t *testing.T) {
	s, err := New(Options{Unit: CJKWord, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := s.Tokens(nil, "我们在北京大学学习 hello world")
	// The dictionary segments 北京大学 as one word and keeps the English
	// words apart; we check what does not depend on dictionary details.
	if !slices.Contains(got, "北京大学") && !slices.Contains(got, "北京") {
		t.Errorf("CJKWord tokens %q: want 北京大学 or 北京 as a word", got)
	}
	if !slices.Contains(got, "hello") || !slices.Contains(got, "world") {
		t.Errorf("CJKWord tokens %q: want the English words kept", got)
	}
	for _, tok := range got {
		if strings.TrimSpace(tok) == "" {
			t.Errorf("CJKWord tokens %q: blank token", got)
		}
	}
	if multi := slices.IndexFunc(got, func(t string) bool { return utf8.RuneCountInString(t) > 1 && isCJK([]rune(t)[0]) }); multi < 0 {
		t.Errorf("CJKWord tokens %q: no multi-character Chinese word", got)
	}
}
