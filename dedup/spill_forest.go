package dedup

import (
	"cmp"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/neardup/neardup/simhash"
)

// The spill join's spanning pairs are the in-memory run's (issue 25).
//
// The streaming Finder adds the documents in input order and pairs
// document b with each earlier candidate a, in ascending order, that is
// not yet in b's cluster and matches. That is Kruskal's algorithm over the
// matching candidate pairs taken in the order (b, a): a pair is reported
// when it joins two clusters of the pairs before it in that order. The
// weights (b, a) are distinct, so the reported pairs are the unique
// minimum spanning forest of the matching pairs under them, whatever
// algorithm finds it; their order in the pairs file is the order (b, a).
// (The Finder does not insert a copy identical to an earlier document; a
// pair (copy, c) is then heavier than (original, c) and (original, copy)
// of the same cycle, so the forest is the same with or without such
// pairs. The component join replays the streaming Finder: the same.)
//
// The spill join meets the pairs bucket by bucket in key order, so it
// finds that forest in two steps:
//
//  1. Each bucket runs Kruskal over its members' pairs in the order (b,
//     a) with a union-find by position, and the matches it keeps go to
//     the calling goroutine (spillFinder.edges). A pair of the forest is
//     kept by every bucket that holds both documents (no lighter path
//     joins them anywhere, so none does inside a bucket), so the pairs
//     kept hold the forest.
//  2. Flush runs Kruskal over the pairs kept, in the order (b, a), and
//     reports those that join two clusters: the forest, in its order.
//
// A pair need not be tried when a path of lighter matching pairs is known
// to join its documents (it is the heaviest pair of a cycle: not in the
// forest). Without such a rule every bucket would try its pairs again,
// once per band that they share. The rule (spanning): best[b] is the
// least document found to match b so far, and up is a forest in which
// every document x points to a document before it, joined to x by
// matching pairs through documents no later than x; so two documents
// with one root in up are joined through documents before any later one.
// Pair (a, b) with best[b] < a and a in the tree of best[b] is then
// skipped: the path from a to best[b] goes through documents before b,
// and (best[b], b) is lighter than (a, b). The workers read and update
// best and up while others do (atomically): a lagging view skips fewer
// pairs, never a pair of the forest, so what is reported does not depend
// on the workers or the batches.

// spanning is the spill join's knowledge of the forest (see above).
type spanning struct {
	// best[b]: the least document found to match b among those before it;
	// b when none.
	best []int32
	// up.parent[x]: x when x is a root, else a document before x joined to
	// x by matching pairs through documents no later than x. Its find
	// halves the paths: a pointer moved to its grandparent still points to
	// a document joined to it through documents no later than it.
	up *cuf
}

func newSpanning(n int) *spanning {
	s := &spanning{best: make([]int32, n), up: newCUF(n)}
	for i := range s.best {
		s.best[i] = int32(i)
	}
	return s
}

// root returns the root of x in up.
func (s *spanning) root(x int32) int32 { return s.up.find(x) }

// matched records that a matches b (a < b) and returns best[b] after it.
func (s *spanning) matched(a, b int32) int32 {
	for {
		c := atomic.LoadInt32(&s.best[b])
		if c <= a {
			return c
		}
		if atomic.CompareAndSwapInt32(&s.best[b], c, a) {
			break
		}
	}
	// The root of a is joined to a through documents up to a, and a to b.
	atomic.StoreInt32(&s.up.parent[b], s.root(a))
	return a
}

// spillEdge is a matching pair that a bucket kept (A < B), as the
// calling goroutine holds it until Flush's Kruskal: 24 bytes, not a Pair's
// 40.
type spillEdge struct {
	b, a int32
	dist int32
	sim  float64
}

func (e spillEdge) weight() uint64 { return uint64(e.b)<<32 | uint64(e.a) }

// keep adds the pairs of a batch to the pairs kept, and replaces them by
// their forest when they have grown past edgesMax (the forest of the
// forest of some pairs and of others is the forest of all of them).
func (f *spillFinder) keep(pairs []Pair) {
	for _, p := range pairs {
		f.edges = append(f.edges, spillEdge{b: int32(p.B), a: int32(p.A), dist: int32(p.Distance), sim: p.Similarity})
	}
	if len(f.edges) >= f.edgesMax {
		f.edges = f.kruskal(f.edges, nil)
		f.edgesMax = max(2*len(f.edges), f.edgesMin(int64(unsafe.Sizeof(spillEdge{}))))
	}
}

// spillEdgesMin is the most pairs kept before they are replaced by their
// forest, whatever the budget (a variable: tests shrink it); the budget's
// sixteenth bounds them below it, down to spillEdgesLeast. Past the
// forest, which is held whole (a pair a document at most), the pairs kept
// take at most as much again. (1,048,576 simhash pairs of 64 bytes, and
// append's doubling of their slice, took 192 MB at once under --memory
// 256MB.)
var spillEdgesMin = 1 << 20

// spillEdgesLeast is the least number of pairs kept before they are
// replaced by their forest, however small the budget.
const spillEdgesLeast = 1 << 14

// edgesMin is the number of pairs of size bytes each kept before they are
// replaced by their forest, when it is small.
func (f *spillFinder) edgesMin(size int64) int {
	n := int(min(f.edgesBytes/size, int64(spillEdgesMin)))
	return max(n, min(spillEdgesLeast, spillEdgesMin))
}

// kruskal sorts edges in the order (b, a), drops the repeats (a pair that
// two buckets kept) and the pairs that join no two clusters of the pairs
// before them, and returns the rest (the forest, in edges' memory); emit,
// when not nil, gets each of them as a Pair.
func (f *spillFinder) kruskal(edges []spillEdge, emit func(Pair)) []spillEdge {
	return forestOf(f, edges, func(x, y spillEdge) int { return cmp.Compare(x.weight(), y.weight()) },
		func(e spillEdge) Pair {
			return Pair{A: int(e.a), B: int(e.b), Similarity: e.sim, Distance: int(e.dist), Hamming: f.hamming}
		}, emit)
}

// forestOf is Kruskal's algorithm over edges in the order compare, each
// the pair that pair makes of it: it sorts them, drops the repeats and the
// pairs that join no two clusters of the pairs before them, and returns
// the rest (in edges' memory); emit, when not nil, gets each of them.
//
// compare and pair take their edges by value: a pointer to a copy would
// make the compiler move every copy to the heap, two allocations a
// comparison (a third of the spill run's serial time at 1M).
func forestOf[E any](f *spillFinder, edges []E, compare func(x, y E) int, pair func(E) Pair, emit func(Pair)) []E {
	slices.SortFunc(edges, compare)
	f.resetKUF()
	out := edges[:0] // behind the reading: it never overtakes it
	var prev E
	for i := range edges {
		e := edges[i]
		if i > 0 && compare(e, prev) == 0 {
			continue
		}
		prev = e
		p := pair(e)
		if !f.kuf.union(int32(p.A), int32(p.B)) {
			continue
		}
		out = append(out, e)
		if emit != nil {
			emit(p)
		}
	}
	return out
}

// The spanning pairs of a method with a pair order of its own.
//
// simhash's in-memory Finder does not meet its pairs in input order: it
// reports them as simhash.AllPairsGrouped meets them (the copies of each
// fingerprint with its earliest document, fingerprints ascending; then,
// table by table of the design chosen for the sketched documents, bucket
// by ascending key, the pairs of distinct fingerprints within the
// distance, between their earliest documents, each once), and keeps a
// pair when it joins two clusters of those before it. That is Kruskal's
// algorithm again, over another order (simhash.Design.PairOrder), with
// the pairs of distinct fingerprints taken between their earliest
// documents. The spill join finds that forest the same way as the (b, a)
// one: each bucket keeps, for its members, the pairs AllPairsGrouped
// would report (every later copy of a fingerprint with the bucket's
// earliest document of it, which is the run's: copies share every key;
// each two of the bucket's distinct fingerprints within the distance,
// between their earliest documents), each with its place in the order
// (orderedEdge), and Flush runs Kruskal over them in that order. No pair
// is skipped early (the (b, a) rule holds only for input order), so a
// bucket costs what the in-memory Finder's buckets cost: its distinct
// fingerprints' pairs.
//
// With --verify the in-memory Finder keeps a pair only when the shingle
// sets of its two documents match, and checks the pairs AllPairsGrouped
// reports only: a copy with its fingerprint's earliest document, two
// distinct fingerprints between their earliest documents. A pair that
// fails joins nothing, so its forest is Kruskal's over the pairs that
// pass, in the same order. The spill join checks the same pairs, each in
// the bucket that keeps it (the sets are read from the sets' file,
// splitKeyed), and keeps those that pass. A pair of distinct
// fingerprints is checked lazily, as the in-memory Finder checks it: only
// when the bucket's pairs before it in the order that passed have not
// joined its documents (reduceOrdered). The bucket cannot know the pairs
// of other buckets, so it still checks some pairs that the in-memory
// Finder skips (200,000 near copies of one page: 911,383 checks against
// 309,143 in memory, and 18,500,801 when every pair within the distance
// was checked; docs/benchmarks.md, session 21).

// spanOrderer is a method whose spanning pairs follow its own order of
// the pairs (see above).
type spanOrderer interface {
	// ordersPairs reports whether this run's spanning pairs follow the
	// order (not simhash's --pairs-mode all or leader runs).
	ordersPairs() bool
	// pairOrder returns the order for a run of sketched documents (those
	// with a sketch).
	pairOrder(sketched int) (*pairOrder, error)
}

// spillKeyer is a Keyed method whose spill keys follow a table design
// chosen for the run's size, as its in-memory Finder's do, rather than
// AppendKeys' fixed one (simhash: AppendKeys keys by the Spec's design,
// chosen for an index of a million documents with the Index's cost
// model; its batch Finder chooses for the documents it has, with fewer
// tables below about half a million). The spill knows the size only from
// the plan's estimate (spillFinder.expect). Every design of the method
// finds the same pairs, each in at least one bucket; the pairs' order is
// the run's design's, chosen at Flush (pairOrder), whatever the keys.
type spillKeyer interface {
	// spillKeys returns the keys of a spill expected to sketch about n
	// documents (0 when unknown): one a table, in table order, safe to
	// call concurrently.
	spillKeys(n int64) (func(dst []uint64, s DocSketch) []uint64, error)
}

// pairOrder is a method's order of its pairs (simhash: AllPairsGrouped's).
type pairOrder struct {
	// fp is a sketch's fingerprint (its bits above the method's are zero).
	fp func(DocSketch) simhash.Fingerprint
	// where is the table that reports a pair of distinct fingerprints
	// within the distance, and its key there (simhash.Design.PairOrder).
	where func(a, b simhash.Fingerprint) (table int, key uint64, keyBits int)
	// distance is the largest Hamming distance of two fingerprints that
	// the method's matchCore accepts.
	distance int
}

// orderedEdge is a matching pair that a bucket kept, with its place in
// the method's order: (phase, table, key, fa, fb), then (b, a). Phase 0
// is a copy b of the fingerprint fa of its earliest document a (table,
// key and fb zero: copies in fingerprint order, then by b); phase 1 two
// distinct fingerprints fa < fb between their earliest documents a < b,
// first reported by table at key (one pair a place).
type orderedEdge struct {
	fa, fb simhash.Fingerprint
	key    uint64
	sim    float64
	b, a   int32
	dist   int32
	table  uint16
	phase  uint8
	// pending: a pair within the distance whose sets are not yet checked
	// (--verify; only inside groupOrdered, see reduceOrdered).
	pending bool
}

func compareFP(x, y simhash.Fingerprint) int {
	if c := cmp.Compare(x.Hi, y.Hi); c != 0 {
		return c
	}
	return cmp.Compare(x.Lo, y.Lo)
}

func compareOrdered(x, y orderedEdge) int {
	if c := cmp.Compare(x.phase, y.phase); c != 0 {
		return c
	}
	if c := cmp.Compare(x.table, y.table); c != 0 {
		return c
	}
	if c := cmp.Compare(x.key, y.key); c != 0 {
		return c
	}
	if c := compareFP(x.fa, y.fa); c != 0 {
		return c
	}
	if c := compareFP(x.fb, y.fb); c != 0 {
		return c
	}
	if c := cmp.Compare(x.b, y.b); c != 0 {
		return c
	}
	return cmp.Compare(x.a, y.a)
}

// groupOrdered appends to b.ordered the pairs that AllPairsGrouped would
// report for a bucket's members (decoded in j.sketches), with their
// places in the order (see above), that are not another bucket's to
// report: a pair is reported by the bucket of the first key (in the
// method's order of its keys, spillFinder.appendKeys) that its two documents
// share, the copies of a fingerprint by the bucket of its first key, so
// that the pairs kept are not repeated once a table. Under --verify, a
// pair is kept when the shingle sets of its two documents match (a copy's
// set is read for its one pair only).
func (j *joiner) groupOrdered(b *spillBatch, members []uint32, key uint64) error {
	f, sketches, o := j.f, j.sketches, j.f.order
	start := len(b.ordered)
	j.sets.reset(len(members))
	j.fps = j.fps[:0]
	j.byFP = j.byFP[:0]
	for k := range members {
		j.fps = append(j.fps, o.fp(sketches[k]))
		j.byFP = append(j.byFP, int32(k))
	}
	// Members by fingerprint, then position: each run of equal
	// fingerprints starts with its earliest document.
	slices.SortFunc(j.byFP, func(x, y int32) int {
		if c := compareFP(j.fps[x], j.fps[y]); c != 0 {
			return c
		}
		return cmp.Compare(x, y)
	})
	j.reps, j.repFPs, j.repKeys = j.reps[:0], j.repFPs[:0], j.repKeys[:0]
	nk := -1 // keys a document
	for s := 0; s < len(j.byFP); {
		first := j.byFP[s]
		at := len(j.repKeys)
		j.repKeys = f.appendKeys(j.repKeys, sketches[first])
		if nk < 0 {
			nk = len(j.repKeys)
		}
		mine := len(j.repKeys) > at && j.repKeys[at] == key
		e := s + 1
		for ; e < len(j.byFP) && j.fps[j.byFP[e]] == j.fps[first]; e++ {
			if !mine {
				continue
			}
			sim, _, ok, err := j.match(members, int(first), int(j.byFP[e]), true)
			if err != nil {
				return err
			}
			if ok {
				b.ordered = append(b.ordered, orderedEdge{fa: j.fps[first], sim: sim,
					b: int32(members[j.byFP[e]]), a: int32(members[first])})
			}
		}
		j.reps = append(j.reps, first)
		j.repFPs = append(j.repFPs, j.fps[first])
		s = e
	}
	// The distinct fingerprints' pairs, ascending fingerprints. Their
	// places in the order are not the bucket's (a pair's table and key
	// are those of the run's design, not of the spill's keys), so none
	// can be skipped as it is met (under --verify its sets are checked
	// later, when the bucket's pairs so far are sorted in the order:
	// reduceOrdered); but a bucket whose kept pairs pass a forest's
	// worth are replaced by their forest (reduceOrdered), so that a bucket
	// of many near copies holds a few times its members, not every
	// matching pair (quadratic in them: 200,000 near copies of one page
	// took 4.3 GB under the default budget, 2.2 GB under --memory 256MB).
	// A pair is first tried by its fingerprints' distance, from the
	// contiguous repFPs, and by its first shared key, before matchCore
	// (through the members' sketches, scattered on the heap): a bucket of
	// near copies has millions of pairs, most of them farther than the
	// distance or another bucket's (200,000 near copies of one page took
	// 61 CPU-s in matchCore alone, matchCore first).
	limit := start + max(2*len(members), groupOrderedMin)
	pending := 0 // the pairs kept unchecked since the last reduceOrdered
	j.checks, j.tried = 0, 0
	for p, x := range j.reps {
		fx := j.repFPs[p]
		kx := j.repKeys[p*nk : (p+1)*nk]
		for q := p + 1; q < len(j.reps); q++ {
			if fx.Distance(j.repFPs[q]) > o.distance {
				continue // matchCore rejects it
			}
			if k, shared := firstShared(kx, j.repKeys[q*nk:(q+1)*nk]); shared && k != key {
				continue
			}
			y := j.reps[q]
			sim, dist, ok, sure, err := j.matchCore(int(x), int(y))
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			// A pair that its sets decide (--verify) is kept unchecked
			// (pending): reduceOrdered checks it only when no lighter
			// pair of the bucket that passed joins its documents.
			t, key, _ := o.where(j.fps[x], j.fps[y])
			da, db := int32(members[x]), int32(members[y])
			b.ordered = append(b.ordered, orderedEdge{fa: j.fps[x], fb: j.fps[y], key: key, sim: sim,
				b: max(da, db), a: min(da, db), dist: int32(dist), table: uint16(t), phase: 1, pending: !sure})
			if !sure {
				pending++
				j.tried++
			}
			if len(b.ordered) >= limit {
				if err := j.reduceOrdered(b, start, members); err != nil {
					return err
				}
				pending = 0
				limit = max(len(b.ordered)+len(members), start+groupOrderedMin)
			}
		}
	}
	if pending > 0 || len(b.ordered)-start >= len(members) {
		if err := j.reduceOrdered(b, start, members); err != nil {
			return err
		}
	}
	if groupOrderedDone != nil {
		groupOrderedDone(len(members), len(b.ordered)-start, j.tried, j.checks)
	}
	return nil
}

// groupOrderedMin is the least number of pairs a bucket keeps before
// they are replaced by their forest (a variable: tests shrink it).
var groupOrderedMin = 1 << 14

// groupOrderedDone, when not nil, gets each bucket's members, the pairs
// it kept, and under --verify the pairs within the distance that only
// their sets decide (pending) and those whose sets it checked (a test's
// hook).
var groupOrderedDone func(members, kept, pending, checked int)

// reduceOrdered replaces the pairs that the bucket of members kept
// (b.ordered from start) by their forest in the method's order: a pair
// that joins no two clusters of those before it there is the heaviest of
// a cycle of the bucket's pairs, so of the run's too, and not in the
// run's forest (the forest of the forest of some pairs and of others is
// the forest of all of them).
//
// A pending pair (--verify: its sets not yet checked) is checked only
// when it would join two clusters, and dropped when its sets do not
// match. That is the in-memory Finder's rule (it checks a pair only when
// the pairs before it in the order have not joined its documents) applied
// to the bucket's pairs: every pair that joined its clusters before it
// here passed its check and is lighter, so if it passes too it is the
// heaviest of a cycle of matching pairs and not in the run's forest;
// whether it passes changes nothing. The check is skipped; the forest is
// the same. Pairs met in a later round of the bucket may be lighter than
// some checked in an earlier one: those were checked needlessly, which
// costs time only. (The pairs of distinct fingerprints come in the
// bucket's order, not the run's, so a pair cannot be skipped as it is
// met, only once the bucket's pairs so far are sorted: here.)
func (j *joiner) reduceOrdered(b *spillBatch, start int, members []uint32) error {
	edges := b.ordered[start:]
	slices.SortFunc(edges, compareOrdered)
	j.repUF = j.repUF[:0]
	for k := range members {
		j.repUF = append(j.repUF, int32(k))
	}
	place := func(d int32) int32 {
		k, ok := slices.BinarySearch(members, uint32(d))
		if !ok {
			panic("dedup: a bucket's pair of a document not in it")
		}
		return int32(k)
	}
	out := edges[:0]
	for _, e := range edges {
		pa, pb := place(e.a), place(e.b)
		ra, rb := findPlace(j.repUF, pa), findPlace(j.repUF, pb)
		if ra == rb {
			continue
		}
		if e.pending {
			j.checks++
			sim, ok, err := j.matchSets(members, int(pa), int(pb), false)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			e.sim, e.pending = sim, false
		}
		j.repUF[max(ra, rb)] = min(ra, rb)
		out = append(out, e)
	}
	b.ordered = b.ordered[:start+len(out)]
	return nil
}

// findPlace is the root of x in the union-find uf (each place points to
// one before it or to itself), halving the path on the way.
func findPlace(uf []int32, x int32) int32 {
	for uf[x] != x {
		uf[x] = uf[uf[x]]
		x = uf[x]
	}
	return x
}

// firstShared is the first of the keys x equal to y's at its place (the
// first table in which two documents share a bucket), or false.
func firstShared(x, y []uint64) (uint64, bool) {
	for i := range x {
		if x[i] == y[i] {
			return x[i], true
		}
	}
	return 0, false
}

// keepOrdered is keep for a method with an order of its own.
func (f *spillFinder) keepOrdered(pairs []orderedEdge) {
	f.ordered = append(f.ordered, pairs...)
	if len(f.ordered) >= f.edgesMax {
		f.ordered = f.kruskalOrdered(f.ordered, nil)
		f.edgesMax = max(2*len(f.ordered), f.edgesMin(int64(unsafe.Sizeof(orderedEdge{}))))
	}
}

// resetKUF makes f.kuf a union-find of every document apart.
func (f *spillFinder) resetKUF() {
	if f.kuf == nil {
		f.kuf = newCUF(len(f.offsets))
		return
	}
	for i := range f.kuf.parent {
		f.kuf.parent[i] = int32(i)
	}
}

// kruskalOrdered is kruskal for a method with an order of its own.
func (f *spillFinder) kruskalOrdered(edges []orderedEdge, emit func(Pair)) []orderedEdge {
	return forestOf(f, edges, compareOrdered, func(e orderedEdge) Pair {
		return Pair{A: int(e.a), B: int(e.b), Similarity: e.sim, Distance: int(e.dist), Hamming: f.hamming}
	}, emit)
}
