package jaccard

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neardup/neardup/shingle"
)

// indexPairs adds the sets one by one and returns the reported pairs.
func indexPairs(tb testing.TB, sets [][]uint64, t float64) []pair {
	tb.Helper()
	ix, err := NewIndex(t)
	if err != nil {
		tb.Fatal(err)
	}
	var out []pair
	for i, s := range sets {
		id, err := ix.Add(s, func(j int, sim float64) {
			if j >= i {
				tb.Fatalf("Add of set %d reported set %d, not an earlier one", i, j)
			}
			out = append(out, pair{j, i, sim})
		})
		if err != nil || id != i {
			tb.Fatalf("Add(set %d) = %d, %v", i, id, err)
		}
	}
	slices.SortFunc(out, cmpPair)
	return out
}

func TestIndexAgainstBruteForce(t *testing.T) {
	for seed := uint64(1); seed <= 6; seed++ {
		r := rand.New(rand.NewPCG(seed, 77))
		sets := randomSets(r, 50+r.IntN(200), 200, []int{50, 500, 5000}[seed%3])
		o := newOracle(sets, 0.3)
		for _, th := range []float64{0.3, 0.5, 2.0 / 3, 0.8, 0.9, 1, 0.3 + 0.7*r.Float64()} {
			got, want := indexPairs(t, sets, th), o.at(th)
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d t=%v: Index gave %d pairs, brute force %d", seed, th, len(got), len(want))
			}
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	o := newOracle(randomSets(r, 300, 12, 30), 0.3)
	for u := 1; u <= 20; u++ {
		for v := 1; v <= u; v++ {
			if th := float64(v) / float64(u); th >= 0.3 {
				if got, want := indexPairs(t, o.sets, th), o.at(th); !slices.Equal(got, want) {
					t.Fatalf("ratio t=%v: Index gave %d pairs, brute force %d", th, len(got), len(want))
				}
			}
		}
	}
}

func TestIndexRealText(t *testing.T) {
	sets := shingleSets(t, goSourceLines(t, 1200), shingle.Options{Unit: shingle.Word, N: 2})
	o := newOracle(sets, 0.5)
	for _, th := range []float64{0.5, 0.8} {
		if got, want := indexPairs(t, sets, th), o.at(th); !slices.Equal(got, want) {
			t.Fatalf("t=%v: Index gave %d pairs, brute force %d", th, len(got), len(want))
		}
	}
}

func TestIndexQueryAndErrors(t *testing.T) {
	if _, err := NewIndex(0); !errors.Is(err, ErrThreshold) {
		t.Errorf("NewIndex(0) error = %v, want ErrThreshold", err)
	}
	ix, _ := NewIndex(0.5)
	for _, s := range [][]uint64{{1, 2, 3}, {}, {1, 2, 3, 4}, {}} {
		if _, err := ix.Add(s, func(int, float64) {}); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	if err := ix.Query([]uint64{1, 2, 3}, func(j int, sim float64) { got = append(got, fmt.Sprintf("%d:%.2f", j, sim)) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	if want := []string{"0:1.00", "2:0.75"}; !slices.Equal(got, want) {
		t.Errorf("Query = %v, want %v", got, want)
	}
	got = nil
	ix.Query(nil, func(j int, sim float64) { got = append(got, fmt.Sprintf("%d:%.2f", j, sim)) })
	if want := []string{"1:1.00", "3:1.00"}; !slices.Equal(got, want) {
		t.Errorf("Query(empty) = %v, want %v", got, want)
	}
	if _, err := ix.Add([]uint64{3, 1}, func(int, float64) { t.Error("emit on a bad set") }); !errors.Is(err, ErrUnsorted) {
		t.Errorf("Add(unsorted) error = %v, want ErrUnsorted", err)
	}
	if ix.Len() != 4 {
		t.Errorf("Len = %d after a failed Add, want 4", ix.Len())
	}
	buf := []uint64{7, 8}
	ix.Add(buf, func(int, float64) {})
	buf[0] = 1 // the index keeps a copy
	n := 0
	ix.Query([]uint64{7, 8}, func(j int, _ float64) { n++ })
	if n != 1 {
		t.Errorf("after the caller reused its buffer, Query found %d sets, want 1", n)
	}
}
