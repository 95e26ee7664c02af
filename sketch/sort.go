package sketch

import (
	"math/bits"
	"slices"
)


// HashSorter sorts shingle hashes, which are uniformly distributed, in
// expected linear time: a counting pass scatters them into about one
// bucket per hash by their high bits, and an insertion sort finishes the
// buckets. A bucket that receives too many (the same shingle repeated,
// or an unlucky input) makes it fall back to slices.Sort, so the worst
// case stays O(n log n). The zero value is ready; it keeps its scratch.
type HashSorter struct {
	tmp    []uint64
	counts []uint32
}

// Sort sorts a in place. A nil *HashSorter sorts with slices.Sort.
func (s *HashSorter) Sort(a []uint64) {
	n := len(a)
	if s == nil || n < 32 {
		slices.Sort(a)
		return
	}
	shift := 64 - bits.Len(uint(n))
	nb := 1<<(64-shift) + 1
	s.counts = slices.Grow(s.counts[:0], nb)[:nb]
	clear(s.counts)
	for _, x := range a {
		s.counts[x>>shift+1]++
	}
	for b := 1; b < nb; b++ {
		s.counts[b] += s.counts[b-1]
	}
	s.tmp = slices.Grow(s.tmp[:0], n)[:n]
	for _, x := range a {
		b := x >> shift
		s.tmp[s.counts[b]] = x
		s.counts[b]++
	}
	moves := 0
	for i := 1; i < n; i++ {
		x := s.tmp[i]
		j := i
		for j > 0 && s.tmp[j-1] > x {
			s.tmp[j] = s.tmp[j-1]
			j--
		}
		s.tmp[j] = x
		if moves += i - j; moves > 4*n {
			slices.Sort(a) // a is still the input
			return
		}
	}
	copy(a, s.tmp)
}
