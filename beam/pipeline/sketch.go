package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
)

// docMeta is what the later stages need of a document.
type docMeta struct {
	Rank int64
	Len  int64 // bytes of the text as read (--keep longest, as dedup)
	ID   string
}

// member is a document in a group: its rank and encoded sketch.
type member struct {
	Rank   int64
	Sketch []byte
}

// pairRec is a duplicate pair of ranks A < B.
type pairRec struct {
	A, B       int64
	Similarity float64
	Distance   int64
}

// Counters (package beam metrics, namespace "neardup").
var (
	cDocuments    = beam.NewCounter("neardup", "documents")
	cEmpty        = beam.NewCounter("neardup", "empty")
	cInputBytes   = beam.NewCounter("neardup", "input_bytes")
	cShuffleBytes = beam.NewCounter("neardup", "shuffle_bytes")
	cCollapsed    = beam.NewCounter("neardup", "identical_collapsed")
	cBucketPairs  = beam.NewCounter("neardup", "candidate_checks")
	dBucketSize   = beam.NewDistribution("neardup", "bucket_size")
)

// readFn reads one input file, normalises and sketches every document, and
// emits its metadata and, for a document with a sketch, the sketch keyed
// by a 128-bit hash of its bytes (identical sketches are collapsed before
// the buckets: thousands of copies of one text cost linear time).
type readFn struct {
	Cfg  dedup.Options
	Read readOptions

	m *method
}

func (f *readFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *readFn) ProcessElement(ctx context.Context, t fileTask, emitMeta func(docMeta), emitSketch func(string, member)) error {
	var n, empty, bytes, shuffle int64
	err := eachDoc(ctx, t, f.Read.corpus(), func(rank int64, d *corpus.Document) error {
		n++
		bytes += int64(len(d.Raw))
		emitMeta(docMeta{Rank: rank, Len: int64(len(d.Text)), ID: d.ID})
		sk, err := f.m.sketch(int(recordOfRank(rank)), d.ID, d.Text)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Path, err)
		}
		if sk == nil {
			empty++
			return nil
		}
		h := xxh3.Hash128(sk).Bytes()
		emitSketch(string(h[:]), member{Rank: rank, Sketch: sk})
		shuffle += int64(16 + 8 + len(sk))
		return nil
	})
	cDocuments.Inc(ctx, n)
	cEmpty.Inc(ctx, empty)
	cInputBytes.Inc(ctx, bytes)
	cShuffleBytes.Inc(ctx, shuffle)
	return err
}

// minRankFn keeps the member of lowest rank: the representative of a group
// of identical sketches (a combiner, so a group of any size is reduced
// where it is read, never collected on one worker).
func minRankFn(a, b member) member {
	if b.Rank < a.Rank {
		return b
	}
	return a
}

// rankOnlyFn drops the sketch: the members of an identical group travel as
// ranks.
func rankOnlyFn(k string, m member, emit func(string, int64)) {
	emit(k, m.Rank)
}

// collapseFn joins every member of a group of identical sketches to the
// group's representative (the lowest rank), with the similarity the
// method gives two copies of the sketch, and emits the representative's
// bucket keys. Members stream through: nothing of the group is held.
type collapseFn struct {
	Cfg dedup.Options

	m    *method
	keys []uint64
}

func (f *collapseFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *collapseFn) ProcessElement(ctx context.Context, _ string, reps func(*member) bool, ranks func(*int64) bool, emitPair func(pairRec), emitKey func(uint64, int64), emitSketch func(int64, []byte)) error {
	var rep member
	if !reps(&rep) {
		return fmt.Errorf("internal: identical-sketch group without a representative")
	}
	s, err := f.m.decode(rep.Sketch)
	if err != nil {
		return fmt.Errorf("internal: document rank %d: %w", rep.Rank, err)
	}
	f.keys = f.m.appendKeys(f.keys[:0], s)
	sim, dist, ok := f.m.keyed.Match(s, s)
	var r, collapsed int64
	for ranks(&r) {
		if r == rep.Rank || !ok {
			continue
		}
		emitPair(pairRec{A: rep.Rank, B: r, Similarity: sim, Distance: int64(dist)})
		collapsed++
	}
	cCollapsed.Inc(ctx, collapsed)
	if !ok && len(f.keys) > 0 {
		// Copies that are not duplicates of each other would each need
		// their own bucket entries; no method makes such sketches.
		return fmt.Errorf("internal: document rank %d: a sketch with bucket keys is not a duplicate of itself", rep.Rank)
	}
	if len(f.keys) == 0 {
		return nil
	}
	for _, k := range f.keys {
		emitKey(k, rep.Rank)
	}
	emitSketch(rep.Rank, rep.Sketch)
	cShuffleBytes.Inc(ctx, int64(len(f.keys)*16+8+len(rep.Sketch)))
	return nil
}

// candidatesFn passes on the members of a bucket that has more than one:
// (rank, key) for each, so that only the sketches of documents with a
// candidate travel to the buckets (most keys of a corpus are singletons).
// It holds the bucket's ranks.
func candidatesFn(ctx context.Context, key uint64, ranks func(*int64) bool, emit func(int64, uint64)) {
	var rs []int64
	var r int64
	for ranks(&r) {
		rs = append(rs, r)
	}
	dBucketSize.Update(ctx, int64(len(rs)))
	if len(rs) < 2 {
		return
	}
	for _, r := range rs {
		emit(r, key)
	}
	cShuffleBytes.Inc(ctx, int64(16*len(rs)))
}

// withSketchFn emits a document's sketch under each of its keys that has
// candidates.
func withSketchFn(ctx context.Context, rank int64, sketches func(*[]byte) bool, keys func(*uint64) bool, emit func(uint64, member)) error {
	var sk []byte
	if !sketches(&sk) {
		return fmt.Errorf("internal: rank %d in a bucket has no sketch", rank)
	}
	var k uint64
	var n int64
	for keys(&k) {
		emit(k, member{Rank: rank, Sketch: sk})
		n++
	}
	cShuffleBytes.Inc(ctx, n*int64(8+8+len(sk)))
	return nil
}

// bucketFn checks the members of one bucket (documents sharing a band or
// table key) pairwise with the method's decision, in rank order, and
// emits the pairs it accepts. A union-find over the bucket skips a pair
// already joined through others in the bucket, as dedup's finder skips a
// candidate already in the document's cluster: the components are the
// same, the checks linear in the bucket for near-identical documents. The
// bucket's distinct sketches are held (identical ones were collapsed).
type bucketFn struct {
	Cfg dedup.Options

	m *method
}

func (f *bucketFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *bucketFn) ProcessElement(ctx context.Context, _ uint64, it func(*member) bool, emit func(pairRec)) error {
	var ms []member
	var m member
	for it(&m) {
		ms = append(ms, m)
		m = member{}
	}
	if len(ms) < 2 {
		return nil
	}
	slices.SortFunc(ms, func(a, b member) int { return cmp.Compare(a.Rank, b.Rank) })
	ms = slices.CompactFunc(ms, func(a, b member) bool { return a.Rank == b.Rank })
	sks := make([]dedup.DocSketch, len(ms))
	for i := range ms {
		s, err := f.m.decode(ms[i].Sketch)
		if err != nil {
			return fmt.Errorf("internal: document rank %d: %w", ms[i].Rank, err)
		}
		sks[i] = s
	}
	uf := cluster.NewUnionFind(len(ms))
	var checks int64
	for i := 1; i < len(ms); i++ {
		for j := 0; j < i; j++ {
			if uf.Find(j) == uf.Find(i) {
				continue
			}
			checks++
			sim, dist, ok := f.m.keyed.Match(sks[j], sks[i])
			if !ok {
				continue
			}
			uf.Union(j, i)
			emit(pairRec{A: ms[j].Rank, B: ms[i].Rank, Similarity: sim, Distance: int64(dist)})
		}
	}
	cBucketPairs.Inc(ctx, checks)
	return nil
}
