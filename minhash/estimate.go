package minhash

import (
	"fmt"
	"slices"

	"github.com/neardup/neardup/internal/mix"
)

// splitmix is the SplitMix64 generator that draws the coefficients.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix.SplitMix64(r.s)
}

// Estimate returns the fraction of equal slots of a and b: the MinHash
// estimate of the Jaccard similarity of their sets. Signatures of different
// lengths are an error (ErrLength). Two empty signatures are equal (1).
func Estimate(a, b Signature) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("%w: %d and %d", ErrLength, len(a), len(b))
	}
	if len(a) == 0 {
		return 0, fmt.Errorf("%w: no slots", ErrLength)
	}
	return float64(Matches(a, b)) / float64(len(a)), nil
}

// Matches returns the number of slots where a and b agree, over the first
// min(len(a), len(b)) slots.
func Matches(a, b Signature) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	m := 0
	for i := range a {
		if a[i] == b[i] {
			m++
		}
	}
	return m
}

// IsEmpty reports whether sig is the signature of an empty set (every slot
// is Empty). A signature with no slots is empty.
func IsEmpty(sig Signature) bool {
	for _, v := range sig {
		if v != Empty {
			return false
		}
	}
	return true
}

// Merge appends to dst[:0] the signature of the union of the sets of a and
// b: the slot-wise minimum. It is exact for the Permutation and
// MultiplyShift families. A densified OPH signature has lost which slots
// were copies, so merging it is refused with ErrMerge: sign the union
// instead.
func (h *Hasher) Merge(dst, a, b Signature) (Signature, error) {
	if h.family == OPH {
		return dst, fmt.Errorf("%w (%s)", ErrMerge, h.family)
	}
	if len(a) != h.k || len(b) != h.k {
		return dst, fmt.Errorf("%w: %d and %d, want %d", ErrLength, len(a), len(b), h.k)
	}
	dst = grow(dst[:0], h.k)
	for i := range dst {
		dst[i] = min(a[i], b[i])
	}
	return dst, nil
}

// Bottom computes bottom-s sketches (seed 003): the s smallest values of a
// seeded bijective remix of the shingle hashes, sorted ascending. It keeps
// scratch space and is not safe for concurrent use.
type Bottom struct {
	s       int
	key     uint64
	scratch []uint64
}

// NewBottom returns a Bottom keeping s values (s >= 1) with the given seed
// (0 means DefaultSeed).
func NewBottom(s int, seed uint64) (*Bottom, error) {
	if s < 1 || s > MaxNumPerm {
		return nil, fmt.Errorf("%w (bottom-s size %d)", ErrNumPerm, s)
	}
	if seed == 0 {
		seed = DefaultSeed
	}
	r := splitmix{seed}
	return &Bottom{s: s, key: r.next()}, nil
}

// S returns the sketch size s.
func (b *Bottom) S() int { return b.s }

// Sketch appends to dst[:0] the sorted s smallest distinct remixed hashes of
// the set (all of them when the set has fewer than s members) and returns
// it. It does not allocate once its scratch and dst have grown.
func (b *Bottom) Sketch(dst []uint64, hashes []uint64) []uint64 {
	sc := b.scratch[:0]
	for _, x := range hashes {
		sc = append(sc, mix.SplitMix64(x^b.key))
	}
	slices.Sort(sc)
	sc = slices.Compact(sc)
	b.scratch = sc
	return append(dst[:0], sc[:min(len(sc), b.s)]...)
}

// EstimateBottom returns the bottom-s estimate of the Jaccard similarity of
// two sets from their sketches: |MIN_s(S(A) ∪ S(B)) ∩ S(A) ∩ S(B)| /
// |MIN_s(S(A) ∪ S(B))| (seed 003), where s is the sketch size. Sketches
// must be sorted ascending without repeats, as Sketch makes them. Two empty
// sketches give 1. It is unbiased with variance about J(1-J)/s for sets of
// at least s members, and exact for smaller sets.
func EstimateBottom(a, b []uint64, s int) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	i, j, taken, both := 0, 0, 0, 0
	for taken < s && (i < len(a) || j < len(b)) {
		switch {
		case j >= len(b) || (i < len(a) && a[i] < b[j]):
			i++
		case i >= len(a) || b[j] < a[i]:
			j++
		default:
			both++
			i++
			j++
		}
		taken++
	}
	return float64(both) / float64(taken)
}

// EstimateCardinality returns the bottom-s estimate (s-1)/v_s of the size of
// the set whose sketch is given, where v_s is the s-th smallest value
// scaled to (0, 1]. With fewer than s values the set is that small: the
// exact count is returned.
func EstimateCardinality(sketch []uint64, s int) float64 {
	if len(sketch) < s || s < 2 {
		return float64(len(sketch))
	}
	v := (float64(sketch[s-1]) + 1) / (1 << 64)
	return float64(s-1) / v
}
