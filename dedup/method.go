package dedup

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/neardup/neardup/sketch"
)

// Pair is a duplicate pair found by a method: documents A < B by input
// index, with their similarity (Jaccard, exact or estimated, in [0, 1];
// 1 for exact methods; see Hamming) and, for bit-fingerprint methods, the
// Hamming distance (-1 when it does not apply).
type Pair struct {
	A, B       int
	Similarity float64
	Distance   int
	// Hamming says that Similarity is 1 - Distance/bits, the fraction of
	// equal fingerprint bits (simhash without --verify), not a Jaccard
	// similarity. The pairs file then says "measure":"hamming".
	Hamming bool
}

// Doc is what a DocSketcher sees of one document.
type Doc struct {
	// Index is the document's position in the input, from 0, counting
	// the records found invalid and skipped (Input.SkipInvalid) too:
	// records are parsed on the workers, so a worker does not know how
	// many of those before it are bad. (The finder's index, Finder.Add's
	// i, counts documents only.)
	Index int
	// ID is the document id.
	ID string
	// Text is the normalised text. It is reused after Sketch returns: a
	// sketch must not keep it.
	Text []byte
	// Key is the value of Options.KeyField, when one is set.
	Key string
}

// A DocSketcher computes a method's per-document sketch (a hash, a
// signature, a fingerprint, a shingle set...). The pipeline creates one per
// worker goroutine, so a DocSketcher may keep scratch space; it is never used
// by two goroutines at once.
type DocSketcher interface {
	Sketch(d *Doc) (DocSketch, error)
}

// DocSketch is the opaque per-document value of a method: what its Finder
// keeps of a document, in the method's own form, built from a
// sketch.Sketch with what the Finder needs beside it (a MinHash
// signature with its lazily sorted set, band keys and join record; a
// SimHash fingerprint with its width; a 16-byte hash for exact). dedup
// holds one per document of a corpus, so each method keeps only its
// fields, not a whole sketch.Sketch. It is handed to the method's Finder,
// in input order, and may be written by `neardup sign`. sketch.Sketch is
// the one method-independent sketch type (package sketch makes it; an
// index, package store, keeps it); DocSketch is not another, but each
// method's compact view of it.
type DocSketch interface {
	// AppendJSON appends the sketch as a JSON value (for `neardup sign`).
	AppendJSON(dst []byte) []byte
}

// A Finder receives every document's sketch in input order (Add with
// i = 0, 1, 2, ...) and reports duplicate pairs through emit, during Add
// (streaming methods) or at Flush (batch methods). Every emitted pair must
// have A < B. A Finder is used by one goroutine.
type Finder interface {
	Add(i int, s DocSketch, emit func(Pair)) error
	Flush(emit func(Pair)) error
}

// Method is one way of finding duplicates, configured from Options: a
// method of package sketch (minhash, simhash, exact, ksentence, jaccard)
// or dedup's own bloom and bloom-overlap. NewMethod builds them.
type Method interface {
	// Name is the --method name.
	Name() string
	// NewSketcher returns a DocSketcher for one worker.
	NewSketcher() (DocSketcher, error)
	// NewFinder returns the Finder for one run.
	NewFinder() (Finder, error)
	// Facts returns what the method decided beyond its Spec, for the
	// summary and Stats.Params (for example the banding rule); some facts
	// are known only after the finder's Flush.
	Facts() Facts
}

// methodNames are the names of the methods, sorted (Methods).
var methodNames = []string{"bloom", "bloom-overlap", "exact", "jaccard", "ksentence", "minhash", "simhash"}

// NewMethod returns the method cfg names, configured by cfg. A name that
// is not one of Methods() wraps ErrUnknownMethod; an invalid option is an
// *OptionError.
func NewMethod(cfg Options) (Method, error) {
	spec, threshold, err := cfg.spec()
	if err != nil {
		return nil, err
	}
	switch cfg.methodName() {
	case "bloom":
		return newBloom(&cfg, spec, false)
	case "bloom-overlap":
		return newBloom(&cfg, spec, true)
	}
	switch spec.Method {
	case sketch.MinHash:
		return newMinhashMethod(&cfg, spec)
	case sketch.SimHash:
		return newSimhashMethod(&cfg, spec, threshold)
	case sketch.Exact:
		return newExact(spec)
	case sketch.KSentence:
		return newKSentenceMethod(spec)
	case sketch.Jaccard:
		return newJaccardMethod(spec)
	}
	return nil, &OptionError{Field: "Method", Err: fmt.Errorf("%w %q", ErrUnknownMethod, cfg.methodName())}
}

// Methods returns the names of the methods, sorted.
func Methods() []string { return slices.Clone(methodNames) }

// methodList is Methods joined by commas.
func methodList() string { return strings.Join(methodNames, ", ") }

// Capabilities.
//
// A Method implements the small interface above; everything else a method
// can do is one of the optional interfaces below, all declared here and
// found once, by capabilitiesOf: a new method declares a capability by
// implementing its interface, and nothing else in the package asks a
// Method what it is by type assertion. A Finder's own optional interfaces
// are found the same way, once, by finderCapabilitiesOf. TestCapabilities
// holds this table to the code.
//
//	capability       interface        methods
//	spill path       Keyed            minhash, simhash, exact, ksentence (not under leader clustering)
//	spilled sets     splitKeyed       minhash, simhash
//	checkpoints      SketchCodec      minhash, simhash, exact, ksentence
//	memory plan      memoryEstimator  every method
//	pre-pass         PrePass          simhash (tfidf)
//	state kept       persister        bloom (BloomFile), simhash (SaveIDF)
//	component join   componentJoiner  minhash (not leader, all pairs, direct)
//	staged pipeline  stagedMethod     minhash, simhash, exact, ksentence (bloom: says why not)
//	GPU sketches     gpuSigner        minhash, simhash
//	leader clusters  leaderClusterer  minhash, simhash
//	cliques          cliquer          exact, ksentence, bloom (not bloom-overlap)
//	Hamming measure  hammingReporter  simhash
//	pair order       spanOrderer      simhash (not all pairs)
//
//	finder capability  interface      finders
//	unnamed drops      DropFinder     bloom's
//	kept check         keptChecker    minhash's and simhash's
//	keep order         keepOrdered    minhash's and simhash's
//	run's resources    scratchFinder  minhash's streaming Finder
//	closing            io.Closer      the minhash Finders, the spill Finder

// capabilities are the optional interfaces a run's method implements
// (nil or false where it does not).
type capabilities struct {
	keyed      Keyed
	split      splitKeyed // keyed, when the spill path keeps its sets apart
	codec      SketchCodec
	memory     memoryEstimator
	prePass    PrePass
	persist    persister
	components componentJoiner // nil when this run's join cannot use it
	staged     stagedMethod
	gpu        gpuSigner
	leader     bool // clusters by leader (leaderClusterer)
	cliques    bool // every two members of a cluster are a pair (cliquer)
	hamming    bool // pairs' similarity is 1 - distance/bits (hammingReporter)
	// pairOrder: the order of the method's own in which its in-memory
	// Finder meets the pairs, when its spanning pairs follow that order
	// and not input order (spanOrderer; nil otherwise).
	pairOrder spanOrderer
}

// capabilitiesOf finds m's capabilities.
func capabilitiesOf(m Method) capabilities {
	var c capabilities
	if l, ok := m.(leaderClusterer); ok {
		c.leader = l.clustersByLeader()
	}
	// The spill path joins each bucket's documents by single linkage in
	// key order, which cannot follow keep order: a leader run stays in
	// memory.
	if k, ok := m.(Keyed); ok && !c.leader {
		c.keyed = k
		c.split, _ = m.(splitKeyed)
	}
	c.codec, _ = m.(SketchCodec)
	c.memory, _ = m.(memoryEstimator)
	c.prePass, _ = m.(PrePass)
	c.persist, _ = m.(persister)
	if j, ok := m.(componentJoiner); ok && j.componentJoin() {
		c.components = j
	}
	c.staged, _ = m.(stagedMethod)
	c.gpu, _ = m.(gpuSigner)
	if cl, ok := m.(cliquer); ok {
		c.cliques = cl.cliques()
	}
	if h, ok := m.(hammingReporter); ok {
		c.hamming = h.HammingSimilarity()
	}
	if o, ok := m.(spanOrderer); ok && o.ordersPairs() {
		c.pairOrder = o
	}
	return c
}

// finderCapabilities are the optional interfaces a Finder implements (nil
// where it does not).
type finderCapabilities struct {
	drop      DropFinder
	keptCheck keptChecker
	keepOrder keepOrdered
	scratch   scratchFinder
	closer    io.Closer
}

// finderCapabilitiesOf finds f's capabilities.
func finderCapabilitiesOf(f Finder) finderCapabilities {
	var c finderCapabilities
	c.drop, _ = f.(DropFinder)
	c.keptCheck, _ = f.(keptChecker)
	c.keepOrder, _ = f.(keepOrdered)
	c.scratch, _ = f.(scratchFinder)
	c.closer, _ = f.(io.Closer)
	return c
}

// componentJoiner is implemented by methods that can find their clusters
// as the connected components of the candidate graph, with compFinder
// (minhash_comp.go): componentJoin reports whether this run's join can
// (not under leader clustering, Options.AllPairs or the direct join);
// componentBytes is what the component join holds a document at its
// peak, and an index entry's mapped memory.
type componentJoiner interface {
	componentJoin() bool
	newCompFinder(workers int, dir string) *compFinder
	componentBytes() (perDoc, perEntry int64)
}

// stagedMethod is implemented by methods that may run in the staged
// pipeline (--executor): stager returns what the staged tasks need of the
// method, or why this configuration is not staged. The staged pipeline
// calls it before it sketches (minhash's sketchers then compute the band
// keys).
type stagedMethod interface {
	stager() (stager, error)
}

// gpuSigner is implemented by methods whose documents the GPU can sketch:
// gpuSketches says whether the GPU must return each document's shingle
// hashes and how a document's sketch is made from what it returns;
// signOnly is true for `neardup sign`, which needs the signature only.
type gpuSigner interface {
	gpuSketches(signOnly bool) (hashes bool, make gpuSketchMaker)
}

// scratchFinder is implemented by Finders that use the run's workers (for
// CountBelow) and scratch directory (for the shingle sets): the pipeline
// calls useScratch before the first Add.
type scratchFinder interface {
	useScratch(workers int, dir string)
}

// hammingReporter is implemented by methods whose pairs' similarity may be
// 1 - distance/bits, the fraction of equal fingerprint bits, rather than a
// Jaccard similarity (Pair.Hamming).
type hammingReporter interface {
	HammingSimilarity() bool
}

// A DropFinder is a Finder that can tell that a document duplicates an
// earlier one without naming which: a Bloom filter knows that a key was
// (probably) seen, not where. The pipeline must call AddDrop instead of Add
// for such a Finder; drop(i, similarity) marks document i as removed (kept:
// false, a cluster of its own, no pairs line or one without id1), and
// emit, as for Add, reports named pairs. Add of a DropFinder returns
// ErrNeedsDrop, so a pipeline that does not know the interface fails
// clearly instead of clustering wrongly.
type DropFinder interface {
	Finder
	AddDrop(i int, s DocSketch, emit func(Pair), drop func(i int, similarity float64)) error
}

// ErrNeedsDrop is returned by Add of a DropFinder.

// persister is implemented by methods that keep state across runs (a
// Bloom filter, an IDF table). Run calls Persist after the run's outputs
// are committed, so a failed or interrupted run never saves half a state.
type persister interface {
	Persist() error
}

// keptChecker is implemented by finders that can check, once the kept
// documents are chosen, how many removed documents are not duplicates of
// their kept document (Stats.RemovedBelowThreshold).
type keptChecker interface {
	CountBelow(keep []int32, from int) (n int, ok bool)
}

// leaderClusterer is implemented by methods that can cluster by leader
// (--cluster leader): clustersByLeader reports whether this run does.
type leaderClusterer interface{ clustersByLeader() bool }

// keepOrdered is implemented by finders that need the length by which
// --keep longest orders documents (leader clustering in keep order); the
// pipeline calls SetKeepLength before Flush under --keep longest.
type keepOrdered interface {
	SetKeepLength(length func(i int) int)
}

// keepRank is document i's place in keep order, the order in which leader
// clustering visits documents: longer first under --keep longest (length
// set), then earlier; lower ranks come first.
func keepRank(length func(i int) int, i int) int {
	if length == nil {
		return i
	}
	return -min(length(i), math.MaxInt32)<<32 | i
}

// cliquer is implemented by methods whose duplicates are identical
// sketches (exact, ksentence, bloom): every two members of a cluster are a
// pair of similarity 1, which their finders report only as a star.
type cliquer interface{ cliques() bool }

// A PrePass method needs one pass over the corpus before its sketchers can
// work (simhash with --weights tfidf learns its IDF table). The pipeline
// runs the pass when NeedsPrePass is true: one Learner per worker, fed the
// normalised documents (any order, any worker), then FinishPrePass with
// all the learners, then the usual pass. A method whose pre-pass state
// was supplied otherwise (a table loaded from a file) reports false.
type PrePass interface {
	NeedsPrePass() bool
	NewLearner() (Learner, error)
	FinishPrePass(learners []Learner) error
}

// A Learner observes documents in a pre-pass; one per worker goroutine.
// Learn must not keep d or its Text.
type Learner interface {
	Learn(d *Doc) error
}

// Keyed is implemented by methods whose candidate pairs are the documents
// that share a bucket key: MinHash LSH (one key per band) and SimHash
// permuted tables (one key per table). For them the pipeline can find
// candidates without an in-memory index: it writes (key, document) entries
// to sorted runs on disk, merges the runs, and checks the documents of each
// key group with Match. Memory is then bounded by the budget, whatever the
// corpus size.
//
// For the same input the spill path gives the same clusters as the
// method's own Finder, provided the Finder also unions every candidate pair
// that Match accepts (skipping only pairs already in one cluster).
type Keyed interface {
	Method
	SketchCodec
	// AppendKeys appends the bucket keys of s to dst. Keys of different
	// bands or tables must differ (mix the band number in).
	AppendKeys(dst []uint64, s DocSketch) []uint64
	// Match decides whether two candidates are duplicates, with their
	// similarity and Hamming distance (-1 when it does not apply).
	Match(a, b DocSketch) (sim float64, dist int, ok bool)
}

// SketchCodec is implemented by methods whose sketches can wait on disk:
// for the spill path and for --resume checkpoints. DecodeSketch must
// reject bytes that AppendSketch did not produce with an error, never a
// panic, and must not keep b: callers reuse it.
type SketchCodec interface {
	AppendSketch(dst []byte, s DocSketch) []byte
	DecodeSketch(b []byte) (DocSketch, error)
}

// memoryEstimator is implemented by methods that know what their Finder
// holds a document, given what the plan's sample found: the average size
// of a document's text, and that copies of its n documents are an exact
// copy of an earlier one (after normalisation). heap is on the Go heap;
// mapped is outside it under arena.OffHeap (an index entry's share), on
// it otherwise.
type memoryEstimator interface {
	BytesPerDoc(textBytes int, copies, n int64) (heap, mapped int64)
}
