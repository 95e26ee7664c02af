package report

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestTokenize(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a rose, is  a\trose", []string{"a", " ", "rose", ",", " ", "is", "  ", "a", "\t", "rose"}},
		{"起初神創造天地。", []string{"起", "初", "神", "創", "造", "天", "地", "。"}},
		{"café 42x", []string{"café", " ", "42x"}},
		{"e\u0301!", []string{"e\u0301", "!"}},
		{"a\xffb", []string{"a", "\xff", "b"}},
	}
	for _, tt := range tests {
		got := Tokenize(tt.in)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Tokenize(%q) mismatch (-want +got):\n%s", tt.in, diff)
		}
		if j := strings.Join(got, ""); j != tt.in {
			t.Errorf("Tokenize(%q) joins to %q", tt.in, j)
		}
	}
}

func TestDiffText(t *testing.T) {
	tests := []struct {
		a, b string
		want []Edit
	}{
		{"", "", nil},
		{"same text", "same text", []Edit{{Equal, "same text"}}},
		{"", "new", []Edit{{Insert, "new"}}},
		{"old", "", []Edit{{Delete, "old"}}},
		{"a rose is a rose", "a rose is a flower",
			[]Edit{{Equal, "a rose is a "}, {Delete, "rose"}, {Insert, "flower"}}},
		// Changes separated by whitespace only read as one phrase.
		{"the quick brown fox", "a slow red fox",
			[]Edit{{Delete, "the quick brown"}, {Insert, "a slow red"}, {Equal, " fox"}}},
		{"And God called the light Day", "And Elohim called the light Day",
			[]Edit{{Equal, "And "}, {Delete, "God"}, {Insert, "Elohim"}, {Equal, " called the light Day"}}},
		{"起初神創造天地", "起初神创造天地",
			[]Edit{{Equal, "起初神"}, {Delete, "創"}, {Insert, "创"}, {Equal, "造天地"}}},
	}
	for _, tt := range tests {
		got := DiffText(tt.a, tt.b)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("DiffText(%q, %q) mismatch (-want +got):\n%s", tt.a, tt.b, diff)
		}
	}
}

// lcs is the oracle: the length of the longest common subsequence by
// dynamic programming.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestDiffShortest checks against the oracle that Diff's script is a
// shortest one: it deletes len(a)-LCS and inserts len(b)-LCS tokens.
func TestDiffShortest(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []string{"a", "b", "c", " ", "d"}
	gen := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return s
	}
	for iter := 0; iter < 3000; iter++ {
		a, b := gen(rng.IntN(25)), gen(rng.IntN(25))
		if iter%3 == 0 { // near-duplicates: b is a mutated a
			b = append([]string(nil), a...)
			for k := rng.IntN(4); k > 0 && len(b) > 0; k-- {
				b[rng.IntN(len(b))] = alphabet[rng.IntN(len(alphabet))]
			}
		}
		es := Diff(a, b)
		var dels, ins int
		for i, e := range es {
			if i > 0 && es[i-1].Kind == e.Kind {
				t.Fatalf("Diff(%q, %q): consecutive edits of kind %v: %v", a, b, e.Kind, es)
			}
			// Every token here is one byte long.
			switch e.Kind {
			case Delete:
				dels += len(e.Text)
			case Insert:
				ins += len(e.Text)
			}
		}
		l := lcs(a, b)
		if dels != len(a)-l || ins != len(b)-l {
			t.Fatalf("Diff(%q, %q) deletes %d and inserts %d, want %d and %d (LCS %d): %v",
				a, b, dels, ins, len(a)-l, len(b)-l, l, es)
		}
		got, err := Apply(strings.Join(a, ""), es)
		if err != nil || got != strings.Join(b, "") {
			t.Fatalf("Apply(%q, Diff) = %q, %v; want %q", strings.Join(a, ""), got, err, strings.Join(b, ""))
		}
	}
}

// TestDiffBudget checks that a diff too expensive for the budget still
// gives a correct script.
func TestDiffBudget(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int) []string {
		s := make([]string, n)
		for i := range s {
			s[i] = string(rune('a' + rng.IntN(20)))
		}
		return s
	}
	a, b := gen(3000), gen(3000)
	es := diffBudgeted(a, b, 100_000)
	got, err := Apply(strings.Join(a, ""), es)
	if err != nil || got != strings.Join(b, "") {
		t.Fatalf("Apply after an expensive diff: err %v, equal %v", err, got == strings.Join(b, ""))
	}
	var del int
	for _, e := range es {
		if e.Kind == Delete {
			del += len(e.Text)
		}
	}
	if l := lcs(a, b); del == len(a)-l {
		t.Errorf("over budget, Diff still found a shortest script (%d deletions): the budget is not applied", del)
	}
}

func TestApplyErrors(t *testing.T) {
	for _, es := range [][]Edit{
		{{Equal, "abc"}},
		{{Delete, "x"}},
		{{Equal, "a"}},
		{{Kind: 7, Text: "a"}},
	} {
		if _, err := Apply("ab", es); !errors.Is(err, ErrDiff) {
			t.Errorf("Apply(%q, %v) error = %v, want ErrDiff", "ab", es, err)
		}
	}
}

func FuzzDiffText(f *testing.F) {
	f.Add("a rose is a rose is a rose", "a rose is a flower which is a rose")
	f.Add("起初神創造天地。", "起初神创造天地。")
	f.Add("", "x")
	f.Add("the quick  brown fox", "the  quick brown dog")
	f.Add("a\xffb c", "a b\xfe c")
	f.Fuzz(func(t *testing.T, a, b string) {
		if len(a)+len(b) > 1<<13 {
			t.Skip("long inputs only make the fuzzer slow")
		}
		es := DiffText(a, b)
		got, err := Apply(a, es)
		if err != nil {
			t.Fatalf("Apply(%q, DiffText(%q, %q)): %v", a, a, b, err)
		}
		if got != b {
			t.Fatalf("Apply(%q, DiffText) = %q, want %q", a, got, b)
		}
		for i, e := range es {
			if e.Text == "" {
				t.Fatalf("DiffText(%q, %q): empty edit %d", a, b, i)
			}
		}
	})
}

func BenchmarkDiffText(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	words := strings.Fields("in the beginning god created the heaven and the earth and darkness was upon the face of the deep")
	var sa, sb strings.Builder
	for i := 0; i < 2000; i++ {
		w := words[rng.IntN(len(words))]
		sa.WriteString(w + " ")
		if rng.IntN(20) == 0 {
			w = "changed"
		}
		sb.WriteString(w + " ")
	}
	a, c := sa.String(), sb.String()
	b.SetBytes(int64(len(a) + len(c)))
	b.ReportAllocs()
	for b.Loop() {
		DiffText(a, c)
	}
}
