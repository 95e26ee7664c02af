package simhash

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"strings"

	"github.com/neardup/neardup/internal/mix"
)

// ErrDistance is returned for a Hamming distance below 0 or at or above the
// number of bits (every fingerprint would be within it).
var ErrDistance = errors.New("simhash: distance must be at least 0 and below the number of bits")

// ErrDuplicateID is returned by Index.Insert for an id already in the index.
var ErrDuplicateID = errors.New("simhash: id already in the index")

// DefaultMaxTables bounds the number of tables ChooseDesign considers when
// DesignOptions.MaxTables is zero.
const DefaultMaxTables = 256

// DefaultExpectedN is the corpus size an Index is designed for when
// DesignOptions.N is zero.
const DefaultExpectedN = 1 << 20

// Relative costs of the design's cost model: a table lookup (a map probe
// for Index, a share of the radix sort for AllPairs) against checking one
// candidate (a popcount and a block test).
const (
	lookupCostIndex = 8
	lookupCostBatch = 4
)

// DesignOptions configures ChooseDesign, NewIndex and AllPairs. The zero
// value means: chosen for DefaultExpectedN fingerprints (AllPairs: the
// batch size), at most DefaultMaxTables tables.
type DesignOptions struct {
	// N is the expected number of fingerprints; 0 means DefaultExpectedN
	// (AllPairs always uses the batch size).
	N int
	// MaxTables bounds the number of tables; 0 means DefaultMaxTables.
	// Memory grows with it: an Index holds every id once per table.
	MaxTables int
	// Blocks forces the number of blocks (more than the distance); 0 means
	// chosen by the cost model.
	Blocks int
	// MaxCandidates, when positive, replaces the cost model: the design is
	// the one with the fewest tables whose expected candidates per probe
	// are at most MaxCandidates, or, when no design within MaxTables
	// reaches it, the one with the fewest candidates.
	MaxCandidates float64
}

// Design is a permuted-table layout: the f bits are cut into Blocks
// contiguous blocks (sizes differing by at most one bit, the larger ones
// first, from bit 0 up), and each of the Tables = C(Blocks, KeyBlocks)
// choices of KeyBlocks = Blocks - Distance blocks is the key of one table.
type Design struct {
	Bits, Distance int
	Blocks         int
	KeyBlocks      int
	Tables         int
	// KeyBits is the shortest key, in bits (the KeyBlocks smallest blocks).
	KeyBits int
	// N is the number of fingerprints the design was chosen for.
	N int
	// Candidates is the expected number of candidates a probe checks
	// among N uniformly random fingerprints: Σ over tables of N / 2^keybits.
	Candidates float64
	// Batch tells whether the design was chosen for AllPairs.
	Batch bool
}

// String describes the design, for summaries and logs.
func (d Design) String() string {
	sizes := blockSizes(d.Bits, d.Blocks)
	var sb strings.Builder
	for i, s := range sizes {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprint(&sb, s)
	}
	return fmt.Sprintf("f=%d k=%d: %d blocks (%s bits), %d tables keyed by %d blocks (keys >= %d bits), %.3g expected candidates per probe at N=%d",
		d.Bits, d.Distance, d.Blocks, sb.String(), d.Tables, d.KeyBlocks, d.KeyBits, d.Candidates, d.N)
}

func blockSizes(f, b int) []int {
	s := make([]int, b)
	for i := range s {
		s[i] = f / b
		if i < f%b {
			s[i]++
		}
	}
	return s
}

// expectedCandidates is Σ over the C(b, kb) tables of (n-1) / 2^keybits,
// the expected candidates of a probe among n random fingerprints, in
// closed form: blocks have two sizes (f mod b blocks of ceil(f/b) bits,
// the rest floor(f/b)), so the tables are counted by how many large blocks
// their key takes (O(b), where enumerating the tables is O(C(b, kb))).
func expectedCandidates(n, f, b, kb int) float64 {
	large, small := f%b, b-f%b
	lo, hi := f/b+1, f/b
	sum := 0.0
	for j := max(0, kb-small); j <= min(large, kb); j++ {
		keyBits := j*lo + (kb-j)*hi
		sum += binomialFloat(large, j) * binomialFloat(small, kb-j) / math.Exp2(float64(keyBits))
	}
	return float64(max(n-1, 0)) * sum
}

// binomialFloat returns C(n, r) as a float64 (no saturation).
func binomialFloat(n, r int) float64 {
	if r < 0 || r > n {
		return 0
	}
	r = min(r, n-r)
	c := 1.0
	for i := 1; i <= r; i++ {
		c = c * float64(n-r+i) / float64(i)
	}
	return c
}

// binomial returns C(n, r), saturating at math.MaxInt32 (exact below it:
// every partial product of binomialFloat is an integer below 2^53).
func binomial(n, r int) int {
	return int(min(binomialFloat(n, r), math.MaxInt32))
}

// combinations calls f with every r-subset of 0..n-1 as a bitmask, in
// lexicographic order of the sorted index lists.
func combinations(n, r int, f func(mask uint64)) {
	idx := make([]int, r)
	for i := range idx {
		idx[i] = i
	}
	for {
		var m uint64
		for _, i := range idx {
			m |= 1 << uint(i)
		}
		f(m)
		i := r - 1
		for i >= 0 && idx[i] == n-r+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < r; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

// ChooseDesign returns the table design for n fingerprints of f bits and
// distance k: the number of blocks b > k (C(b, k) tables, at most
// MaxTables) that minimises the expected cost of a probe, tables × lookup
// cost + expected candidates; batch selects the cost model of AllPairs
// (one radix sort per table) rather than that of Index (a map probe per
// table). opts.MaxCandidates bounds the expected candidates per probe
// instead; opts.Blocks forces b (an error when C(b, k) exceeds MaxTables);
// opts.N is ignored.
func ChooseDesign(n, f, k int, batch bool, opts DesignOptions) (Design, error) {
	if f < 1 || f > MaxBits {
		return Design{}, fmt.Errorf("%w (got %d)", ErrBits, f)
	}
	if k < 0 || k >= f {
		return Design{}, fmt.Errorf("%w (got distance %d for %d bits)", ErrDistance, k, f)
	}
	maxT := opts.MaxTables
	if maxT <= 0 {
		maxT = DefaultMaxTables
	}
	minB := k + 1
	if f > 64 {
		minB = max(minB, 2) // blocks are at most 64 bits
	}
	eval := func(b int) Design {
		d := Design{Bits: f, Distance: k, Blocks: b, KeyBlocks: b - k, Tables: binomial(b, k), N: n, Batch: batch}
		sizes := blockSizes(f, b)
		d.KeyBits = 0
		for i := b - d.KeyBlocks; i < b; i++ { // the smallest blocks are last
			d.KeyBits += sizes[i]
		}
		d.Candidates = expectedCandidates(n, f, b, d.KeyBlocks)
		return d
	}
	if opts.Blocks != 0 {
		b := opts.Blocks
		if b < minB || b > min(f, 64) {
			return Design{}, fmt.Errorf("simhash: %d blocks for %d bits and distance %d: want %d to %d", b, f, k, minB, min(f, 64))
		}
		if t := binomial(b, k); t > maxT {
			return Design{}, fmt.Errorf("simhash: %d blocks for distance %d make C(%d, %d) = %d tables, more than MaxTables (%d)", b, k, b, k, t, maxT)
		}
		return eval(b), nil
	}
	if opts.MaxCandidates > 0 {
		var best Design
		for b := minB; b <= min(f, 64); b++ {
			if binomial(b, k) > maxT && b > minB {
				break
			}
			d := eval(b)
			if d.Candidates <= opts.MaxCandidates {
				return d, nil // C(b, k) grows with b: the fewest tables
			}
			if b == minB || d.Candidates < best.Candidates {
				best = d
			}
		}
		return best, nil
	}
	lookup, candCost := float64(lookupCostIndex), 1.0
	if batch {
		lookup, candCost = lookupCostBatch, 0.5
	}
	var best Design
	bestCost := math.Inf(1)
	for b := minB; b <= min(f, 64); b++ {
		t := binomial(b, k)
		if t > maxT && b > minB {
			break // C(b, k) grows with b
		}
		d := eval(b)
		cost := float64(d.Tables)*lookup + d.Candidates*candCost
		if cost < bestCost {
			best, bestCost = d, cost
		}
	}
	return best, nil
}

// layout is a design made concrete: block masks and table keys.
type layout struct {
	d          Design
	blockMask  []Fingerprint
	blockOf    [MaxBits]uint8
	tables     []tableKey
	allBlocks  uint64
	fpMask     Fingerprint
	keyBytes   int // bytes of a table key that vary (radix passes)
	hashedKeys bool
}

// tableKey extracts one table's key.
type tableKey struct {
	blocks uint64    // bitmask of the key blocks
	parts  []keyPart // the blocks, in order
	mask   Fingerprint
	bits   int
}

type keyPart struct{ start, size uint8 }

func newLayout(d Design) *layout {
	l := &layout{d: d, fpMask: maskOf(d.Bits)}
	sizes := blockSizes(d.Bits, d.Blocks)
	starts := make([]int, d.Blocks)
	pos := 0
	for i, s := range sizes {
		starts[i] = pos
		var m Fingerprint
		for bit := pos; bit < pos+s; bit++ {
			l.blockOf[bit] = uint8(i)
			if bit >= 64 {
				m.Hi |= 1 << uint(bit-64)
			} else {
				m.Lo |= 1 << uint(bit)
			}
		}
		l.blockMask = append(l.blockMask, m)
		pos += s
	}
	l.allBlocks = 1<<uint(d.Blocks) - 1
	if d.Blocks == 64 {
		l.allBlocks = ^uint64(0)
	}
	maxKeyBits := 0
	combinations(d.Blocks, d.KeyBlocks, func(bm uint64) {
		t := tableKey{blocks: bm}
		for x := bm; x != 0; x &= x - 1 {
			i := bits.TrailingZeros64(x)
			t.parts = append(t.parts, keyPart{uint8(starts[i]), uint8(sizes[i])})
			t.mask.Hi |= l.blockMask[i].Hi
			t.mask.Lo |= l.blockMask[i].Lo
			t.bits += sizes[i]
		}
		maxKeyBits = max(maxKeyBits, t.bits)
		l.tables = append(l.tables, t)
	})
	l.hashedKeys = maxKeyBits > 64
	l.keyBytes = 8
	if !l.hashedKeys {
		l.keyBytes = (maxKeyBits + 7) / 8
	}
	return l
}

// extract returns size bits of fp from bit start (size <= 64).
func extract(fp Fingerprint, start, size uint) uint64 {
	var v uint64
	switch {
	case start >= 64:
		v = fp.Hi >> (start - 64)
	case start+size <= 64:
		v = fp.Lo >> start
	default:
		v = fp.Lo>>start | fp.Hi<<(64-start)
	}
	if size < 64 {
		v &= 1<<size - 1
	}
	return v
}

// key returns table t's key of fp: the key blocks concatenated, or, when
// they are longer than 64 bits, mixed into 64 bits (equal blocks give equal
// keys either way; a collision only adds a candidate, which is checked).
func (l *layout) key(t *tableKey, fp Fingerprint) uint64 {
	var k uint64
	if !l.hashedKeys {
		for _, p := range t.parts {
			k = k<<p.size | extract(fp, uint(p.start), uint(p.size))
		}
		return k
	}
	for _, p := range t.parts {
		k = mix.Fmix64(k ^ extract(fp, uint(p.start), uint(p.size)) + 0x9e3779b97f4a7c15)
	}
	return k
}

// firstTable returns the bitmask of key blocks of the first table (in table
// order) whose key a and b share, given that they are within the design's
// distance; each pair is reported by that table only.
func (l *layout) firstTable(a, b Fingerprint) uint64 {
	var diff uint64
	for x := a.Lo ^ b.Lo; x != 0; x &= x - 1 {
		diff |= 1 << l.blockOf[bits.TrailingZeros64(x)]
	}
	for x := a.Hi ^ b.Hi; x != 0; x &= x - 1 {
		diff |= 1 << l.blockOf[64+bits.TrailingZeros64(x)]
	}
	same := l.allBlocks &^ diff
	var first uint64
	for i := 0; i < l.d.KeyBlocks && same != 0; i++ {
		low := same & -same
		first |= low
		same ^= low
	}
	return first
}

// Match is a fingerprint found by Index.Query.
type Match struct {
	ID       int
	Distance int
}

// Index finds the fingerprints within a fixed Hamming distance of a query,
// exactly, with a permuted-table design (see the package comment). Each
// table maps a key to a chain of slots; an id takes one slot and appears
// once per table. Not safe for concurrent use.
type Index struct {
	l      *layout
	heads  []map[uint64]int32 // per table: key → first slot of the chain
	next   [][]int32          // per table, per slot: next slot, or -1
	fps    []Fingerprint      // per slot
	ids    []int              // per slot
	slotOf map[int]int32
	free   []int32
}

// NewIndex returns an empty index for fingerprints of f bits and distance
// k, with the design ChooseDesign picks for opts.N (default
// DefaultExpectedN) fingerprints.
func NewIndex(f, k int, opts DesignOptions) (*Index, error) {
	n := opts.N
	if n <= 0 {
		n = DefaultExpectedN
	}
	d, err := ChooseDesign(n, f, k, false, opts)
	if err != nil {
		return nil, err
	}
	x := &Index{l: newLayout(d), slotOf: make(map[int]int32)}
	x.heads = make([]map[uint64]int32, d.Tables)
	x.next = make([][]int32, d.Tables)
	for t := range x.heads {
		x.heads[t] = make(map[uint64]int32)
	}
	return x, nil
}

// Design returns the index's design.
func (x *Index) Design() Design { return x.l.d }

// Len returns the number of fingerprints in the index.
func (x *Index) Len() int { return len(x.slotOf) }

// Insert adds fp under id. Bits of fp above the design's size are ignored.
// An id already present is refused with ErrDuplicateID.
func (x *Index) Insert(id int, fp Fingerprint) error {
	if _, ok := x.slotOf[id]; ok {
		return fmt.Errorf("%w: %d", ErrDuplicateID, id)
	}
	fp.Hi &= x.l.fpMask.Hi
	fp.Lo &= x.l.fpMask.Lo
	var s int32
	if n := len(x.free); n > 0 {
		s = x.free[n-1]
		x.free = x.free[:n-1]
		x.fps[s], x.ids[s] = fp, id
	} else {
		if len(x.fps) >= math.MaxInt32 {
			return errors.New("simhash: index full (2^31-1 fingerprints)")
		}
		s = int32(len(x.fps))
		x.fps = append(x.fps, fp)
		x.ids = append(x.ids, id)
		for t := range x.next {
			x.next[t] = append(x.next[t], -1)
		}
	}
	x.slotOf[id] = s
	for t := range x.l.tables {
		k := x.l.key(&x.l.tables[t], fp)
		if h, ok := x.heads[t][k]; ok {
			x.next[t][s] = h
		} else {
			x.next[t][s] = -1
		}
		x.heads[t][k] = s
	}
	return nil
}

// Remove deletes id and reports whether it was present.
func (x *Index) Remove(id int) bool {
	s, ok := x.slotOf[id]
	if !ok {
		return false
	}
	fp := x.fps[s]
	for t := range x.l.tables {
		k := x.l.key(&x.l.tables[t], fp)
		h := x.heads[t][k]
		nx := x.next[t]
		if h == s {
			if nx[s] < 0 {
				delete(x.heads[t], k)
			} else {
				x.heads[t][k] = nx[s]
			}
		} else {
			for p := h; p >= 0; p = nx[p] {
				if nx[p] == s {
					nx[p] = nx[s]
					break
				}
			}
		}
		nx[s] = -1
	}
	delete(x.slotOf, id)
	x.free = append(x.free, s)
	return true
}

// Query appends to dst every fingerprint within the design's distance of
// fp, each once, with its distance, and returns dst. The order is
// deterministic (table by table, newest first within a bucket) but
// otherwise unspecified. It allocates only to grow dst.
func (x *Index) Query(fp Fingerprint, dst []Match) []Match {
	l := x.l
	fp.Hi &= l.fpMask.Hi
	fp.Lo &= l.fpMask.Lo
	k := l.d.Distance
	for t := range l.tables {
		tk := &l.tables[t]
		s, ok := x.heads[t][l.key(tk, fp)]
		if !ok {
			continue
		}
		nx := x.next[t]
		for ; s >= 0; s = nx[s] {
			c := x.fps[s]
			d := fp.Distance(c)
			if d > k || l.firstTable(fp, c) != tk.blocks {
				continue
			}
			dst = append(dst, Match{ID: x.ids[s], Distance: d})
		}
	}
	return dst
}

// AllPairs calls emit(i, j, d) once for every pair i < j of fps within
// Hamming distance k (d is the distance), exactly the pairs of a linear
// scan, in no particular order. Identical fingerprints are grouped first,
// so n copies of one fingerprint cost one entry per table (their n(n-1)/2
// pairs are still emitted). Then each table of the design (chosen for
// len(fps) by the batch cost model) is built and radix-sorted in turn, and
// each bucket searched: memory is linear in len(fps) whatever the number
// of tables. Bits of the fingerprints above f are ignored. It returns the
// design used.
func AllPairs(fps []Fingerprint, f, k int, opts DesignOptions, emit func(i, j, d int)) (Design, error) {
	return allPairs(fps, f, k, opts,
		func(g []int32) {
			for a := 0; a < len(g); a++ {
				for b := a + 1; b < len(g); b++ {
					emit(int(g[a]), int(g[b]), 0) // g is sorted by index
				}
			}
		},
		func(gu, gv []int32, d int) {
			for _, i := range gu {
				for _, j := range gv {
					emit(int(min(i, j)), int(max(i, j)), d)
				}
			}
		})
}

// AllPairsGrouped is AllPairs with the output kept linear in the number of
// distinct fingerprints: same(first, i) for every i whose fingerprint
// equals that of an earlier first (the earliest one), and near(a, b, d)
// once per pair of distinct fingerprints within k, between the earliest
// indexes having them (a < b). The pairs of AllPairs follow by
// transitivity: every copy of a fingerprint is at the same distance.
func AllPairsGrouped(fps []Fingerprint, f, k int, opts DesignOptions, same func(first, i int), near func(a, b, d int)) (Design, error) {
	return allPairs(fps, f, k, opts,
		func(g []int32) {
			for _, i := range g[1:] {
				same(int(g[0]), int(i))
			}
		},
		func(gu, gv []int32, d int) {
			near(int(min(gu[0], gv[0])), int(max(gu[0], gv[0])), d)
		})
}

// PairOrder returns a function that says where AllPairs and
// AllPairsGrouped, run with a design of d's blocks, report a pair of
// distinct fingerprints a and b within d's distance: the table that
// reports it (tables are searched in order, after the groups of identical
// fingerprints), the pair's key in that table (its buckets are searched
// in ascending key order; in a bucket, fingerprints in ascending order, Hi
// then Lo) and the key's length in bits (64 for keys longer than 64 bits,
// which are hashed). The staged pipeline uses it to merge the pairs of
// disjoint sets of fingerprints in the order of one call over all of them.
// The returned function is safe for concurrent use.
func (d Design) PairOrder() func(a, b Fingerprint) (table int, key uint64, keyBits int) {
	l := newLayout(d)
	index := make(map[uint64]int, len(l.tables))
	for t := range l.tables {
		index[l.tables[t].blocks] = t
	}
	return func(a, b Fingerprint) (int, uint64, int) {
		a.Hi, a.Lo = a.Hi&l.fpMask.Hi, a.Lo&l.fpMask.Lo
		b.Hi, b.Lo = b.Hi&l.fpMask.Hi, b.Lo&l.fpMask.Lo
		t := index[l.firstTable(a, b)]
		tk := &l.tables[t]
		bits := tk.bits
		if l.hashedKeys {
			bits = 64
		}
		return t, l.key(tk, a), bits
	}
}

// allPairs groups identical fingerprints (onGroup gets every group of two
// or more, indexes increasing) and reports every pair of distinct
// fingerprints within k once (onNear gets their groups).
func allPairs(fps []Fingerprint, f, k int, opts DesignOptions, onGroup func(g []int32), onNear func(gu, gv []int32, d int)) (Design, error) {
	if len(fps) > math.MaxInt32 {
		return Design{}, errors.New("simhash: AllPairs: more than 2^31-1 fingerprints")
	}
	d, err := ChooseDesign(len(fps), f, k, true, opts)
	if err != nil {
		return Design{}, err
	}
	l := newLayout(d)
	mask := l.fpMask

	// Group identical fingerprints: order holds the input indexes sorted
	// by fingerprint, then index (a stable radix sort); group u is
	// order[start[u]:start[u+1]].
	byFP := make([]fpEntry, len(fps))
	for i, fp := range fps {
		byFP[i] = fpEntry{Fingerprint{fp.Hi & mask.Hi, fp.Lo & mask.Lo}, int32(i)}
	}
	byFP = radixSortFP(byFP, make([]fpEntry, len(fps)))
	order := make([]int32, len(fps))
	var uniq []Fingerprint
	var start []int32
	for p, e := range byFP {
		order[p] = e.i
		if p == 0 || e.fp != uniq[len(uniq)-1] {
			uniq = append(uniq, e.fp)
			start = append(start, int32(p))
		}
	}
	byFP = nil
	start = append(start, int32(len(order)))
	group := func(u uint32) []int32 { return order[start[u]:start[u+1]] }
	for u := range uniq {
		if g := group(uint32(u)); len(g) > 1 {
			onGroup(g)
		}
	}

	ents := make([]entry, len(uniq))
	tmp := make([]entry, len(uniq))
	for t := range l.tables {
		tk := &l.tables[t]
		for u, fp := range uniq {
			ents[u] = entry{key: l.key(tk, fp), u: uint32(u)}
		}
		sorted := radixSort(ents, tmp, l.keyBytes)
		for lo := 0; lo < len(sorted); {
			hi := lo + 1
			for hi < len(sorted) && sorted[hi].key == sorted[lo].key {
				hi++
			}
			for p := lo; p < hi; p++ {
				a := uniq[sorted[p].u]
				for q := p + 1; q < hi; q++ {
					b := uniq[sorted[q].u]
					dist := a.Distance(b)
					if dist > k || l.firstTable(a, b) != tk.blocks {
						continue
					}
					onNear(group(sorted[p].u), group(sorted[q].u), dist)
				}
			}
			lo = hi
		}
	}
	return d, nil
}

type fpEntry struct {
	fp Fingerprint
	i  int32
}

// radixSortFP sorts a by fingerprint (Hi, then Lo), stably, using tmp
// (len(a)) as scratch, and returns the sorted slice (a or tmp).
func radixSortFP(a, tmp []fpEntry) []fpEntry {
	var count [256]int
	for pass := 0; pass < 16; pass++ {
		shift := uint(8 * (pass % 8))
		byteOf := func(e *fpEntry) uint64 {
			if pass < 8 {
				return e.fp.Lo >> shift & 0xff
			}
			return e.fp.Hi >> shift & 0xff
		}
		count = [256]int{}
		for i := range a {
			count[byteOf(&a[i])]++
		}
		if len(a) == 0 || count[byteOf(&a[0])] == len(a) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for i := range a {
			b := byteOf(&a[i])
			tmp[count[b]] = a[i]
			count[b]++
		}
		a, tmp = tmp, a
	}
	return a
}

type entry struct {
	key uint64
	u   uint32
}

// radixSort sorts a by key on its lowest nbytes bytes (LSD, one pass per
// byte, skipping bytes that are equal everywhere), using tmp (len(a)) as
// scratch, and returns the sorted slice (a or tmp).
func radixSort(a, tmp []entry, nbytes int) []entry {
	var count [256]int
	for pass := 0; pass < nbytes; pass++ {
		shift := uint(8 * pass)
		count = [256]int{}
		for _, e := range a {
			count[e.key>>shift&0xff]++
		}
		if len(a) > 0 && count[a[0].key>>shift&0xff] == len(a) {
			continue
		}
		sum := 0
		for i, c := range count {
			count[i] = sum
			sum += c
		}
		for _, e := range a {
			b := e.key >> shift & 0xff
			tmp[count[b]] = e
			count[b]++
		}
		a, tmp = tmp, a
	}
	return a
}
