package dedup

import (
	"cmp"
	"slices"
	"sync/atomic"
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
		f.edgesMax = max(2*len(f.edges), spillEdgesMin)
	}
}

// spillEdgesMin is the least number of pairs kept before they are
// replaced by their forest (a variable: tests shrink it).
var spillEdgesMin = 1 << 20

// kruskal sorts edges in the order (b, a), drops the repeats (a pair that
// two buckets kept) and the pairs that join no two clusters of the pairs
// before them, and returns the rest (the forest, in edges' memory); emit,
// when not nil, gets each of them as a Pair.
func (f *spillFinder) kruskal(edges []spillEdge, emit func(Pair)) []spillEdge {
	slices.SortFunc(edges, func(x, y spillEdge) int { return cmp.Compare(x.weight(), y.weight()) })
	if f.kuf == nil {
		f.kuf = newCUF(len(f.offsets))
	} else {
		for i := range f.kuf.parent {
			f.kuf.parent[i] = int32(i)
		}
	}
	out := edges[:0] // behind the reading: it never overtakes it
	prev := ^uint64(0)
	for _, e := range edges {
		if e.weight() == prev {
			continue
		}
		prev = e.weight()
		if !f.kuf.union(e.a, e.b) {
			continue
		}
		out = append(out, e)
		if emit != nil {
			emit(Pair{A: int(e.a), B: int(e.b), Similarity: e.sim, Distance: int(e.dist), Hamming: f.hamming})
		}
	}
	return out
}
