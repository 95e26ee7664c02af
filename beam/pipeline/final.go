package pipeline

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/tempfile"
)

// Metadata files (between jobs): "rank len id" per document, the id
// quoted by strconv.Quote (any bytes survive).
const metaShards = 16

func metaLineFn(m docMeta, emit func(int64, line)) {
	t := strconv.AppendInt(nil, m.Rank, 10)
	t = append(t, ' ')
	t = strconv.AppendInt(t, m.Len, 10)
	t = append(t, ' ')
	t = strconv.AppendQuote(t, m.ID)
	emit(uint64Shard(m.Rank, metaShards), line{Text: append(t, '\n')})
}

func uint64Shard(x int64, n int64) int64 {
	return int64((uint64(x)*0x9e3779b97f4a7c15)>>33) % n
}

func parseMetaFn(s string, emit func(int64, docMeta)) error {
	f := strings.SplitN(s, " ", 3)
	if len(f) == 3 {
		r, err1 := strconv.ParseInt(f[0], 10, 64)
		n, err2 := strconv.ParseInt(f[1], 10, 64)
		id, err3 := strconv.Unquote(f[2])
		if err1 == nil && err2 == nil && err3 == nil {
			emit(r, docMeta{Rank: r, Len: n, ID: id})
			return nil
		}
	}
	return fmt.Errorf("internal: metadata line %q", s)
}

// joinFn joins the documents of one join shard (whole components of the
// candidate graph) with dedup.JoinComponents, as `neardup dedup
// --executor`'s join task does: the method's own Finder on whole
// components, in input order, so its clusters, kept documents and pairs
// are `neardup dedup`'s (one call a shard, not a component: each call
// builds the method and its Finder). It
// emits each removed document's rank with its cluster's id (the kept
// document's), and the pairs lines (--pairs) by output shard. It holds
// the shard's documents and sketches, up to Memory bytes of them: a
// larger shard (a giant component: the same template on thousands of
// sites) has its sketches written to a local scratch file and is joined
// with them streamed from it (dedup.JoinOptions.Sketches, as the staged
// join task joins a component larger than its memory), holding only
// each document's rank, id and length and the Finder's own memory
// (dedup.StreamedJoinBytes).
type joinFn struct {
	Cfg dedup.Options
	// Sketched is how many documents of the whole input have a sketch
	// (simhash's join chooses its design from it, as Run does; with the
	// cascade, the distinct texts with a sketch: its Finder's documents).
	Sketched int64
	// Ranks bounds the documents' ranks (the cascade's pairs order
	// spreads over it: dedup.JoinOptions.Documents).
	Ranks int64
	Pairs bool
	// Memory is Options.JoinMemory (negative: no limit).
	Memory int64

	// What a streamed join holds a document besides its rank, id and
	// length (dedup.StreamedJoinBytes), set by Setup.
	streamPer      int64
	streamSketches bool
}

func (f *joinFn) Setup() error {
	sweepScratchOnce()
	var err error
	f.streamPer, f.streamSketches, err = dedup.StreamedJoinBytes(f.Cfg)
	return err
}

// joinDocBytes is about what a join holds for a document besides its id
// and sketch (its dedup.JoinDoc and its place in the scratch file).
const joinDocBytes = 64

func (f *joinFn) ProcessElement(ctx context.Context, _ int64, it func(*joinRec) bool, emitRemoved func(int64, string), emitPair func(int64, line)) error {
	docs, sp, err := f.collect(it)
	defer sp.remove()
	if err != nil {
		return err
	}
	opts := dedup.JoinOptions{Workers: 1, Sketched: f.Sketched, Pairs: f.Pairs, Documents: f.Ranks}
	if sp != nil {
		opts.Sketches = sp.next
		cStreamedJoins.Inc(ctx, 1)
		cStreamedDocs.Inc(ctx, int64(len(docs)))
	}
	res, err := dedup.JoinComponents(ctx, f.Cfg, docs, opts)
	if err != nil {
		return err
	}
	for _, rm := range res.Removed {
		emitRemoved(rm.Doc, rm.Cluster)
	}
	for i, p := range res.PairLines {
		if len(p.Order) < 8 {
			return fmt.Errorf("internal: a pair's order of %d bytes", len(p.Order))
		}
		at := binary.BigEndian.Uint64(p.Order)
		// Shards in the pairs file's order: by the reporting document's
		// file and chunk (as the clusters), or for an order that is not
		// by document (simhash's batch join) by the top 13 bits of its
		// position.
		shard := int64(at) >> chunkShift
		if !res.PairsByDoc {
			shard = int64(at >> 51)
		}
		emitPair(shard, line{Key: p.Order, Order2: int64(i), Text: p.Line})
	}
	cExactCopies.Inc(ctx, int64(res.ExactCopies))
	cClusters.Inc(ctx, int64(res.Clusters))
	cPairs.Inc(ctx, int64(res.Pairs))
	dJoin.Update(ctx, int64(len(docs)))
	for n := range res.Sizes {
		dCluster.Update(ctx, int64(n))
	}
	return nil
}

// collect reads the shard's documents, in input order. Past f.Memory
// bytes of them it writes every sketch to a scratch file instead (those
// held so far, then the rest as they come) and returns it: the
// documents' Sketch fields are then nil and the file gives the sketches
// in the documents' order. A shard that needs more than f.Memory bytes
// even so (each document's rank, id and length and the Finder's memory
// for it, dedup.StreamedJoinBytes) is an error (tooLargeError), found
// before the join holds more than about f.Memory bytes.
func (f *joinFn) collect(it func(*joinRec) bool) ([]dedup.JoinDoc, *sketchSpool, error) {
	type held struct {
		doc  dedup.JoinDoc
		comp int64
		at   sketchAt
	}
	var recs []held
	var sp *sketchSpool
	var mem, need int64 // held in memory; needed when streamed
	var r joinRec
	compsOf := func(recs []held) map[int64]int {
		m := map[int64]int{}
		for _, h := range recs {
			m[h.comp]++
		}
		return m
	}
	streamed := func(d *dedup.JoinDoc) int64 {
		n := f.streamPer + joinDocBytes + int64(len(d.ID))
		if f.streamSketches {
			n += int64(len(d.Sketch))
		}
		return n
	}
	for it(&r) {
		d := dedup.JoinDoc{Doc: r.Rank, ID: r.ID, Len: int(r.Len), Sketch: r.Sketch}
		if sp == nil {
			recs = append(recs, held{doc: d, comp: r.Comp})
			r = joinRec{} // the sketch is held: decode the next into new memory
			mem += int64(len(d.ID)+len(d.Sketch)) + joinDocBytes
			need += streamed(&d)
			if f.Memory < 0 || mem <= f.Memory {
				continue
			}
			if need > f.Memory {
				return nil, nil, f.tooLarge(need, compsOf(recs), it)
			}
			var err error
			if sp, err = newSketchSpool(); err != nil {
				return nil, nil, err
			}
			for x := range recs {
				if recs[x].at, err = sp.write(recs[x].doc.Sketch); err != nil {
					return nil, sp, err
				}
				recs[x].doc.Sketch = nil
			}
			continue
		}
		if need += streamed(&d); need > f.Memory {
			recs = append(recs, held{doc: d, comp: r.Comp})
			return nil, sp, f.tooLarge(need, compsOf(recs), it)
		}
		at, err := sp.write(d.Sketch)
		if err != nil {
			return nil, sp, err
		}
		d.Sketch = nil
		recs = append(recs, held{doc: d, comp: r.Comp, at: at})
	}
	if err := sp.flush(); err != nil {
		return nil, sp, err
	}
	slices.SortFunc(recs, func(a, b held) int { return cmp.Compare(a.doc.Doc, b.doc.Doc) })
	docs := make([]dedup.JoinDoc, len(recs))
	for i, h := range recs {
		if i > 0 && h.doc.Doc == recs[i-1].doc.Doc {
			return nil, sp, fmt.Errorf("internal: document rank %d sent twice to its component's join", h.doc.Doc)
		}
		docs[i] = h.doc
		if sp != nil {
			sp.order = append(sp.order, h.at)
		}
	}
	return docs, sp, nil
}

// tooLarge reads the rest of a join that needs more than f.Memory bytes
// even with its sketches streamed, counting its need and its components'
// documents (comps: those read so far), and returns the error that names
// them.
func (f *joinFn) tooLarge(need int64, comps map[int64]int, it func(*joinRec) bool) error {
	var r joinRec
	for it(&r) {
		comps[r.Comp]++
		need += f.streamPer + joinDocBytes + int64(len(r.ID))
		if f.streamSketches {
			need += int64(len(r.Sketch))
		}
		r = joinRec{}
	}
	n := 0
	for _, k := range comps {
		n += k
	}
	e := &tooLargeError{Docs: n, Need: need, Memory: f.Memory, PerDoc: f.streamPer, Sketches: f.streamSketches}
	for c, k := range comps {
		if k > e.CompDocs || (k == e.CompDocs && c < e.Comp) {
			e.Comp, e.CompDocs = c, k
		}
	}
	return e
}

// tooLargeError is a join whose documents need more memory than
// Options.JoinMemory (--join-memory) even with their sketches streamed
// from a scratch file: a component of the candidate graph too large for
// the bound (ErrJoinTooLarge).
type tooLargeError struct {
	Docs     int   // documents in the join (whole components)
	Need     int64 // about the bytes it needs streamed
	Memory   int64 // Options.JoinMemory
	Comp     int64 // its largest component (the rank of its first document)
	CompDocs int   // and that component's documents
	PerDoc   int64 // the Finder's bytes a document
	Sketches bool  // the method's join holds every sketch to its end
}

// ErrJoinTooLarge is the error (errors.Is) of a join whose component of
// the candidate graph needs more than Options.JoinMemory (--join-memory)
// bytes even with its sketches streamed from a scratch file.
var ErrJoinTooLarge = errors.New("a component too large for --join-memory")

func (e *tooLargeError) Is(target error) bool { return target == ErrJoinTooLarge }

func (e *tooLargeError) Error() string {
	what := "the method's index entry and the document's rank, id and length"
	if e.Sketches {
		what = "the method's index entry, the document's rank, id and length, and its sketch, which this method's join holds to its end"
	}
	return fmt.Sprintf("join of %d documents: its largest component (the documents that share candidate keys with the document of rank %d, file %d record %d) has %d documents; the join needs about %d bytes even with its sketches streamed from a scratch file (%d bytes a document for %s, %d of them the method's), more than --join-memory %d bytes: give --join-memory at least %d (each worker must have that much memory to spare for one join), or --join-memory 0 for no bound",
		e.Docs, e.Comp, fileOfRank(e.Comp), recordOfRank(e.Comp), e.CompDocs, e.Need, e.Need/int64(max(e.Docs, 1)), what, e.PerDoc, e.Memory, e.Need)
}

// sketchAt is a sketch's place in a sketchSpool's file.
type sketchAt struct {
	off int64
	n   int
}

// sketchSpool is a local scratch file of sketches, written in the order
// they come and read back in order (one pread a sketch: the documents
// come in no order; the file is one join's, on the worker's disk, most
// of it in the page cache when memory allows).
type sketchSpool struct {
	f     *os.File
	w     *bufio.Writer
	size  int64
	order []sketchAt // the sketches in the documents' order
	buf   []byte
}

func newSketchSpool() (*sketchSpool, error) {
	f, err := tempfile.Create("", joinPrefix, joinSuffix)
	if err != nil {
		return nil, fmt.Errorf("join's scratch file: %w", err)
	}
	return &sketchSpool{f: f, w: bufio.NewWriterSize(f, 1<<20)}, nil
}

func (s *sketchSpool) write(b []byte) (sketchAt, error) {
	at := sketchAt{off: s.size, n: len(b)}
	if _, err := s.w.Write(b); err != nil {
		return at, fmt.Errorf("join's scratch file %s: %w", s.f.Name(), err)
	}
	s.size += int64(len(b))
	return at, nil
}

// flush writes what is buffered (nothing to do for a nil spool).
func (s *sketchSpool) flush() error {
	if s == nil {
		return nil
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("join's scratch file %s: %w", s.f.Name(), err)
	}
	s.w = nil
	return nil
}

// next returns the next sketch in the documents' order (valid until the
// next call): dedup.JoinOptions.Sketches.
func (s *sketchSpool) next() ([]byte, error) {
	if len(s.order) == 0 {
		return nil, fmt.Errorf("join's scratch file %s: more sketches asked for than written", s.f.Name())
	}
	at := s.order[0]
	s.order = s.order[1:]
	if cap(s.buf) < at.n {
		s.buf = make([]byte, at.n)
	}
	b := s.buf[:at.n]
	if _, err := s.f.ReadAt(b, at.off); err != nil {
		return nil, fmt.Errorf("join's scratch file %s: %w", s.f.Name(), err)
	}
	return b, nil
}

// remove closes and removes the file (nothing for a nil spool).
func (s *sketchSpool) remove() {
	if s == nil {
		return
	}
	s.f.Close()
	os.Remove(s.f.Name())
}

var (
	cKept     = beam.NewCounter("neardup", "kept")
	cClusters = beam.NewCounter("neardup", "clusters")
	dCluster  = beam.NewDistribution("neardup", "cluster_size")
	dJoin     = beam.NewDistribution("neardup", "join_size")
	cPairs    = beam.NewCounter("neardup", "pairs")
	// The cascade's documents joined with their first occurrence.
	cExactCopies = beam.NewCounter("neardup", "exact_copies")
	// Joins whose sketches were streamed from a scratch file, and their
	// documents.
	cStreamedJoins = beam.NewCounter("neardup", "streamed_joins")
	cStreamedDocs  = beam.NewCounter("neardup", "streamed_documents")
)

// clusterLinesFn writes the clusters line of one document as `neardup
// dedup --clusters` does (removed: the id of its cluster's kept
// document, from its join; else kept, its own), and emits a kept
// document's (file, record).
func clusterLinesFn(ctx context.Context, rank int64, metas func(*docMeta) bool, removed func(*string) bool, emitLine func(int64, line), emitKept func(int64, int64)) error {
	var m docMeta
	if !metas(&m) {
		return fmt.Errorf("internal: rank %d joined has no document", rank)
	}
	var extra docMeta
	if metas(&extra) {
		return fmt.Errorf("internal: two documents of rank %d", rank)
	}
	var cl string
	kept := !removed(&cl)
	if kept {
		cl = m.ID
		cKept.Inc(ctx, 1)
		emitKept(fileOfRank(rank), recordOfRank(rank))
	}
	emitLine(rank>>chunkShift, line{Order: rank, Text: dedup.AppendClusterLine(nil, m.ID, cl, kept)})
	return nil
}

// keptRecordsFn writes the kept records of one input file, unchanged and
// in input order, to Dir/kept-FILE.jsonl.zst. It holds the file's kept
// record numbers (8 bytes each).
type keptRecordsFn struct {
	Dir   string
	Read  readOptions
	Files []string
}

func (f *keptRecordsFn) ProcessElement(ctx context.Context, file int64, recs func(*int64) bool) error {
	var keep []int64
	var r int64
	for recs(&r) {
		keep = append(keep, r)
	}
	slices.Sort(keep)
	path := fmt.Sprintf("%s/kept-%05d.jsonl.zst", f.Dir, file)
	w, err := createFile(ctx, path)
	if err != nil {
		return err
	}
	t := fileTask{Index: file, Path: f.Files[file]}
	next := 0
	err = eachDoc(ctx, t, f.Read.corpus(nil), func(rank int64, d *corpus.Document) error {
		if next >= len(keep) || recordOfRank(rank) != keep[next] {
			return nil
		}
		next++
		raw := d.Raw
		if _, err := w.Write(raw); err != nil {
			return err
		}
		if len(raw) == 0 || raw[len(raw)-1] != '\n' {
			_, err := w.Write([]byte{'\n'})
			return err
		}
		return nil
	})
	if err == nil && next != len(keep) {
		err = fmt.Errorf("%s: %d kept records not found on the second read (the file changed during the run?)", t.Path, len(keep)-next)
	}
	if err != nil {
		w.abort()
		return err
	}
	return w.Close()
}
