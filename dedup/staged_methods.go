package dedup

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/neardup/neardup/simhash"
)

// What the staged pipeline needs of each method (see staged.go).
//
// The staged join (JoinComponents) runs a method's own Finder on groups of
// whole components of the candidate graph, two documents being joined
// when they share a key of the sign stage. That gives Run's answer when
// the Finder's decision for a document depends only on the documents that
// share a key with it, transitively. It does, for each method staged:
//
//   - minhash: the streaming Finder queries only the document's band
//     buckets (dedup/minhash_comp.go); under --cluster leader it picks
//     among the leaders in those buckets by similarity, then keep order (a
//     property of the two documents alone), and whether a candidate is a
//     leader was decided the same way inside the component; with
//     --pairs-mode all it reports every verified candidate. The keys are
//     the band keys.
//   - simhash: every pair within the distance shares a key of the Spec's
//     permuted tables (any design finds every such pair), so the keys are
//     those (Keyed.AppendKeys). The batch Finder's clusters are the
//     connected components of the pairs within the distance; its spanning
//     pairs depend on the order in which AllPairsGrouped meets them, which
//     depends on the design, chosen for the number of fingerprints of the
//     whole input: the join uses that design (simhashFinder.blocks), and
//     since AllPairsGrouped's order is a property of each pair (the groups
//     of identical fingerprints in fingerprint order, then table, key and
//     fingerprints: simhash.Design.PairOrder), the order restricted to a
//     group is the whole run's. Leader clustering queries an exact index of
//     the leaders within the distance, so it is per component too.
//   - exact, ksentence: a document is paired with the first earlier one of
//     the same hash; the key is (a half of) the hash.
//
// Not staged: bloom (a Bloom filter's false positives depend on every key
// inserted before, in input order, whatever the component), jaccard (its
// join is not keyed: its candidates come from a prefix index over the
// whole input, not built for tasks), simhash's tfidf weights without
// --idf (the IDF table is learned from the whole input before a
// document is sketched), and minhash's direct join (tests only).

// A stager is what the staged tasks need of a method beyond Method.
type stager interface {
	// appendSigned appends document s's sketch in the staged form to sk
	// and its keys to keys: two documents that the method can pair share
	// a key. A document without a sketch (nil s, or no shingles) appends
	// neither.
	appendSigned(sk []byte, keys []uint64, s DocSketch) ([]byte, []uint64)
	// decodeSigned reads appendSigned's sketch, into reuse (a sketch it
	// returned before, or nil) where the join keeps nothing of it.
	decodeSigned(b []byte, reuse DocSketch) (DocSketch, error)
	// joinFinder returns the Finder the join runs over a group of whole
	// components, its documents (docs) in input order, their sketches in
	// memory (docs is nil when the sketches are streamed instead, too
	// many to hold: JoinOptions.Sketches); sketched is how many documents
	// of the whole input have a sketch.
	joinFinder(ctx context.Context, workers int, tmpDir string, sketched int64, docs []JoinDoc) (Finder, error)
	// countsBelow reports whether a run reports
	// Stats.RemovedBelowThreshold.
	countsBelow() bool
	// facts is Stats.Params of the whole run, from the facts planned
	// (Method.Facts before the run) and the documents with a sketch.
	facts(planned Facts, sketched int64) (Facts, error)
}

// A pairOrderer is a stager whose Finder reports pairs in an order of its
// own rather than by document (simhash's batch join): appendPairOrder
// appends the place of pair p, whose documents have the sketches a and b,
// in the whole run's pairs file, as bytes that compare in that order and
// begin with a 64-bit position (see JoinPair); ok is false when the run
// reports its pairs by document after all.
type pairOrderer interface {
	appendPairOrder(dst []byte, p Pair, a, b DocSketch) (out []byte, ok bool)
}

// stagerOf returns m's stager, or why m is not staged.
func stagerOf(m Method) (stager, error) {
	if sm := capabilitiesOf(m).staged; sm != nil {
		return sm.stager()
	}
	return nil, fmt.Errorf("--method %s: the staged pipeline (--executor) does not run it (its candidate pairs are not keyed); run it without --executor", m.Name())
}

// stager: the band keys, which the sketchers then compute, and the
// staged sketch; not the direct join.
func (m *minhashMethod) stager() (stager, error) {
	if m.direct {
		return nil, fmt.Errorf("this minhash join (direct) is not staged; run it without --executor")
	}
	m.bandKeys = true // the sketchers compute the band keys
	return minhashStager{m}, nil
}

// stager: not while the IDF table is to be learned or saved.
func (m *simhashMethod) stager() (stager, error) {
	switch {
	case m.NeedsPrePass():
		return nil, fmt.Errorf("--weights tfidf: the IDF table is learned from the whole input before any document is sketched, which the staged pipeline (--executor) does not do; give a table with --idf (a plain run's --save-idf writes one), or run without --executor")
	case m.saveIDF != "":
		return nil, fmt.Errorf("--save-idf: not with --executor; run without --executor")
	}
	return &simhashStager{keyedStager: keyedStager{m}, m: m}, nil
}

func (m exact) stager() (stager, error) { return keyedStager{m}, nil }

func (m *ksentenceMethod) stager() (stager, error) { return keyedStager{m}, nil }

// stager: never (it is a stagedMethod to say why).
func (m *bloomMethod) stager() (stager, error) {
	return nil, fmt.Errorf("--method %s: the staged pipeline (--executor) does not run it: a Bloom filter's answer for a document depends on every key inserted before it, in input order, not on its near-duplicates alone; run it without --executor", m.Name())
}

// minhashStager stages minhash: the sketch is appendStaged's, the keys
// the band keys; the join is the component join, or the streaming Finder
// under leader clustering and --pairs-mode all (as in Run).
type minhashStager struct{ m *minhashMethod }

func (s minhashStager) appendSigned(b []byte, keys []uint64, d DocSketch) ([]byte, []uint64) {
	sk, ok := d.(*minhashSketch)
	if !ok || sk.sig == nil {
		return b, keys
	}
	at := len(keys)
	if sk.keys != nil {
		keys = append(keys, sk.keys...)
	} else {
		keys = s.m.params.AppendKeys(keys, sk.sig)
	}
	b = s.m.appendStaged(b, sk, keys[at:])
	sk.set.release()
	return b, keys
}

// decodeSigned decodes into reuse under the component join, which keeps
// nothing of a sketch it is given (its shingle set's memory included);
// the streaming Finder gets a sketch of its own.
func (s minhashStager) decodeSigned(b []byte, reuse DocSketch) (DocSketch, error) {
	sk, _ := reuse.(*minhashSketch)
	if sk == nil || s.streaming() {
		sk = &minhashSketch{}
	}
	if _, err := s.m.decodeStaged(b, sk, sk.set.h); err != nil {
		return nil, err
	}
	return sk, nil
}

// streaming reports whether the join is the streaming Finder (as in Run).
func (s minhashStager) streaming() bool { return s.m.leader || s.m.allPairs }

func (s minhashStager) joinFinder(ctx context.Context, workers int, tmpDir string, _ int64, docs []JoinDoc) (Finder, error) {
	if !s.streaming() {
		f := s.m.newCompFinder(workers, tmpDir)
		if docs != nil {
			// The task's budget counts the sets beside the documents'
			// sketches: no scratch file. Streamed sketches (a component
			// too large for memory) put them in one, as Run does.
			f.sets.memOnly = true
			f.sets.pending = make([]uint64, 0, s.m.stagedSetsLen(docs))
		}
		f.ctx = ctx
		return f, nil
	}
	f, err := s.m.NewFinder()
	if err != nil {
		return nil, err
	}
	if sc := finderCapabilitiesOf(f).scratch; sc != nil {
		sc.useScratch(workers, tmpDir)
	}
	return f, nil
}

func (s minhashStager) countsBelow() bool { return s.m.join.needSets() }

func (s minhashStager) facts(planned Facts, _ int64) (Facts, error) { return planned, nil }

// keyedMethod is a Keyed method with its own Finder (exact, ksentence,
// simhash).
type keyedMethod interface {
	Keyed
	NewFinder() (Finder, error)
}

// keyedStager stages a Keyed method: the sketch is its SketchCodec's, the
// keys its AppendKeys, the join its Finder.
type keyedStager struct{ m keyedMethod }

func (s keyedStager) appendSigned(b []byte, keys []uint64, d DocSketch) ([]byte, []uint64) {
	if d == nil {
		return b, keys
	}
	return s.m.AppendSketch(b, d), s.m.AppendKeys(keys, d)
}

func (s keyedStager) decodeSigned(b []byte, _ DocSketch) (DocSketch, error) {
	return s.m.DecodeSketch(b)
}

func (s keyedStager) joinFinder(context.Context, int, string, int64, []JoinDoc) (Finder, error) {
	return s.m.NewFinder()
}

func (s keyedStager) countsBelow() bool {
	f, err := s.m.NewFinder()
	if err != nil {
		return false
	}
	return finderCapabilitiesOf(f).keptCheck != nil
}

func (s keyedStager) facts(planned Facts, _ int64) (Facts, error) { return planned, nil }

// simhashStager is keyedStager with the design of the whole input (see
// above).
type simhashStager struct {
	keyedStager
	m      *simhashMethod
	design simhash.Design
	order  func(a, b simhash.Fingerprint) (int, uint64, int)
}

// wholeDesign is the design Run's Finder uses for sketched documents.
func (s *simhashStager) wholeDesign(sketched int64) (simhash.Design, error) {
	if s.m.leader {
		return simhash.ChooseDesign(max(int(sketched), 1), s.m.bits, s.m.distance, false, simhash.DesignOptions{})
	}
	return s.m.batchDesign(int(sketched))
}

func (s *simhashStager) joinFinder(_ context.Context, _ int, _ string, sketched int64, _ []JoinDoc) (Finder, error) {
	d, err := s.wholeDesign(sketched)
	if err != nil {
		return nil, err
	}
	s.design, s.order = d, d.PairOrder()
	f, err := s.m.NewFinder()
	if err != nil {
		return nil, err
	}
	f.(*simhashFinder).blocks = d.Blocks
	return f, nil
}

func (s *simhashStager) facts(planned Facts, sketched int64) (Facts, error) {
	d, err := s.wholeDesign(sketched)
	if err != nil {
		return Facts{}, err
	}
	planned.Design, planned.DesignFor1MDocs = d.String(), ""
	return planned, nil
}

// appendPairOrder: AllPairsGrouped's order (simhash.Design.PairOrder), as
// a position in the 64-bit range that grows along it (the groups of equal
// fingerprints, by fingerprint, then each table's share, by key) and the
// exact key.
func (s *simhashStager) appendPairOrder(dst []byte, p Pair, a, b DocSketch) ([]byte, bool) {
	if s.m.leader || s.m.allPairs {
		return dst, false
	}
	fa, fb := a.(*simhashSketch).fp, b.(*simhashSketch).fp
	// The copies of equal fingerprints (most pairs, in crawls) take the
	// first half of the positions, the tables share the second.
	const half = 1 << 63
	width := half / uint64(s.design.Tables)
	if p.Distance == 0 { // a copy of the earliest document of a fingerprint
		dst = binary.BigEndian.AppendUint64(dst, scale(top64(fa, s.m.bits), half))
		dst = append(dst, 0)
		dst = appendFP(dst, fa)
		return binary.BigEndian.AppendUint64(dst, uint64(p.B)), true
	}
	t, key, kb := s.order(fa, fb)
	if kb < 64 {
		key <<= 64 - kb
	}
	dst = binary.BigEndian.AppendUint64(dst, half+uint64(t)*width+scale(key, width))
	dst = append(dst, 1)
	dst = binary.BigEndian.AppendUint16(dst, uint16(t))
	dst = binary.BigEndian.AppendUint64(dst, key)
	if fb.Hi < fa.Hi || fb.Hi == fa.Hi && fb.Lo < fa.Lo {
		fa, fb = fb, fa
	}
	return appendFP(appendFP(dst, fa), fb), true
}

// scale maps x in [0, 2^64) to [0, width) monotonically.
func scale(x, width uint64) uint64 {
	hi, _ := bits.Mul64(x, width)
	return hi
}

// top64 is the highest 64 of fp's bits (as a bits-bit number).
func top64(fp simhash.Fingerprint, f int) uint64 {
	if f <= 64 {
		return fp.Lo << (64 - f)
	}
	return fp.Hi<<(128-f) | fp.Lo>>(f-64)
}

func appendFP(dst []byte, fp simhash.Fingerprint) []byte {
	dst = binary.BigEndian.AppendUint64(dst, fp.Hi)
	return binary.BigEndian.AppendUint64(dst, fp.Lo)
}
