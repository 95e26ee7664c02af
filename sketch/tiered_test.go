package sketch

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/neardup/neardup/jaccard"
)

func TestMargins(t *testing.T) {
	s, err := Default(MinHash).Resolve()
	if err != nil {
		t.Fatal(err)
	}
	se := math.Sqrt(0.8 * (1 - 0.8) / 128) // as Margins computes it, to the bit
	if lo, hi := s.Margins(128); lo != 0.8-3*se || hi != 0.8+4.5*se {
		t.Errorf("Margins(128) = %v, %v; want %v, %v", lo, hi, 0.8-3*se, 0.8+4.5*se)
	}
	if lo, _ := s.Margins(0); math.Abs(lo-(0.8-3*math.Sqrt(0.16))) > 1e-12 {
		t.Errorf("Margins(0) = %v: want keff clamped to 1", lo)
	}
	if a, b := s.Margins(1000); a != 0.8-3*se || b != 0.8+4.5*se {
		t.Errorf("Margins(1000) = %v, %v: want keff clamped to 128", a, b)
	}
}

// TestDecideLeader: against the rule it states, on texts whose word
// 5-gram Jaccard similarity runs from 0.6 to 1 (one base with n words
// replaced).
func TestDecideLeader(t *testing.T) {
	s, _ := Default(MinHash).Resolve()
	k, err := s.NewSketcherWith(SketcherOptions{Sets: true})
	if err != nil {
		t.Fatal(err)
	}
	words := make([]string, 150)
	for i := range words {
		words[i] = fmt.Sprintf("w%d", i*7919%10007)
	}
	var base Sketch
	k.Sketch(&base, strings.Join(words, " "))
	base.Sig, base.Set = append(base.Sig[:0:0], base.Sig...), append(base.Set[:0:0], base.Set...)
	exact := 0
	for n := 0; n < 12; n++ {
		w := append([]string(nil), words...)
		for i := range n {
			w[(i*37+5)%len(w)] = fmt.Sprintf("x%d", i)
		}
		var o Sketch
		k.Sketch(&o, strings.Join(w, " "))
		v := s.DecideLeader(&base, &o)
		j := jaccard.Set(base.Set, o.Set)
		switch {
		case !s.WithinMargin(&base, &o):
			if v.Duplicate || v.Exact {
				t.Errorf("%d replaced: %+v below the margin", n, v)
			}
		case !v.Exact || v.Similarity != j || v.Duplicate != (j >= 0.8):
			t.Errorf("%d replaced: %+v, exact Jaccard %v", n, v, j)
		default:
			exact++
		}
		// Without a set: the estimate alone.
		o.Set = nil
		est, _ := s.Similarity(&base, &o)
		if v := s.DecideLeader(&base, &o); v.Exact || v.Similarity != est || v.Duplicate != (est >= 0.8) {
			t.Errorf("%d replaced, no set: %+v, estimate %v", n, v, est)
		}
	}
	if exact < 5 {
		t.Errorf("only %d of 12 pairs decided exactly", exact)
	}
	if v := s.DecideLeader(&base, &Sketch{Empty: true}); v.Duplicate {
		t.Error("an empty sketch is a duplicate")
	}
}

// A candidate whose estimate is near the threshold is decided by the
// exact Jaccard similarity of the two shingle sets, which is reported.
func ExampleSpec_DecideLeader() {
	s, _ := Default(MinHash).Resolve()
	k, _ := s.NewSketcherWith(SketcherOptions{Sets: true})
	var a, b Sketch
	k.Sketch(&a, "the quick brown fox jumps over the lazy dog near the river bank at dawn today")
	a.Sig, a.Set = append(a.Sig[:0:0], a.Sig...), append(a.Set[:0:0], a.Set...)
	k.Sketch(&b, "the quick brown fox jumps over the lazy dog near the river bank at dusk today")
	v := s.DecideLeader(&a, &b)
	fmt.Printf("exact %v, similarity %.4f, duplicate %v\n", v.Exact, v.Similarity, v.Duplicate)
	// Output: exact true, similarity 0.7143, duplicate false
}
