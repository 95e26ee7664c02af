package sketch

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestHashSorter: the bucket sort agrees with slices.Sort on uniform
// hashes, on repeats (its fallback) and on small and empty inputs.
func TestHashSorter(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	var s HashSorter
	for _, n := range []int{0, 1, 31, 32, 33, 165, 1000, 20000} {
		for _, kind := range []string{"uniform", "repeats", "low"} {
			a := make([]uint64, n)
			for i := range a {
				switch kind {
				case "uniform":
					a[i] = r.Uint64()
				case "repeats":
					a[i] = uint64(r.IntN(3)) << 62
				case "low": // all in one bucket
					a[i] = r.Uint64() >> 40
				}
			}
			want := slices.Clone(a)
			slices.Sort(want)
			s.Sort(a)
			if !slices.Equal(a, want) {
				t.Fatalf("n=%d %s: not sorted like slices.Sort", n, kind)
			}
		}
	}
}
