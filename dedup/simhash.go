package dedup

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/internal/mix"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
)

func init() { register("simhash", newSimhashMethod) }

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

// simhashMethod finds documents whose SimHash fingerprints (package
// simhash) are within Config.Distance bits, over the shingles of
// Config.Shingle weighted by count or by TF-IDF.
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
	bits, distance int
	weighting      string // count, set, sublinear or tfidf
	seed           uint64
	shingle        shingle.Options
	verify         bool
	allPairs       bool // Config.AllPairs
	threshold      float64
	design         simhash.Design        // for 2^20 documents, in Describe before a run
	chosen         *simhash.Design       // the design of the last Flush, if any
	masks          []simhash.Fingerprint // design's table masks (Keyed)
	idf            *simhash.IDF
	idfMeta        string
	saveIDF        string // Config.SaveIDF
}

func newSimhashMethod(cfg Config) (Method, error) {
	bits := cfg.Bits
	if bits == 0 {
		bits = 64
	}
	if bits != 64 && bits != 128 {
		return nil, fmt.Errorf("--bits %d: simhash fingerprints have 64 or 128 bits", bits)
	}
	if cfg.Distance < 0 || cfg.Distance >= bits {
		return nil, fmt.Errorf("--distance %d: must be between 0 and --bits - 1 (%d)", cfg.Distance, bits-1)
	}
	m := &simhashMethod{bits: bits, distance: cfg.Distance, seed: cfg.Seed, shingle: cfg.Shingle, allPairs: cfg.AllPairs,
		verify: cfg.Verify, threshold: cfg.Threshold}
	m.weighting = cfg.Weights
	switch cfg.Weights {
	case "":
		m.weighting = "count"
	case "count", "set", "sublinear":
	case "tfidf":
	default:
		return nil, fmt.Errorf("--weights %q: want count, set, sublinear or tfidf", cfg.Weights)
	}
	if m.verify && !(cfg.Threshold > 0 && cfg.Threshold <= 1) {
		return nil, fmt.Errorf("--threshold %v: must be in (0, 1]", cfg.Threshold)
	}
	if _, err := shingle.New(cfg.Shingle); err != nil {
		return nil, err
	}
	n := m.shingle.N
	if n == 0 {
		n = 1
	}
	m.idfMeta = fmt.Sprintf("unit=%s ngram=%d seed=%d", m.shingle.Unit, n, m.shingle.Seed)
	d, err := simhash.ChooseDesign(simhash.DefaultExpectedN, bits, cfg.Distance, true, simhash.DesignOptions{})
	if err != nil {
		return nil, fmt.Errorf("--distance %d: %w", cfg.Distance, err)
	}
	m.design = d
	m.masks = d.TableMasks()
	m.saveIDF = cfg.SaveIDF
	if cfg.IDFFile != "" {
		if !m.usesIDF() {
			return nil, fmt.Errorf("--idf %s: an IDF table needs --weights tfidf", cfg.IDFFile)
		}
		t, err := simhash.LoadIDF(cfg.IDFFile)
		if err != nil {
			return nil, fmt.Errorf("--idf %s: %w", cfg.IDFFile, err)
		}
		if err := m.SetIDF(t); err != nil {
			return nil, fmt.Errorf("--idf %s: %w", cfg.IDFFile, err)
		}
	}
	if m.saveIDF != "" && !m.usesIDF() {
		return nil, fmt.Errorf("--save-idf %s: only --weights tfidf has an IDF table", m.saveIDF)
	}
	return m, nil
}

func (m *simhashMethod) Name() string { return "simhash" }

func (m *simhashMethod) Describe() map[string]any {
	n := m.shingle.N
	if n == 0 {
		n = 1
	}
	weights := m.weighting
	d := map[string]any{
		"bits":       m.bits,
		"distance":   m.distance,
		"unit":       m.shingle.Unit.String(),
		"ngram":      n,
		"weights":    weights,
		"index":      "permuted tables, batch (simhash.AllPairsGrouped); design chosen at Flush for the number of distinct fingerprints",
		"verify":     m.verify,
		"similarity": "1 - distance/bits (the fraction of equal fingerprint bits, not a Jaccard similarity; pairs lines say \"measure\":\"hamming\")",
	}
	if m.verify {
		d["similarity"] = "exact Jaccard of shingle sets (--verify)"
	}
	if m.chosen != nil {
		d["design"] = m.chosen.String()
	} else {
		d["design_for_1M_docs"] = m.design.String()
	}
	if m.verify {
		d["threshold"] = m.threshold
	}
	if m.idf != nil {
		d["idf_docs"] = m.idf.Docs
		d["idf_features"] = m.idf.Len()
	}
	return d
}

// usesIDF reports whether the weights are TF-IDF, which need an IDF table.
func (m *simhashMethod) usesIDF() bool { return m.weighting == "tfidf" }

// NeedsPrePass reports whether TF-IDF weights still need their IDF table.
func (m *simhashMethod) NeedsPrePass() bool { return m.usesIDF() && m.idf == nil }

// NewLearner returns a learner of document frequencies for one worker.
func (m *simhashMethod) NewLearner() (Learner, error) {
	sh, err := shingle.New(m.shingle)
	if err != nil {
		return nil, err
	}
	return &idfLearner{sh: sh}, nil
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
	sh    *shingle.Shingler
	b     simhash.IDFBuilder
	feats []uint64
}

func (l *idfLearner) Learn(d *Doc) error {
	l.feats = l.sh.AppendHashes(l.feats[:0], textView(d))
	l.b.AddDoc(l.feats)
	return nil
}

func (m *simhashMethod) NewSketcher() (Sketcher, error) {
	if m.usesIDF() && m.idf == nil {
		return nil, fmt.Errorf("simhash --weights tfidf: no IDF table: the pipeline must run the pre-pass (dedup.PrePass) or supply a table (SetIDF)")
	}
	sh, err := shingle.New(m.shingle)
	if err != nil {
		return nil, err
	}
	h, err := simhash.New(simhash.Options{Bits: m.bits, Seed: m.seed})
	if err != nil {
		return nil, err
	}
	return &simhashSketcher{m: m, sh: sh, h: h}, nil
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
	m      *simhashMethod
	sh     *shingle.Shingler
	h      *simhash.Hasher
	feats  []uint64
	sorter hashSorter
}

func (s *simhashSketcher) Sketch(d *Doc) (Sketch, error) {
	s.feats = s.sh.AppendHashes(s.feats[:0], textView(d))
	if len(s.feats) == 0 {
		return nil, nil // no shingle: nothing to compare
	}
	s.h.Reset()
	switch s.m.weighting {
	case "tfidf":
		s.h.AddIDF(s.feats, s.m.idf)
	case "set", "sublinear":
		s.sorter.sort(s.feats)
		if s.m.weighting == "set" {
			s.h.AddFeatures(slices.Compact(s.feats))
			break
		}
		for i := 0; i < len(s.feats); {
			j := i + 1
			for j < len(s.feats) && s.feats[j] == s.feats[i] {
				j++
			}
			s.h.Add(s.feats[i], 1+math.Log(float64(j-i)))
			i = j
		}
	default:
		s.h.AddFeatures(s.feats)
	}
	sk := &simhashSketch{fp: s.h.Sum(), bits: s.m.bits}
	if s.m.verify {
		sk.set = s.sh.AppendSet(nil, textView(d))
	}
	return sk, nil
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
}

func (f *simhashFinder) Add(i int, s Sketch, emit func(Pair)) error {
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
		d, err = simhash.AllPairs(f.fps, f.m.bits, f.m.distance, simhash.DesignOptions{}, report)
	} else {
		d, err = simhash.AllPairsGrouped(f.fps, f.m.bits, f.m.distance, simhash.DesignOptions{},
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

// The simhash method is Keyed: its keys are the fingerprint masked by each
// permuted table of the design chosen for simhash.DefaultExpectedN
// documents (any design finds every pair within the distance; the size
// of the key groups follows from the design's key bits), and Match
// accepts a pair within the distance (and, with --verify, at or above the
// threshold), as the Finder does: the spill path gives the same clusters.

// simhashKey hashes the fingerprint bits under mask, with the table number
// mixed in so that keys of different tables differ.
func simhashKey(fp, mask simhash.Fingerprint, table int) uint64 {
	return mix.SplitMix64(fp.Lo&mask.Lo ^ mix.SplitMix64(fp.Hi&mask.Hi^uint64(table+1)*0x9e3779b97f4a7c15))
}

func (m *simhashMethod) AppendKeys(dst []uint64, s Sketch) []uint64 {
	sk := s.(*simhashSketch)
	for t, mask := range m.masks {
		dst = append(dst, simhashKey(sk.fp, mask, t))
	}
	return dst
}

// AppendSketch encodes a sketch: a flags byte (bit 0: a shingle set
// follows), the fingerprint (8 bytes, or 16 for 128 bits, little-endian
// low word first), then with --verify the set: its length and the
// differences of its ascending hashes, as uvarints.
func (m *simhashMethod) AppendSketch(dst []byte, s Sketch) []byte {
	sk := s.(*simhashSketch)
	flags := byte(0)
	if m.verify {
		flags = 1
	}
	dst = append(dst, flags)
	dst = binary.LittleEndian.AppendUint64(dst, sk.fp.Lo)
	if m.bits > 64 {
		dst = binary.LittleEndian.AppendUint64(dst, sk.fp.Hi)
	}
	if m.verify {
		dst = binary.AppendUvarint(dst, uint64(len(sk.set)))
		prev := uint64(0)
		for _, h := range sk.set {
			dst = binary.AppendUvarint(dst, h-prev)
			prev = h
		}
	}
	return dst
}

func (m *simhashMethod) DecodeSketch(b []byte) (Sketch, error) {
	fpBytes := m.bits / 8
	if len(b) < 1+fpBytes {
		return nil, fmt.Errorf("simhash: sketch of %d bytes, want at least %d", len(b), 1+fpBytes)
	}
	want := byte(0) // the flags: bit 0 with --verify
	if m.verify {
		want = 1
	}
	if b[0] != want {
		return nil, fmt.Errorf("simhash: sketch flags %#x do not match --verify=%v", b[0], m.verify)
	}
	sk := &simhashSketch{bits: m.bits, fp: simhash.Fingerprint{Lo: binary.LittleEndian.Uint64(b[1:])}}
	if m.bits > 64 {
		sk.fp.Hi = binary.LittleEndian.Uint64(b[9:])
	}
	rest := b[1+fpBytes:]
	if !m.verify {
		if len(rest) != 0 {
			return nil, fmt.Errorf("simhash: %d bytes after the fingerprint", len(rest))
		}
		return sk, nil
	}
	n, k := uvarint(rest)
	if k <= 0 || n == 0 || n > uint64(len(rest)) {
		return nil, fmt.Errorf("simhash: bad shingle set length")
	}
	rest = rest[k:]
	sk.set = make([]uint64, 0, n)
	prev := uint64(0)
	for i := range n {
		d, k := uvarint(rest)
		if k <= 0 || (i > 0 && d == 0) || prev+d < prev {
			return nil, fmt.Errorf("simhash: bad shingle set entry %d", i)
		}
		prev += d
		sk.set = append(sk.set, prev)
		rest = rest[k:]
	}
	if len(rest) != 0 {
		return nil, fmt.Errorf("simhash: %d bytes after the shingle set", len(rest))
	}
	return sk, nil
}

// uvarint decodes a canonical uvarint (no overlong encodings, so that a
// sketch has one encoding); k <= 0 on error.
func uvarint(b []byte) (uint64, int) {
	v, k := binary.Uvarint(b)
	if k > 1 && b[k-1] == 0 {
		return 0, -1
	}
	return v, k
}

// HammingSimilarity reports whether the pairs' similarity is 1 -
// distance/bits (without --verify) rather than a Jaccard similarity.
func (m *simhashMethod) HammingSimilarity() bool { return !m.verify }

func (m *simhashMethod) Match(a, b Sketch) (float64, int, bool) {
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
func (m *simhashMethod) BytesPerDoc(textBytes int) int {
	per := 120
	if m.verify {
		per += 8*shinglesPerText(m.shingle.Unit, textBytes) + 24
	}
	return per
}

// shinglesPerText estimates the shingles of a text of n bytes.
func shinglesPerText(u shingle.Unit, n int) int {
	if u == shingle.Word {
		return n/6 + 1
	}
	return n + 1 // characters (CJK characters are 3 bytes, Latin ones 1)
}
