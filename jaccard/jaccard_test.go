package jaccard

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/neardup/neardup/shingle"
)

// Golden vectors of seed 003 (DESIGN.md).
func TestSeed003(t *testing.T) {
	const a, b = "a rose is a rose is a rose", "a rose is a flower which is a rose"
	tests := []struct {
		n        int
		set, bag float64
	}{
		{1, 0.6, 0.7},
		{2, 0.5, 0.5},
		{3, 3.0 / 7, 0.3},
	}
	for _, tt := range tests {
		s, err := shingle.New(shingle.Options{Unit: shingle.Word, N: tt.n})
		if err != nil {
			t.Fatal(err)
		}
		if got := Set(s.AppendSet(nil, a), s.AppendSet(nil, b)); math.Abs(got-tt.set) > 1e-12 {
			t.Errorf("n=%d: Set = %v, want %v", tt.n, got, tt.set)
		}
		if got := Bag(s.AppendBag(nil, a), s.AppendBag(nil, b)); math.Abs(got-tt.bag) > 1e-12 {
			t.Errorf("n=%d: Bag = %v, want %v", tt.n, got, tt.bag)
		}
	}
}

func TestEdgeCases(t *testing.T) {
	if got := Set(nil, nil); got != 1 {
		t.Errorf("Set(∅, ∅) = %v, want 1", got)
	}
	if got := Set(nil, []uint64{1}); got != 0 {
		t.Errorf("Set(∅, {1}) = %v, want 0", got)
	}
	if got := Bag([]uint64{1, 1}, []uint64{1}); got != 0.5 {
		t.Errorf("Bag({1,1}, {1}) = %v, want 0.5", got)
	}
}

// The merge walk agrees with a map-based count on random sets and bags.
func TestAgainstMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		a := randomBag(r)
		b := randomBag(r)
		ca, cb := counts(a), counts(b)
		var mn, mx int
		for k := range union(ca, cb) {
			mn += min(ca[k], cb[k])
			mx += max(ca[k], cb[k])
		}
		want := 1.0
		if mx > 0 {
			want = float64(mn) / float64(mx)
		}
		if got := Bag(a, b); math.Abs(got-want) > 1e-12 {
			t.Fatalf("Bag(%v, %v) = %v, want %v", a, b, got, want)
		}
		sa, sb := slices.Compact(slices.Clone(a)), slices.Compact(slices.Clone(b))
		inter := 0
		for k := range ca {
			if cb[k] > 0 {
				inter++
			}
		}
		want = 1
		if u := len(ca) + len(cb) - inter; u > 0 {
			want = float64(inter) / float64(u)
		}
		if got := Set(sa, sb); math.Abs(got-want) > 1e-12 {
			t.Fatalf("Set(%v, %v) = %v, want %v", sa, sb, got, want)
		}
	}
}

func randomBag(r *rand.Rand) []uint64 {
	n := r.IntN(30)
	out := make([]uint64, n)
	for i := range out {
		out[i] = uint64(r.IntN(20))
	}
	slices.Sort(out)
	return out
}

func counts(a []uint64) map[uint64]int {
	m := map[uint64]int{}
	for _, x := range a {
		m[x]++
	}
	return m
}

func union(a, b map[uint64]int) map[uint64]bool {
	u := map[uint64]bool{}
	for k := range a {
		u[k] = true
	}
	for k := range b {
		u[k] = true
	}
	return u
}
