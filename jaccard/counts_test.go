package jaccard

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOfCounts: OfCounts of the intersection is Set's value, to the bit,
// and MinShared is the least intersection that reaches the threshold.
func TestOfCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	set := func(n int) []uint64 {
		s := make([]uint64, n)
		for i := range s {
			s[i] = uint64(r.IntN(400))
		}
		slices.Sort(s)
		return slices.Compact(s)
	}
	for range 2000 {
		a, b := set(r.IntN(200)), set(r.IntN(200))
		if got, want := OfCounts(Intersection(a, b), len(a), len(b)), Set(a, b); got != want {
			t.Fatalf("OfCounts = %v, Set = %v", got, want)
		}
		th := []float64{0.5, 0.7, 0.8, 0.9, 1}[r.IntN(5)]
		x := MinShared(len(a), len(b), th)
		for y := 0; y <= min(len(a), len(b)); y++ {
			if reach := OfCounts(y, len(a), len(b)) >= th; reach != (y >= x) {
				t.Fatalf("MinShared(%d, %d, %v) = %d, but %d shared gives %v", len(a), len(b), th, x, y, OfCounts(y, len(a), len(b)))
			}
		}
	}
}
