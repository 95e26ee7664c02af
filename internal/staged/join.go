package staged

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/neardup/neardup/dedup"
)

// joinHold is the bytes of documents a join task holds in one batch: half
// its memory limit (the budget less the program; JoinComponents copies
// the shingle sets into memory of its own, distinct, as it frees the
// batch's: about one and a half times the batch at the peak), or the
// plan's SpillMemory; 0 for no limit.
func (j *Job) joinHold() int64 {
	if j.Plan.SpillMemory > 0 {
		return j.Plan.SpillMemory
	}
	return j.limit() / 2
}

// joinDocBytes is what a join holds for a document besides its id and
// sketch (its dedup.JoinDoc and its component's number, about).
const joinDocBytes = 64

// Beyond maxJoinDepth partitionings, a join gives up splitting a batch.
const maxJoinDepth = 8

// join: the component join on group g's documents; the removed ones, with
// their clusters' ids, to one section an input shard. When the group's
// documents do not fit in its memory (joinHold), it partitions them by
// component into local scratch files, Grace-hash-join style, and joins
// each partition alone (partitioning again one that still does not fit),
// then merges the batches' results: the components are independent, so
// the outputs are those of one batch. Its output is one pack, join/g/shards:
// section 2i the removed documents of shard i, 2i+1 its pairs of pairs
// shard i.
func (j *Job) join(ctx context.Context, g int) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	sketched, old, err := j.sketched(ctx)
	if err != nil {
		return err
	}
	var meta componentsMetaFile
	if err := j.getJSON(ctx, componentsMeta(), &meta); err != nil {
		return err
	}
	var docs int64
	if g < len(meta.GroupDocs) {
		docs = meta.GroupDocs[g]
	}
	acc := &joinAcc{g: g, opts: dedup.JoinOptions{Workers: max(j.Plan.TaskWorkers, 1), TmpDir: j.tmpDir(), Sketched: sketched, Documents: off[len(off)-1], Pairs: j.Plan.Pairs != "", Old: old, Multi: j.Plan.examples()}}
	// With an index: every shard's documents found in it (few, and small:
	// a document number and an id each), of which the join's components
	// use their own.
	if acc.opts.Hits, err = j.allHits(ctx, off); err != nil {
		return err
	}
	lines, err := j.indexLines()
	if err != nil {
		return err
	}
	acc.opts.CascadeByDoc = lines == linesByDoc && j.Plan.Options.Cascade
	scattered := func(fn func(*joinRec) error) error {
		var rec joinRec
		for s := range j.Plan.Tasks {
			px, err := j.readPack(ctx, scatterOf(s), j.Plan.Tasks, g, 1)
			if err != nil {
				return err
			}
			r, err := j.openSection(ctx, px, g, 1<<20)
			if err != nil {
				return err
			}
			for !r.atEOF() {
				if err := r.joinRec(&rec); err != nil {
					r.Close()
					return err
				}
				if err := fn(&rec); err != nil {
					r.Close()
					return err
				}
			}
			r.Close()
		}
		return nil
	}
	if err := j.joinBatches(ctx, acc, scattered, docs, 0); err != nil {
		return err
	}
	res := acc.result()
	if acc.st.Batches > 1 || acc.st.Streamed > 0 {
		fmt.Fprintf(j.Stderr, "join task %d: %d documents in %d batches of whole components (its memory for one: %d bytes)", g, acc.st.Documents, acc.st.Batches, j.joinHold())
		if acc.st.Streamed > 0 {
			fmt.Fprintf(j.Stderr, ", %d of them of components larger than that, joined with their sketches streamed from scratch files", acc.st.Streamed)
		}
		fmt.Fprintln(j.Stderr)
	}
	pairs, err := j.joinPairs(g, res, off)
	if err != nil {
		return err
	}
	rms := make([][]byte, j.Plan.Tasks)
	s := 0
	for _, rm := range res.Removed {
		for rm.Doc >= off[s+1] {
			s++
		}
		o := appendUvarint(rms[s], uint64(rm.Doc-off[s]))
		o = appendUvarint(o, uint64(len(rm.Cluster)))
		rms[s] = append(o, rm.Cluster...)
	}
	err = j.Work.Put(ctx, joinOf(g), func(w io.Writer) error {
		pw := newPackWriter(w, 2*j.Plan.Tasks)
		for s := range rms {
			pw.section(2 * s)
			if _, err := pw.Write(rms[s]); err != nil {
				return err
			}
			if pairs != nil {
				pw.section(2*s + 1)
				if _, err := pw.Write(pairs[s]); err != nil {
					return err
				}
			}
		}
		return pw.finish()
	})
	if err != nil {
		return err
	}
	if j.Plan.examples() {
		if err := j.putJoinClusters(ctx, g, acc.multi); err != nil {
			return err
		}
	}
	return j.putJSON(ctx, joinStats(g), acc.st)
}

// joinBatches joins the records of src (whole components, in input order;
// about docs of them): in one batch when they fit in joinHold, else in
// partitions by component on scratch files, each joined the same way. A
// component that takes more than half of a batch that does not fit (a
// giant: the same template on thousands of sites) goes to a scratch file
// of its own and is joined with its sketches streamed from it
// (joinStreamed), so that no component's documents need fit in memory.
func (j *Job) joinBatches(ctx context.Context, acc *joinAcc, src func(func(*joinRec) error) error, docs int64, depth int) error {
	hold := j.joinHold()
	var b joinBatch
	var parts, giant *joinParts
	var giantComp uint64
	defer func() { parts.remove(); giant.remove() }()
	err := src(func(rec *joinRec) error {
		if parts != nil {
			if giant != nil && rec.comp == giantComp {
				return giant.write(rec)
			}
			return parts.write(rec)
		}
		b.add(rec)
		if hold <= 0 || b.mem <= hold {
			return nil
		}
		comp, cmem, ok := b.majority()
		if !ok && depth >= maxJoinDepth {
			return fmt.Errorf("join task %d: its components do not split into batches of %d bytes after %d partitionings; give more --task-memory", acc.g, hold, depth)
		}
		// Partitions of about half the hold each, for what is not the
		// giant.
		rest := b.mem
		if ok {
			rest -= cmem
		}
		est := rest / int64(len(b.docs)) * max(docs, int64(len(b.docs)))
		k := int(min(max((2*est+hold-1)/hold, 2), 256))
		var err error
		if parts, err = newJoinParts(j.tmpDir(), k, depth); err != nil {
			return err
		}
		if ok {
			if giant, err = newJoinParts(j.tmpDir(), 1, depth); err != nil {
				return err
			}
			giantComp = comp
		}
		var r joinRec
		for x, d := range b.docs {
			r = joinRec{doc: uint64(d.Doc), comp: b.comps[x], id: []byte(d.ID), length: uint64(d.Len), sketch: d.Sketch}
			w := parts
			if giant != nil && r.comp == giantComp {
				w = giant
			}
			if err := w.write(&r); err != nil {
				return err
			}
		}
		b = joinBatch{}
		return nil
	})
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if parts == nil {
		return acc.join(ctx, j.Plan.Options, b.docs, acc.opts)
	}
	if giant != nil {
		if err := giant.flush(); err != nil {
			return err
		}
		if err := j.joinStreamed(ctx, acc, giant); err != nil {
			return err
		}
		giant.drop(0)
	}
	if err := parts.flush(); err != nil {
		return err
	}
	for p := range parts.files {
		if parts.n[p] == 0 {
			continue
		}
		r := parts.reader(p)
		err := j.joinBatches(ctx, acc, func(fn func(*joinRec) error) error {
			var rec joinRec
			for !r.atEOF() {
				if err := r.joinRec(&rec); err != nil {
					return err
				}
				if err := fn(&rec); err != nil {
					return err
				}
			}
			return nil
		}, parts.n[p], depth+1)
		if err != nil {
			return err
		}
		parts.drop(p)
	}
	return nil
}

// joinStreamed joins the one component in p's only file (its records in
// input order) holding its documents' ids and positions but not their
// sketches, which JoinComponents reads from the file as it goes: a
// second pass over the file.
func (j *Job) joinStreamed(ctx context.Context, acc *joinAcc, p *joinParts) error {
	per, holdsSketches, err := dedup.StreamedJoinBytes(j.Plan.Options)
	if err != nil {
		return err
	}
	docs := make([]dedup.JoinDoc, 0, p.n[0])
	r := p.reader(0)
	var rec joinRec
	need := int64(0)
	for !r.atEOF() {
		if err := r.joinRec(&rec); err != nil {
			return err
		}
		docs = append(docs, dedup.JoinDoc{Doc: int64(rec.doc), ID: string(rec.id), Len: int(rec.length)})
		need += per + joinDocBytes + int64(len(rec.id))
		if holdsSketches {
			need += int64(len(rec.sketch))
		}
	}
	if lim := j.limit(); lim > 0 && need > lim {
		what := "the method's index and the document's id"
		if holdsSketches {
			what = "the method's index, the document's id and its sketch, which this method's join holds to its end"
		}
		return fmt.Errorf("join task %d: a component of %d documents needs about %d bytes to be joined even with its sketches on disk (%d bytes a document for %s), more than --task-memory %d bytes less the program's; give more --task-memory", acc.g, len(docs), need, need/int64(len(docs)), what, j.Plan.TaskMemory)
	}
	r = p.reader(0)
	opts := acc.opts
	opts.Sketches = func() ([]byte, error) {
		err := r.joinRec(&rec)
		return rec.sketch, err
	}
	acc.st.Streamed += int64(len(docs))
	return acc.join(ctx, j.Plan.Options, docs, opts)
}

// joinRec is one scatter record (see scatter.go); id and sketch are
// reused by the next read.
type joinRec struct {
	doc, comp  uint64
	id, sketch []byte
	length     uint64
}

// joinRec reads a record into rec.
func (r *reader) joinRec(rec *joinRec) error {
	var err error
	if rec.doc, err = r.uvarint(); err != nil {
		return err
	}
	if rec.comp, err = r.uvarint(); err != nil {
		return err
	}
	if rec.id, err = r.bytes(rec.id); err != nil {
		return err
	}
	if rec.length, err = r.uvarint(); err != nil {
		return err
	}
	rec.sketch, err = r.bytes(rec.sketch)
	return err
}

// appendJoinRec appends rec in the scatter record's form.
func appendJoinRec(dst []byte, rec *joinRec) []byte {
	dst = appendUvarint(dst, rec.doc)
	dst = appendUvarint(dst, rec.comp)
	dst = appendUvarint(dst, uint64(len(rec.id)))
	dst = append(dst, rec.id...)
	dst = appendUvarint(dst, rec.length)
	dst = appendUvarint(dst, uint64(len(rec.sketch)))
	return append(dst, rec.sketch...)
}

// joinBatch is documents held for one JoinComponents: their sketches are
// slices of blocks of memory.
type joinBatch struct {
	docs  []dedup.JoinDoc
	comps []uint64
	block []byte
	mem   int64 // about what it holds
}

func (b *joinBatch) add(rec *joinRec) {
	if len(b.block)+len(rec.sketch) > cap(b.block) {
		b.block = make([]byte, 0, max(len(rec.sketch), chunkSize))
	}
	at := len(b.block)
	b.block = append(b.block, rec.sketch...)
	b.docs = append(b.docs, dedup.JoinDoc{Doc: int64(rec.doc), ID: string(rec.id), Len: int(rec.length), Sketch: b.block[at:len(b.block):len(b.block)]})
	b.comps = append(b.comps, rec.comp)
	b.mem += b.docMem(len(b.docs) - 1)
}

// docMem is about what b holds for its document x.
func (b *joinBatch) docMem(x int) int64 {
	return int64(len(b.docs[x].ID)+len(b.docs[x].Sketch)) + joinDocBytes
}

// majority returns the component whose documents take more than half of
// what b holds, and what they take, if one does (Boyer and Moore's
// majority vote, weighted by the documents' bytes, then a count).
func (b *joinBatch) majority() (comp uint64, mem int64, ok bool) {
	var lead int64
	for x, c := range b.comps {
		m := b.docMem(x)
		switch {
		case c == comp:
			lead += m
		case m > lead:
			comp, lead = c, m-lead
		default:
			lead -= m
		}
	}
	for x, c := range b.comps {
		if c == comp {
			mem += b.docMem(x)
		}
	}
	return comp, mem, 2*mem > b.mem
}

// joinParts are a join's partitions of its documents by component, one
// local scratch file each.
type joinParts struct {
	depth int
	files []*os.File
	ws    []*bufio.Writer
	n     []int64 // documents
	buf   []byte
}

func newJoinParts(dir string, k, depth int) (*joinParts, error) {
	p := &joinParts{depth: depth, n: make([]int64, k)}
	for range k {
		f, err := os.CreateTemp(dir, "neardup-join-*")
		if err != nil {
			p.remove()
			return nil, err
		}
		p.files = append(p.files, f)
		p.ws = append(p.ws, bufio.NewWriterSize(f, 64<<10))
	}
	return p, nil
}

// write appends rec to its component's partition (each depth hashes the
// components differently, so that a partition that is too big splits).
func (p *joinParts) write(rec *joinRec) error {
	q := mixKey(p.depth, rec.comp) % uint64(len(p.files))
	p.buf = appendJoinRec(p.buf[:0], rec)
	if _, err := p.ws[q].Write(p.buf); err != nil {
		return fmt.Errorf("join's scratch file %s: %w", p.files[q].Name(), err)
	}
	p.n[q]++
	return nil
}

// flush writes out what the partitions' buffers hold and frees them.
func (p *joinParts) flush() error {
	for q, w := range p.ws {
		if err := w.Flush(); err != nil {
			return fmt.Errorf("join's scratch file %s: %w", p.files[q].Name(), err)
		}
	}
	p.ws = nil
	return nil
}

// reader reads partition q from its start.
func (p *joinParts) reader(q int) *reader {
	f := p.files[q]
	return &reader{Reader: bufio.NewReaderSize(&sectionFile{f: f}, 1<<20), c: f, name: f.Name()}
}

// drop removes partition q's file.
func (p *joinParts) drop(q int) {
	if f := p.files[q]; f != nil {
		f.Close()
		os.Remove(f.Name())
		p.files[q] = nil
	}
}

// remove removes every partition's file (p may be nil).
func (p *joinParts) remove() {
	if p == nil {
		return
	}
	for q := range p.files {
		p.drop(q)
	}
}

// sectionFile reads f from its start, whatever its offset.
type sectionFile struct {
	f   *os.File
	off int64
}

func (s *sectionFile) Read(b []byte) (int, error) {
	n, err := s.f.ReadAt(b, s.off)
	s.off += int64(n)
	return n, err
}

// joinAcc gathers the results of a join's batches.
type joinAcc struct {
	g        int
	opts     dedup.JoinOptions
	removed  []dedup.Removal
	pairs    []dedup.JoinPair
	multi    []dedup.JoinCluster // with the report's examples (Plan.Examples)
	notByDoc bool
	st       joinStatsFile
}

// join runs JoinComponents on one batch with opts (a.opts, or those of
// a streamed join) and adds its results.
func (a *joinAcc) join(ctx context.Context, cfg dedup.Options, docs []dedup.JoinDoc, opts dedup.JoinOptions) error {
	res, err := dedup.JoinComponents(ctx, cfg, docs, opts)
	if err != nil {
		return err
	}
	var nOld int64
	for _, d := range docs {
		if d.Doc < opts.Old {
			nOld++
		}
	}
	a.st.add(&joinStatsFile{Documents: int64(len(docs)), Old: nOld, Clusters: res.Clusters, Removed: len(res.Removed), Pairs: res.Pairs, Similarity: res.Similarity, Distance: res.Distance, Sizes: res.Sizes, Below: res.Below, ExactCopies: res.ExactCopies, Batches: 1})
	a.removed = append(a.removed, res.Removed...)
	a.pairs = append(a.pairs, res.PairLines...)
	a.multi = append(a.multi, res.Multi...)
	a.notByDoc = a.notByDoc || len(res.PairLines) > 0 && !res.PairsByDoc
	return nil
}

// result is the batches' results as one JoinComponents on all their
// documents gives them: the removed documents in input order, the pairs
// in their order (two pairs of equal order are of one document, so of
// one batch, and keep their batch's order).
func (a *joinAcc) result() *dedup.JoinResult {
	if a.st.Batches > 1 {
		slices.SortFunc(a.removed, func(x, y dedup.Removal) int {
			if x.Doc < y.Doc {
				return -1
			}
			if x.Doc > y.Doc {
				return 1
			}
			return 0
		})
		slices.SortStableFunc(a.pairs, func(x, y dedup.JoinPair) int { return bytes.Compare(x.Order, y.Order) })
		slices.SortFunc(a.multi, func(x, y dedup.JoinCluster) int { return cmp.Compare(x.Kept, y.Kept) })
	}
	if a.st.Sizes == nil {
		a.st.Sizes = map[int]int{}
	}
	return &dedup.JoinResult{Removed: a.removed, PairLines: a.pairs, PairsByDoc: !a.notByDoc}
}

// add adds the counts of b to st (finish's sum of the joins' shares could
// use it too).
func (st *joinStatsFile) add(b *joinStatsFile) {
	st.Documents += b.Documents
	st.Old += b.Old
	st.Clusters += b.Clusters
	st.ExactCopies += b.ExactCopies
	st.Removed += b.Removed
	st.Pairs += b.Pairs
	st.Batches += b.Batches
	st.Streamed += b.Streamed
	for k, v := range b.Similarity {
		st.Similarity[k] += v
	}
	if len(st.Distance) < len(b.Distance) {
		st.Distance = append(st.Distance, make([]int, len(b.Distance)-len(st.Distance))...)
	}
	for k, v := range b.Distance {
		st.Distance[k] += v
	}
	if st.Sizes == nil {
		st.Sizes = map[int]int{}
	}
	for n, c := range b.Sizes {
		st.Sizes[n] += c
	}
	if b.Below != nil {
		if st.Below == nil {
			st.Below = new(int)
		}
		*st.Below += *b.Below
	}
}
