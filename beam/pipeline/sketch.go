package pipeline

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
)

// docMeta is what the later stages need of a document.
type docMeta struct {
	Rank int64
	Len  int64 // bytes of the text as read (--keep longest, as dedup)
	ID   string
}

// rankComp is a document of a component of the candidate graph: its rank
// and the component's center (its lowest rank).
type rankComp struct {
	Rank, Comp int64
}

// joinRec is a document sent to its component's join: what
// dedup.JoinDoc holds, its sketch in the staged form (dedup.Signer).
type joinRec struct {
	Rank int64
	// Comp is the document's component (its lowest rank), for the join's
	// error when a component is too large for it.
	Comp   int64
	Len    int64
	ID     string
	Sketch []byte
}

// Counters (package beam metrics, namespace "neardup"). The shuffle bytes
// are counted per step (shuffle_bytes_STEP; stats.json sums them and
// lists them in shuffle_bytes_by_step).
var (
	cDocuments    = beam.NewCounter("neardup", "documents")
	cEmpty        = beam.NewCounter("neardup", "empty")
	cInputBytes   = beam.NewCounter("neardup", "input_bytes")
	cEdges        = beam.NewCounter("neardup", "candidate_edges")
	cResketched   = beam.NewCounter("neardup", "sketched_again")
	cFileCopies   = beam.NewCounter("neardup", "file_copies")
	cTexts        = beam.NewCounter("neardup", "cascade_texts")
	cSkipped      = beam.NewCounter("neardup", "skipped")
	dBucketSize   = beam.NewDistribution("neardup", "bucket_size")
	sKeys         = beam.NewCounter("neardup", shufflePrefix+"keys")
	sComponents   = beam.NewCounter("neardup", shufflePrefix+"components")
	sLabels       = beam.NewCounter("neardup", shufflePrefix+"components_by_file")
	sSketches     = beam.NewCounter("neardup", shufflePrefix+"sketches_to_components")
	sIDs          = beam.NewCounter("neardup", shufflePrefix+"ids")
	shufflePrefix = "shuffle_bytes_"
)

// readFn reads one input file, normalises and sketches every document
// (dedup.Signer: the staged sketch and keys of `neardup dedup
// --executor`), and emits its metadata and its (key, rank) pairs, by key
// shard. With the cascade the file is the sign stage's shard (a text
// seen earlier in the file is not sketched, its key is its content id's)
// and the content id's key of each document is marked (contentKey), so
// that bucketEdgesFn counts the distinct texts with a sketch. The sketch
// does not travel: the documents that turn out to have a candidate are
// sketched again where their file is read (signAgainFn) and sent once,
// to their component's join.
type readFn struct {
	Cfg  dedup.Options
	Read readOptions
	// SkippedDir is where the first bad records a file skipped are
	// written (Options.SkipInvalid), as FILEINDEX.json.
	SkippedDir string

	m  *method
	sd dedup.SignedDoc
}

func (f *readFn) Setup() error {
	sweepScratchOnce()
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *readFn) ProcessElement(ctx context.Context, t fileTask, emitMeta func(docMeta), emitKey func(int64, keyPairs)) error {
	var n, empty, bytes, shuffle, copies int64
	f.m.startFile()
	var skipped int64
	var first []string
	opts := f.Read.corpus(func(e *corpus.RecordError) {
		skipped++
		if len(first) < dedup.MaxSkippedErrors {
			first = append(first, e.Error())
		}
	})
	err := eachDoc(ctx, t, opts, func(rank int64, d *corpus.Document) error {
		n++
		bytes += int64(len(d.Raw))
		emitMeta(docMeta{Rank: rank, Len: int64(len(d.Text)), ID: d.ID})
		if err := f.m.sign(int(recordOfRank(rank)), d.ID, d.Text, &f.sd); err != nil {
			return fmt.Errorf("%s: %w", t.Path, err)
		}
		if len(f.sd.Sketch) == 0 {
			empty++
			return nil
		}
		if f.sd.Copy {
			copies++
		}
		for i, k := range f.sd.Keys {
			b := make([]byte, 16)
			binary.LittleEndian.PutUint64(b, k)
			r := uint64(rank)
			if i == 0 && f.Cfg.Cascade {
				r |= contentKey
			}
			binary.LittleEndian.PutUint64(b[8:], r)
			emitKey(int64(k%keyShards), keyPairs{B: b})
		}
		shuffle += 24 * int64(len(f.sd.Keys))
		return nil
	})
	cFileCopies.Inc(ctx, copies)
	cDocuments.Inc(ctx, n)
	cEmpty.Inc(ctx, empty)
	cInputBytes.Inc(ctx, bytes)
	sKeys.Inc(ctx, shuffle)
	cSkipped.Inc(ctx, skipped)
	if err == nil && len(first) > 0 {
		err = writeJSON(ctx, fmt.Sprintf("%s/%08d.json", f.SkippedDir, t.Index), first)
	}
	return err
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

// contentKey marks the rank of a (key, rank) pair whose key is the
// cascade's content id (dedup.Signer: a document's first key): ranks
// are below 2^63.
const contentKey = 1 << 63

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

// bucketEdgesFn finds the buckets of a shard of keys that have more than
// one member and emits the candidate graph's edges: a star from each
// bucket's lowest rank to its other members (linear in the bucket,
// whatever its size: 100,000 copies of one text are 99,999 edges a key).
// It holds the shard's pairs. It counts the distinct keys marked as the
// cascade's content ids (contentKey): the distinct texts with a sketch,
// the documents the cascade's Finder sees with one.
func bucketEdgesFn(ctx context.Context, _ int64, kp keyPairs, emit func(int64, int64)) error {
	if len(kp.B)%16 != 0 {
		return fmt.Errorf("internal: %d bytes of (key, rank) pairs", len(kp.B))
	}
	type keyRank struct {
		key     uint64
		rank    int64
		content bool
	}
	ps := make([]keyRank, len(kp.B)/16)
	for i := range ps {
		r := binary.LittleEndian.Uint64(kp.B[16*i+8:])
		ps[i] = keyRank{key: binary.LittleEndian.Uint64(kp.B[16*i:]), rank: int64(r &^ contentKey), content: r&contentKey != 0}
	}
	slices.SortFunc(ps, func(a, b keyRank) int {
		return cmp.Or(cmp.Compare(a.key, b.key), cmp.Compare(a.rank, b.rank))
	})
	var n, texts int64
	for i := 0; i < len(ps); {
		j := i + 1
		content := ps[i].content
		for j < len(ps) && ps[j].key == ps[i].key {
			content = content || ps[j].content
			j++
		}
		if content {
			texts++
		}
		run := slices.CompactFunc(ps[i:j], func(a, b keyRank) bool { return a.rank == b.rank })
		dBucketSize.Update(ctx, int64(len(run)))
		for _, p := range run[1:] {
			emit(run[0].rank, p.rank)
		}
		n += int64(len(run) - 1)
		i = j
	}
	cEdges.Inc(ctx, n)
	cTexts.Inc(ctx, texts)
	return nil
}

// labelOfEdgeFn turns a final edge (center, member) of the components
// into the labels of both documents, by rank (a center's repeats are
// combined away).
func labelOfEdgeFn(center, member int64, emit func(int64, int64)) {
	emit(member, center)
	emit(center, center)
}

// byFileFn keys a document's label by its input file.
func byFileFn(ctx context.Context, rank, comp int64, emit func(int64, rankComp)) {
	sLabels.Inc(ctx, 24)
	emit(fileOfRank(rank), rankComp{Rank: rank, Comp: comp})
}

// signAgainFn reads one input file again and sketches the documents that
// have candidates (given as (rank, component) pairs; it holds them, 16
// bytes each), and sends each one's id, length and sketch to its
// component's join, one of Shards (a hash of the component): a sketch
// travels once.
type signAgainFn struct {
	Cfg    dedup.Options
	Read   readOptions
	Files  []string
	Shards int64

	m  *method
	sd dedup.SignedDoc
}

func (f *signAgainFn) Setup() error {
	m, err := newMethod(f.Cfg)
	f.m = m
	return err
}

func (f *signAgainFn) ProcessElement(ctx context.Context, file int64, it func(*rankComp) bool, emit func(int64, joinRec)) error {
	var want []rankComp
	var rc rankComp
	for it(&rc) {
		want = append(want, rc)
	}
	slices.SortFunc(want, func(a, b rankComp) int { return cmp.Compare(a.Rank, b.Rank) })
	t := fileTask{Index: file, Path: f.Files[file]}
	next := 0
	var docs, shuffle int64
	// The cascade over the file's documents with a candidate: the first
	// of a text in the whole input is the first of its file with a
	// candidate (every document of a text with a sketch shares its
	// content id's key) and gets the method's sketch, which its
	// component's join needs; the file's later ones get their content id
	// alone (the join takes them for copies, whatever their sketch).
	f.m.startFile()
	// The records the first read skipped are skipped again, not counted
	// again: that read counted them.
	opts := f.Read.corpus(nil)
	err := eachDoc(ctx, t, opts, func(rank int64, d *corpus.Document) error {
		if next >= len(want) || want[next].Rank != rank {
			return nil
		}
		if err := f.m.sign(int(recordOfRank(rank)), d.ID, d.Text, &f.sd); err != nil {
			return fmt.Errorf("%s: %w", t.Path, err)
		}
		if len(f.sd.Sketch) == 0 {
			return fmt.Errorf("%s: document %q has no sketch on the second read (the file changed during the run?)", t.Path, d.ID)
		}
		docs++
		emit(uint64Shard(want[next].Comp, f.Shards), joinRec{Rank: rank, Comp: want[next].Comp, Len: int64(len(d.Text)), ID: d.ID, Sketch: slices.Clone(f.sd.Sketch)})
		shuffle += int64(8+8+8+8+len(d.ID)) + int64(len(f.sd.Sketch))
		next++
		return nil
	})
	if err == nil && next != len(want) {
		err = fmt.Errorf("%s: %d documents with candidates not found on the second read (the file changed during the run?)", t.Path, len(want)-next)
	}
	cResketched.Inc(ctx, docs)
	sSketches.Inc(ctx, shuffle)
	return err
}
