package dedup

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/neardup/neardup/internal/extsort"
	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// The spill's sketch file is named sketchPrefix + owner + sketchSuffix
// (package internal/tempfile).
const (
	sketchPrefix = "neardup-sketches-"
	sketchSuffix = ".bin"
	// The copy of standard input that a second pass reads (stdin.go).
	stdinPrefix = "neardup-stdin-"
	stdinSuffix = ".spool"
)

// scratchFiles are the patterns of the names of the spill and scratch
// files (package internal/tempfile): sketches, copies of standard input,
// the minhash Finder's shingle sets and component records, the kept
// records' copy, sorted runs.
var scratchFiles = []tempfile.Pattern{
	{Prefix: sketchPrefix, Suffix: sketchSuffix},
	{Prefix: stdinPrefix, Suffix: stdinSuffix},
	{Prefix: setsPrefix, Suffix: setsSuffix},
	{Prefix: copyPrefix, Suffix: copySuffix},
	{Prefix: sigsPrefix, Suffix: sigsSuffix},
	extsort.Scratch,
}

// sweepSpill removes the spill and scratch files in dir that processes
// killed before they finished left behind.
func sweepSpill(dir string) (tempfile.Swept, error) {
	return tempfile.SweepAll(dir, scratchFiles...)
}

// SweepScratch removes the scratch files in dir ("" for the system's
// temporary directory) that Run or JoinComponents left behind in a process
// that was killed before it could remove them (out of memory, kill -9, a
// preempted machine), and returns their paths. Files are named after the
// process that owns them: those of a process that runs, and files that
// are not dedup's, are never touched. Run sweeps its Options.TmpDir
// itself; a program that calls JoinComponents in a process of its own (a
// Beam worker) calls SweepScratch when it starts. Only a directory that
// cannot be listed is an error.
func SweepScratch(dir string) ([]string, error) {
	s, err := sweepSpill(dir)
	return s.Names, err
}

// splitKeyed is a Keyed method whose sketches carry a shingle set that
// only some pairs need (minhash: the tiered join and --verify; simhash:
// --verify). The spill path then keeps the sets apart, in a setFile, and
// the rest of each sketch, much smaller, in the sketch file; a bucket's
// members are decoded without their sets, and a set is read only for a
// pair the rest cannot decide.
type splitKeyed interface {
	// appendCore appends the sketch without its set to dst and returns
	// the set (nil when none, in any order, not to be modified).
	appendCore(dst []byte, s DocSketch) ([]byte, []uint64)
	// decodeCore decodes appendCore's bytes, reusing the memory of
	// reuse (a sketch decodeCore returned, or nil).
	decodeCore(b []byte, reuse DocSketch) (DocSketch, error)
	// matchCore is Match without the sets, with the pair's distance as
	// Match gives it; sure is false when the pair is decided by
	// matchSets.
	matchCore(a, b DocSketch) (sim float64, dist int, ok, sure bool)
	// matchSets decides a pair by its sorted, distinct sets.
	matchSets(a, b []uint64) (float64, bool)
	// splitsSets reports whether appendCore returns sets in this run
	// (the memory plan counts their offsets).
	splitsSets() bool
	// keptCheck says how the in-memory Finder's CountBelow finds a
	// removed document not a near-duplicate of its kept one
	// (Stats.RemovedBelowThreshold), which the spill path's repeats:
	// byCore, matchCore rejects the pair (simhash: farther than the
	// distance); bySets, matchSets rejects their sets (minhash unless
	// --estimate-only, simhash --verify). Neither: the run has no count.
	keptCheck() (byCore, bySets bool)
}

// spillFinder finds pairs of a Keyed method by external sorting.
type spillFinder struct {
	m Keyed
	// appendKeys is the keys the spill sorts each document under:
	// m.AppendKeys, or a design chosen for the plan's estimate of the
	// documents (spillKeyer, expect).
	appendKeys func(dst []uint64, s DocSketch) []uint64
	split      splitKeyed // m, when its sets are kept apart
	sets       setFile    // with split
	all        bool       // Options.AllPairs: report pairs inside a cluster too
	sorter     *extsort.Sorter
	sketchF    *os.File
	sketchW    *asyncWriter // the sketch file's, behind the collector
	setsW      *asyncWriter // with split: the sets file's
	offsets    []int64      // offsets[i]: start of document i's sketch in the file
	lens       []uint32     // lens[i]: its length; 0 for a document without one
	size       int64
	keys       []uint64
	enc        []byte
	// batchBytes bounds the memory of the join's batches (spillBatch's
	// bytes): a quarter of the budget less the sort's buffer left at
	// Flush, at least spillBatchMin; the batches in flight on several
	// workers share it (flushParallel).
	batchBytes int64
	// readMax and gapMax: spillReadMax and spillGapMax (tests shrink them).
	readMax, gapMax int64
	// workers join the buckets (Flush); 0 or 1: the calling goroutine.
	workers int
	// serial is Flush's serial work by part (Stats.SerialParts): "spill
	// join" with one worker (all of it), else "spill union" (keeping the
	// batches' pairs; the merges of the sorted runs into batches run in
	// key ranges at once, not counted); then "spill forest" (the pairs
	// reported, from those kept).
	serial serialParts
	// The spanning pairs (spill_forest.go): what the join knows of them,
	// the matching pairs that the buckets kept, how many are kept before
	// they are replaced by their forest, and the union-find of that.
	span     *spanning
	edges    []spillEdge
	edgesMax int
	// edgesBytes is what the pairs kept may take before they are replaced
	// by their forest (a sixteenth of the budget).
	edgesBytes int64
	kuf        *cuf
	hamming    bool // the method's pairs have a Hamming similarity
	// With a method whose spanning pairs follow its own order (simhash:
	// spill_forest.go): the method, its order for this run (from Flush)
	// and the matching pairs kept, in place of span and edges.
	orderer spanOrderer
	order   *pairOrder
	ordered []orderedEdge
}

// newSpillFinder returns a spillFinder for a run whose heap may take
// budget (MemoryPlan.heapBudget: --memory less the runtime's share). The external sort's buffers and the join's batches take a
// quarter of it (the sort's first; at Flush, the batches what the entries
// left in the sort's buffer leave of it); the rest is for the pipeline's
// per-document arrays, its batches and the garbage collector's headroom
// (under a soft limit at the budget, a heap whose live part is near the
// limit is collected without end).
func newSpillFinder(m Keyed, dir string, budget int64) (*spillFinder, error) {
	f, err := tempfile.Create(dir, sketchPrefix, sketchSuffix)
	if err != nil {
		return nil, err
	}
	sf := &spillFinder{m: m, sorter: extsort.New(dir, budget/4), sketchF: f, sketchW: newAsyncWriter(f),
		batchBytes: max(budget/4, spillBatchMin),
		readMax:    spillReadMax, gapMax: spillGapMax}
	sf.appendKeys = m.AppendKeys
	sf.split = capabilitiesOf(m).split
	sf.hamming = capabilitiesOf(m).hamming
	sf.orderer = capabilitiesOf(m).pairOrder
	sf.edgesBytes = budget / 16
	sf.edgesMax = sf.edgesMin(int64(unsafe.Sizeof(spillEdge{})))
	sf.sets.dir = dir
	sf.sets.wrap = func(file *os.File) io.Writer {
		sf.setsW = newAsyncWriter(file)
		return sf.setsW
	}
	return sf, nil
}

// expect keys the spill for a run that the plan expects to sketch about
// n documents (MemoryPlan.EstimatedDocs; 0 when unknown), when the method
// keys by a design chosen for it (spillKeyer). Before the first Add. The
// estimate only chooses the tables: any design finds the same pairs, and
// their order is the run's (Flush), so a wrong one costs time only.
func (f *spillFinder) expect(n int64) error {
	k, ok := f.m.(spillKeyer)
	if !ok {
		return nil
	}
	if len(f.offsets) > 0 {
		return fmt.Errorf("spill finder: keys chosen after %d documents", len(f.offsets))
	}
	keys, err := k.spillKeys(n)
	if err != nil {
		return err
	}
	f.appendKeys = keys
	return nil
}

// setWorkers sets the goroutines that sort the last keys and join the
// buckets (Flush).
func (f *spillFinder) setWorkers(n int) {
	f.workers, f.sorter.Workers = n, n
}

func (f *spillFinder) Add(i int, s DocSketch, _ func(Pair)) error {
	if i != len(f.offsets) {
		return fmt.Errorf("spill finder: document %d added out of order", i)
	}
	f.offsets = append(f.offsets, f.size)
	if s == nil {
		f.lens = append(f.lens, 0)
		return nil
	}
	if f.split != nil {
		var set []uint64
		f.enc, set = f.split.appendCore(f.enc[:0], s)
		if len(set) > 0 {
			if err := f.sets.put(i, set); err != nil {
				return err
			}
		}
	} else {
		f.enc = f.m.AppendSketch(f.enc[:0], s)
	}
	f.lens = append(f.lens, uint32(len(f.enc)))
	n, err := f.sketchW.Write(f.enc)
	f.size += int64(n)
	if err != nil {
		return err
	}
	f.keys = f.appendKeys(f.keys[:0], s)
	for _, k := range f.keys {
		if err := f.sorter.Add(extsort.Entry{Key: k, Doc: uint32(i)}); err != nil {
			return err
		}
	}
	return nil
}

// The join reads the sketch file in batches of groups, not one pread a
// member: the groups that the merge yields (in key order, which is random
// in the file) are collected until their members' sketches fill the
// batch's share of the budget; the batch's members are then sorted by
// document and read in file order, neighbours coalesced into one read of
// at most spillReadMax bytes when the gap between them is under
// spillGapMax, and the groups are joined in their original order, so the
// pairs come out as one pread a member gave them.
const (
	spillReadMax = 1 << 20
	spillGapMax  = 8 << 10
	// spillBatchMin is the least batch, whatever the budget.
	spillBatchMin = 1 << 20
	// spillMemberBytes is what a bucket's member costs its batch beside
	// its sketch: its document in docs (4 bytes), its place in order (8)
	// and in at (8). A simhash fingerprint is 8 bytes: counting the
	// sketch alone let the batches hold 3.5 times their share.
	spillMemberBytes = 4 + 8 + 8
	// spillGroupBytes is what a bucket costs its batch: its end in ends
	// and its key in keys.
	spillGroupBytes = 8 + 8
	// spillLazyMemberBytes is what a member of a bucket joined lazily
	// costs beside the cache: its document in docs (4 bytes), its slot in
	// the cache (4), its place in the join's union-find (4), its root (4)
	// and its class's list (24 and 4).
	spillLazyMemberBytes = 4 + 4 + 4 + 4 + 28
)

// spillBatch is the groups collected for one read of the sketch file.
type spillBatch struct {
	docs []uint32 // the members of every group, flattened
	ends []int    // ends[g]: the end of group g in docs
	keys []uint64 // keys[g]: group g's key (with a method's own order)
	// bytes is the batch's memory: the members' sketch bytes (repeats
	// counted) and what each member and group costs beside them.
	bytes int64
	order []uint64 // scratch: doc<<32 | index in docs, sorted
	at    []int64  // at[k]: where docs[k]'s sketch starts in arena
	arena []byte   // the batch's sketches, each distinct document once
	win   []byte   // one coalesced read
	pairs []Pair   // the groups' matching pairs, in order (joiner.join)
	// ordered: with a method's own order, the pairs kept instead.
	ordered []orderedEdge
	// lazy: the batch is one bucket whose members are read on demand
	// (spill_lazy.go), into a cache of at most cache bytes.
	lazy  bool
	cache int64
}

func (b *spillBatch) reset() {
	b.docs, b.ends, b.keys, b.bytes, b.lazy = b.docs[:0], b.ends[:0], b.keys[:0], 0, false
}

// read loads the sketches of the batch's members into the arena, in file
// order.
func (f *spillFinder) read(b *spillBatch) error {
	if b.lazy {
		return nil // read by the join
	}
	b.order = b.order[:0]
	for k, d := range b.docs {
		b.order = append(b.order, uint64(d)<<32|uint64(k))
	}
	slices.Sort(b.order)
	b.at = slices.Grow(b.at[:0], len(b.docs))[:len(b.docs)]
	b.arena = b.arena[:0]
	var winAt, winEnd int64 // the file's bytes in win
	for x := 0; x < len(b.order); {
		d := uint32(b.order[x] >> 32)
		off, n := f.offsets[d], int64(f.lens[d])
		if off < winAt || off+n > winEnd {
			// Extend the read over the next documents while the gaps are
			// short and it stays under spillReadMax.
			end := off + n
			for y := x + 1; y < len(b.order); y++ {
				e := uint32(b.order[y] >> 32)
				if e == uint32(b.order[y-1]>>32) {
					continue
				}
				o := f.offsets[e]
				if o-end > f.gapMax || o+int64(f.lens[e])-off > f.readMax {
					break
				}
				end = o + int64(f.lens[e])
			}
			b.win = slices.Grow(b.win[:0], int(end-off))[:end-off]
			if _, err := f.sketchF.ReadAt(b.win, off); err != nil {
				return fmt.Errorf("reading the spilled sketch of document %d (%d bytes at offset %d of %s): %w",
					d, len(b.win), off, f.sketchF.Name(), err)
			}
			winAt, winEnd = off, end
		}
		at := int64(len(b.arena))
		b.arena = append(b.arena, b.win[off-winAt:off-winAt+n]...)
		for ; x < len(b.order) && uint32(b.order[x]>>32) == d; x++ {
			b.at[uint32(b.order[x])] = at
		}
	}
	return nil
}

// groupSetsKeep is the most bytes of sets that groupSets keeps from one
// bucket for the next to reuse.
const groupSetsKeep = 4 << 20

// groupSets holds the sets of a bucket's members that were read.
type groupSets struct {
	f       *spillFinder
	sc      sketch.HashSorter
	sets    [][]uint64
	held    int64 // the bytes of the sets' memory (grown since the last clear)
	read    []bool
	scratch []uint64 // getOnce's
}

func (g *groupSets) reset(n int) {
	if g.held > groupSetsKeep {
		// A bucket read many sets: let them go rather than keep their
		// memory for the buckets to come.
		clear(g.sets)
		g.held = 0
	}
	for len(g.sets) < n {
		g.sets = append(g.sets, nil)
		g.read = append(g.read, false)
	}
	clear(g.read[:n])
}

// get returns member k's (document d's) set, read once per bucket.
func (g *groupSets) get(k int, d uint32) ([]uint64, error) {
	if !g.read[k] {
		var err error
		c := cap(g.sets[k])
		if g.sets[k], err = g.f.sets.get(int(d), g.sets[k], &g.sc); err != nil {
			return nil, err
		}
		g.held += int64(8 * (cap(g.sets[k]) - c))
		g.read[k] = true
	}
	return g.sets[k], nil
}

// getOnce returns document d's set in scratch, valid until the next
// getOnce.
func (g *groupSets) getOnce(d uint32) ([]uint64, error) {
	var err error
	g.scratch, err = g.f.sets.get(int(d), g.scratch, &g.sc)
	return g.scratch, err
}

// joiner joins the groups of a batch in order; a worker has its own.
type joiner struct {
	f        *spillFinder
	sketches []DocSketch
	pool     []DocSketch
	sets     groupSets
	local    []int32 // the union-find of a group's members, by position
	roots    []int32 // scratch: the members' roots in span.up
	// groupClasses: each class's members (by its root), ascending, and
	// the roots of the classes so far.
	cls    [][]int32
	live   []int32
	merged []int32
	span   *spanning
	// With a method's own order (groupOrdered): the members'
	// fingerprints, their positions by fingerprint, the earliest of each.
	fps        []simhash.Fingerprint
	byFP, reps []int32
	repFPs     []simhash.Fingerprint // the fingerprint of each of reps
	repKeys    []uint64              // the keys of each of reps, in turn
	// repUF is a union-find over a bucket's members by place
	// (reduceOrdered).
	repUF []int32
	// checks and tried count the pairs whose sets a bucket checked and
	// those it could have (groupOrdered, for groupOrderedDone).
	checks, tried int
	// lazy holds the members of a bucket joined lazily (when active).
	lazy lazyMembers
}

// decode decodes the sketch of member k of the batch, reusing the memory
// of reuse when the sets are apart.
func (j *joiner) decode(b *spillBatch, k int, reuse DocSketch) (DocSketch, error) {
	f := j.f
	d := b.docs[k]
	return f.decodeSpilled(b.arena[b.at[k]:b.at[k]+int64(f.lens[d])], reuse, d)
}

// decodeSpilled decodes document d's sketch bytes from the sketch file,
// reusing the memory of reuse when the sets are apart.
func (f *spillFinder) decodeSpilled(raw []byte, reuse DocSketch, d uint32) (DocSketch, error) {
	var s DocSketch
	var err error
	if f.split != nil {
		s, err = f.split.decodeCore(raw, reuse)
	} else {
		s, err = f.m.DecodeSketch(raw)
	}
	if err != nil {
		return nil, fmt.Errorf("spilled sketch of document %d: %w", d, err)
	}
	return s, nil
}

// join joins the batch's groups, in the order they were added, into
// b.pairs.
func (j *joiner) join(b *spillBatch) error {
	b.pairs, b.ordered = b.pairs[:0], b.ordered[:0]
	if b.lazy {
		members := b.docs[:b.ends[0]]
		j.lazy.start(j.f, members, b.cache)
		defer j.lazy.release()
		return j.group(b, members)
	}
	start := 0
	for g, end := range b.ends {
		members := b.docs[start:end]
		j.sketches = j.sketches[:0]
		for k := range members {
			if k == len(j.pool) {
				j.pool = append(j.pool, nil)
			}
			s, err := j.decode(b, start+k, j.pool[k])
			if err != nil {
				return err
			}
			j.pool[k] = s
			j.sketches = append(j.sketches, s)
		}
		start = end
		if j.f.order != nil {
			if err := j.groupOrdered(b, members, b.keys[g]); err != nil {
				return err
			}
			continue
		}
		if err := j.group(b, members); err != nil {
			return err
		}
	}
	return nil
}

// matchCore is the method's matchCore for the bucket's members x and y
// (decoded in j.sketches, or read on demand when the bucket is joined
// lazily), or its Match, sure, when the sets are not apart.
func (j *joiner) matchCore(x, y int) (sim float64, dist int, ok, sure bool, err error) {
	var sa, sb DocSketch
	if j.lazy.active() {
		if sa, err = j.lazy.sketch(x, y); err == nil {
			sb, err = j.lazy.sketch(y, x)
		}
		if err != nil {
			return 0, 0, false, false, err
		}
	} else {
		sa, sb = j.sketches[x], j.sketches[y]
	}
	if j.f.split == nil {
		sim, dist, ok = j.f.m.Match(sa, sb)
		return sim, dist, ok, true, nil
	}
	sim, dist, ok, sure = j.f.split.matchCore(sa, sb)
	return sim, dist, ok, sure, nil
}

// match is Match for the bucket's members x and y: matchCore, and
// matchSets when it cannot decide.
func (j *joiner) match(members []uint32, x, y int, once bool) (sim float64, dist int, ok bool, err error) {
	sim, dist, ok, sure, err := j.matchCore(x, y)
	if err == nil && !sure {
		sim, ok, err = j.matchSets(members, x, y, once)
	}
	return sim, dist, ok, err
}

// matchSets decides a pair of the bucket's members that matchCore could
// not by their sets: x's read once a bucket, y's too unless once (a set
// that no other pair of the bucket needs, read into scratch).
func (j *joiner) matchSets(members []uint32, x, y int, once bool) (float64, bool, error) {
	if j.lazy.active() {
		a, err := j.lazy.set(x, y)
		if err != nil {
			return 0, false, err
		}
		b, err := j.lazy.set(y, x)
		if err != nil {
			return 0, false, err
		}
		sim, ok := j.f.split.matchSets(a, b)
		return sim, ok, nil
	}
	a, err := j.sets.get(x, members[x])
	if err != nil {
		return 0, false, err
	}
	var b []uint64
	if once {
		b, err = j.sets.getOnce(members[y])
	} else {
		b, err = j.sets.get(y, members[y])
	}
	if err != nil {
		return 0, false, err
	}
	sim, ok := j.f.split.matchSets(a, b)
	return sim, ok, nil
}

// find is the root of member k in the group's union-find.
func (j *joiner) find(k int32) int32 {
	for j.local[k] != k {
		j.local[k] = j.local[j.local[k]]
		k = j.local[k]
	}
	return k
}

// group tries the pairs of a bucket's members (decoded in j.sketches),
// ascending members in input order, in the order (b, a): each later member
// b with each earlier member a, ascending. It appends those that match to
// b.pairs, in the order tried. Unless f.all, this is Kruskal's algorithm
// over the bucket's pairs (spill_forest.go): a pair is not tried when a
// path of lighter matching pairs joins its members, by the bucket's own
// union-find by position or by what the run knows (j.span); every pair
// that matches is kept, and recorded in j.span. What is skipped depends
// on the other workers' progress; the forest that Flush makes of the
// pairs kept does not.
func (j *joiner) group(b *spillBatch, members []uint32) error {
	f, span := j.f, j.span
	if !j.lazy.active() {
		j.sets.reset(len(members))
	}
	j.local = slices.Grow(j.local[:0], len(members))[:len(members)]
	for k := range j.local {
		j.local[k] = int32(k)
	}
	if !f.all {
		j.roots = j.roots[:0]
		for _, d := range members {
			j.roots = append(j.roots, span.root(int32(d)))
		}
	}
	if !f.all && len(members) >= classesFrom {
		return j.groupClasses(b, members)
	}
	for bi := 1; bi < len(members); bi++ {
		b32, db := int32(bi), int32(members[bi])
		j.lazy.turn(bi)
		var best, bestRoot int32 // best[db] (db when none) and its root
		if !f.all {
			if best = atomic.LoadInt32(&span.best[db]); best != db {
				bestRoot = span.root(best)
			}
		}
		for ai := 0; ai < bi; ai++ {
			da := int32(members[ai])
			ra := j.find(int32(ai))
			if !f.all {
				if ra == j.find(b32) {
					continue // joined by lighter pairs of the bucket
				}
				if da == best || best < da && j.roots[ai] == bestRoot {
					// Joined by lighter pairs: (best, db), kept
					// already, and a path from da to best through
					// documents before db.
					j.local[ra] = j.find(b32)
					continue
				}
			}
			sim, dist, ok, err := j.match(members, ai, bi, false)
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
			b.pairs = append(b.pairs, Pair{A: int(da), B: int(db), Similarity: sim, Distance: dist, Hamming: f.hamming})
			if f.all {
				continue
			}
			j.local[ra] = j.find(b32)
			if best = span.matched(da, db); best == da {
				bestRoot = span.root(best)
			}
		}
	}
	return nil
}

// classesFrom is the bucket size from which group tries its pairs class
// by class (groupClasses).
var classesFrom = 64 // a variable for tests

// groupClasses is group (not f.all) for a large bucket, in time that
// does not grow with the square of a giant cluster's members: a later
// member b is tried against each class of the members before it (their
// union-find by position), each class's members ascending until one
// matches or is known to be joined to b, whereupon the class joins b's
// and its later members are not tried: a path of lighter pairs joins
// them to b (the class's own pairs, all of members before b, then the
// lighter pair just found). group tries the pairs in the order (b, a)
// and skips a pair when its members are joined already; taking the
// classes one after the other skips no other pair of the forest, so the
// pairs kept still hold it (see spill_forest.go). A bucket of near
// copies of one page is one class: each member is tried against its
// first member, not against all of them.
func (j *joiner) groupClasses(b *spillBatch, members []uint32) error {
	f, span := j.f, j.span
	for len(j.cls) < len(members) {
		j.cls = append(j.cls, nil)
	}
	j.cls[0] = append(j.cls[0][:0], 0)
	j.live = append(j.live[:0], 0)
	for bi := 1; bi < len(members); bi++ {
		b32, db := int32(bi), int32(members[bi])
		j.lazy.turn(bi)
		best, bestRoot := atomic.LoadInt32(&span.best[db]), int32(0) // best[db] (db when none) and its root
		if best != db {
			bestRoot = span.root(best)
		}
		j.merged = j.merged[:0] // the classes that join b's
		n := 0
		for _, ra := range j.live {
			if j.local[ra] != ra {
				continue // joined to a later member's class
			}
			j.live[n] = ra
			n++
			for _, ai := range j.cls[ra] {
				da := int32(members[ai])
				joined := da == best || best < da && j.roots[ai] == bestRoot
				if !joined {
					sim, dist, ok, err := j.match(members, int(ai), bi, false)
					if err != nil {
						return err
					}
					if !ok {
						continue
					}
					b.pairs = append(b.pairs, Pair{A: int(da), B: int(db), Similarity: sim, Distance: dist, Hamming: f.hamming})
					if best = span.matched(da, db); best == da {
						bestRoot = span.root(best)
					}
				}
				j.local[ra] = b32
				j.merged = append(j.merged, ra)
				n-- // ra is no longer a root
				break
			}
		}
		j.live = append(j.live[:n], b32)
		j.cls[bi] = j.joinClasses(bi)
	}
	return nil
}

// joinClasses returns the members of b's class: b and those of the
// classes j.merged, ascending, in the largest one's memory (so that a
// giant class grows by an append a member).
func (j *joiner) joinClasses(bi int) []int32 {
	if len(j.merged) == 0 {
		return append(j.cls[bi][:0], int32(bi))
	}
	big := j.merged[0]
	for _, r := range j.merged[1:] {
		if len(j.cls[r]) > len(j.cls[big]) {
			big = r
		}
	}
	c := j.cls[big]
	j.cls[big] = nil
	if len(j.merged) > 1 {
		for _, r := range j.merged {
			if r != big {
				c = append(c, j.cls[r]...)
				j.cls[r] = j.cls[r][:0]
			}
		}
		slices.Sort(c)
	}
	return append(c, int32(bi)) // after every member before it
}

// Flush merges the sorted keys into buckets, joins them in batches (on
// f.workers goroutines, each batch on one) and keeps the batches' pairs
// on the calling goroutine; it then emits the spanning forest of those
// pairs, the streaming Finder's pairs in its order (spill_forest.go), or
// with f.all every pair as it comes: the pairs and their order do not
// depend on the workers nor on how the buckets fall into batches.
func (f *spillFinder) Flush(emit func(Pair)) (err error) {
	defer func() {
		if err == nil && f.checksKept() {
			f.sorter.Close() // the sketches and sets stay for CountBelow
			return
		}
		f.Close()
	}()
	if err := f.sketchW.Close(); err != nil {
		return err
	}
	// Every set written before the workers read them.
	if err := f.sets.flushAll(); err != nil {
		return err
	}
	if f.setsW != nil {
		if err := f.setsW.Close(); err != nil {
			return err
		}
	}
	if len(f.offsets) > math.MaxInt32 {
		return fmt.Errorf("spill join: %d documents, more than its union-find holds (%d)", len(f.offsets), math.MaxInt32)
	}
	if f.orderer != nil && !f.all {
		sketched := 0
		for _, n := range f.lens {
			if n > 0 {
				sketched++
			}
		}
		o, err := f.orderer.pairOrder(sketched)
		if err != nil {
			return err
		}
		f.order = o
		f.edgesMax = f.edgesMin(int64(unsafe.Sizeof(orderedEdge{})))
	}
	if !f.all && f.order == nil {
		f.span = newSpanning(len(f.offsets))
	}
	// The entries left in the sort's buffer are held through the merge:
	// the batches have what they leave of the budget's quarter.
	f.batchBytes = max(f.batchBytes-f.sorter.Buffered(), min(f.batchBytes, spillBatchMin))
	take := func(b *spillBatch) {
		if f.order != nil {
			f.keepOrdered(b.ordered)
			return
		}
		if !f.all {
			f.keep(b.pairs)
			return
		}
		for _, p := range b.pairs {
			emit(p)
		}
	}
	if f.workers <= 1 {
		span := startSerial()
		j := f.newJoiner()
		b := &spillBatch{}
		err = f.batches(f.batchBytes, func() *spillBatch { return b }, func(b *spillBatch) error {
			if err := f.read(b); err != nil {
				return err
			}
			if err := j.join(b); err != nil {
				return err
			}
			take(b)
			return nil
		})
		f.serial.add("spill join", span.stop())
	} else {
		err = f.flushParallel(take)
	}
	if err != nil || f.all {
		return err
	}
	span := startSerial()
	f.span = nil
	if f.order != nil {
		f.ordered = f.kruskalOrdered(f.ordered, emit)[:0]
	} else {
		f.edges = f.kruskal(f.edges, emit)[:0]
	}
	f.serial.add("spill forest", span.stop())
	return nil
}

func (f *spillFinder) newJoiner() *joiner {
	return &joiner{f: f, sets: groupSets{f: f}, span: f.span}
}

// batches merges the sorted keys into buckets of two or more documents
// and hands them to join in batches whose members' sketches take about
// limit bytes; next gives the batch to fill.
func (f *spillFinder) batches(limit int64, next func() *spillBatch, join func(*spillBatch) error) error {
	bf := &batchFiller{f: f, limit: limit, next: next, join: join}
	if err := f.sorter.Groups(bf.add); err != nil {
		return err
	}
	return bf.run()
}

// batchFiller fills batches with the buckets of one merge.
type batchFiller struct {
	f     *spillFinder
	limit int64
	next  func() *spillBatch
	join  func(*spillBatch) error
	b     *spillBatch // the batch being filled; nil before the first
	docs  []uint32    // addLazy's scratch
}

// add adds the bucket of key (its documents ascending, repeats kept) to
// the batch, and hands the batch to join when it is full.
func (bf *batchFiller) add(key uint64, docs []uint32) error {
	if bf.b == nil {
		if bf.b = bf.next(); bf.b == nil {
			return errStopped
		}
		bf.b.reset()
	}
	b, f := bf.b, bf.f
	start := len(b.docs)
	for _, d := range docs { // docs are ascending; drop repeats
		if len(b.docs) == start || b.docs[len(b.docs)-1] != d {
			b.docs = append(b.docs, d)
		}
	}
	if len(b.docs)-start < 2 {
		b.docs = b.docs[:start]
		return nil
	}
	bytes := int64(spillGroupBytes)
	for _, d := range b.docs[start:] {
		bytes += int64(f.lens[d]) + spillMemberBytes
	}
	if bf.lazy(bytes) {
		return bf.addLazy(start)
	}
	b.bytes += bytes
	b.ends = append(b.ends, len(b.docs))
	if f.order != nil {
		b.keys = append(b.keys, key)
	}
	if b.bytes >= bf.limit {
		return bf.run()
	}
	return nil
}

// lazy reports whether a bucket of bytes (its members' sketches and
// what they cost a batch) is joined lazily (spill_lazy.go): with the
// pairs that group tries, when the bucket alone would fill its batch or
// is past lazyFrom (the sets that its pairs read are kept for the bucket
// when it is not: a giant one's could take more than its sketches).
func (bf *batchFiller) lazy(bytes int64) bool {
	f := bf.f
	if f.all || f.order != nil {
		return false
	}
	if lazyBucketBytes >= 0 {
		return bytes >= lazyBucketBytes
	}
	return bytes >= min(bf.limit, lazyFrom)
}

// addLazy hands the batch without the bucket that starts at b.docs[start]
// to join, then that bucket alone, to be joined lazily in a cache of the
// batch's bytes.
func (bf *batchFiller) addLazy(start int) error {
	bf.docs = append(bf.docs[:0], bf.b.docs[start:]...)
	bf.b.docs = bf.b.docs[:start]
	if len(bf.b.ends) > 0 { // else the batch is reused
		if err := bf.run(); err != nil {
			return err
		}
		if bf.b = bf.next(); bf.b == nil {
			return errStopped
		}
	}
	b := bf.b
	b.reset()
	b.docs = append(b.docs, bf.docs...)
	b.ends = append(b.ends, len(b.docs))
	b.lazy, b.cache = true, bf.limit
	b.bytes = int64(len(b.docs))*spillLazyMemberBytes + bf.limit
	bf.docs = nil // a giant bucket's list is not kept
	return bf.run()
}

// run hands the batch, when it holds a bucket, to join.
func (bf *batchFiller) run() error {
	if bf.b == nil || len(bf.b.ends) == 0 {
		return nil
	}
	if err := bf.join(bf.b); err != nil {
		return err
	}
	bf.b = nil
	return nil
}

// spillMerges is the most merges of the sorted keys that flushParallel
// runs at once, each over its own range of keys.
const spillMerges = 8

// flushParallel is Flush on f.workers goroutines: the merges (up to
// spillMerges goroutines, each over a range of keys: extsort's
// GroupsParts) fill the batches, the workers read and join them, and the
// calling goroutine takes their pairs as the merges handed them over. The
// order in which the batches are taken does not change what Flush
// reports: the spanning forest of the pairs kept, or with f.all every
// pair, which the pipeline sorts (writeAllPairs). The budget's quarter for
// the batches is shared by the batches in flight.
func (f *spillFinder) flushParallel(take func(*spillBatch)) error {
	merges := min(f.workers, spillMerges)
	inFlight := f.workers + merges + 1 // one a worker, one a merge filling, one taken
	limit := max(f.batchBytes/int64(inFlight), 1)
	type job struct {
		b    *spillBatch
		done chan error // cap 1
	}
	free := make(chan *spillBatch, inFlight)
	for range inFlight {
		free <- &spillBatch{}
	}
	jobs := make(chan job)
	order := make(chan job, inFlight)
	stop := make(chan struct{})
	var mergeErr error
	go func() { // the merges: fill the batches in key order, each in its range
		defer close(order)
		defer close(jobs)
		next := func() *spillBatch {
			select {
			case b := <-free:
				return b
			case <-stop:
				return nil
			}
		}
		join := func(b *spillBatch) error {
			select {
			case <-stop:
				return errStopped
			default:
			}
			j := job{b: b, done: make(chan error, 1)}
			select {
			case jobs <- j:
			case <-stop:
				return errStopped
			}
			order <- j // never blocks for long: at most inFlight batches exist
			return nil
		}
		fillers := make([]*batchFiller, merges)
		for p := range fillers {
			fillers[p] = &batchFiller{f: f, limit: limit, next: next, join: join}
		}
		mergeErr = f.sorter.GroupsParts(merges, func(p int, key uint64, docs []uint32) error {
			return fillers[p].add(key, docs)
		})
		for _, bf := range fillers {
			if mergeErr == nil {
				mergeErr = bf.run()
			}
		}
		if errors.Is(mergeErr, errStopped) {
			mergeErr = nil
		}
	}()
	var wg sync.WaitGroup
	for range f.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jn := f.newJoiner()
			for j := range jobs {
				err := f.read(j.b)
				if err == nil {
					err = jn.join(j.b)
				}
				j.done <- err
			}
		}()
	}
	var err error
	for j := range order {
		if jerr := <-j.done; jerr != nil && err == nil {
			err = jerr
			close(stop)
		}
		if err == nil {
			span := startSerial()
			take(j.b)
			f.serial.add("spill union", span.stop())
		}
		free <- j.b // never blocks: a batch taken from free goes back
	}
	wg.Wait()
	if err == nil {
		err = mergeErr
	}
	return err
}

// errStopped ends the merge when the join failed.
var errStopped = errors.New("spill join stopped")

// checksKept reports whether CountBelow counts this run's removed
// documents below the threshold: the method's sets, or its sketches, tell
// (splitKeyed.keptCheck).
func (f *spillFinder) checksKept() bool {
	if f.split == nil {
		return false
	}
	byCore, bySets := f.split.keptCheck()
	return byCore || bySets
}

// CountBelow counts the documents i >= from that are not near-duplicates
// of their kept document keep[i] (Stats.RemovedBelowThreshold), as the
// in-memory Finder counts them (splitKeyed.keptCheck), from the sketch
// file and the sets' file that Flush left; it then removes the files. It
// returns false when the method does not count them, or a file cannot be
// read (a count it cannot make is not reported).
func (f *spillFinder) CountBelow(keep []int32, from int) (int, bool) {
	defer f.Close()
	if !f.checksKept() {
		return 0, false
	}
	byCore, bySets := f.split.keptCheck()
	if mm, ok := f.m.(*minhashMethod); ok && !byCore {
		// minhash: the in-memory Finder's count over the same file.
		return countBelow(mm, &f.sets, keep, from, f.workers)
	}
	// simhash: its sketches (8 or 16 bytes a document) read whole.
	var core []byte
	if byCore {
		core = make([]byte, f.size)
		if _, err := f.sketchF.ReadAt(core, 0); err != nil {
			return 0, false
		}
	}
	decode := func(d int, reuse DocSketch) (DocSketch, error) {
		return f.split.decodeCore(core[f.offsets[d]:f.offsets[d]+int64(f.lens[d])], reuse)
	}
	var a, b DocSketch
	var setA, setB []uint64
	var sc sketch.HashSorter
	setOf := -1 // the kept document whose set is in setB
	n := 0
	for i := from; i < len(keep); i++ {
		k := int(keep[i])
		if k == i || i >= len(f.lens) || k >= len(f.lens) || f.lens[i] == 0 || f.lens[k] == 0 {
			continue
		}
		if byCore {
			var err error
			if a, err = decode(i, a); err != nil {
				return 0, false
			}
			if b, err = decode(k, b); err != nil {
				return 0, false
			}
			if _, _, ok, _ := f.split.matchCore(a, b); !ok {
				n++
				continue
			}
		}
		if !bySets || !f.sets.has(i) || !f.sets.has(k) {
			continue
		}
		var err error
		if setA, err = f.sets.get(i, setA, &sc); err != nil {
			return 0, false
		}
		if setOf != k {
			if setB, err = f.sets.get(k, setB, &sc); err != nil {
				return 0, false
			}
			setOf = k
		}
		if _, ok := f.split.matchSets(setA, setB); !ok {
			n++
		}
	}
	return n, true
}

// Close removes the temporary files; the pipeline calls it on failure too.
func (f *spillFinder) Close() error {
	f.sketchW.Close()
	if f.setsW != nil {
		f.setsW.Close()
	}
	f.sorter.Close()
	f.sets.Close()
	f.sketchF.Close()
	return os.Remove(f.sketchF.Name())
}
