package dedup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

// minhashMethod finds documents whose MinHash signatures (package minhash,
// Options.NumPerm slots over the shingles of Options.Shingle) share an LSH
// band (package lsh), and joins them by union-find.
//
// Family: sketch's default is one permutation hashing with optimal
// densification, O(shingles + slots) per document instead of O(shingles x
// slots): on 1 KB web documents the whole run takes a third less CPU.
// Measured against the exact Jaccard join (docs/defaults.md), its clusters
// agree as well as multiply-shift's or better: on bible-kjv-family, char
// 5-grams at 0.7, pairwise F1 0.948 against 0.909; on 100k web documents,
// 0.932 against 0.924. Its slots are not independent (the S-curve of the
// banding is an approximation for it); multiply-shift gives independent
// slots.
//
// Banding: --bands and --rows when given (one of them alone takes the
// other as NumPerm/that); otherwise the cheapest banding that makes a pair
// of similarity exactly --threshold a candidate with probability 0.95
// (lsh.DefaultParams, shared with index create and lsh-params; 13x7 at 0.8
// with 128 permutations). datasketch's area rule (lsh.Optimal, 9x13 at
// 0.8) catches only 40% of the pairs at the threshold.
//
// Joining candidates:
//   - With Verify, a candidate pair joins a cluster only when the exact
//     Jaccard of the two shingle sets is at least Threshold; its Similarity
//     is that exact value. No pair below the threshold is ever reported.
//   - Without Verify, a candidate joins when the signature estimate (the
//     fraction of equal slots) is at least Threshold, and the estimate is
//     the pair's Similarity. Joining every candidate directly (text-dedup's
//     behaviour) was measured to merge unrelated documents through chains
//     of false positives (docs/bench/minhash.md), so it is not the default.
//
// Cost: the Finder queries the banded index before inserting each
// document and skips candidates already in the document's cluster (a
// union-find inside the Finder), so a cluster is reported as a spanning
// forest of pairs, not all its pairs (Options.AllPairs reports every
// verified candidate pair, and inserts every document). A document whose shingle set (with
// Verify) or signature (without) equals an accepted candidate's is not
// inserted in the index: it would only lengthen the buckets, and every
// later document pairs with the earlier copy exactly as it would with it.
// Thousands of identical documents therefore cost linear time.
//
// Memory: a document that enters the index (an entry; an exact copy of an
// accepted candidate does not) costs its chain cells and share of the band
// tables (about 24 bytes a band: 310 at 13 bands), its document number (4)
// and, without Verify, its signature (2 bytes a slot: sigStore), all
// mapped outside the Go heap (package internal/arena), so the garbage
// collector paces itself on the small rest; every document costs the
// union-find and the offset of its shingle set (16 bytes on the heap). The
// shingle sets (8 bytes a shingle) are in a scratch file in the temporary
// directory, not in memory (setFile).
//
// Documents with no shingles (empty or only punctuation) are never
// reported as duplicates, of each other included, as in the jaccard
// method; the exact method finds identical texts.
type minhashMethod struct {
	spec      sketch.Spec
	threshold float64
	params    lsh.Params
	rule      string
	family    minhash.Family
	shingle   shingle.Options
	join      joinMode
	leader    bool // --cluster leader: documents join a verified kept document (see minhashFinder.addLeader)
	longest   bool // --keep longest: with leader, documents are clustered in keep order at Flush
	allPairs  bool // Options.AllPairs: report joined candidates too
	direct    bool // join every candidate (no estimate filter); tests and measurements only
	// lo[keff], hi[keff]: the tiered join's margins for keff effective
	// slots, 1 <= keff <= k (see margins), computed once.
	lo, hi []float64
	// The tiered join's free list of hash blocks (see hashBlock).
	blocks chan *hashBlock
	// bandKeys: the sketchers compute each signature's band keys (the
	// component join, set before the first sketch).
	bandKeys bool
	// recordStride, when not 0: the sketchers also encode each
	// signature's record of the component join's scratch file, of this
	// many bytes (minhashSketch.rec), so that the collector only hands it
	// to its writer.
	recordStride int
}

// joinMode says how the minhash method decides a candidate pair.
type joinMode uint8

const (
	// joinTiered (the default) decides a candidate by its signature
	// estimate when the estimate is far from the threshold and by the
	// exact Jaccard of the shingle sets otherwise (see decide).
	joinTiered joinMode = iota
	// joinVerify (--verify) computes the exact Jaccard of every candidate.
	joinVerify
	// joinEstimate (--estimate-only) decides every candidate by the
	// estimate alone.
	joinEstimate
)

// needSets reports whether the join keeps the documents' shingle sets.
func (j joinMode) needSets() bool { return j != joinEstimate }

// The tiered join's margins are sketch.Spec.Margins (AcceptSigmas and
// RejectSigmas standard errors of the estimate at the threshold), shared
// with the index's check (sketch.Spec.DecideLeader).

func newMinhashMethod(cfg *Options, spec sketch.Spec) (Method, error) {
	k := spec.MinHash.NumPerm
	m := &minhashMethod{spec: spec, threshold: spec.Threshold, params: spec.Banding(), family: spec.MinHash.Family,
		shingle: spec.Shingle, leader: cfg.Cluster == cluster.Leader, longest: cfg.Keep == cluster.Longest, allPairs: cfg.AllPairs}
	m.lo, m.hi = make([]float64, k+1), make([]float64, k+1)
	for keff := 1; keff <= k; keff++ {
		m.lo[keff], m.hi[keff] = spec.Margins(keff)
	}
	switch {
	case cfg.Verify && cfg.EstimateOnly:
		return nil, conflict("Verify", "EstimateOnly", "choose one")
	case cfg.Verify:
		m.join = joinVerify
	case cfg.EstimateOnly:
		m.join = joinEstimate
	default:
		m.blocks = make(chan *hashBlock, freeBlocks)
	}
	if m.leader && m.join == joinEstimate {
		return nil, conflict("Cluster", "EstimateOnly", "leader clustering verifies every member against its kept document")
	}
	given := cfg.Spec.MinHash
	switch {
	case given.Bands == 0 && given.Rows == 0:
		m.rule = fmt.Sprintf("recall %.2f at the threshold (lsh.DefaultParams)", lsh.DefaultRecall)
	case given.Rows == 0:
		m.rule = "--bands"
	case given.Bands == 0:
		m.rule = "--rows"
	default:
		m.rule = "--bands and --rows"
	}
	return m, nil
}

// clustersByLeader: see leaderClusterer.
func (m *minhashMethod) clustersByLeader() bool { return m.leader }

func (m *minhashMethod) Name() string { return "minhash" }

func (m *minhashMethod) Facts() Facts {
	n := m.shingle.N
	if n == 0 {
		n = 1
	}
	lo, hi := m.margins(m.spec.MinHash.NumPerm)
	join := fmt.Sprintf("signature estimate >= %.4f joins, < %.4f does not (margins for %d effective slots, wider for short texts), exact Jaccard of shingle sets >= threshold in between", hi, lo, m.spec.MinHash.NumPerm)
	switch {
	case m.join == joinVerify:
		join = "exact Jaccard of shingle sets >= threshold (--verify)"
	case m.direct:
		join = "every candidate"
	case m.join == joinEstimate:
		join = "signature estimate >= threshold (--estimate-only)"
	}
	clustering := "components"
	if m.leader {
		clustering = "leader"
		if m.join == joinTiered {
			join = fmt.Sprintf("leader: a kept document whose estimate is < %.4f is passed over, otherwise exact Jaccard of shingle sets >= threshold", lo)
		}
	}
	return Facts{
		Threshold:          m.threshold,
		NumPerm:            m.spec.MinHash.NumPerm,
		Family:             m.family.String(),
		Seed:               fmt.Sprintf("%#x", m.spec.MinHash.Seed),
		Unit:               m.shingle.Unit.String(),
		Ngram:              n,
		Bands:              m.params.Bands,
		Rows:               m.params.Rows,
		Banding:            m.rule,
		EffectiveThreshold: m.params.Threshold(),
		PAtThreshold:       m.params.Probability(m.threshold),
		Verify:             ptr(m.join == joinVerify),
		Join:               join,
		Cluster:            clustering,
	}
}

// minhashSketch is a document's signature and, unless EstimateOnly, its
// shingle set. A document without shingles has a nil signature.
type minhashSketch struct {
	sig  minhash.Signature
	set  lazySet // not with EstimateOnly
	keff int     // the estimate's effective number of slots (see effectiveSlots)
	spec *sketch.Spec
	// keys are the signature's band keys, made by the sketching workers
	// for the component join (minhashMethod.bandKeys); in its replay,
	// sig holds only the low 16 bits of each slot (all that the
	// estimate compares) and the index is queried by keys.
	keys []uint64
	// rec is the component join's record of the sketch, when the
	// sketcher made it (minhashMethod.recordStride).
	rec []byte
}

// lazySet is a document's shingle hashes, sorted and made distinct on
// first use: the tiered join verifies only a few pairs, and sorting every
// document's shingles was most of the cost of keeping them (--verify
// sorts every set in the sketching workers, as it uses every one).
type lazySet struct {
	h      []uint64
	sorted bool
	blk    *hashBlock // the memory of h, when it is a sketcher's block
}

// release gives the set's memory back to its block (see hashBlock) and
// empties the set; the owner must not use the hashes afterwards.
func (s *lazySet) release() {
	if s.blk != nil {
		s.blk.release()
	}
	*s = lazySet{}
}

// get returns the set, sorted (by sc, which may be nil) and distinct.
func (s *lazySet) get(sc *sketch.HashSorter) []uint64 {
	if !s.sorted {
		sc.Sort(s.h)
		s.h = slices.Compact(s.h)
		s.sorted = true
	}
	return s.h
}

// effectiveSlots is minhash.EffectiveSlots: the samples a signature's
// estimate rests on, which sets the tiered join's margins (the index's
// check computes it the same way).
func effectiveSlots(f minhash.Family, sig minhash.Signature) int {
	return minhash.EffectiveSlots(f, sig)
}

// AppendJSON writes {"family", "num_perm", "seed", "slots"}: the seed as a
// hex string ("0x..."), the slots as the signature's 32-bit minima, null
// for a document without shingles.
func (s *minhashSketch) AppendJSON(dst []byte) []byte {
	dst = append(dst, `{"family":"`...)
	dst = append(dst, s.spec.MinHash.Family.String()...)
	dst = append(dst, `","num_perm":`...)
	dst = strconv.AppendInt(dst, int64(s.spec.MinHash.NumPerm), 10)
	dst = append(dst, `,"seed":"0x`...) // a string: JSON numbers lose 64-bit precision in many readers
	dst = strconv.AppendUint(dst, s.spec.MinHash.Seed, 16)
	dst = append(dst, `","slots":`...)
	if s.sig == nil {
		return append(dst, "null}"...)
	}
	dst = append(dst, '[')
	for i, v := range s.sig {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendUint32(dst, v)
	}
	return append(dst, "]}"...)
}

type minhashSketcher struct {
	m      *minhashMethod
	k      *sketch.Sketcher // with Sets for --verify
	sk     sketch.Sketch    // --verify: scratch, its Set is reused
	hashes []uint64
	block  *hashBlock // the tiered join's shingle hashes, see Sketch
	recs   []byte     // the component join's records, see addKeys
	// last is what Sketch made of the last document, for lastSketch:
	// its signature, and its shingle hashes (with repeats, in shingle
	// order; lastSorted: sorted and distinct already).
	last       sketch.Sketch
	lastHashes []uint64
	lastSorted bool
	setBuf     []uint64
	sorter     sketch.HashSorter // as the index's sketcher sorts
}

// sketchSpec is the specification the sketcher sketches with
// (reusedSketcher).
func (s *minhashSketcher) sketchSpec() sketch.Spec { return s.k.Spec() }

// lastSketch returns the sketch.Sketch of the document Sketch sketched
// last, as a Sketcher of the same specification with shingle sets makes
// it: its signature, its sorted and distinct shingle set, or Empty. Both
// are valid until the next Sketch; the caller must not change them.
func (s *minhashSketcher) lastSketch() (sketch.Sketch, bool) {
	sk := s.last
	if sk.Empty {
		return sketch.Sketch{Empty: true}, true
	}
	if s.lastSorted {
		sk.Set = s.lastHashes
		return sk, true
	}
	s.setBuf = append(s.setBuf[:0], s.lastHashes...)
	s.sorter.Sort(s.setBuf)
	sk.Set = slices.Compact(s.setBuf)
	return sk, true
}

// The tiered join's sketchers write shingle hashes into blocks of
// hashBlockLen (512 KiB), and start a new block when fewer than
// blockReserve are free; a longer document gets its own allocation.
const (
	hashBlockLen = 1 << 16
	blockReserve = 1 << 11
	freeBlocks   = 16 // the free list's length (8 MiB)
)

// hashBlock holds the shingle hashes of consecutive documents of one
// sketcher until the Finder has stored them in its scratch file. It
// counts its users (the sketcher while it writes into it, and each
// document whose hashes it holds); the last to release it returns it to
// the method's free list, so that the hashes of a run cycle through a few
// blocks instead of fresh memory (a fresh block costs page faults and
// zeroing: a tenth of the run's CPU on 300-word documents). A block whose
// documents are not all released (the spill path keeps no count) is left
// to the garbage collector.
type hashBlock struct {
	h    []uint64
	refs atomic.Int32
	free chan *hashBlock
}

// newBlock returns an empty block from the free list or a new one, held
// once (by the sketcher).
func (m *minhashMethod) newBlock() *hashBlock {
	var b *hashBlock
	select {
	case b = <-m.blocks:
		b.h = b.h[:0]
	default:
		b = &hashBlock{h: make([]uint64, 0, hashBlockLen), free: m.blocks}
	}
	b.refs.Store(1)
	return b
}

// release drops one hold on b; the last returns it to the free list
// (unless the list is full).
func (b *hashBlock) release() { b.releaseN(1) }

// releaseN drops n holds on b at once.
func (b *hashBlock) releaseN(n int32) {
	if b.refs.Add(-n) != 0 {
		return
	}
	select {
	case b.free <- b:
	default:
	}
}

func (m *minhashMethod) NewSketcher() (DocSketcher, error) {
	k, err := m.spec.NewSketcherWith(sketch.SketcherOptions{Sets: m.join == joinVerify})
	if err != nil {
		return nil, err
	}
	return &minhashSketcher{m: m, k: k}, nil
}

func (s *minhashSketcher) Sketch(d *Doc) (DocSketch, error) {
	sk := &minhashSketch{spec: &s.m.spec}
	switch s.m.join {
	case joinVerify:
		// The Finder keeps the set: an exact-size copy, the scratch is
		// reused; the signature is the Finder's.
		s.sk.Sig = nil
		s.k.SketchNormalized(&s.sk, d.Text)
		s.last, s.lastHashes, s.lastSorted = sketch.Sketch{Sig: s.sk.Sig, Empty: s.sk.Empty}, s.sk.Set, true
		if s.sk.Empty {
			return sk, nil
		}
		sk.set = lazySet{h: slices.Clone(s.sk.Set), sorted: true}
		sk.sig = s.sk.Sig
		s.addKeys(sk)
		return sk, nil
	case joinTiered:
		// The hashes go straight into a block shared by the documents
		// of this worker (no copy); the Finder stores them and releases
		// the block.
		if s.block == nil || cap(s.block.h)-len(s.block.h) < blockReserve {
			if s.block != nil {
				s.block.release()
			}
			s.block = s.m.newBlock()
		}
		b := s.block.h
		free := b[len(b):]
		h := s.k.Shingles(free, textView(d))
		if len(h) == 0 {
			s.last, s.lastHashes = sketch.Sketch{Empty: true}, nil
			return sk, nil
		}
		var blk *hashBlock
		if len(h) <= cap(free) { // written in place
			s.block.h = b[:len(b)+len(h)]
			h = h[:len(h):len(h)]
			blk = s.block
			blk.refs.Add(1)
		}
		var out sketch.Sketch
		s.k.SketchShingles(&out, h) // MinHash does not reorder h
		s.last, s.lastHashes, s.lastSorted = out, h, false
		sk.set = lazySet{h: h, blk: blk}
		sk.sig = out.Sig
		sk.keff = effectiveSlots(s.m.family, sk.sig)
		s.addKeys(sk)
		return sk, nil
	}
	s.hashes = s.k.Shingles(s.hashes[:0], textView(d))
	var out sketch.Sketch
	s.k.SketchShingles(&out, s.hashes)
	s.last, s.lastHashes, s.lastSorted = out, s.hashes, false
	sk.sig = out.Sig
	s.addKeys(sk)
	return sk, nil
}

// addKeys computes the band keys of sk's signature for the component
// join, and its record. The records of a sketcher's documents lie one
// after the other in its slab, each with the rest of the slab as its
// capacity, so that the collector hands consecutive ones to its writer
// as one range, without a copy (asyncWriter.writeAdjacent).
func (s *minhashSketcher) addKeys(sk *minhashSketch) {
	m := s.m
	if m.bandKeys && sk.sig != nil {
		sk.keys = m.params.AppendKeys(make([]uint64, 0, m.params.Bands), sk.sig)
		if m.recordStride > 0 {
			if cap(s.recs)-len(s.recs) < m.recordStride {
				s.recs = make([]byte, 0, max(recordSlab, m.recordStride))
			}
			at := len(s.recs)
			s.recs = appendSigRecord(s.recs, sk.keys, sk.sig, sk.keff, m.recordStride)
			sk.rec = s.recs[at:]
		}
	}
}

// recordSlab is the size of a sketcher's slab of records (addKeys).
const recordSlab = 64 << 10

// minhashFinder is the streaming Finder: query, join, insert.
type minhashFinder struct {
	m *minhashMethod
	k int
	// The index holds entries 0, 1, 2, ... in the order documents enter
	// it (only those that do: an exact copy of an accepted candidate does
	// not), and docOf maps an entry to its document; the signatures are
	// stored by entry too. Index, signatures and docOf are mapped outside
	// the Go heap (Options.OffHeap, package internal/arena) and released
	// by Flush or Close.
	ix       *lsh.Index
	docOf    *arena.Array[uint32]
	monotone bool     // entries were added in document order (not so under --keep longest with leader clustering)
	own16    []uint16 // the low 16 bits of the slots of the document add is adding (identical)
	uf       *cluster.UnionFind
	sigs     sigStore // entry e's signature, 16 bits a slot, and effective slots (without Verify; by document in direct mode)
	sets     setFile  // the documents' shingle sets (without EstimateOnly), see set
	cands    []uint32
	found    []uint64 // a query's candidates: document<<32 | entry, in document order
	// The document being added, whose set is in memory, not yet in sets
	// (where it goes unless storeCur is cleared: a leader member).
	cur      *minhashSketch
	curID    int
	storeCur bool
	// The hash set of document tabID (see members), built from tabBuf
	// when the document is not the one being added; dd removes the
	// repeats of sets read back.
	tab    hashSet
	tabID  int
	tabBuf []uint64
	dd     hashSet
	setBuf []uint64 // stored's buffer for a set too long to cache
	// A direct-mapped cache of sets read: a cluster's early members are
	// the candidates of each later one.
	cacheID  []int32
	cacheSet [][]uint64
	// direct mode: the first document of each band's bucket.
	first []map[uint64]int32
	keys  []uint64
	// leader clustering under --keep longest: the sketches, clustered in
	// keep order (length) at Flush.
	deferred []*minhashSketch
	length   func(i int) int
	// The component join's replayer (compFinder): glob maps the
	// component's documents (this Finder's 0, 1, 2, ...) to the run's,
	// by which the shingle sets are stored; insKeys holds the band keys
	// inserted, to empty the index again (small components only).
	glob    []int32
	insKeys []uint64
	giant   giantState           // the summaries of a giant component's buckets (minhash_giant.go)
	verHash *arena.Array[uint64] // under --verify, the sigHash of each entry's signature (giantState's table), mapped
	hash16  []uint16             // insert's scratch for it
	// workers is how many goroutines CountBelow may use.
	workers int
}

// sid returns the number of document i's shingle set in f.sets.
func (f *minhashFinder) sid(i int) int {
	if f.glob != nil {
		return int(f.glob[i])
	}
	return i
}

func (m *minhashMethod) NewFinder() (Finder, error) {
	f := &minhashFinder{m: m, k: m.spec.MinHash.NumPerm, uf: cluster.NewUnionFind(0), curID: -1, tabID: -1}
	f.sigs = newSigStore(f.k)
	if m.direct && m.join == joinEstimate {
		f.first = make([]map[uint64]int32, m.params.Bands)
		for i := range f.first {
			f.first[i] = make(map[uint64]int32)
		}
		return f, nil
	}
	ix, err := lsh.New(m.params, f.k, lsh.Options{OffHeap: true})
	if err != nil {
		return nil, err
	}
	f.ix, f.docOf, f.monotone = ix, arena.NewArray[uint32](16), true
	return f, nil
}

func (f *minhashFinder) Add(i int, s DocSketch, emit func(Pair)) error {
	if i > int(^uint32(0)>>1) {
		return fmt.Errorf("minhash: document %d: too many documents for one index", i)
	}
	f.uf.Grow(i + 1)
	if s == nil {
		return nil // empty normalised text
	}
	sk, ok := s.(*minhashSketch)
	if !ok {
		return fmt.Errorf("minhash: sketch of type %T", s)
	}
	if sk.sig == nil {
		return nil // no shingles
	}
	if len(sk.sig) != f.k {
		return fmt.Errorf("minhash: document %d: signature of %d slots, want %d", i, len(sk.sig), f.k)
	}
	if f.m.join.needSets() {
		f.cur, f.curID, f.storeCur = sk, i, true
		err := f.add(i, sk, emit)
		if f.storeCur && err == nil {
			// Without repeats when the join verified one of its pairs
			// (members) or with --verify: stored so, they are not
			// removed again when the set is read back.
			err = f.sets.putSet(i, sk.set.h, f.tabID == i || sk.set.sorted)
		}
		if f.tabID == i {
			f.tabID = -1 // the table refers to the sketch's memory
		}
		if sk.set.blk != nil || (f.m.leader && f.m.longest) {
			// Stored: the block's memory goes back to the sketchers
			// (and a deferred leader reads its set back at Flush).
			sk.set.release()
		}
		f.cur, f.curID = nil, -1
		return err
	}
	return f.add(i, sk, emit)
}

// useScratch sets the goroutines of CountBelow and the directory of the
// shingle sets' scratch file ("" for os.TempDir()); the pipeline passes
// its workers and --tmp-dir.
func (f *minhashFinder) useScratch(workers int, dir string) { f.workers, f.sets.dir = workers, dir }

// Close removes the shingle sets' scratch file and releases the index and
// the signatures if Flush did not.
func (f *minhashFinder) Close() error {
	f.release()
	return f.sets.Close()
}

// release gives back the memory of the index, docOf and the signatures
// (mapped outside the Go heap); nothing refers to it afterwards.
func (f *minhashFinder) release() {
	if f.ix != nil {
		f.ix.Close()
	}
	if f.docOf != nil {
		f.docOf.Release()
	}
	if f.verHash != nil {
		f.verHash.Release()
	}
	f.sigs.release()
	f.ix, f.docOf, f.first, f.verHash = nil, nil, nil, nil
}

// MappedBytes returns the Finder's memory mapped outside the Go heap: the
// index's tables and chains, the signatures and docOf.
func (f *minhashFinder) MappedBytes() int64 {
	if !arena.OffHeap {
		return 0
	}
	var n int64
	if f.ix != nil {
		n += f.ix.MappedBytes()
	}
	if f.docOf != nil {
		n += f.docOf.Bytes()
	}
	if f.verHash != nil {
		n += f.verHash.Bytes()
	}
	return n + f.sigs.bytes()
}

// query sets f.found to sig's candidates in the index, as document<<32 |
// entry in document order.
func (f *minhashFinder) query(sk *minhashSketch) error {
	var err error
	if f.glob != nil {
		f.cands, err = f.ix.QueryKeys(f.cands[:0], sk.keys)
	} else {
		f.cands, err = f.ix.Query(f.cands[:0], sk.sig)
	}
	if err != nil {
		return err
	}
	f.found = f.found[:0]
	for _, e := range f.cands {
		f.found = append(f.found, uint64(f.docOf.Get(int(e)))<<32|uint64(e))
	}
	if !f.monotone {
		slices.Sort(f.found)
	}
	return nil
}

// insert enters document i (sketch sk) in the index as the next entry.
func (f *minhashFinder) insert(i int, sk *minhashSketch) error {
	e := f.ix.Len()
	var err error
	if f.glob != nil {
		err = f.ix.InsertKeys(uint32(e), sk.keys)
	} else {
		err = f.ix.Insert(uint32(e), sk.sig)
	}
	if err != nil {
		return err
	}
	if e > 0 && int(f.docOf.Get(e-1)) > i {
		f.monotone = false
	}
	f.docOf.Grow(e + 1)
	f.docOf.Set(e, uint32(i))
	if f.m.join != joinVerify {
		f.sigs.put(e, sk.sig, sk.keff)
	}
	if f.m.join == joinVerify {
		if f.verHash == nil {
			f.verHash = arena.NewArray[uint64](16)
		}
		f.hash16 = appendLow16(f.hash16[:0], sk.sig[:f.k])
		f.verHash.Grow(e + 1)
		f.verHash.Set(e, sigHash(f.hash16))
	}
	if f.giant.dups.on {
		f.giant.dups.add(f.entryHash(uint32(e)), uint32(e))
	}
	if f.glob != nil && len(f.glob) <= replayReuseMax {
		f.insKeys = append(f.insKeys, sk.keys...)
	}
	return nil
}

// The set cache's slots, and the longest set it keeps (which bounds it to
// 32 MiB).
const (
	setCacheSlots = 1024
	setCacheMax   = 4096
)

// stored returns document j's shingle set (not the document being
// added), distinct, in any order: a view of the scratch file's buffers
// when it is there (a cluster's members are usually close together),
// else read from the file into the cache, or the cache's copy. Valid
// until the next call.
func (f *minhashFinder) stored(j int) ([]uint64, error) {
	j = f.sid(j) // the cache is by the run's document numbers
	if f.sets.inMemory(j) {
		return f.sets.getDistinct(j, nil, &f.dd, false)
	}
	if f.cacheID == nil {
		f.cacheID, f.cacheSet = make([]int32, setCacheSlots), make([][]uint64, setCacheSlots)
		for x := range f.cacheID {
			f.cacheID[x] = -1
		}
	}
	slot := j & (setCacheSlots - 1)
	if f.cacheID[slot] == int32(j) {
		return f.cacheSet[slot], nil
	}
	if f.sets.has(j) && f.sets.start[j+1]-f.sets.start[j] > setCacheMax {
		var err error
		f.setBuf, err = f.sets.getDistinct(j, f.setBuf, &f.dd, false)
		return f.setBuf, err
	}
	f.cacheID[slot] = -1
	s, err := f.sets.getDistinct(j, f.cacheSet[slot], &f.dd, false)
	if err != nil {
		return nil, err
	}
	f.cacheSet[slot], f.cacheID[slot] = s, int32(j)
	return s, nil
}

// members returns the hash set of document i's shingles, built once: the
// document being added, whose hashes it makes distinct in place, or (for
// leader clustering at Flush and CountBelow) a document read back. It
// stays valid until members is asked for another document.
func (f *minhashFinder) members(i int) (*hashSet, error) {
	if f.tabID == i {
		return &f.tab, nil
	}
	f.tabID = -1
	if i == f.curID {
		f.cur.set.h = f.tab.build(f.cur.set.h)
	} else {
		h, err := f.stored(i)
		if err != nil {
			return nil, err
		}
		f.tabBuf = append(f.tabBuf[:0], h...) // the cache's memory is reused
		f.tab.build(f.tabBuf)
	}
	f.tabID = i
	return &f.tab, nil
}

// exact returns the exact Jaccard similarity of the shingle sets of
// documents j (stored) and i (see members).
func (f *minhashFinder) exact(j, i int) (float64, error) {
	t, a, err := f.pair(j, i)
	if err != nil {
		return 0, err
	}
	return jaccardOf(t.count(a), len(a), t.n), nil
}

// verify decides a pair by the exact Jaccard similarity of the stored set
// a and the hash set t: ok when it reaches the threshold, and then sim is
// that similarity. It stops counting once the pair cannot reach it.
func (f *minhashFinder) verify(t *hashSet, a []uint64) (sim float64, ok bool) {
	n, ok := t.countAtLeast(a, minShared(len(a), t.n, f.m.threshold))
	if !ok {
		return 0, false
	}
	sim = jaccardOf(n, len(a), t.n)
	return sim, sim >= f.m.threshold
}

// pair returns document i's hash set (members) and document j's stored
// set, in this order: members may read i's set through the cache, which
// would reuse the memory of j's.
func (f *minhashFinder) pair(j, i int) (*hashSet, []uint64, error) {
	t, err := f.members(i)
	if err != nil {
		return nil, nil, err
	}
	a, err := f.stored(j)
	return t, a, err
}

func (f *minhashFinder) add(i int, sk *minhashSketch, emit func(Pair)) error {
	if f.first != nil {
		f.sigs.put(i, sk.sig, sk.keff)
		return f.addDirect(i, sk.sig, emit)
	}
	if f.m.leader && f.m.longest {
		for len(f.deferred) <= i {
			f.deferred = append(f.deferred, nil)
		}
		f.deferred[i] = sk
		return nil
	}
	if f.m.leader {
		return f.addLeader(i, sk, emit)
	}
	f.own16 = appendLow16(f.own16[:0], sk.sig[:f.k]) // for identical
	// The loop below needs the whole list of candidates: queryFast's when
	// it left nothing out, else query's (also when addFast could not
	// decide from queryFast's reduced list).
	whole := !f.fastPath()
	if !whole && f.queryFast(sk) {
		done, err := f.addFast(i, sk, emit)
		if done || err != nil {
			return err
		}
		whole = true
	}
	if whole {
		if err := f.query(sk); err != nil {
			return err
		}
	}
	duplicate := false
	var err error
	for _, c := range f.found {
		j, e := int(c>>32), int(uint32(c))
		if f.uf.Find(j) == f.uf.Find(i) && !f.m.allPairs {
			// Already joined; but an identical earlier document still
			// makes this one redundant in the index.
			if !duplicate {
				if duplicate, err = f.identical(e, j, i, sk); err != nil {
					return err
				}
			}
			continue
		}
		sim, ok, err := f.match(e, j, i, sk)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		f.uf.Union(j, i)
		emit(Pair{A: j, B: i, Similarity: sim, Distance: -1})
		if sim == 1 && !duplicate {
			if duplicate, err = f.identical(e, j, i, sk); err != nil {
				return err
			}
		}
	}
	if duplicate && !f.m.allPairs {
		// With AllPairs every document is inserted: a later document
		// pairs with each copy.
		return nil
	}
	return f.insert(i, sk)
}

// match decides a candidate pair (j earlier than i, the document being
// added, whose sketch is sk; e is j's index entry).
func (f *minhashFinder) match(e, j, i int, sk *minhashSketch) (float64, bool, error) {
	n, keff := -1, 0
	if f.m.join != joinVerify {
		n = matches16(f.sigs.get(e), sk.sig)
	}
	if f.m.join == joinTiered {
		keff = min(f.sigs.keff(e), sk.keff)
	}
	if sim, ok, sure := f.m.byEstimate(n, keff); sure {
		return sim, ok, nil
	}
	t, a, err := f.pair(j, i)
	if err != nil {
		return 0, false, err
	}
	sim, ok := f.verify(t, a)
	return sim, ok, nil
}

// margins returns the estimates below which (lo) a candidate is rejected
// and at or above which (hi) it is accepted without exact verification,
// for an estimate from keff effectively independent slots.
func (m *minhashMethod) margins(keff int) (lo, hi float64) {
	keff = min(max(keff, 1), len(m.lo)-1)
	return m.lo[keff], m.hi[keff]
}

// decide decides a candidate pair from n, the number of equal (16-bit)
// slots of the two signatures (unused with --verify), keff, the smaller
// of the two signatures' effective slots (the tiered join only), and the
// two shingle sets (nil with --estimate-only). It returns the pair's
// similarity: the exact Jaccard when it was computed, else the estimate
// n/k.
//
// The tiered join (the default) accepts a candidate whose estimate is at
// or above hi, rejects it below lo (see margins, for keff slots: a
// densified one-permutation signature of a short or repetitive text rests
// on fewer samples than it has slots), and computes the exact Jaccard in
// between.
func (m *minhashMethod) decide(n, keff int, a, b *lazySet, sc *sketch.HashSorter) (float64, bool) {
	if sim, ok, sure := m.byEstimate(n, keff); sure {
		return sim, ok
	}
	sim := jaccard.Set(a.get(sc), b.get(sc))
	return sim, sim >= m.threshold
}

// byEstimate is decide without the sets: sure is false when the pair
// needs the exact Jaccard of its shingle sets (always with --verify).
func (m *minhashMethod) byEstimate(n, keff int) (sim float64, ok, sure bool) {
	est := float64(n) / float64(m.spec.MinHash.NumPerm)
	switch m.join {
	case joinVerify:
		return 0, false, false
	case joinEstimate:
		return est, est >= m.threshold, true
	}
	lo, hi := m.margins(max(keff, 1))
	switch {
	case est >= hi:
		return est, true, true
	case est < lo:
		return est, false, true
	}
	return 0, false, false
}

// identical reports whether document j's set (with Verify) or signature
// equals that of document i, the one being added (sketch sk); e is j's
// index entry.
func (f *minhashFinder) identical(e, j, i int, sk *minhashSketch) (bool, error) {
	if f.m.join == joinTiered && !same16(f.sigs.get(e), f.own16) {
		return false, nil // equal sets have equal signatures
	}
	if f.m.join.needSets() {
		sim, err := f.exact(j, i)
		return sim == 1, err
	}
	return same16(f.sigs.get(e), f.own16), nil
}

// addLeader is leader clustering in keep order (--cluster leader; the
// documents come in input order under --keep first, and in keep order
// from Flush under --keep longest): only kept documents (leaders) are in
// the index, and document i joins the candidate leader with the highest
// exact Jaccard similarity at or above the threshold (the earliest in keep
// order of equals), or becomes a leader.
// The estimate only rejects (below the lower margin, and the size filter):
// every accepted pair is verified, whatever the join mode.
func (f *minhashFinder) addLeader(i int, sk *minhashSketch, emit func(Pair)) error {
	if err := f.query(sk); err != nil {
		return err
	}
	best, bestSim, bestRank := -1, -1.0, 0
	for _, c := range f.found { // ascending input order, not keep order
		j, e := int(c>>32), int(uint32(c))
		if f.m.join == joinTiered {
			lo, _ := f.m.margins(max(min(f.sigs.keff(e), sk.keff), 1))
			if float64(matches16(f.sigs.get(e), sk.sig))/float64(f.k) < lo {
				continue
			}
		}
		t, a, err := f.pair(j, i)
		if err != nil {
			return err
		}
		sim, ok := f.verify(t, a)
		if !ok || sim < bestSim {
			continue
		}
		if r := f.rank(j); sim > bestSim || r < bestRank {
			best, bestSim, bestRank = j, sim, r
		}
	}
	if best < 0 {
		return f.insert(i, sk)
	}
	f.uf.Union(best, i)
	f.storeCur = false // a member is never a candidate again: its set is not stored
	emit(Pair{A: min(best, i), B: max(best, i), Similarity: bestSim, Distance: -1})
	return nil
}

// SetKeepLength gives the Finder the length by which --keep longest
// orders the documents (the pipeline's, where an old document is longest).
func (f *minhashFinder) SetKeepLength(length func(i int) int) { f.length = length }

// rank is document i's position in keep order, as a sort key: its
// negated length, then its index, under --keep longest; its index
// otherwise. Lower comes first.
func (f *minhashFinder) rank(i int) int { return keepRank(f.length, i) }

// flushLeader runs leader clustering over the deferred sketches in keep
// order (--keep longest).
func (f *minhashFinder) flushLeader(emit func(Pair)) error {
	if f.deferred == nil {
		return nil
	}
	if f.length == nil {
		return fmt.Errorf("minhash: leader clustering under keep longest without the documents' lengths")
	}
	order := make([]int, 0, len(f.deferred))
	for i, sk := range f.deferred {
		if sk != nil {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(f.rank(a), f.rank(b)) })
	for _, i := range order {
		if err := f.addLeader(i, f.deferred[i], emit); err != nil {
			return err
		}
		f.deferred[i] = nil
	}
	f.deferred = nil
	return nil
}

// addDirect joins document i to the first document of each of its
// buckets: the same clusters as joining every candidate pair.
func (f *minhashFinder) addDirect(i int, sig minhash.Signature, emit func(Pair)) error {
	f.keys = f.m.params.AppendKeys(f.keys[:0], sig)
	for band, k := range f.keys {
		j, ok := f.first[band][k]
		if !ok {
			f.first[band][k] = int32(i)
			continue
		}
		if f.uf.Find(int(j)) == f.uf.Find(i) {
			continue
		}
		f.uf.Union(int(j), i)
		sim := float64(matches16(f.sigs.get(int(j)), sig)) / float64(f.k)
		emit(Pair{A: int(j), B: i, Similarity: sim, Distance: -1})
	}
	return nil
}

// Flush frees the index and the signatures; the shingle sets stay until
// CountBelow or Close.
func (f *minhashFinder) Flush(emit func(Pair)) error {
	if err := f.flushLeader(emit); err != nil {
		return err
	}
	f.release()
	return nil
}

// CountBelow counts the documents i >= from whose exact Jaccard similarity to
// their kept document keep[i] (a different document) is below the
// threshold, and frees the shingle sets. It returns false when the sets
// were not kept (--estimate-only). Documents without a set (no shingles,
// or leader members, which are verified) are not counted.
func (f *minhashFinder) CountBelow(keep []int32, from int) (int, bool) {
	if !f.m.join.needSets() {
		return 0, false
	}
	defer f.sets.Close()
	return countBelow(f.m, &f.sets, keep, from, f.workers)
}

// countBelow is CountBelow over the sets of sets on workers goroutines,
// each with its own read buffers: the documents in chunks, in file order
// within each, through a read-ahead window.
func countBelow(m *minhashMethod, sets *setFile, keep []int32, from, workers int) (int, bool) {
	const chunk = 1 << 14
	var next, total atomic.Int64
	var failed atomic.Bool
	var wg sync.WaitGroup
	sets.shareDist()
	for range max(workers, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rf := &minhashFinder{m: m, k: m.spec.MinHash.NumPerm, curID: -1, tabID: -1}
			rf.sets = *sets
			rf.sets.readOnly, rf.sets.win, rf.sets.winAt, rf.sets.enc = true, nil, 0, nil
			var a []uint64
			for !failed.Load() {
				lo := from + int(next.Add(1)-1)*chunk
				if lo >= len(keep) {
					return
				}
				n := 0
				for i := lo; i < min(lo+chunk, len(keep)); i++ {
					k := int(keep[i])
					if k == i || !rf.sets.has(i) || !rf.sets.has(k) {
						continue
					}
					// The removed documents in file order, through a
					// read-ahead window; the kept ones through the cache,
					// as hash sets (built once for consecutive documents
					// removed for the same one).
					t, err := rf.members(k)
					if err != nil {
						failed.Store(true)
						return
					}
					if a, err = rf.sets.getDistinct(i, a, &rf.dd, true); err != nil {
						failed.Store(true)
						return
					}
					if _, ok := rf.verify(t, a); !ok {
						n++
					}
				}
				total.Add(int64(n))
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return 0, false // a count it cannot make is not reported
	}
	return int(total.Load()), true
}

// Keyed: one key per band (sketch.Spec.AppendKeys).

func (m *minhashMethod) AppendKeys(dst []uint64, s DocSketch) []uint64 {
	sk, ok := s.(*minhashSketch)
	if !ok || sk.sig == nil {
		return dst
	}
	return m.spec.AppendKeys(dst, &sketch.Sketch{Sig: sk.sig})
}

func (m *minhashMethod) Match(a, b DocSketch) (float64, int, bool) {
	sa, ok1 := a.(*minhashSketch)
	sb, ok2 := b.(*minhashSketch)
	if !ok1 || !ok2 || sa.sig == nil || sb.sig == nil || len(sa.sig) != len(sb.sig) {
		return 0, -1, false
	}
	if m.direct && m.join == joinEstimate {
		return float64(matches16Full(sa.sig, sb.sig)) / float64(len(sa.sig)), -1, true
	}
	n := -1
	if m.join != joinVerify {
		n = matches16Full(sa.sig, sb.sig)
	}
	sim, ok := m.decide(n, min(sa.keff, sb.keff), &sa.set, &sb.set, nil)
	return sim, -1, ok
}

// The spill path keeps the shingle sets apart (splitKeyed): its sketch
// file holds, a document, the effective slots (uint16) and the low 16 bits
// of each slot (all that the estimate compares, see matches16Full), 258
// bytes at 128 slots instead of 513 plus the set. The file lives only
// for the run.

func (m *minhashMethod) appendCore(dst []byte, s DocSketch) ([]byte, []uint64) {
	sk := s.(*minhashSketch)
	if sk.sig == nil {
		return dst, nil
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(sk.keff))
	for _, v := range sk.sig {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
	}
	if !m.join.needSets() {
		return dst, nil
	}
	return dst, sk.set.h
}

func (m *minhashMethod) decodeCore(b []byte, reuse DocSketch) (DocSketch, error) {
	k := m.spec.MinHash.NumPerm
	if len(b) != 2+2*k {
		return nil, fmt.Errorf("minhash: spilled sketch of %d bytes, want %d", len(b), 2+2*k)
	}
	sk, _ := reuse.(*minhashSketch)
	if sk == nil {
		sk = &minhashSketch{spec: &m.spec}
	}
	sk.keff = int(binary.LittleEndian.Uint16(b))
	sk.sig = slices.Grow(sk.sig[:0], k)[:k]
	for x := range sk.sig {
		sk.sig[x] = uint32(binary.LittleEndian.Uint16(b[2+2*x:]))
	}
	return sk, nil
}

func (m *minhashMethod) matchCore(a, b DocSketch) (float64, int, bool, bool) {
	sa, sb := a.(*minhashSketch), b.(*minhashSketch)
	n := matches16Full(sa.sig, sb.sig)
	if m.direct && m.join == joinEstimate {
		return float64(n) / float64(len(sa.sig)), -1, true, true
	}
	if m.join == joinVerify {
		n = -1
	}
	sim, ok, sure := m.byEstimate(n, min(sa.keff, sb.keff))
	return sim, -1, ok, sure
}

func (m *minhashMethod) splitsSets() bool { return m.join.needSets() }

func (m *minhashMethod) keptCheck() (byCore, bySets bool) { return false, m.join.needSets() }

func (m *minhashMethod) matchSets(a, b []uint64) (float64, bool) {
	sim := jaccard.Set(a, b)
	return sim, sim >= m.threshold
}

// AppendSketch writes the sketch's binary form (sketch.Spec.AppendBinary):
// the signature and, unless EstimateOnly, the shingle set.
func (m *minhashMethod) AppendSketch(dst []byte, s DocSketch) []byte {
	sk := s.(*minhashSketch)
	out := sketch.Sketch{Sig: sk.sig, Empty: sk.sig == nil}
	if m.join.needSets() && sk.sig != nil {
		out.Set = sk.set.get(nil) // sorts the sketch's set in place
	}
	return m.spec.AppendBinary(dst, &out)
}

func (m *minhashMethod) DecodeSketch(b []byte) (DocSketch, error) {
	out, err := decodeSketch(m.spec, b, true, m.join.needSets())
	if err != nil {
		return nil, err
	}
	sk := &minhashSketch{spec: &m.spec}
	if out.Empty {
		return sk, nil
	}
	sk.sig = out.Sig
	if m.join == joinTiered {
		sk.keff = effectiveSlots(m.family, sk.sig)
	}
	if out.Set != nil {
		sk.set = lazySet{h: out.Set, sorted: true}
	}
	return sk, nil
}

// BytesPerDoc: the heap's share (heapBytesPerDoc) and an index entry's
// (mappedBytesPerEntry) for the documents that enter the index: an exact
// copy of an earlier document joins it without entering, except under
// leader clustering and Options.AllPairs.
func (m *minhashMethod) BytesPerDoc(_ int, copies, n int64) (heap, mapped int64) {
	mapped = int64(m.mappedBytesPerEntry())
	if !m.allPairs && !m.leader && n > 0 {
		mapped -= mapped * copies / n
	}
	return int64(m.heapBytesPerDoc()), mapped
}

// heapBytesPerDoc is what the Finder keeps on the Go heap a document: the
// union-find (8) and, unless --estimate-only, the offset of the shingle
// set in the scratch file (8); the sets themselves are not in memory
// (setFile).
func (m *minhashMethod) heapBytesPerDoc() int {
	if m.join.needSets() {
		return 16
	}
	return 8
}

// mappedBytesPerEntry is the memory of an index entry, mapped outside the
// Go heap: a band's chain cell (4 bytes) and its share of the band's table
// (12 bytes a slot at a load between 3/8 and 3/4 of a table that doubles:
// 23 bytes on average over sizes, when every entry adds a key; near
// duplicates share some), the entry's document (4), and its signature (2
// bytes a slot and the effective slots: sigStore), under --verify only its
// hash (8: minhash_giant.go).
func (m *minhashMethod) mappedBytesPerEntry() int {
	per := minhashIndexBytesPerBand*m.params.Bands + 4
	if m.join != joinVerify {
		per += 2*m.spec.MinHash.NumPerm + 2
	} else {
		per += 8
	}
	return per
}

// minhashIndexBytesPerBand is the minhash index's memory an entry and band
// (mappedBytesPerEntry).
const minhashIndexBytesPerBand = 27
