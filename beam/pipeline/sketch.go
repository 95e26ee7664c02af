package pipeline

import (
	"cmp"
	"context"
	"encoding/binary"
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

// member is a document in a bucket: its rank and encoded sketch.
type member struct {
	Rank   int64
	Sketch []byte
}

// repRec is what the collapse of identical sketches needs of a document:
// its rank, the method's decision on two copies of its sketch (Sim, Dist,
// OK: the pair of a copy with its representative) and its bucket keys
// (8 bytes each, little-endian). The sketch itself does not travel: the
// documents that turn out to have a candidate are sketched again where
// their file is read (sketchAgainFn).
type repRec struct {
	Rank int64
	Sim  float64
	Dist int64
	OK   bool
	Keys []byte
}

// rankKey is a document with one of its bucket keys that has candidates.
type rankKey struct {
	Rank int64
	Key  uint64
}

// pairRec is a duplicate pair of ranks A < B.
type pairRec struct {
	A, B       int64
	Similarity float64
	Distance   int64
}

// Counters (package beam metrics, namespace "neardup"). The shuffle bytes
// are counted per step (shuffle_bytes_STEP; stats.json sums them and
// lists them in shuffle_bytes_by_step).
var (
	cDocuments    = beam.NewCounter("neardup", "documents")
	cEmpty        = beam.NewCounter("neardup", "empty")
	cInputBytes   = beam.NewCounter("neardup", "input_bytes")
	cCollapsed    = beam.NewCounter("neardup", "identical_collapsed")
	cBucketPairs  = beam.NewCounter("neardup", "candidate_checks")
	cResketched   = beam.NewCounter("neardup", "sketched_again")
	dBucketSize   = beam.NewDistribution("neardup", "bucket_size")
	sCollapse     = beam.NewCounter("neardup", shufflePrefix+"collapse")
	sKeys         = beam.NewCounter("neardup", shufflePrefix+"keys")
	sCandidates   = beam.NewCounter("neardup", shufflePrefix+"candidates_by_file")
	sBuckets      = beam.NewCounter("neardup", shufflePrefix+"sketches_to_buckets")
	sPairs        = beam.NewCounter("neardup", shufflePrefix+"pairs")
	sComponents   = beam.NewCounter("neardup", shufflePrefix+"components")
	shufflePrefix = "shuffle_bytes_"
)

// readFn reads one input file, normalises and sketches every document, and
// emits its metadata and, for a document with a sketch, a repRec keyed by
// a 128-bit hash of the encoded sketch (identical sketches are collapsed
// before the buckets: thousands of copies of one text cost linear time).
type readFn struct {
	Cfg  dedup.Options
	Read readOptions

	m    *method
	keys []uint64
}

func (f *readFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *readFn) ProcessElement(ctx context.Context, t fileTask, emitMeta func(docMeta), emitRep func(string, repRec)) error {
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
		s, err := f.m.decode(sk)
		if err != nil {
			return fmt.Errorf("internal: %s: document %q: %w", t.Path, d.ID, err)
		}
		f.keys = f.m.appendKeys(f.keys[:0], s)
		sim, dist, ok := f.m.keyed.Match(s, s)
		if !ok && len(f.keys) > 0 {
			// Copies that are not duplicates of each other would each
			// need their own bucket entries; no method makes such
			// sketches.
			return fmt.Errorf("internal: %s: document %q: a sketch with bucket keys is not a duplicate of itself", t.Path, d.ID)
		}
		rep := repRec{Rank: rank, Sim: sim, Dist: int64(dist), OK: ok, Keys: make([]byte, 0, 8*len(f.keys))}
		for _, k := range f.keys {
			rep.Keys = binary.LittleEndian.AppendUint64(rep.Keys, k)
		}
		h := xxh3.Hash128(sk).Bytes()
		emitRep(string(h[:]), rep)
		// The representative (a combiner) and the rank of every copy.
		shuffle += 16 + 8 + 8 + 8 + 1 + int64(len(rep.Keys)) + 16 + 8
		return nil
	})
	cDocuments.Inc(ctx, n)
	cEmpty.Inc(ctx, empty)
	cInputBytes.Inc(ctx, bytes)
	sCollapse.Inc(ctx, shuffle)
	return err
}

// minRankFn keeps the document of lowest rank: the representative of a
// group of identical sketches (a combiner, so a group of any size is
// reduced where it is read, never collected on one worker).
func minRankFn(a, b repRec) repRec {
	if b.Rank < a.Rank {
		return b
	}
	return a
}

// rankOnlyFn keeps the rank: the members of an identical group travel as
// ranks.
func rankOnlyFn(k string, m repRec, emit func(string, int64)) {
	emit(k, m.Rank)
}

// keyShards is how many groups the bucket keys are gathered in: a
// GroupByKey per bucket key costs a runner state per key (Prism keeps a
// trigger state, a pane and a heap entry for each, about 0.5 KB), and
// nearly every key of a corpus is a singleton (13 per document with the
// default bands). So the (key, rank) pairs go to one of keyShards groups,
// packed by a combiner (one element per shard per bundle where the runner
// lifts it), and each group is sorted by key: 1 billion documents make
// groups of about 3 million pairs (50 MB) at the default bands.
const keyShards = 1 << 12

// keyPairs is a run of (key, rank) pairs, 16 bytes each, little-endian.
type keyPairs struct {
	B []byte
}

// packKeysFn packs the (key, rank) pairs of a shard.
type packKeysFn struct{}

func (*packKeysFn) AddInput(a keyPairs, in keyPairs) keyPairs {
	return keyPairs{B: append(a.B, in.B...)}
}

func (*packKeysFn) MergeAccumulators(a, b keyPairs) keyPairs {
	return keyPairs{B: append(a.B, b.B...)}
}

// collapseFn joins every member of a group of identical sketches to the
// group's representative (the lowest rank), with the similarity the
// method gives two copies of the sketch, and emits the representative's
// bucket keys with its rank, by shard. Members stream through: nothing of
// the group is held.
func collapseFn(ctx context.Context, _ string, reps func(*repRec) bool, ranks func(*int64) bool, emitPair func(pairRec), emitKey func(int64, keyPairs)) error {
	var rep repRec
	if !reps(&rep) {
		return fmt.Errorf("internal: identical-sketch group without a representative")
	}
	var r, collapsed int64
	for ranks(&r) {
		if r == rep.Rank || !rep.OK {
			continue
		}
		emitPair(pairRec{A: rep.Rank, B: r, Similarity: rep.Sim, Distance: rep.Dist})
		collapsed++
	}
	cCollapsed.Inc(ctx, collapsed)
	if len(rep.Keys)%8 != 0 {
		return fmt.Errorf("internal: document rank %d: %d bytes of bucket keys", rep.Rank, len(rep.Keys))
	}
	for i := 0; i < len(rep.Keys); i += 8 {
		k := binary.LittleEndian.Uint64(rep.Keys[i:])
		b := make([]byte, 16)
		binary.LittleEndian.PutUint64(b, k)
		binary.LittleEndian.PutUint64(b[8:], uint64(rep.Rank))
		emitKey(int64(k%keyShards), keyPairs{B: b})
	}
	sKeys.Inc(ctx, int64(len(rep.Keys)*3)+collapsed*40)
	return nil
}

// candidatesFn finds the buckets of a shard of keys that have more than
// one member and passes their members on, keyed by their input file:
// (file, (rank, key)) for each, so that only the documents with a
// candidate are sketched again, and their sketches go to the buckets
// straight from the second read (most keys of a corpus are singletons).
// It holds the shard's pairs.
func candidatesFn(ctx context.Context, _ int64, kp keyPairs, emit func(int64, rankKey)) error {
	if len(kp.B)%16 != 0 {
		return fmt.Errorf("internal: %d bytes of (key, rank) pairs", len(kp.B))
	}
	ps := make([]rankKey, len(kp.B)/16)
	for i := range ps {
		ps[i] = rankKey{Key: binary.LittleEndian.Uint64(kp.B[16*i:]), Rank: int64(binary.LittleEndian.Uint64(kp.B[16*i+8:]))}
	}
	slices.SortFunc(ps, func(a, b rankKey) int {
		return cmp.Or(cmp.Compare(a.Key, b.Key), cmp.Compare(a.Rank, b.Rank))
	})
	ps = slices.Compact(ps)
	var n int64
	for i := 0; i < len(ps); {
		j := i + 1
		for j < len(ps) && ps[j].Key == ps[i].Key {
			j++
		}
		dBucketSize.Update(ctx, int64(j-i))
		if j-i >= 2 {
			for _, p := range ps[i:j] {
				emit(fileOfRank(p.Rank), p)
			}
			n += int64(j - i)
		}
		i = j
	}
	sCandidates.Inc(ctx, 24*n)
	return nil
}

// sketchAgainFn reads one input file again and sketches the documents
// that have candidates (given as (rank, key) pairs; it holds them, 16
// bytes each), and emits each sketch under each of its keys that has
// candidates: a sketch travels only to the buckets where it is compared.
type sketchAgainFn struct {
	Cfg   dedup.Options
	Read  readOptions
	Files []string

	m *method
}

func (f *sketchAgainFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *sketchAgainFn) ProcessElement(ctx context.Context, file int64, it func(*rankKey) bool, emit func(uint64, member)) error {
	var want []rankKey
	var rk rankKey
	for it(&rk) {
		want = append(want, rk)
	}
	slices.SortFunc(want, func(a, b rankKey) int {
		return cmp.Or(cmp.Compare(a.Rank, b.Rank), cmp.Compare(a.Key, b.Key))
	})
	t := fileTask{Index: file, Path: f.Files[file]}
	next := 0
	var docs, shuffle int64
	err := eachDoc(ctx, t, f.Read.corpus(), func(rank int64, d *corpus.Document) error {
		if next >= len(want) || want[next].Rank != rank {
			return nil
		}
		sk, err := f.m.sketch(int(recordOfRank(rank)), d.ID, d.Text)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Path, err)
		}
		if sk == nil {
			return fmt.Errorf("%s: document %q has no sketch on the second read (the file changed during the run?)", t.Path, d.ID)
		}
		docs++
		for ; next < len(want) && want[next].Rank == rank; next++ {
			emit(want[next].Key, member{Rank: rank, Sketch: sk})
			shuffle += int64(8 + 8 + len(sk))
		}
		return nil
	})
	if err == nil && next != len(want) {
		err = fmt.Errorf("%s: %d documents with candidates not found on the second read (the file changed during the run?)", t.Path, len(want)-next)
	}
	cResketched.Inc(ctx, docs)
	sBuckets.Inc(ctx, shuffle)
	return err
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
