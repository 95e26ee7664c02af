package staged

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/objstore"
)

// keyEntry is one band key of one document in a sign task's partition.
type keyEntry struct {
	key uint64 // the band's key mixed with the band's number
	doc uint32 // the document's number in its shard
}

// mixKey makes band b's key k one key of all bands: equal only for equal
// (b, k) but by chance (2^-64 a pair), which can only merge two
// components, never split one (see dedup.compFinder).
func mixKey(b int, k uint64) uint64 {
	x := k ^ (uint64(b)+1)*0x9e3779b97f4a7c15
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// sign: read shard s, sketch it, and write its ids, its sketches and its
// band keys, partitioned by key into one sorted file a bucket task.
func (j *Job) sign(ctx context.Context, s int) error {
	p := j.Plan
	parts := make([][]keyEntry, p.Tasks)
	var ids, sketches []byte
	cfg := p.Options
	cfg.Workers = p.TaskWorkers
	var n uint32
	in := dedup.Input{Options: p.Input.corpus()}
	var stats *dedup.Stats
	// The ids and the sketches stream to their files as the documents
	// come; each file appears whole when the shard is done.
	err := j.Work.Put(ctx, signIDs(s), func(idsOut io.Writer) error {
		return j.Work.Put(ctx, signSketches(s), func(skOut io.Writer) error {
			idsW, skW := bufio.NewWriterSize(idsOut, 1<<20), bufio.NewWriterSize(skOut, 1<<20)
			var err error
			stats, err = dedup.SketchRanges(ctx, cfg, in, OpenInput, p.Shards[s], func(d *dedup.SignedDoc) error {
				ids = appendUvarint(ids[:0], uint64(len(d.ID)))
				ids = append(ids, d.ID...)
				ids = appendUvarint(ids, uint64(d.Len))
				if _, err := idsW.Write(ids); err != nil {
					return err
				}
				sketches = appendUvarint(sketches[:0], uint64(len(d.Sketch)))
				sketches = append(sketches, d.Sketch...)
				if _, err := skW.Write(sketches); err != nil {
					return err
				}
				for b, k := range d.Keys {
					x := mixKey(b, k)
					q := x % uint64(p.Tasks)
					parts[q] = append(parts[q], keyEntry{x, n})
				}
				n++
				return nil
			})
			if err != nil {
				return err
			}
			if err := idsW.Flush(); err != nil {
				return err
			}
			return skW.Flush()
		})
	})
	if err != nil {
		return err
	}
	for q, part := range parts {
		slices.SortFunc(part, func(a, b keyEntry) int {
			if a.key != b.key {
				if a.key < b.key {
					return -1
				}
				return 1
			}
			return int(a.doc) - int(b.doc)
		})
		buf := make([]byte, 0, 12*len(part))
		for _, e := range part {
			buf = binary.LittleEndian.AppendUint64(buf, e.key)
			buf = binary.LittleEndian.AppendUint32(buf, e.doc)
		}
		parts[q] = nil
		if err := j.Work.PutBytes(ctx, signKeys(s, q), buf); err != nil {
			return err
		}
	}
	return j.putJSON(ctx, signMeta(s), signMetaFile{Documents: int64(stats.Documents), Empty: stats.Empty, InputBytes: stats.InputBytes, Traditional: stats.Traditional})
}

// bucket: merge partition q of every shard and write the candidate edges
// (two documents with a band key in common), each once, sorted.
func (j *Job) bucket(ctx context.Context, q int) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	type entry struct {
		key uint64
		doc uint32
	}
	var all []entry
	for s := range j.Plan.Tasks {
		b, err := j.Work.ReadAll(ctx, signKeys(s, q))
		if err != nil {
			return err
		}
		if len(b)%12 != 0 {
			return fmt.Errorf("%s: damaged work file: %d bytes, not a multiple of 12", j.Work.URL(signKeys(s, q)), len(b))
		}
		for x := 0; x < len(b); x += 12 {
			all = append(all, entry{binary.LittleEndian.Uint64(b[x:]), uint32(off[s]) + binary.LittleEndian.Uint32(b[x+8:])})
		}
	}
	slices.SortFunc(all, func(a, b entry) int {
		if a.key != b.key {
			if a.key < b.key {
				return -1
			}
			return 1
		}
		return int(a.doc) - int(b.doc)
	})
	var edges []uint64
	for x := 0; x < len(all); {
		y := x + 1
		for y < len(all) && all[y].key == all[x].key {
			edges = append(edges, uint64(all[x].doc)<<32|uint64(all[y].doc))
			y++
		}
		x = y
	}
	all = nil
	slices.Sort(edges)
	edges = slices.Compact(edges)
	buf := make([]byte, 0, 8*len(edges))
	for _, e := range edges {
		buf = binary.LittleEndian.AppendUint64(buf, e)
	}
	return j.Work.PutBytes(ctx, bucketEdges(q), buf)
}

// componentsMetaFile is what the components task found.
type componentsMetaFile struct {
	Documents  int64   `json:"documents"`
	Components int     `json:"components"` // of two or more documents
	Members    int64   `json:"members"`
	Largest    int     `json:"largest"`
	GroupDocs  []int64 `json:"group_documents"`
}

type groupLoad struct{ docs, g int64 }
type loads []groupLoad

func (h loads) Len() int { return len(h) }
func (h loads) Less(a, b int) bool {
	if h[a].docs != h[b].docs {
		return h[a].docs < h[b].docs
	}
	return h[a].g < h[b].g
}
func (h loads) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *loads) Push(x any)   { *h = append(*h, x.(groupLoad)) }
func (h *loads) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// components: the union-find over every edge (4 bytes a document, and 4
// more for the sizes), then the components of two or more documents
// dealt, largest first, to the join task with the fewest documents; for
// each shard, the group of each of its documents that has one.
func (j *Job) components(ctx context.Context) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	n := off[j.Plan.Tasks]
	uf := dedup.NewComponents(int(n))
	for q := range j.Plan.Tasks {
		r, err := j.open(ctx, bucketEdges(q))
		if err != nil {
			return err
		}
		var b [8]byte
		for {
			if _, err := io.ReadFull(r, b[:]); err == io.EOF {
				break
			} else if err != nil {
				r.Close()
				return r.bad(err)
			}
			e := binary.LittleEndian.Uint64(b[:])
			a, c := int32(e>>32), int32(uint32(e))
			if int64(a) >= n || int64(c) >= n || a < 0 || c < 0 {
				r.Close()
				return r.bad(fmt.Errorf("edge %d-%d beyond %d documents", a, c, n))
			}
			uf.Union(a, c)
		}
		r.Close()
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	size := make([]int32, n) // by root; then -(group+1) for the roots of two or more
	for x := range int32(n) {
		size[uf.Root(x)]++
	}
	type comp struct{ root, n int32 }
	var comps []comp
	meta := componentsMetaFile{Documents: n, GroupDocs: make([]int64, j.Plan.Tasks)}
	for x := range int32(n) {
		if size[x] > 1 {
			comps = append(comps, comp{x, size[x]})
			meta.Members += int64(size[x])
			meta.Largest = max(meta.Largest, int(size[x]))
		}
	}
	meta.Components = len(comps)
	slices.SortStableFunc(comps, func(a, b comp) int { return int(b.n - a.n) })
	h := make(loads, j.Plan.Tasks)
	for g := range h {
		h[g] = groupLoad{0, int64(g)}
	}
	heap.Init(&h)
	for _, c := range comps {
		g := h[0].g
		h[0].docs += int64(c.n)
		heap.Fix(&h, 0)
		size[c.root] = -int32(g) - 1
		meta.GroupDocs[g] += int64(c.n)
	}
	comps = nil
	for s := range j.Plan.Tasks {
		var buf []byte
		for x := off[s]; x < off[s+1]; x++ {
			if v := size[uf.Root(int32(x))]; v < 0 {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(x-off[s]))
				buf = binary.LittleEndian.AppendUint32(buf, uint32(-v-1))
			}
		}
		if err := j.Work.PutBytes(ctx, componentsOf(s), buf); err != nil {
			return err
		}
	}
	return j.putJSON(ctx, componentsMeta(), meta)
}

// scatter: the documents of shard s that have a group, with what the join
// needs of them, to one file a group.
func (j *Job) scatter(ctx context.Context, s int) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	asg, err := j.Work.ReadAll(ctx, componentsOf(s))
	if err != nil {
		return err
	}
	out := make([][]byte, j.Plan.Tasks)
	if len(asg) > 0 {
		ids, err := j.open(ctx, signIDs(s))
		if err != nil {
			return err
		}
		defer ids.Close()
		sks, err := j.open(ctx, signSketches(s))
		if err != nil {
			return err
		}
		defer sks.Close()
		var id, sk []byte
		var doc uint32
		for x := 0; x+8 <= len(asg); x += 8 {
			want, g := binary.LittleEndian.Uint32(asg[x:]), binary.LittleEndian.Uint32(asg[x+4:])
			if g >= uint32(j.Plan.Tasks) {
				return fmt.Errorf("%s: damaged work file: group %d", j.Work.URL(componentsOf(s)), g)
			}
			var length uint64
			for ; doc <= want; doc++ {
				if id, err = ids.bytes(id); err != nil {
					return err
				}
				if length, err = ids.uvarint(); err != nil {
					return err
				}
				if sk, err = sks.bytes(sk); err != nil {
					return err
				}
			}
			o := out[g]
			o = appendUvarint(o, uint64(off[s])+uint64(want))
			o = appendUvarint(o, uint64(len(id)))
			o = append(o, id...)
			o = appendUvarint(o, length)
			o = appendUvarint(o, uint64(len(sk)))
			o = append(o, sk...)
			out[g] = o
		}
	}
	for g, b := range out {
		if err := j.Work.PutBytes(ctx, scatterOf(s, g), b); err != nil {
			return err
		}
	}
	return nil
}

// joinStatsFile is a join task's share of the counts.
type joinStatsFile struct {
	Documents  int64       `json:"documents"`
	Removed    int         `json:"removed"`
	Pairs      int         `json:"pairs"`
	Similarity [20]int     `json:"similarity"`
	Sizes      map[int]int `json:"sizes"`
	Below      *int        `json:"below,omitempty"`
}

// join: the component join on group g's documents; the removed ones, with
// their clusters' ids, to one file an input shard.
func (j *Job) join(ctx context.Context, g int) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	var docs []dedup.JoinDoc
	var mem int64
	for s := range j.Plan.Tasks {
		r, err := j.open(ctx, scatterOf(s, g))
		if err != nil {
			return err
		}
		for !r.atEOF() {
			var d dedup.JoinDoc
			doc, err := r.uvarint()
			if err != nil {
				r.Close()
				return err
			}
			id, err := r.bytes(nil)
			if err != nil {
				r.Close()
				return err
			}
			length, err := r.uvarint()
			if err != nil {
				r.Close()
				return err
			}
			if d.Sketch, err = r.bytes(nil); err != nil {
				r.Close()
				return err
			}
			d.Doc, d.ID, d.Len = int64(doc), string(id), int(length)
			mem += int64(len(d.Sketch) + len(id) + 64)
			docs = append(docs, d)
		}
		r.Close()
		if budget := j.Plan.TaskMemory; budget > 0 && mem > budget {
			return fmt.Errorf("join task %d: its components' sketches take more than --task-memory %d bytes (%d documents read so far); give more --tasks, or more --task-memory when one component is that large (components/meta.json says the largest)", g, budget, len(docs))
		}
	}
	res, err := dedup.JoinComponents(ctx, j.Plan.Options, docs, max(j.Plan.TaskWorkers, 1), j.tmpDir())
	if err != nil {
		return err
	}
	out := make([][]byte, j.Plan.Tasks)
	s := 0
	for _, rm := range res.Removed {
		for rm.Doc >= off[s+1] {
			s++
		}
		o := appendUvarint(out[s], uint64(rm.Doc-off[s]))
		o = appendUvarint(o, uint64(len(rm.Cluster)))
		out[s] = append(o, rm.Cluster...)
	}
	for s, b := range out {
		if err := j.Work.PutBytes(ctx, joinOf(g, s), b); err != nil {
			return err
		}
	}
	return j.putJSON(ctx, joinStats(g), joinStatsFile{Documents: int64(len(docs)), Removed: len(res.Removed), Pairs: res.Pairs, Similarity: res.Similarity, Sizes: res.Sizes, Below: res.Below})
}

// writeMetaFile is a write task's count.
type writeMetaFile struct {
	Kept int64 `json:"kept"`
}

type removal struct {
	doc     uint64
	cluster string
}

// write: shard s's clusters lines and kept records.
func (j *Job) write(ctx context.Context, s int) error {
	var rms []removal
	for g := range j.Plan.Tasks {
		r, err := j.open(ctx, joinOf(g, s))
		if err != nil {
			return err
		}
		for !r.atEOF() {
			doc, err := r.uvarint()
			if err != nil {
				r.Close()
				return err
			}
			c, err := r.bytes(nil)
			if err != nil {
				r.Close()
				return err
			}
			rms = append(rms, removal{doc, string(c)})
		}
		r.Close()
	}
	slices.SortFunc(rms, func(a, b removal) int {
		if a.doc < b.doc {
			return -1
		}
		if a.doc > b.doc {
			return 1
		}
		return 0
	})
	var meta signMetaFile
	if err := j.getJSON(ctx, signMeta(s), &meta); err != nil {
		return err
	}
	// removedAt(i): the cluster of document i when it is removed.
	if j.Plan.Clusters != "" {
		out, err := objstore.Open(ctx, j.Plan.Clusters)
		if err != nil {
			return err
		}
		defer out.Close()
		err = out.Put(ctx, PartName(s), func(w io.Writer) error {
			ids, err := j.open(ctx, signIDs(s))
			if err != nil {
				return err
			}
			defer ids.Close()
			bw := bufio.NewWriterSize(w, 1<<20)
			var id, line []byte
			next := 0
			for i := range uint64(meta.Documents) {
				if id, err = ids.bytes(id); err != nil {
					return err
				}
				if _, err := ids.uvarint(); err != nil {
					return err
				}
				line = append(line[:0], `{"id":`...)
				line = corpus.AppendJSONString(line, string(id))
				line = append(line, `,"cluster":`...)
				kept := true
				if next < len(rms) && rms[next].doc == i {
					line = corpus.AppendJSONString(line, rms[next].cluster)
					kept = false
					next++
				} else {
					line = corpus.AppendJSONString(line, string(id))
				}
				line = append(line, `,"kept":`...)
				line = strconv.AppendBool(line, kept)
				line = append(line, "}\n"...)
				if _, err := bw.Write(line); err != nil {
					return err
				}
			}
			if next != len(rms) {
				return fmt.Errorf("%d removed documents beyond the shard's %d", len(rms)-next, meta.Documents)
			}
			return bw.Flush()
		})
		if err != nil {
			return err
		}
	}
	if j.Plan.Kept != "" {
		if err := j.writeKept(ctx, s, rms, meta.Documents); err != nil {
			return err
		}
	}
	return j.putJSON(ctx, writeMeta(s), writeMetaFile{Kept: meta.Documents - int64(len(rms))})
}

// writeKept reads shard s again and writes its kept records.
func (j *Job) writeKept(ctx context.Context, s int, rms []removal, docs int64) error {
	out, err := objstore.Open(ctx, j.Plan.Kept)
	if err != nil {
		return err
	}
	defer out.Close()
	dir, err := os.MkdirTemp(j.tmpDir(), "neardup-write-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tmp := dir + "/" + PartName(s)
	w, err := corpus.Create(tmp)
	if err != nil {
		return err
	}
	defer w.Abort()
	opts, err := j.Plan.Options.ReaderOptions(j.Plan.Input.corpus())
	if err != nil {
		return err
	}
	opts.RawOnly = true
	var i uint64
	next := 0
	for _, rg := range j.Plan.Shards[s] {
		rd, err := dedup.OpenRange(OpenInput, rg.File, opts, rg)
		if err != nil {
			return err
		}
		for rd.Next() {
			if i%4096 == 0 && ctx.Err() != nil {
				rd.Close()
				return ctx.Err()
			}
			if next < len(rms) && rms[next].doc == i {
				next++
			} else if err := w.Write(rd.Doc()); err != nil {
				rd.Close()
				return err
			}
			i++
		}
		err = rd.Err()
		if cerr := rd.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if int64(i) != docs {
		return fmt.Errorf("read %d documents, the sign task read %d: the input changed", i, docs)
	}
	if err := w.Commit(); err != nil {
		return err
	}
	return putLocal(ctx, out, PartName(s), tmp)
}

// finish: the counts of --stats, as neardup dedup reports them.
func (j *Job) finish(ctx context.Context) error {
	p := j.Plan
	st := &dedup.Stats{Method: "minhash", Workers: p.TaskWorkers}
	spec, err := p.Options.ResolveSpec()
	if err != nil {
		return err
	}
	st.Spec, st.Params = spec, p.Params
	var ids []string
	var grouped int64
	sizes := map[int]int{}
	for s := range p.Tasks {
		var m signMetaFile
		if err := j.getJSON(ctx, signMeta(s), &m); err != nil {
			return err
		}
		st.Traditional += m.Traditional
		st.Documents += int(m.Documents)
		st.Empty += m.Empty
		st.InputBytes += m.InputBytes
		var w writeMetaFile
		if err := j.getJSON(ctx, writeMeta(s), &w); err != nil {
			return err
		}
		st.Kept += int(w.Kept)
		r, err := j.open(ctx, signIDs(s))
		if err != nil {
			return err
		}
		for range m.Documents {
			id, err := r.bytes(nil)
			if err == nil {
				_, err = r.uvarint()
			}
			if err != nil {
				r.Close()
				return err
			}
			ids = append(ids, string(id))
		}
		r.Close()
	}
	for g := range p.Tasks {
		var js joinStatsFile
		if err := j.getJSON(ctx, joinStats(g), &js); err != nil {
			return err
		}
		grouped += js.Documents
		st.Pairs += js.Pairs
		for k, v := range js.Similarity {
			st.Similarity[k] += v
		}
		for n, c := range js.Sizes {
			sizes[n] += c
		}
		if js.Below != nil {
			if st.RemovedBelowThreshold == nil {
				st.RemovedBelowThreshold = new(int)
			}
			*st.RemovedBelowThreshold += *js.Below
		}
	}
	if one := int64(st.Documents) - grouped; one > 0 {
		sizes[1] += int(one)
	}
	if st.RemovedBelowThreshold == nil && dedup.CountsBelow(p.Options) {
		st.RemovedBelowThreshold = new(int)
	}
	st.Removed = st.Documents - st.Kept
	for n, c := range sizes {
		if n > 1 {
			st.Clusters += c
		}
		st.LargestCluster = max(st.LargestCluster, n)
		st.ClusterSizes = append(st.ClusterSizes, dedup.SizeCount{Size: n, Count: c})
	}
	slices.SortFunc(st.ClusterSizes, func(a, b dedup.SizeCount) int { return a.Size - b.Size })
	st.DuplicateIDs, st.DuplicateIDsFirst = dedup.DuplicateIDs(ids)
	if p.Stats == "" {
		return nil
	}
	dir, name := splitLoc(p.Stats)
	out, err := objstore.Open(ctx, dir)
	if err != nil {
		return err
	}
	defer out.Close()
	b, err := jsonIndent(st)
	if err != nil {
		return err
	}
	return out.PutBytes(ctx, name, b)
}
