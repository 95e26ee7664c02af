package dedup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// simhashMethod finds documents whose SimHash fingerprints (package
// simhash) are within Options.Distance bits, over the shingles of
// Options.Shingle weighted by count or by TF-IDF.
//
// It is a batch method: the Finder keeps each document's fingerprint (16
// bytes; with --verify also its shingle set) and at Flush runs
// simhash.AllPairsGrouped, one radix-sorted permuted table at a time, so
// memory is linear in the number of documents whatever the design: 20
// bytes per document while reading, about 120 at the peak of Flush (plus
// the shingle sets with --verify).
//
// Pairs: a document whose fingerprint equals an earlier one's is paired
// with the earliest such document (distance 0). Pairs of distinct
// fingerprints within the distance are reported between their earliest
// documents, and only when the two are not yet in the same cluster (a
// union-find inside the Finder): thousands of near-identical documents give
// a spanning forest of pairs, not a quadratic number, and the clusters are
// the same. Similarity is 1 - distance/bits (the fraction of equal bits),
// or with --verify the exact Jaccard of the shingle sets, and a candidate
// below --threshold is dropped.
type simhashMethod struct {
	spec           sketch.Spec
	bits, distance int
	weighting      string // count, set, sublinear or tfidf
	shingle        shingle.Options
	verify         bool
	leader         bool // --cluster leader: see simhashFinder.flushLeader
	allPairs       bool // Options.AllPairs
	threshold      float64
	design         simhash.Design  // for 2^20 documents, in Describe before a run
	chosen         *simhash.Design // the design of the last Flush, if any
	spillDesign    *simhash.Design // the spill's keys' (spillKeys), if any
	idf            *simhash.IDF
	idfMeta        string
	saveIDF        string // Options.SaveIDF
}

func newSimhashMethod(cfg *Options, spec sketch.Spec, threshold float64) (Method, error) {
	bits, dist := spec.SimHash.Bits, spec.SimHash.MaxDistance()
	m := &simhashMethod{spec: spec, bits: bits, distance: dist, weighting: spec.SimHash.Weights.String(),
		shingle: spec.Shingle, allPairs: cfg.AllPairs, verify: cfg.Verify, threshold: threshold,
		leader: cfg.Cluster == cluster.Leader}
	m.idfMeta = spec.IDFMeta()
	d, err := simhash.ChooseDesign(simhash.DefaultExpectedN, bits, dist, true, simhash.DesignOptions{})
	if err != nil {
		return nil, &OptionError{Field: "Spec.SimHash.Distance", Err: fmt.Errorf("%w: %d: %v", ErrOptions, dist, err)}
	}
	m.design = d
	m.saveIDF = cfg.SaveIDF
	if cfg.IDFFile != "" {
		if !m.usesIDF() {
			return nil, conflict("IDFFile", "Spec.SimHash.Weights", "%s: an IDF table needs the tfidf weights", cfg.IDFFile)
		}
		t, err := simhash.LoadIDF(cfg.IDFFile)
		if err != nil {
			return nil, &OptionError{Field: "IDFFile", Err: err}
		}
		if t.Meta == legacyIDFMeta(spec) {
			t.Meta = m.idfMeta
		}
		if err := m.SetIDF(t); err != nil {
			return nil, &OptionError{Field: "IDFFile", Err: fmt.Errorf("%s: %w", cfg.IDFFile, err)}
		}
	}
	if m.saveIDF != "" && !m.usesIDF() {
		return nil, conflict("SaveIDF", "Spec.SimHash.Weights", "%s: only the tfidf weights have an IDF table", m.saveIDF)
	}
	return m, nil
}

// legacyIDFMeta is the Meta line that IDF tables saved by neardup before
// package sketch carry for spec's shingles with the default seed
// ("seed=0"); such a table is read as spec's.
func legacyIDFMeta(spec sketch.Spec) string {
	if spec.Shingle.Seed != shingle.DefaultSeed {
		return spec.IDFMeta()
	}
	return fmt.Sprintf("unit=%s ngram=%d seed=0", spec.Shingle.Unit, spec.Shingle.N)
}

func (m *simhashMethod) Name() string { return "simhash" }

// clustersByLeader: see leaderClusterer.
func (m *simhashMethod) clustersByLeader() bool { return m.leader }

func (m *simhashMethod) Facts() Facts {
	f := Facts{
		Bits:       uint64(m.bits),
		Distance:   ptr(m.distance),
		Unit:       m.shingle.Unit.String(),
		Ngram:      m.shingle.N,
		Weights:    m.weighting,
		Index:      "permuted tables, batch (simhash.AllPairsGrouped); design chosen at Flush for the number of distinct fingerprints",
		Verify:     ptr(m.verify),
		Similarity: "1 - distance/bits (the fraction of equal fingerprint bits, not a Jaccard similarity; pairs lines say \"measure\":\"hamming\")",
	}
	if m.verify {
		f.Similarity = "exact Jaccard of shingle sets (--verify)"
		f.Threshold = m.threshold
	}
	f.Cluster = "components"
	if m.leader {
		f.Cluster = "leader"
		f.Index = "permuted tables of the kept documents (simhash.Index), in keep order; design chosen at Flush for the number of fingerprints"
	}
	if m.chosen != nil {
		f.Design = m.chosen.String()
	} else {
		f.DesignFor1MDocs = m.design.String()
	}
	if m.spillDesign != nil {
		f.SpillDesign = m.spillDesign.String()
	}
	if m.idf != nil {
		f.IDFDocs, f.IDFFeatures = m.idf.Docs, m.idf.Len()
	}
	return f
}

// usesIDF reports whether the weights are TF-IDF, which need an IDF table.
func (m *simhashMethod) usesIDF() bool { return m.weighting == "tfidf" }

// NeedsPrePass reports whether TF-IDF weights still need their IDF table.
func (m *simhashMethod) NeedsPrePass() bool { return m.usesIDF() && m.idf == nil }

// NewLearner returns a learner of document frequencies for one worker.
func (m *simhashMethod) NewLearner() (Learner, error) {
	// Only the shingles: a Spec of the same normalisation and shingles.
	shingles := sketch.Spec{Method: sketch.Jaccard, Normalize: m.spec.Normalize, Shingle: m.spec.Shingle}
	k, err := shingles.NewSketcher()
	if err != nil {
		return nil, err
	}
	return &idfLearner{k: k}, nil
}

// FinishPrePass merges the learners' counts into the IDF table.
func (m *simhashMethod) FinishPrePass(learners []Learner) error {
	var all simhash.IDFBuilder
	for _, l := range learners {
		il, ok := l.(*idfLearner)
		if !ok {
			return fmt.Errorf("simhash: pre-pass learner of type %T is not one of simhash's", l)
		}
		all.Merge(&il.b)
	}
	m.idf = all.IDF(m.idfMeta)
	return nil
}

// SetIDF gives the method an IDF table (loaded with simhash.LoadIDF, say)
// instead of learning one. The table must have been learned over the same
// shingles: its Meta must equal the method's ("unit=... ngram=... seed=...").
func (m *simhashMethod) SetIDF(t *simhash.IDF) error {
	if t.Meta != m.idfMeta {
		return fmt.Errorf("simhash: IDF table built for %q, this run shingles %q", t.Meta, m.idfMeta)
	}
	m.idf = t
	return nil
}

// IDFMeta is the Meta line an IDF table for this configuration carries.
func (m *simhashMethod) IDFMeta() string { return m.idfMeta }

// IDF returns the table in use (learned or set), or nil: the pipeline can
// save a learned table with its Save method for later runs.
func (m *simhashMethod) IDF() *simhash.IDF { return m.idf }

type idfLearner struct {
	k     *sketch.Sketcher
	b     simhash.IDFBuilder
	feats []uint64
}

func (l *idfLearner) Learn(d *Doc) error {
	l.feats = l.k.Shingles(l.feats[:0], textView(d))
	l.b.AddDoc(l.feats)
	return nil
}

func (m *simhashMethod) NewSketcher() (DocSketcher, error) {
	if m.usesIDF() && m.idf == nil {
		return nil, fmt.Errorf("simhash --weights tfidf: no IDF table: the pipeline must run the pre-pass (dedup.PrePass) or supply a table (SetIDF)")
	}
	o := sketch.SketcherOptions{Sets: m.verify}
	if m.usesIDF() {
		o.IDF = m.idf
	}
	k, err := m.spec.NewSketcherWith(o)
	if err != nil {
		return nil, err
	}
	return &simhashSketcher{m: m, k: k}, nil
}

func (m *simhashMethod) NewFinder() (Finder, error) {
	return &simhashFinder{m: m, uf: cluster.NewUnionFind(0)}, nil
}

// simhashSketch is a document's fingerprint, with its shingle set when
// candidates are verified.
type simhashSketch struct {
	fp   simhash.Fingerprint
	bits int
	set  []uint64
}

// AppendJSON writes the fingerprint as hex (16 or 32 digits).
func (s *simhashSketch) AppendJSON(dst []byte) []byte {
	dst = append(dst, '"')
	dst = s.fp.AppendHex(dst, s.bits)
	return append(dst, '"')
}

type simhashSketcher struct {
	m  *simhashMethod
	k  *sketch.Sketcher
	sk sketch.Sketch // scratch: its Set is reused
}

func (s *simhashSketcher) Sketch(d *Doc) (DocSketch, error) {
	s.k.SketchNormalized(&s.sk, d.Text)
	if s.sk.Empty {
		return nil, nil // no shingle: nothing to compare
	}
	sk := &simhashSketch{fp: s.sk.FP, bits: s.m.bits}
	if s.m.verify {
		sk.set = slices.Clone(s.sk.Set)
	}
	return sk, nil
}

// sketchSpec is the specification the sketcher sketches with
// (reusedSketcher).
func (s *simhashSketcher) sketchSpec() sketch.Spec { return s.k.Spec() }

// lastSketch returns the sketch.Sketch of the document Sketch sketched
// last as an index's Sketcher of the same specification makes it: its
// fingerprint without a shingle set (an index keeps none for SimHash), or
// Empty.
func (s *simhashSketcher) lastSketch() (sketch.Sketch, bool) {
	if s.sk.Empty {
		return sketch.Sketch{Empty: true}, true
	}
	return sketch.Sketch{FP: s.sk.FP}, true
}

// simhashFinder collects the fingerprints and finds the pairs at Flush.
type simhashFinder struct {
	m    *simhashMethod
	fps  []simhash.Fingerprint
	docs []int32    // input index of fps[i]
	sets [][]uint64 // with --verify
	uf   *cluster.UnionFind
	// Design is the design AllPairsGrouped chose, after Flush.
	design simhash.Design
	length func(i int) int // --keep longest (SetKeepLength)
	// blocks, when set, is the number of blocks of the design instead of
	// the one chosen for the Finder's documents (the staged join: the
	// design of the whole input, whose pairs it reproduces in order).
	blocks int
}

// SetKeepLength gives the Finder the length by which --keep longest orders
// the documents, for leader clustering.
func (f *simhashFinder) SetKeepLength(length func(i int) int) { f.length = length }

func (f *simhashFinder) Add(i int, s DocSketch, emit func(Pair)) error {
	if s == nil {
		return nil
	}
	sk, ok := s.(*simhashSketch)
	if !ok {
		return fmt.Errorf("simhash: sketch of type %T", s)
	}
	f.fps = append(f.fps, sk.fp)
	f.docs = append(f.docs, int32(i))
	if f.m.verify {
		f.sets = append(f.sets, sk.set)
	}
	return nil
}

func (f *simhashFinder) Flush(emit func(Pair)) error {
	f.uf.Grow(len(f.fps))
	if f.m.leader {
		return f.flushLeader(emit)
	}
	report := func(a, b, d int) {
		sim := 1 - float64(d)/float64(f.m.bits)
		if f.m.verify {
			sim = jaccard.Set(f.sets[a], f.sets[b])
			if sim < f.m.threshold {
				return
			}
		}
		f.uf.Union(a, b)
		emit(Pair{A: int(f.docs[a]), B: int(f.docs[b]), Similarity: sim, Distance: d, Hamming: f.m.HammingSimilarity()})
	}
	var d simhash.Design
	var err error
	if f.m.allPairs {
		d, err = simhash.AllPairs(f.fps, f.m.bits, f.m.distance, simhash.DesignOptions{Blocks: f.blocks}, report)
	} else {
		d, err = simhash.AllPairsGrouped(f.fps, f.m.bits, f.m.distance, simhash.DesignOptions{Blocks: f.blocks},
			func(first, i int) { report(first, i, 0) },
			func(a, b, dist int) {
				if f.uf.Find(a) == f.uf.Find(b) {
					return // already joined: same clusters without this pair
				}
				report(a, b, dist)
			})
	}
	f.design = d
	if err == nil {
		f.m.chosen = &d
	}
	return err
}

// ordersPairs: the batch Finder's spanning pairs follow AllPairsGrouped's
// order (spanOrderer), with --verify too (the pairs it verifies are
// AllPairsGrouped's, between the earliest documents of two fingerprints),
// except under --pairs-mode all and leader clustering.
func (m *simhashMethod) ordersPairs() bool { return !m.allPairs && !m.leader }

// batchDesign is the design the batch Finder (AllPairsGrouped) chooses
// for sketched fingerprints.
func (m *simhashMethod) batchDesign(sketched int) (simhash.Design, error) {
	return simhash.ChooseDesign(sketched, m.bits, m.distance, true, simhash.DesignOptions{})
}

// pairOrder is AllPairsGrouped's order with the design that the batch
// Finder chooses for sketched fingerprints: the spilled run's design (its
// Facts say so, as the in-memory run's do).
func (m *simhashMethod) pairOrder(sketched int) (*pairOrder, error) {
	d, err := m.batchDesign(sketched)
	if err != nil {
		return nil, err
	}
	m.chosen = &d
	return &pairOrder{fp: func(s DocSketch) simhash.Fingerprint { return s.(*simhashSketch).fp }, where: d.PairOrder(),
		distance: m.distance}, nil
}

// spillKeysDesign is the batch Finder's design for n documents
// (batchDesign) with at most the Spec's tables (sketch.MaxTables: a key
// is an entry a document in the external sort and a sketch read a bucket
// member, far more than a table of the in-memory Finder costs).
func (m *simhashMethod) spillKeysDesign(n int64) (simhash.Design, error) {
	return simhash.ChooseDesign(int(min(n, math.MaxInt32)), m.bits, m.distance, true,
		simhash.DesignOptions{MaxTables: sketch.MaxTables})
}

// spillKeys keys the spill by the permuted tables of the design the
// batch Finder would choose for n documents (spillKeysDesign), the plan's
// estimate, instead of the Spec's design for a million: the same tables as
// the in-memory run when the estimate is near, fewer and shorter keys
// than the Spec's for a small corpus. The tables are the Spec's masking
// of the fingerprint (sketch.Spec.AppendKeys) with that design's blocks,
// so the keys of different tables differ as AppendKeys' do. With no
// estimate (n = 0: a pipe) the keys are AppendKeys'.
func (m *simhashMethod) spillKeys(n int64) (func(dst []uint64, s DocSketch) []uint64, error) {
	m.spillDesign = nil
	if n <= 0 {
		return m.AppendKeys, nil
	}
	d, err := m.spillKeysDesign(n)
	if err != nil {
		return nil, err
	}
	m.spillDesign = &d
	spec := m.spec
	spec.SimHash.Blocks = d.Blocks
	return func(dst []uint64, s DocSketch) []uint64 {
		return spec.AppendKeys(dst, &sketch.Sketch{FP: s.(*simhashSketch).fp})
	}, nil
}

// flushLeader is leader clustering in keep order (--cluster leader): only
// kept documents (leaders) are in a permuted-table index, and each
// document, in keep order, joins the leader within the distance that is
// most similar (the smallest distance, or with --verify the highest exact
// Jaccard at or above the threshold; the earliest in keep order of
// equals), or becomes a leader. Every removed document is then within the
// distance (and with --verify at or above the threshold) of its kept
// document.
func (f *simhashFinder) flushLeader(emit func(Pair)) error {
	n := len(f.fps)
	opts := simhash.DesignOptions{N: max(n, 1)}
	ix, err := simhash.NewIndex(f.m.bits, f.m.distance, opts)
	if err != nil {
		return err
	}
	f.design = ix.Design()
	f.m.chosen = &f.design
	// order: positions in keep order; rank[p]: p's place in it.
	order := make([]int, n)
	for p := range order {
		order[p] = p
	}
	if f.length != nil {
		slices.SortFunc(order, func(a, b int) int {
			return cmp.Compare(keepRank(f.length, int(f.docs[a])), keepRank(f.length, int(f.docs[b])))
		})
	}
	rank := make([]int32, n)
	for r, p := range order {
		rank[p] = int32(r)
	}
	var ms []simhash.Match
	for _, p := range order {
		ms = ix.Query(f.fps[p], ms[:0])
		best, bestDist, bestSim := -1, 0, -1.0
		for _, mt := range ms {
			c := mt.ID
			sim := 1 - float64(mt.Distance)/float64(f.m.bits)
			if f.m.verify {
				if sim = jaccard.Set(f.sets[c], f.sets[p]); sim < f.m.threshold {
					continue
				}
			}
			if sim > bestSim || sim == bestSim && rank[c] < rank[best] {
				best, bestDist, bestSim = c, mt.Distance, sim
			}
		}
		if best < 0 {
			if err := ix.Insert(p, f.fps[p]); err != nil {
				return err
			}
			continue
		}
		f.uf.Union(best, p)
		a, b := int(f.docs[best]), int(f.docs[p])
		emit(Pair{A: min(a, b), B: max(a, b), Similarity: bestSim, Distance: bestDist, Hamming: f.m.HammingSimilarity()})
	}
	return nil
}

// CountBelow counts the documents i >= from that are not near-duplicates
// of their kept document keep[i]: farther than the distance, or with
// --verify below the threshold in exact Jaccard (chains of pairs under
// --cluster components; none under leader).
func (f *simhashFinder) CountBelow(keep []int32, from int) (int, bool) {
	n := 0
	for i := from; i < len(keep); i++ {
		k := int(keep[i])
		if k == i {
			continue
		}
		p, ok1 := slices.BinarySearch(f.docs, int32(i))
		q, ok2 := slices.BinarySearch(f.docs, int32(k))
		if !ok1 || !ok2 {
			continue
		}
		switch {
		case f.fps[p].Distance(f.fps[q]) > f.m.distance:
			n++
		case f.m.verify && jaccard.Set(f.sets[p], f.sets[q]) < f.m.threshold:
			n++
		}
	}
	f.fps, f.sets = nil, nil
	return n, true
}

// The simhash method is Keyed: its keys are the fingerprint's keys in the
// permuted tables of the Spec's design (sketch.Spec.AppendKeys; any design
// finds every pair within the distance), and Match accepts a pair within
// the distance (and, with --verify, at or above the threshold), as the
// Finder does: the spill path gives the same clusters, and with the
// pairs' order (spanOrderer, spill_forest.go) the same pairs.

func (m *simhashMethod) AppendKeys(dst []uint64, s DocSketch) []uint64 {
	return m.spec.AppendKeys(dst, &sketch.Sketch{FP: s.(*simhashSketch).fp})
}

// AppendSketch writes the sketch's binary form (sketch.Spec.AppendBinary):
// the fingerprint and, with --verify, the shingle set.
func (m *simhashMethod) AppendSketch(dst []byte, s DocSketch) []byte {
	sk := s.(*simhashSketch)
	out := sketch.Sketch{FP: sk.fp}
	if m.verify {
		out.Set = sk.set // never empty: the document has shingles
	}
	return m.spec.AppendBinary(dst, &out)
}

func (m *simhashMethod) DecodeSketch(b []byte) (DocSketch, error) {
	out, err := decodeSketch(m.spec, b, false, m.verify)
	if err != nil {
		return nil, err
	}
	return &simhashSketch{bits: m.bits, fp: out.FP, set: out.Set}, nil
}

// The spill path keeps the shingle sets of --verify apart (splitKeyed):
// its sketch file holds the fingerprint alone, 8 or 16 bytes little-endian
// (Lo, then Hi above 64 bits), and a set is read from the sets' file only
// for a pair within the distance. The file lives only for the run.

func (m *simhashMethod) appendCore(dst []byte, s DocSketch) ([]byte, []uint64) {
	sk := s.(*simhashSketch)
	dst = binary.LittleEndian.AppendUint64(dst, sk.fp.Lo)
	if m.bits > 64 {
		dst = binary.LittleEndian.AppendUint64(dst, sk.fp.Hi)
	}
	if !m.verify {
		return dst, nil
	}
	return dst, sk.set
}

func (m *simhashMethod) decodeCore(b []byte, reuse DocSketch) (DocSketch, error) {
	n := 8
	if m.bits > 64 {
		n = 16
	}
	if len(b) != n {
		return nil, fmt.Errorf("simhash: spilled sketch of %d bytes, want %d", len(b), n)
	}
	sk, _ := reuse.(*simhashSketch)
	if sk == nil {
		sk = &simhashSketch{bits: m.bits}
	}
	sk.fp = simhash.Fingerprint{Lo: binary.LittleEndian.Uint64(b)}
	if n == 16 {
		sk.fp.Hi = binary.LittleEndian.Uint64(b[8:])
	}
	return sk, nil
}

// matchCore is Match without the sets: a pair within the distance needs
// them under --verify.
func (m *simhashMethod) matchCore(a, b DocSketch) (float64, int, bool, bool) {
	d := a.(*simhashSketch).fp.Distance(b.(*simhashSketch).fp)
	if d > m.distance {
		return 0, d, false, true
	}
	return 1 - float64(d)/float64(m.bits), d, true, !m.verify
}

func (m *simhashMethod) matchSets(a, b []uint64) (float64, bool) {
	sim := jaccard.Set(a, b)
	return sim, sim >= m.threshold
}

func (m *simhashMethod) splitsSets() bool { return m.verify }

func (m *simhashMethod) keptCheck() (byCore, bySets bool) { return true, m.verify }

// HammingSimilarity reports whether the pairs' similarity is 1 -
// distance/bits (without --verify) rather than a Jaccard similarity.
func (m *simhashMethod) HammingSimilarity() bool { return !m.verify }

func (m *simhashMethod) Match(a, b DocSketch) (float64, int, bool) {
	sa, sb := a.(*simhashSketch), b.(*simhashSketch)
	d := sa.fp.Distance(sb.fp)
	if d > m.distance {
		return 0, d, false
	}
	sim := 1 - float64(d)/float64(m.bits)
	if m.verify {
		sim = jaccard.Set(sa.set, sb.set)
		return sim, d, sim >= m.threshold
	}
	return sim, d, true
}

// BytesPerDoc: the Finder's fingerprint and index while reading, its
// radix-sorted table at Flush (about 120 bytes a document), and with
// --verify the shingle set (8 bytes a shingle; about one shingle for every
// 6 bytes of word text or every byte of character text).
func (m *simhashMethod) BytesPerDoc(textBytes int, _, _ int64) (heap, mapped int64) {
	heap = 120
	if m.verify {
		heap += int64(8*shinglesPerText(m.shingle.Unit, textBytes) + 24)
	}
	return heap, 0
}

// shinglesPerText estimates the shingles of a text of n bytes.
func shinglesPerText(u shingle.Unit, n int) int {
	if u == shingle.Word {
		return n/6 + 1
	}
	return n + 1 // characters (CJK characters are 3 bytes, Latin ones 1)
}
