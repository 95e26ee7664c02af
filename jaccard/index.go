package jaccard

import (
	"fmt"
	"math"
	"slices"
)

// Index is the incremental form of Join: sets are added one at a time, and
// each Add reports the earlier sets whose Jaccard similarity with the new
// one is at least the threshold. Adding n sets reports exactly the pairs
// Join reports on the same n sets.
//
// Without the whole collection in advance there are no document
// frequencies, so the global token order is the hash order (the order the
// sets are already in), and since later sets may be smaller or larger,
// each set indexes its whole probing prefix |x| - ⌈t·|x|⌉ + 1 and the
// length filter checks both bounds. The prefix, length and positional
// filters and the verification are those of Join. Because frequent tokens
// are not pushed out of the prefixes, Index probes more than Join does:
// prefer Join for a batch.
//
// Memory: the index keeps a copy of every set (8 bytes per hash), a
// posting of 8 bytes per prefix token in a map keyed by hash, and 12 bytes
// of state per set. An Index is not safe for concurrent use.
type Index struct {
	t, f float64
	sets [][]uint64
	post map[uint64][]posting
	// Per-candidate state, indexed by set number; count -1: pruned.
	count, lastI, lastJ []int32
	cands               []int32
	empties             []int32
}

// NewIndex returns an empty Index for the threshold, which must be in
// (0, 1] (else ErrThreshold).
func NewIndex(threshold float64) (*Index, error) {
	if !(threshold > 0 && threshold <= 1) {
		return nil, fmt.Errorf("%w (got %v)", ErrThreshold, threshold)
	}
	return &Index{t: threshold, f: threshold / (1 + threshold), post: map[uint64][]posting{}}, nil
}

// Len returns the number of sets added.
func (ix *Index) Len() int { return len(ix.sets) }

// Add adds set, which must be sorted and free of repeats, as set number
// Len(), after calling emit(j, sim) for every earlier set j with
// Set(set, set j) >= the threshold. It returns the new set's number. The
// index keeps a copy of set. An unsorted set is an error wrapping
// ErrUnsorted, and is not added.
func (ix *Index) Add(set []uint64, emit func(j int, sim float64)) (int, error) {
	if err := ix.Query(set, emit); err != nil {
		return 0, err
	}
	if len(ix.sets) == math.MaxInt32 {
		return 0, fmt.Errorf("jaccard: index full (%d sets)", len(ix.sets))
	}
	id := int32(len(ix.sets))
	ix.sets = append(ix.sets, slices.Clone(set))
	ix.count = append(ix.count, 0)
	ix.lastI = append(ix.lastI, 0)
	ix.lastJ = append(ix.lastJ, 0)
	if len(set) == 0 {
		ix.empties = append(ix.empties, id)
		return int(id), nil
	}
	for i, h := range set[:ix.probeLen(len(set))] {
		ix.post[h] = append(ix.post[h], posting{id, int32(i)})
	}
	return int(id), nil
}

// Query calls emit(j, sim) for every set j in the index with Set(set, set
// j) >= the threshold, without adding set.
func (ix *Index) Query(set []uint64, emit func(j int, sim float64)) error {
	if len(set) > math.MaxInt32 {
		return fmt.Errorf("jaccard: set of %d hashes: too many", len(set))
	}
	for k := 1; k < len(set); k++ {
		if set[k] <= set[k-1] {
			return fmt.Errorf("%w: position %d", ErrUnsorted, k)
		}
	}
	if len(set) == 0 {
		for _, j := range ix.empties {
			emit(int(j), 1)
		}
		return nil
	}
	x, lx := set, len(set)
	minLen := max(1, lenient(ix.t*float64(lx)))
	maxLen := math.MaxInt
	if v := float64(lx) / ix.t; v < math.MaxInt32 {
		maxLen = int(math.Floor(v + 1e-9*(1+v)))
	}
	for i, w := range x[:ix.probeLen(lx)] {
		for _, p := range ix.post[w] {
			y := p.set
			ly := len(ix.sets[y])
			if ly < minLen || ly > maxLen {
				continue
			}
			c := ix.count[y]
			if c < 0 {
				continue
			}
			if c == 0 {
				ix.cands = append(ix.cands, y)
			}
			ub := 1 + min(lx-i-1, ly-int(p.pos)-1)
			if int(c)+ub >= ix.overlap(lx, ly) {
				ix.count[y] = c + 1
				ix.lastI[y] = int32(i)
				ix.lastJ[y] = p.pos
			} else {
				ix.count[y] = -1
			}
		}
	}
	for _, y := range ix.cands {
		c := int(ix.count[y])
		ix.count[y] = 0
		if c <= 0 {
			continue
		}
		yr := ix.sets[y]
		need := ix.overlap(lx, len(yr))
		o := c + Intersection(x[ix.lastI[y]+1:], yr[ix.lastJ[y]+1:])
		if o < need {
			continue
		}
		if sim := float64(o) / float64(lx+len(yr)-o); sim >= ix.t {
			emit(int(y), sim)
		}
	}
	ix.cands = ix.cands[:0]
	return nil
}

func (ix *Index) overlap(lx, ly int) int {
	return max(1, lenient(ix.f*float64(lx+ly)))
}

func (ix *Index) probeLen(l int) int {
	return min(l, l-max(1, lenient(ix.t*float64(l)))+1)
}
