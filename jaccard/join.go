package jaccard

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// ErrThreshold is returned by Join for a threshold outside (0, 1].
var ErrThreshold = errors.New("jaccard: threshold must be in (0, 1]")

// ErrUnsorted is returned by Join for a set whose hashes are not strictly
// increasing (not sorted, or with repeats: a bag, not a set).
var ErrUnsorted = errors.New("jaccard: set is not sorted or has repeated hashes")

// JoinStats counts the work of one join.
type JoinStats struct {
	Sets       int   // input sets
	Empty      int   // empty input sets
	Tokens     int64 // Σ|x|, set members over all sets
	Distinct   int   // distinct hashes
	Indexed    int64 // postings added to the inverted index
	Probed     int64 // postings visited by probes (after the length filter)
	Candidates int64 // pairs that passed the positional filter and were verified
	Pairs      int64 // pairs reported
}

// maxSets is the largest number of sets Join accepts: set numbers and
// positions are stored as int32.
const maxSets = math.MaxInt32

// Join calls emit(i, j, sim) for every pair of sets i < j with
// Set(sets[i], sets[j]) >= threshold, each pair once, where sim is that
// similarity. Each set must be sorted and free of repeats (shingle's
// AppendSet); Join does not modify the sets or keep them after it returns.
// The order of the calls is deterministic (it depends only on the input),
// but it is not sorted.
//
// Join returns ErrThreshold for a threshold outside (0, 1] and an error
// wrapping ErrUnsorted, naming the set, for a set that is not sorted; in
// both cases before emit is called.
//
// # Algorithm
//
// Join does not compare all pairs: it filters by prefixes as in PPJoin (Xiao, Wang, Lin, Yu, "Efficient
// Similarity Joins for Near Duplicate Detection", WWW 2008; the prefix and
// length filters go back to Chaudhuri et al., ICDE 2006, and Bayardo et al.,
// WWW 2007):
//
//   - Global order. Every hash is replaced by its rank in one order of all
//     distinct hashes: by document frequency, rarest first (ties by hash
//     value, so the order is deterministic), and each set is sorted by rank.
//     Rare tokens first keep the inverted lists of the prefixes short.
//   - Overlap. J(x, y) >= t is the same as |x ∩ y| >= α(x, y) =
//     ⌈t/(1+t)·(|x|+|y|)⌉.
//   - Length filter. J(x, y) >= t needs t·|x| <= |y| <= |x|/t.
//   - Prefix filter. If |x ∩ y| >= α, the first common token (in the global
//     order) is among the first |x|-α+1 tokens of x and of y. Sets are
//     processed by increasing size, each probes the index with its first
//     |x| - ⌈t·|x|⌉ + 1 tokens (the probing prefix) and then adds its first
//     |x| - ⌈2t/(1+t)·|x|⌉ + 1 tokens (the indexing prefix, enough because
//     every later probe is at least as long).
//   - Positional filter. When token w is at position i of x and j of y, at
//     most 1 + min(|x|-i-1, |y|-j-1) common tokens remain from w on; a
//     candidate whose count so far plus that bound falls below α is dropped.
//   - Verification. The surviving candidates are verified by a merge of the
//     suffixes after the last common prefix token, stopping as soon as α is
//     out of reach. A pair is reported when float64(o)/float64(|x|+|y|-o)
//     >= t, the exact test Set makes, so Join reports exactly the pairs an
//     all-pairs loop over Set would. The filters round their bounds in the
//     permissive direction (by a relative 1e-9), so floating-point rounding
//     can never make them drop a pair the final test accepts.
//
// Empty sets have similarity 1 with each other (see Set) and 0 with any
// other set: every pair of empty sets is reported, with similarity 1.
//
// The suffix filter of PPJoin+ is not implemented: on shingle sets of
// documents the positional filter leaves few false candidates (see
// docs/bench/jaccard.md).
//
// Memory, with T = Σ|x| and V distinct hashes: 8·T bytes while the hashes
// are sorted to count document frequencies, with 4.5·V for the ranks and
// the lookup table; then 4·T for the re-ranked sets, 8 bytes per indexed
// prefix token (at most T, about T/9 at t = 0.8), 12 bytes per hash found
// in more than one set and 28 bytes per set. The input is not copied. On
// 100,000 Bible verses (word 5-grams, T = 2.1 million) the join allocates
// 42 MB; on the 11,658 wiki-slice articles (T = 30 million) 500 MB.
//
// Time: O(T log T) to order the tokens, plus the probes and verifications,
// which the filters keep close to linear on near-duplicate workloads; the
// worst case (many sets sharing their rare tokens, such as k identical
// sets, which have k(k-1)/2 answers) is quadratic, as the output itself
// may be. Prefixes grow as the threshold falls (about (1-t)·|x| tokens),
// so low thresholds on long documents probe more. See docs/bench/jaccard.md.
//
// Join is synchronous and safe to call from several goroutines on
// different (or the same, unmodified) inputs. Index is the incremental
// form, for sets that arrive one at a time.
func Join(sets [][]uint64, threshold float64, emit func(i, j int, sim float64)) error {
	_, err := JoinWithStats(sets, threshold, emit)
	return err
}

// JoinWithStats is Join that also returns counts of its work.
func JoinWithStats(sets [][]uint64, threshold float64, emit func(i, j int, sim float64)) (JoinStats, error) {
	var st JoinStats
	t := threshold
	if !(t > 0 && t <= 1) { // also rejects NaN
		return st, fmt.Errorf("%w (got %v)", ErrThreshold, threshold)
	}
	if len(sets) > maxSets {
		return st, fmt.Errorf("jaccard: %d sets: at most %d are supported", len(sets), maxSets)
	}
	st.Sets = len(sets)
	var empties []int
	for i, s := range sets {
		if len(s) == 0 {
			empties = append(empties, i)
			continue
		}
		if len(s) > math.MaxInt32 {
			return st, fmt.Errorf("jaccard: set %d has %d hashes: too many", i, len(s))
		}
		for k := 1; k < len(s); k++ {
			if s[k] <= s[k-1] {
				return st, fmt.Errorf("%w: set %d at position %d", ErrUnsorted, i, k)
			}
		}
		st.Tokens += int64(len(s))
	}
	st.Empty = len(empties)
	if st.Tokens >= math.MaxUint32 {
		// Ranks are uint32 and positions int32.
		return st, fmt.Errorf("jaccard: %d hashes in total: too many for one join", st.Tokens)
	}

	// Pairs of empty sets: similarity 1 by definition.
	for a := 0; a < len(empties); a++ {
		for b := a + 1; b < len(empties); b++ {
			emit(empties[a], empties[b], 1)
			st.Pairs++
		}
	}

	j := newJoiner(sets, t, &st)
	j.run(emit)
	return st, nil
}

// joiner holds the state of one join over the non-empty sets.
type joiner struct {
	t   float64
	st  *JoinStats
	f   float64 // t/(1+t)
	f2  float64 // 2t/(1+t)
	n1  uint32  // ranks below n1 are tokens of one set only
	off []int   // sets in size order: recs[off[s]:off[s+1]]
	rec []uint32
	ord []int32 // size order -> input index

	// Inverted index over ranks >= n1, in CSR form: the postings of rank
	// r are post[start[r-n1] : start[r-n1]+fill[r-n1]], of which the first
	// head[r-n1] were dropped by the length filter.
	start []int
	fill  []int32
	head  []int32
	post  []posting

	// Per-candidate state, indexed by position in size order.
	count []int32 // common prefix tokens so far; -1: pruned
	lastI []int32 // position in the probe of the last common token
	lastJ []int32 // position in the candidate of the last common token
	cands []int32
}

type posting struct{ set, pos int32 }

// lenient returns ⌈v⌉, rounded down when v is within a relative 1e-9 above
// an integer, so that bounds derived from it never exclude a pair that the
// floating-point test o/u >= t accepts.
func lenient(v float64) int {
	return int(math.Ceil(v - 1e-9*(1+v)))
}

// overlap returns the overlap α that sets of sizes lx and ly need.
func (j *joiner) overlap(lx, ly int) int {
	return max(1, lenient(j.f*float64(lx+ly)))
}

// probeLen returns the probing prefix length of a set of size l.
func (j *joiner) probeLen(l int) int {
	return min(l, l-max(1, lenient(j.t*float64(l)))+1)
}

// indexLen returns the indexing prefix length of a set of size l.
func (j *joiner) indexLen(l int) int {
	return min(l, l-max(1, lenient(j.f2*float64(l)))+1)
}

// minLen returns the smallest size of a set that can reach the threshold
// with a set of size l.
func (j *joiner) minLen(l int) int {
	return max(1, lenient(j.t*float64(l)))
}

func newJoiner(sets [][]uint64, t float64, st *JoinStats) *joiner {
	j := &joiner{t: t, st: st, f: t / (1 + t), f2: 2 * t / (1 + t)}

	// Distinct hashes and their document frequencies.
	all := make([]uint64, 0, st.Tokens)
	for _, s := range sets {
		all = append(all, s...)
	}
	slices.Sort(all)
	nd := 0
	for k := range all {
		if k == 0 || all[k] != all[k-1] {
			nd++
		}
	}
	st.Distinct = nd
	distinct := all[:0] // compacted in place
	rank := make([]uint32, nd)
	for k := 0; k < len(all); {
		h, e := all[k], k+1
		for e < len(all) && all[e] == h {
			e++
		}
		rank[len(distinct)] = uint32(e - k) // the df for now
		distinct = append(distinct, h)
		k = e
	}

	// Ranks: by document frequency, then hash (distinct is sorted by hash,
	// so a stable counting sort on df gives that order).
	maxDF := uint32(0)
	for _, d := range rank {
		maxDF = max(maxDF, d)
	}
	bucket := make([]int, maxDF+2)
	for _, d := range rank {
		bucket[d+1]++
	}
	for d := 1; d < len(bucket); d++ {
		bucket[d] += bucket[d-1]
	}
	if maxDF > 0 {
		j.n1 = uint32(bucket[2]) // ranks [0, n1) have df == 1
	}
	for k, d := range rank {
		rank[k] = uint32(bucket[d]) // df replaced by the rank
		bucket[d]++
	}
	g := newGuide(distinct)

	// Sets in size order, re-ranked and re-sorted.
	ord := make([]int32, 0, len(sets)-st.Empty)
	for i, s := range sets {
		if len(s) > 0 {
			ord = append(ord, int32(i))
		}
	}
	slices.SortStableFunc(ord, func(a, b int32) int { return len(sets[a]) - len(sets[b]) })
	j.ord = ord
	j.off = make([]int, len(ord)+1)
	j.rec = make([]uint32, 0, st.Tokens)
	for s, i := range ord {
		start := len(j.rec)
		for _, h := range sets[i] {
			j.rec = append(j.rec, rank[g.find(distinct, h)])
		}
		slices.Sort(j.rec[start:])
		j.off[s+1] = len(j.rec)
	}

	// Size the inverted index: one posting per indexing-prefix token that
	// some other set also has.
	nr := st.Distinct - int(j.n1)
	j.start = make([]int, nr+1)
	for s := range ord {
		x := j.set(s)
		for _, r := range x[:j.indexLen(len(x))] {
			if r >= j.n1 {
				j.start[r-j.n1+1]++
			}
		}
	}
	for r := 1; r <= nr; r++ {
		j.start[r] += j.start[r-1]
	}
	j.post = make([]posting, j.start[nr])
	j.fill = make([]int32, nr)
	j.head = make([]int32, nr)
	j.count = make([]int32, len(ord))
	j.lastI = make([]int32, len(ord))
	j.lastJ = make([]int32, len(ord))
	return j
}

func (j *joiner) set(s int) []uint32 { return j.rec[j.off[s]:j.off[s+1]] }

func (j *joiner) size(s int32) int { return j.off[s+1] - j.off[s] }

func (j *joiner) run(emit func(i, k int, sim float64)) {
	for s := range j.ord {
		x := j.set(s)
		lx := len(x)
		minLen := j.minLen(lx)
		pl, il := j.probeLen(lx), j.indexLen(lx)
		for i := 0; i < pl; i++ {
			if x[i] < j.n1 {
				continue // no other set has this token
			}
			r := x[i] - j.n1
			base := j.start[r]
			lst := j.post[base : base+int(j.fill[r])]
			h := int(j.head[r])
			for h < len(lst) && j.size(lst[h].set) < minLen {
				h++
			}
			j.head[r] = int32(h)
			for _, p := range lst[h:] {
				j.st.Probed++
				y := p.set
				c := j.count[y]
				if c < 0 {
					continue
				}
				ly := j.size(y)
				ub := 1 + min(lx-i-1, ly-int(p.pos)-1)
				if c == 0 {
					j.cands = append(j.cands, y)
				}
				if int(c)+ub >= j.overlap(lx, ly) {
					j.count[y] = c + 1
					j.lastI[y] = int32(i)
					j.lastJ[y] = p.pos
				} else {
					j.count[y] = -1
				}
			}
			if i < il {
				j.post[base+int(j.fill[r])] = posting{int32(s), int32(i)}
				j.fill[r]++
				j.st.Indexed++
			}
		}
		j.verify(s, x, emit)
	}
}

// verify checks the candidates of set s and resets their state.
func (j *joiner) verify(s int, x []uint32, emit func(i, k int, sim float64)) {
	lx := len(x)
	for _, y := range j.cands {
		c := int(j.count[y])
		j.count[y] = 0
		if c <= 0 {
			continue
		}
		j.st.Candidates++
		yr := j.set(int(y))
		ly := len(yr)
		need := j.overlap(lx, ly)
		a, b := x[j.lastI[y]+1:], yr[j.lastJ[y]+1:]
		o := c
		ia, ib := 0, 0
		for ia < len(a) && ib < len(b) {
			if o+min(len(a)-ia, len(b)-ib) < need {
				break
			}
			switch {
			case a[ia] < b[ib]:
				ia++
			case a[ia] > b[ib]:
				ib++
			default:
				o++
				ia++
				ib++
			}
		}
		if o < need {
			continue
		}
		sim := float64(o) / float64(lx+ly-o)
		if sim >= j.t {
			p, q := int(j.ord[s]), int(j.ord[y])
			if p > q {
				p, q = q, p
			}
			emit(p, q, sim)
			j.st.Pairs++
		}
	}
	j.cands = j.cands[:0]
}

// guide is a lookup table over the top bits of sorted hashes: the hashes
// whose top bits are b are d[start[b]:start[b+1]]. With about 8 hashes per
// slot, finding a hash costs one or two cache misses instead of the log₂ n
// of a binary search over the whole array. Hashes that are not uniform
// only make the slots uneven; the search stays correct.
type guide struct {
	shift uint
	start []uint32
}

func newGuide(d []uint64) guide {
	bits := 1
	for 1<<bits < len(d)/8 && bits < 30 {
		bits++
	}
	g := guide{shift: 64 - uint(bits), start: make([]uint32, 1<<bits+1)}
	k := 0
	for b := range g.start {
		for k < len(d) && d[k]>>g.shift < uint64(b) {
			k++
		}
		g.start[b] = uint32(k)
	}
	return g
}

// find returns the index of h, which must be present, in d.
func (g *guide) find(d []uint64, h uint64) int {
	b := h >> g.shift
	lo, hi := int(g.start[b]), int(g.start[b+1])
	if hi-lo > 16 {
		k, _ := slices.BinarySearch(d[lo:hi], h)
		return lo + k
	}
	for k := lo; k < hi; k++ { // a slot holds 8 hashes on average
		if d[k] >= h {
			return k
		}
	}
	return hi
}
