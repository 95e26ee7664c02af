package lsh

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortUnique: sortUnique gives what sorting and compacting gives, on
// short lists, on long lists in a narrow range (the bitmap) and in a wide
// one (the sort), near the top of the id range, after a prefix it must
// leave alone, and with the pooled bitmap reused at other sizes.
func TestSortUnique(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 2000 {
		n := rng.IntN(3000)
		span := uint32(1 + rng.IntN(1<<uint(rng.IntN(24))))
		base := rng.Uint32()
		if round%5 == 0 {
			base = math.MaxUint32 - span + 1 // the range ends at the top
		}
		if base > math.MaxUint32-span+1 {
			base = math.MaxUint32 - span + 1
		}
		prefix := []uint32{9, 3, 9}
		dst := append([]uint32(nil), prefix...)
		for range n {
			dst = append(dst, base+uint32(rng.Uint64N(uint64(span))))
		}
		want := slices.Clone(dst[len(prefix):])
		slices.Sort(want)
		want = slices.Compact(want)
		got := sortUnique(dst, len(prefix))
		if !slices.Equal(got[:len(prefix)], prefix) {
			t.Fatalf("round %d: the prefix changed: %v", round, got[:len(prefix)])
		}
		if !slices.Equal(got[len(prefix):], want) {
			t.Fatalf("round %d (%d values in [%d, %d+%d)): %d distinct, want %d", round, n, base, base, span, len(got)-len(prefix), len(want))
		}
	}
}

// BenchmarkSortUnique: 20,000 candidates in 13 buckets of a giant
// component (each about 40% of 20,000 earlier documents).
func BenchmarkSortUnique(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	var src []uint32
	for range 13 {
		for id := range uint32(20000) {
			if rng.IntN(10) < 4 {
				src = append(src, id)
			}
		}
	}
	dst := make([]uint32, len(src))
	b.Run("bitmap", func(b *testing.B) {
		for b.Loop() {
			copy(dst, src)
			sortUnique(dst, 0)
		}
	})
	b.Run("sort", func(b *testing.B) {
		for b.Loop() {
			copy(dst, src)
			slices.Sort(dst)
			_ = slices.Compact(dst)
		}
	})
}
