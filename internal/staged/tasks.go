package staged

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/extsort"
	"github.com/neardup/neardup/internal/heapx"
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

// sign: read shard s, sketch it, and write its ids, its sketches (not
// those that carry shingle sets: see dedup.SignedSets), its band keys partitioned by key into one sorted run a bucket task, and its
// ids partitioned by hash likewise (see ids.go). It holds the keys and ids
// of its partitions until it writes them: past its share of the budget
// (signShare) it writes them as one more sorted run of each partition
// (keys-P.R, ids-P.R) and starts again, so a shard of any size stays
// within --task-memory; its meta says how many runs it wrote.
func (j *Job) sign(ctx context.Context, s int) error {
	p := j.Plan
	h := &signHeld{keys: make([][]keyEntry, p.Tasks), ids: make([][]idEntry, p.Tasks)}
	share := j.spillShare(signShare)
	var idBuf, sketches []byte
	cfg := p.Options
	cfg.Workers = p.TaskWorkers
	var n uint32
	var sketched, old, copies int64
	in := dedup.Input{Options: p.Input.corpus(), SkipInvalid: p.Input.SkipInvalid}
	if len(p.Indexes) > 0 {
		ixs, closeIndexes, err := j.openIndexes()
		if err != nil {
			return err
		}
		defer closeIndexes()
		in.AgainstIndexes = ixs
	}
	var stats *dedup.Stats
	var hitBuf []byte
	var indexSim []int
	if len(p.Indexes) > 0 {
		indexSim = make([]int, 20)
	}
	// The ids and the sketches stream to their files as the documents
	// come; each file appears whole when the shard is done. A sketch
	// that carries the shingle set (dedup.SignedSets) is not kept: about
	// 8 bytes a shingle for every document, where only those with a
	// candidate (a third, or fewer) reach a join; the scatter task reads
	// and sketches those again (rescatter).
	keep := !dedup.SignedSets(cfg)
	putSketches := func(fn func(io.Writer) error) error {
		if !keep {
			return fn(io.Discard)
		}
		return j.Work.Put(ctx, signSketches(s), fn)
	}
	// With an index, the documents found in it stream to their file
	// (signHits) too.
	putHits := func(fn func(io.Writer) error) error {
		if len(p.Indexes) == 0 {
			return fn(io.Discard)
		}
		return j.Work.Put(ctx, signHits(s), fn)
	}
	err := j.Work.Put(ctx, signIDs(s), func(idsOut io.Writer) error {
		return putHits(func(hitsOut io.Writer) error {
			return putSketches(func(skOut io.Writer) error {
				idsW, skW := bufio.NewWriterSize(idsOut, 1<<20), bufio.NewWriterSize(skOut, 1<<20)
				hitsW := bufio.NewWriterSize(hitsOut, 64<<10)
				var err error
				stats, err = dedup.SketchRanges(ctx, cfg, in, OpenInput, p.Shards[s], func(d *dedup.SignedDoc) error {
					idBuf = appendUvarint(idBuf[:0], uint64(len(d.ID)))
					idBuf = append(idBuf, d.ID...)
					idBuf = appendUvarint(idBuf, uint64(d.Len))
					if _, err := idsW.Write(idBuf); err != nil {
						return err
					}
					if keep {
						sketches = appendUvarint(sketches[:0], uint64(len(d.Sketch)))
						sketches = append(sketches, d.Sketch...)
						if _, err := skW.Write(sketches); err != nil {
							return err
						}
					}
					switch {
					case d.Copy:
						copies++
					case len(d.Sketch) > 0:
						sketched++
					}
					if d.Old {
						old++
					}
					if d.Index != "" {
						hitBuf = appendHit(hitBuf[:0], uint64(n), d.Index, d.ID, d.IndexSimilarity)
						if _, err := hitsW.Write(hitBuf); err != nil {
							return err
						}
						indexSim[min(int(d.IndexSimilarity*20), 19)]++
					}
					for b, k := range d.Keys {
						x := mixKey(b, k)
						q := x % uint64(p.Tasks)
						h.keys[q] = append(h.keys[q], keyEntry{x, n})
					}
					h.nKeys += int64(len(d.Keys))
					h.addID(d.ID, n)
					n++
					if share > 0 && h.bytes() > share {
						return j.putSignRun(ctx, s, h, nil)
					}
					return nil
				})
				if err != nil {
					return err
				}
				if err := idsW.Flush(); err != nil {
					return err
				}
				if err := hitsW.Flush(); err != nil {
					return err
				}
				return skW.Flush()
			})
		})
	})
	if err != nil {
		return err
	}
	// The last run is run 0, whatever spilled before it: it carries the
	// shard's counts (signCounts) for the bucket tasks.
	if err := j.putSignRun(ctx, s, h, &signCounts{Documents: int64(stats.Documents), Runs: h.runs + 1}); err != nil {
		return err
	}
	return j.putJSON(ctx, signMeta(s), signMetaFile{Documents: int64(stats.Documents), Empty: stats.Empty, InputBytes: stats.InputBytes, Traditional: stats.Traditional, HTMLLike: stats.HTMLLike, Sketched: sketched, Copies: copies, Runs: h.runs, Old: old,
		Skipped: stats.Skipped, SkippedErrors: stats.SkippedErrors, Damaged: stats.Damaged,
		IDsFromPosition: stats.IDsFromPosition, IDsFromPositionFirst: stats.IDsFromPositionFirst,
		IndexMatches: stats.IndexMatches, IndexSimilarity: indexSim})
}

// signShare is the part of --task-memory a sign task's keys and ids may
// take (counted at 16 bytes a key and 24 an id plus its bytes; the slices
// that hold them have up to twice that while they grow).
const signShare = 4

// spillShare is the bytes a task holds before it spills: the plan's
// SpillMemory when set (tests), else the task's memory limit divided by
// part; 0 (never) without a budget.
func (j *Job) spillShare(part int64) int64 {
	if j.Plan.SpillMemory > 0 {
		return j.Plan.SpillMemory
	}
	return j.limit() / part
}

// signHeld is what a sign task holds of its partitions until it writes
// them as a run.
type signHeld struct {
	keys  [][]keyEntry
	ids   [][]idEntry
	arena []byte // the ids' bytes
	nKeys int64
	nIDs  int64
	runs  int // runs written
}

func (h *signHeld) addID(id string, doc uint32) {
	b := h.arena
	h.arena = append(h.arena, id...)
	e := idEntry{hash: idHash(h.arena[len(b):]), doc: doc, at: uint32(len(b)), n: uint32(len(id))}
	q := e.hash % uint64(len(h.ids))
	h.ids[q] = append(h.ids[q], e)
	h.nIDs++
}

// bytes is what h holds (its slices' lengths).
func (h *signHeld) bytes() int64 { return 16*h.nKeys + idEntrySize*h.nIDs + int64(len(h.arena)) }

// putSignRun sorts what h holds and writes it as a run, one pack
// (signBuckets) of every partition's keys and ids, then empties h: a
// spilled run (counts nil) as run h.runs+1, the task's last run as run
// 0, its counts in its last section (signCounts).
func (j *Job) putSignRun(ctx context.Context, s int, h *signHeld, counts *signCounts) error {
	var buf []byte
	r := h.runs + 1
	if counts != nil {
		r = 0
	}
	err := j.Work.Put(ctx, signBuckets(s, r), func(w io.Writer) error {
		pw := newPackWriter(w, signSections(len(h.keys)))
		for q, part := range h.keys {
			slices.SortFunc(part, func(a, b keyEntry) int {
				if a.key != b.key {
					if a.key < b.key {
						return -1
					}
					return 1
				}
				return int(a.doc) - int(b.doc)
			})
			buf = slices.Grow(buf[:0], 12*len(part))
			for _, e := range part {
				buf = binary.LittleEndian.AppendUint64(buf, e.key)
				buf = binary.LittleEndian.AppendUint32(buf, e.doc)
			}
			h.keys[q] = part[:0]
			pw.section(2 * q)
			if _, err := pw.Write(buf); err != nil {
				return err
			}
			buf = appendIDRun(buf[:0], h.ids[q], h.arena)
			h.ids[q] = h.ids[q][:0]
			pw.section(2*q + 1)
			if _, err := pw.Write(buf); err != nil {
				return err
			}
		}
		if counts != nil {
			pw.section(2 * len(h.keys))
			if _, err := pw.Write(counts.marshal()); err != nil {
				return err
			}
		}
		return pw.finish()
	})
	if err != nil {
		return err
	}
	h.arena = h.arena[:0]
	h.nKeys, h.nIDs = 0, 0
	h.runs++
	return nil
}

// signCounts is what a bucket task needs of a sign task's shard: its
// documents (where its document numbers start in the whole input) and
// its runs. The sign task writes them as the last section of its last
// run, run 0 (signCountsSize bytes: the documents as a uint64, the runs
// as a uint32, little-endian), so that a bucket task finds them in the
// bytes it reads anyway, the end of run 0 with its index: the N bucket
// tasks read no sign meta (N x N small reads a job; see signMetas).
type signCounts struct {
	Documents int64
	Runs      int
}

const signCountsSize = 12

func (c *signCounts) marshal() []byte {
	b := binary.LittleEndian.AppendUint64(nil, uint64(c.Documents))
	return binary.LittleEndian.AppendUint32(b, uint32(c.Runs))
}

// signSections is the sections of a sign pack for tasks partitions: the
// keys and the ids of each, then the shard's counts (empty but in run 0).
func signSections(tasks int) int { return 2*tasks + 1 }

// signRuns reads the index of every run of every sign task, keeping
// partition q's two sections (packs[s]: sign task s's runs), and the
// position of each shard's first document in the whole input and the
// number of documents (off, as offsets gives it), from the end of each
// sign task's run 0 (signCounts), several at once.
func (j *Job) signRuns(ctx context.Context, q int) (packs [][]*packIndex, off []int64, err error) {
	n := j.Plan.Tasks
	packs = make([][]*packIndex, n)
	docs := make([]int64, n)
	err = readEach(n, func(s int) (err error) {
		packs[s], docs[s], err = j.shardRuns(ctx, s, q)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	off = make([]int64, n+1)
	for s, d := range docs {
		off[s+1] = off[s] + d
	}
	if off[n] > 1<<31-1 {
		return nil, nil, fmt.Errorf("%d documents: more than a job holds (2^31-1)", off[n])
	}
	return packs, off, nil
}

// shardRuns reads the indexes of sign task s's runs, keeping partition
// q's sections, and its documents: run 0's index and counts with one
// ranged read, then each other run's index.
func (j *Job) shardRuns(ctx context.Context, s, q int) ([]*packIndex, int64, error) {
	n := signSections(j.Plan.Tasks)
	name := signBuckets(s, 0)
	b, ver, err := j.Work.ReadTail(ctx, name, packIndexSize(n)+signCountsSize)
	if err != nil {
		return nil, 0, err
	}
	bad := func(err error) error {
		return fmt.Errorf("%s: damaged work file: %w", j.Work.URL(name), err)
	}
	if len(b) < signCountsSize {
		return nil, 0, bad(fmt.Errorf("%d bytes, shorter than a sign task's counts", len(b)))
	}
	px, err := j.parsePack(name, b[signCountsSize:], ver, n, 2*q, 2)
	if err != nil {
		return nil, 0, err
	}
	// The counts' section is the last, just before the index: its entry
	// is the index's last.
	e := b[signCountsSize+(n-1)*packEntrySize:]
	cb := b[:signCountsSize]
	if l := binary.LittleEndian.Uint64(e); l != signCountsSize {
		return nil, 0, bad(fmt.Errorf("its counts' section has %d bytes, want %d", l, signCountsSize))
	}
	if crc32.Checksum(cb, castagnoli) != binary.LittleEndian.Uint32(e[8:]) {
		return nil, 0, bad(errors.New("its counts' CRC32C does not match"))
	}
	docs, runs := int64(binary.LittleEndian.Uint64(cb)), int(binary.LittleEndian.Uint32(cb[8:]))
	if docs < 0 || docs > 1<<31-1 || runs < 1 || runs > 1<<20 {
		return nil, 0, bad(fmt.Errorf("counts of %d documents and %d runs", docs, runs))
	}
	packs := []*packIndex{px}
	for r := 1; r < runs; r++ {
		b, ver, err := j.Work.ReadTail(ctx, signBuckets(s, r), packIndexSize(n))
		if err != nil {
			return nil, 0, err
		}
		px, err := j.parsePack(signBuckets(s, r), b, ver, n, 2*q, 2)
		if err != nil {
			return nil, 0, err
		}
		packs = append(packs, px)
	}
	return packs, docs, nil
}

// bucket: merge partition q of every shard (each run sorted by its sign
// task) and write the candidate edges (two documents with a band key in
// common), each once, sorted; then count the duplicate ids of id
// partition q (ids.go). It holds a read buffer a run and its edges, which
// past its share of the budget it sorts and spills to a local scratch
// file, merging those files as it writes its output.
func (j *Job) bucket(ctx context.Context, q int) error {
	runs, off, err := j.signRuns(ctx, q)
	if err != nil {
		return err
	}
	total := 0
	for _, r := range runs {
		total += len(r)
	}
	share := j.spillShare(bucketShare)
	// A read buffer a run: 64 KB, less when there are so many runs that
	// their buffers would pass the share.
	bufSize := 64 << 10
	if share > 0 {
		bufSize = int(min(max(share/int64(total), 4<<10), 64<<10))
	}
	// The edges, sorted in memory up to the share, beyond it in sorted
	// runs on local scratch files merged when written; each edge is a key
	// of the sorter, once whatever its repeats.
	edges := extsort.New(j.tmpDir(), cmp.Or(share, math.MaxInt64))
	defer edges.Close()
	if err := j.mergeKeys(ctx, q, runs, off, bufSize, edges); err != nil {
		return err
	}
	err = j.Work.Put(ctx, bucketEdges(q), func(w io.Writer) error {
		bw := bufio.NewWriterSize(w, 1<<20)
		var b [8]byte
		err := edges.Groups(func(e uint64, _ []uint32) error {
			binary.LittleEndian.PutUint64(b[:], e)
			_, err := bw.Write(b[:])
			return err
		})
		if err != nil {
			return err
		}
		return bw.Flush()
	})
	if err != nil {
		return err
	}
	if err := edges.Close(); err != nil {
		return err
	}
	d, err := j.countDupIDs(ctx, q, runs, off, bufSize)
	if err != nil {
		return err
	}
	return j.Work.PutBytes(ctx, bucketIDs(q), d.marshal())
}

// bucketShare is the part of --task-memory a bucket task's edges take
// before it spills them, and its read buffers' bound.
const bucketShare = 4

// mergeKeys merges key partition q's runs into edges.
func (j *Job) mergeKeys(ctx context.Context, q int, runs [][]*packIndex, off []int64, bufSize int, edges *extsort.Sorter) error {
	// The documents of one key come in document order (the runs merged by
	// key, then document): an edge from the first to each other.
	var key uint64
	var first uint32
	had := false
	return mergeRuns(ctx, j, runs, 2*q, off, bufSize, func(f runFile) *keyRun { return &keyRun{runFile: f} }, keyRunBefore, func(r *keyRun) error {
		e := r.cur
		if had && e.key == key {
			return edges.Add(extsort.Entry{Key: uint64(first)<<32 | uint64(e.doc)})
		}
		key, first, had = e.key, e.doc, true
		return nil
	})
}

// keyRun reads one sign task's sorted keys of a partition.
type keyRun struct {
	runFile // ok: cur holds a key
	cur     keyEntry
	b       [12]byte
}

// next reads the run's next key into cur (ok false at the end).
func (r *keyRun) next() error {
	_, err := io.ReadFull(r.rd, r.b[:])
	switch {
	case err == io.EOF:
		r.ok = false
		return nil
	case err != nil:
		return fmt.Errorf("%s: damaged work file: %w (not a whole number of 12-byte keys)", r.name, err)
	}
	e := keyEntry{binary.LittleEndian.Uint64(r.b[:]), r.base + binary.LittleEndian.Uint32(r.b[8:])}
	if r.ok && (e.key < r.cur.key || e.key == r.cur.key && e.doc < r.cur.doc) {
		return fmt.Errorf("%s: damaged work file: keys out of order", r.name)
	}
	r.cur, r.ok = e, true
	return nil
}

// keyRunBefore orders runs by their current key, then document.
func keyRunBefore(a, b *keyRun) bool {
	x, y := a.cur, b.cur
	return x.key < y.key || x.key == y.key && x.doc < y.doc
}

// componentsMetaFile is what the components task found.
type componentsMetaFile struct {
	Documents  int64   `json:"documents"`
	InEdges    int64   `json:"in_edges"`   // documents in a candidate edge
	Components int     `json:"components"` // of two or more documents
	Members    int64   `json:"members"`
	Largest    int     `json:"largest"`
	GroupDocs  []int64 `json:"group_documents"`
}

// groupLoad is a join group's documents so far; the least loaded group,
// then the lowest, takes the next component.
type groupLoad struct{ docs, g int64 }

func lessLoaded(a, b groupLoad) bool { return a.docs < b.docs || a.docs == b.docs && a.g < b.g }

// components: the union-find over the documents of the candidate edges,
// by dense rank (a bitmap of the documents that are in an edge, 1 bit a
// document and 4 bytes a 64, then 8 bytes a document in an edge: the
// union-find's 4 and the component sizes' 4), then the components of two
// or more documents dealt, largest first, to the join task with the fewest
// documents; for each shard, the group and the component of each of its
// documents that has one (components/i: 12 bytes a document, its number
// in the shard, its group and its component's number, the rank of the
// component's first document among those in an edge; all three uint32,
// little-endian). A document in no edge is alone, whatever its rank would
// be.
func (j *Job) components(ctx context.Context) error {
	off, err := j.offsets(ctx)
	if err != nil {
		return err
	}
	n := off[j.Plan.Tasks]
	in := make([]uint64, (n+63)/64) // bit x: document x is in an edge
	if err := j.eachEdge(ctx, n, func(a, c int32) {
		atomic.OrUint64(&in[a/64], 1<<(a%64))
		atomic.OrUint64(&in[c/64], 1<<(c%64))
	}); err != nil {
		return err
	}
	// rank[w]: the documents in an edge before word w of in.
	rank := make([]uint32, len(in)+1)
	for w, v := range in {
		rank[w+1] = rank[w] + uint32(bits.OnesCount64(v))
	}
	m := int64(rank[len(in)])
	if need := componentsMemory(n, m); j.Plan.TaskMemory > 0 && need > j.Plan.TaskMemory {
		return fmt.Errorf("components: %d of the %d documents are in a candidate edge: the union-find needs %d bytes, more than --task-memory %d; give at least that", m, n, need, j.Plan.TaskMemory)
	}
	rankOf := func(x int32) int32 {
		return int32(rank[x/64]) + int32(bits.OnesCount64(in[x/64]&(1<<(x%64)-1)))
	}
	uf := dedup.NewComponents(int(m))
	if err := j.eachEdge(ctx, n, func(a, c int32) { uf.Union(rankOf(a), rankOf(c)) }); err != nil {
		return err
	}
	size := make([]int32, m) // by root; then -(group+1) for the roots of two or more
	for x := range int32(m) {
		size[uf.Root(x)]++
	}
	type comp struct{ root, n int32 }
	var comps []comp
	meta := componentsMetaFile{Documents: n, InEdges: m, GroupDocs: make([]int64, j.Plan.Tasks)}
	for x := range int32(m) {
		if size[x] > 1 {
			comps = append(comps, comp{x, size[x]})
			meta.Members += int64(size[x])
			meta.Largest = max(meta.Largest, int(size[x]))
		}
	}
	meta.Components = len(comps)
	slices.SortStableFunc(comps, func(a, b comp) int { return int(b.n - a.n) })
	groups := make([]groupLoad, j.Plan.Tasks)
	for g := range groups {
		groups[g] = groupLoad{0, int64(g)}
	}
	h := heapx.New(groups, lessLoaded)
	for _, c := range comps {
		l := h.Top()
		g := l.g
		h.SetTop(groupLoad{l.docs + int64(c.n), g})
		size[c.root] = -int32(g) - 1
		meta.GroupDocs[g] += int64(c.n)
	}
	comps = nil
	var buf []byte
	for s := range j.Plan.Tasks {
		buf = buf[:0]
		for x := off[s]; x < off[s+1]; x++ {
			if in[x/64]&(1<<(x%64)) == 0 {
				continue
			}
			root := uf.Root(rankOf(int32(x)))
			if v := size[root]; v < 0 {
				buf = binary.LittleEndian.AppendUint32(buf, uint32(x-off[s]))
				buf = binary.LittleEndian.AppendUint32(buf, uint32(-v-1))
				buf = binary.LittleEndian.AppendUint32(buf, uint32(root))
			}
		}
		if err := j.Work.PutBytes(ctx, componentsOf(s), buf); err != nil {
			return err
		}
	}
	// The sign metas for the tasks after this one, in one object.
	metas, err := j.signMetas(ctx)
	if err != nil {
		return err
	}
	short := make([]signMetaFile, len(metas))
	for s, m := range metas {
		m.SkippedErrors, m.Damaged = nil, nil
		short[s] = m
	}
	if err := j.putJSON(ctx, componentsShards(), short); err != nil {
		return err
	}
	return j.putJSON(ctx, componentsMeta(), meta)
}

// componentsMemory is the components task's memory for n documents of
// which m are in a candidate edge (see components).
func componentsMemory(n, m int64) int64 { return n/8 + n/16 + 8*m + 64<<20 }

// edgeReaders is how many bucket files the components task reads at once:
// from object storage one stream a file is far slower than the union-find
// that consumes it, so several are read together (a 1 MiB buffer each).
const edgeReaders = 8

// eachEdge calls fn with every candidate edge of every bucket file, on up
// to edgeReaders goroutines at once: fn must be safe for concurrent use,
// and its outcome must not depend on the order of the edges (the bitmap's
// bits, dedup.Components' unions). On a damaged file it returns the
// error of the first such file in bucket order, whatever the timing: a
// failure stops the reading of the files after it, never of those before.
func (j *Job) eachEdge(ctx context.Context, n int64, fn func(a, c int32)) error {
	errs := make([]error, j.Plan.Tasks)
	var failed atomic.Int64 // the first bucket file that failed so far
	failed.Store(math.MaxInt64)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(edgeReaders, j.Plan.Tasks) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 1<<20)
			for q := range next {
				stop := func() bool { return int64(q) > failed.Load() }
				if errs[q] = j.edgesOf(ctx, q, n, buf, stop, fn); errs[q] != nil && errs[q] != errStopped {
					for f := failed.Load(); int64(q) < f && !failed.CompareAndSwap(f, int64(q)); f = failed.Load() {
					}
				}
			}
		}()
	}
	for q := range j.Plan.Tasks {
		if int64(q) > failed.Load() || ctx.Err() != nil {
			break
		}
		next <- q
	}
	close(next)
	wg.Wait()
	if f := failed.Load(); f != math.MaxInt64 {
		return errs[f]
	}
	return ctx.Err()
}

// errStopped: a bucket file's reading stopped for a failure before it.
var errStopped = errors.New("stopped")

// edgesOf calls fn with every candidate edge of bucket file q, unless stop
// says to stop.
func (j *Job) edgesOf(ctx context.Context, q int, n int64, buf []byte, stop func() bool, fn func(a, c int32)) error {
	if stop() {
		return errStopped
	}
	// Read whole buffers straight from the file: j.open's buffer would
	// be a second megabyte a reader.
	rc, err := j.Work.Open(ctx, bucketEdges(q))
	if err != nil {
		return err
	}
	defer rc.Close()
	r := &reader{Reader: bufio.NewReaderSize(rc, 16), c: rc, name: j.Work.URL(bucketEdges(q))}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if stop() {
			return errStopped
		}
		k, err := io.ReadFull(r, buf)
		if k%8 != 0 {
			return r.bad(fmt.Errorf("%w: not a whole number of edges", io.ErrUnexpectedEOF))
		}
		for x := 0; x < k; x += 8 {
			e := binary.LittleEndian.Uint64(buf[x:])
			a, c := int32(e>>32), int32(uint32(e))
			if int64(a) >= n || int64(c) >= n || a < 0 || c < 0 {
				return r.bad(fmt.Errorf("edge %d-%d beyond %d documents", a, c, n))
			}
			fn(a, c)
		}
		if err == io.EOF || err == io.ErrUnexpectedEOF {
			return nil
		}
		if err != nil {
			return r.bad(err)
		}
	}
}

// joinStatsFile is a join task's share of the counts.
type joinStatsFile struct {
	Documents  int64       `json:"documents"`
	Old        int64       `json:"old,omitempty"` // of Documents (--against)
	Clusters   int         `json:"clusters"`      // dedup.JoinResult.Clusters
	Removed    int         `json:"removed"`
	Pairs      int         `json:"pairs"`
	Similarity [20]int     `json:"similarity"`
	Distance   []int       `json:"distance,omitempty"`
	Sizes      map[int]int `json:"sizes"`
	Below      *int        `json:"below,omitempty"`
	// ExactCopies is dedup.JoinResult.ExactCopies (the cascade).
	ExactCopies int `json:"exact_copies,omitempty"`
	// Batches is how many batches of whole components the join ran
	// (more than 1: its group did not fit in its memory; see join).
	Batches int `json:"batches,omitempty"`
	// Streamed is how many of its documents were of components too large
	// for a batch, joined with their sketches streamed from a scratch
	// file (see joinStreamed).
	Streamed int64 `json:"streamed,omitempty"`
}

// writeMetaFile is a write task's count.
type writeMetaFile struct {
	Kept int64 `json:"kept"`
	// IndexAlone is how many of the shard's documents found in an index
	// are in no component: each a cluster of its own (Stats.Clusters).
	IndexAlone int64 `json:"index_alone,omitempty"`
}

// write: shard s's clusters lines and kept records. The removed documents
// come merged from the join tasks' files (removals), twice with -o: a
// write task holds a read buffer a join task, not its shard's removals.
func (j *Job) write(ctx context.Context, s int) error {
	var meta signMetaFile
	if err := j.getJSON(ctx, signMeta(s), &meta); err != nil {
		return err
	}
	var ex *shardExamples // the report's share (Plan.Examples)
	if j.Plan.examples() {
		var err error
		if ex, err = j.shardExamples(ctx, s); err != nil {
			return err
		}
	}
	removed := int64(-1)
	if j.Plan.Clusters != "" {
		out, err := objstore.Open(ctx, j.Plan.Clusters)
		if err != nil {
			return err
		}
		defer out.Close()
		err = out.Put(ctx, PartName(s), func(w io.Writer) error {
			bw := bufio.NewWriterSize(w, 1<<20)
			var line []byte
			if ex != nil { // from the start, should write run again
				ex.removed, ex.removedBytes, ex.omitted = nil, 0, false
			}
			n, err := j.eachID(ctx, s, &meta, func(i uint64, id []byte, cluster string, rm bool) error {
				if int64(i) < meta.Old {
					return nil // an old document: not listed
				}
				doc := string(id)
				if !rm {
					cluster = doc
				} else if ex != nil {
					ex.addRemoved(id)
				}
				line = dedup.AppendClusterLine(line[:0], doc, cluster, !rm)
				_, err := bw.Write(line)
				return err
			})
			if err != nil {
				return err
			}
			removed = n
			return bw.Flush()
		})
		if err != nil {
			return err
		}
	}
	if j.Plan.Kept != "" {
		var onDoc func(uint64, *corpus.Document) error
		if ex != nil {
			onDoc = ex.see
		}
		n, err := j.writeKept(ctx, s, &meta, onDoc)
		if err != nil {
			return err
		}
		removed = n
	} else if ex != nil && len(ex.want) > 0 {
		if err := j.eachDoc(ctx, s, &meta, ex.last+1, ex.see); err != nil {
			return err
		}
	}
	if ex != nil {
		if j.Plan.Clusters == "" {
			if err := j.removedIDs(ctx, s, &meta, ex); err != nil {
				return err
			}
		}
		if err := j.putShardReport(ctx, s, ex); err != nil {
			return err
		}
	}
	var alone int64
	if removed < 0 || len(j.Plan.Indexes) > 0 {
		// Neither output: count the removals; with an index, those
		// found in it alone too.
		rms, err := j.openRemovals(ctx, s)
		if err != nil {
			return err
		}
		defer rms.Close()
		for _, ok := rms.peek(); ok; _, ok = rms.peek() {
			if _, err := rms.pop(); err != nil {
				return err
			}
		}
		removed, alone = rms.n, rms.alone
	}
	if err := j.writePairs(ctx, s); err != nil {
		return err
	}
	return j.putJSON(ctx, writeMeta(s), writeMetaFile{Kept: meta.Documents - meta.Old - removed, IndexAlone: alone})
}

// eachID walks shard s's ids (its sign task's) beside the join tasks'
// removals of it, merged in document order: fn gets each document's
// number in the shard, its id (reused by the next call) and, when it is
// removed (rm), its cluster's id. It returns how many were removed.
func (j *Job) eachID(ctx context.Context, s int, meta *signMetaFile, fn func(i uint64, id []byte, cluster string, rm bool) error) (int64, error) {
	rms, err := j.openRemovals(ctx, s)
	if err != nil {
		return 0, err
	}
	defer rms.Close()
	ids, err := j.open(ctx, signIDs(s))
	if err != nil {
		return 0, err
	}
	defer ids.Close()
	var id []byte
	for i := range uint64(meta.Documents) {
		if id, err = ids.bytes(id); err != nil {
			return 0, err
		}
		if _, err := ids.uvarint(); err != nil {
			return 0, err
		}
		cluster, rm := "", false
		if next, ok := rms.peek(); ok && next == i {
			if cluster, err = rms.pop(); err != nil {
				return 0, err
			}
			rm = true
		}
		if err := fn(i, id, cluster, rm); err != nil {
			return 0, err
		}
	}
	if next, ok := rms.peek(); ok {
		return 0, fmt.Errorf("removed document %d beyond the shard's %d", next, meta.Documents)
	}
	return rms.n, nil
}

// writeKept reads shard s again and writes its kept records; it returns
// how many documents it left out. onDoc, when not nil, sees every
// document it reads (the report's examples' texts, exampleTexts).
func (j *Job) writeKept(ctx context.Context, s int, meta *signMetaFile, onDoc func(i uint64, d *corpus.Document) error) (int64, error) {
	out, err := objstore.Open(ctx, j.Plan.Kept)
	if err != nil {
		return 0, err
	}
	defer out.Close()
	rms, err := j.openRemovals(ctx, s)
	if err != nil {
		return 0, err
	}
	defer rms.Close()
	dir, err := os.MkdirTemp(j.tmpDir(), "neardup-write-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	tmp := dir + "/" + PartName(s)
	w, err := corpus.Create(tmp)
	if err != nil {
		return 0, err
	}
	defer w.Abort()
	err = j.eachDoc(ctx, s, meta, uint64(meta.Documents), func(i uint64, d *corpus.Document) error {
		if onDoc != nil {
			if err := onDoc(i, d); err != nil {
				return err
			}
		}
		if next, ok := rms.peek(); ok && next == i {
			_, err := rms.pop()
			return err
		}
		return w.Write(d)
	})
	if err != nil {
		return 0, err
	}
	if next, ok := rms.peek(); ok {
		return 0, fmt.Errorf("removed document %d beyond the shard's %d", next, meta.Documents)
	}
	if err := w.Commit(); err != nil {
		return 0, err
	}
	return rms.n, putLocal(ctx, out, PartName(s), tmp)
}

// eachDoc reads shard s again, its new documents up to (not including)
// its document end, and calls fn with each and its number in the shard.
// Where the sign task skipped bad records (--skip-invalid; meta says
// so), it leaves them out too: it parses each JSONL record as the sign
// task did, and ends a damaged file's range where the sign task found
// the damage. The records are read with corpus.Options.RawOnly: a JSONL
// record's ID and Text are not filled in.
func (j *Job) eachDoc(ctx context.Context, s int, meta *signMetaFile, end uint64, fn func(i uint64, d *corpus.Document) error) error {
	docs := meta.Documents
	opts, err := j.Plan.Options.ReaderOptions(j.Plan.Input.corpus())
	if err != nil {
		return err
	}
	opts.RawOnly = true
	if j.Plan.Input.SkipInvalid {
		opts.OnInvalid = func(*corpus.RecordError) error { return nil }
	}
	check := meta.Skipped > 0 // parse the JSONL records to skip the bad ones
	damaged := map[string]int64{}
	for _, d := range meta.Damaged {
		if !d.Resumed { // else reading went on after a lost gzip member
			damaged[d.File] = d.Record
		}
	}
	i := uint64(meta.Old) // the old documents come first: never written
	var parsed corpus.Document
	for _, rg := range j.Plan.Shards[s] {
		if rg.Old {
			continue
		}
		if i >= end {
			return nil
		}
		rd, err := dedup.OpenRange(OpenInput, rg.File, opts, rg)
		if err != nil {
			return err
		}
		stop, cut := damaged[rg.File]
		for i < end && rd.Next() {
			if i%4096 == 0 && ctx.Err() != nil {
				rd.Close()
				return ctx.Err()
			}
			d := rd.Doc()
			if cut && d.Record >= stop {
				break // the sign task used nothing from the damage on
			}
			if check && d.ID == "" {
				if parsed = *d; corpus.ParseJSONLShared(&parsed, opts) != nil {
					continue
				}
			}
			if err := fn(i, d); err != nil {
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
	if end == uint64(docs) && int64(i) != docs {
		return fmt.Errorf("read %d documents, the sign task read %d: the input changed", i, docs)
	}
	return nil
}

// finish: the counts of --stats, as neardup dedup reports them, from the
// other tasks' small files (metas, join stats, the bucket tasks' duplicate
// ids), written to StatsName and to --stats: it holds nothing that grows
// with the input.
func (j *Job) finish(ctx context.Context) error {
	p := j.Plan
	st := &dedup.Stats{Workers: p.TaskWorkers}
	spec, err := p.Options.ResolveSpec()
	if err != nil {
		return err
	}
	st.Method, st.Spec = spec.Method.String(), spec
	st.Cascade = p.Options.Cascade
	var sketched int64
	var grouped int64
	sizes := map[int]int{}
	for s := range p.Tasks {
		var m signMetaFile
		if err := j.getJSON(ctx, signMeta(s), &m); err != nil {
			return err
		}
		st.Traditional += m.Traditional
		st.HTMLLike += m.HTMLLike
		st.Documents += int(m.Documents - m.Old)
		st.Against += int(m.Old)
		st.Empty += m.Empty
		st.InputBytes += m.InputBytes
		sketched += m.Sketched + m.Copies
		addSkipped(st, &m)
		// The shards are in input order: the first shard's first is
		// the input's.
		if st.IDsFromPosition == 0 {
			st.IDsFromPositionFirst = m.IDsFromPositionFirst
		}
		st.IDsFromPosition += m.IDsFromPosition
		var w writeMetaFile
		if err := j.getJSON(ctx, writeMeta(s), &w); err != nil {
			return err
		}
		st.Kept += int(w.Kept)
		// A document found in an index: its line in the pairs file
		// counts as a pair; one in no component is a cluster.
		st.IndexMatches += m.IndexMatches
		st.Pairs += m.IndexMatches
		for k, v := range m.IndexSimilarity {
			st.Similarity[k] += v
		}
		st.Clusters += int(w.IndexAlone)
	}
	for g := range p.Tasks {
		var js joinStatsFile
		if err := j.getJSON(ctx, joinStats(g), &js); err != nil {
			return err
		}
		grouped += js.Documents - js.Old
		st.Clusters += js.Clusters
		st.ExactCopies += js.ExactCopies
		st.Pairs += js.Pairs
		for k, v := range js.Similarity {
			st.Similarity[k] += v
		}
		for k, v := range js.Distance {
			for len(st.Distance) <= k {
				st.Distance = append(st.Distance, 0)
			}
			st.Distance[k] += v
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
	// The cascade's Finder sketches the first occurrences of the whole
	// input: every document with a sketch but the copies.
	sketched -= int64(st.ExactCopies)
	if st.Params, err = dedup.StagedParams(p.Options, p.Params, sketched); err != nil {
		return err
	}
	if one := int64(st.Documents) - grouped; one > 0 {
		sizes[1] += int(one)
	}
	if st.RemovedBelowThreshold == nil && dedup.CountsBelow(p.Options) {
		st.RemovedBelowThreshold = new(int)
	}
	st.Removed = st.Documents - st.Kept
	for n, c := range sizes {
		st.LargestCluster = max(st.LargestCluster, n)
		st.ClusterSizes = append(st.ClusterSizes, dedup.SizeCount{Size: n, Count: c})
	}
	slices.SortFunc(st.ClusterSizes, func(a, b dedup.SizeCount) int { return a.Size - b.Size })
	if st.DuplicateIDs, st.DuplicateIDsFirst, err = j.duplicateIDs(ctx); err != nil {
		return err
	}
	if p.examples() {
		// The report's examples are dedup's Stats.Examples, which
		// dedup --report writes in --stats too.
		if st.Examples, err = j.finishReport(ctx); err != nil {
			return err
		}
	}
	// The counts stay in the work folder for the summary that the
	// command prints when the job ends (Job.Stats), and go to --stats.
	b, err := jsonIndent(st)
	if err != nil {
		return err
	}
	// Not in --stats, which is dedup's: for the command's warning of an
	// --id-field that records lack (Job.Stats).
	if err := j.putJSON(ctx, idsFromPositionName, idsFromPositionFile{N: st.IDsFromPosition, First: st.IDsFromPositionFirst}); err != nil {
		return err
	}
	if err := j.Work.PutBytes(ctx, StatsName, b); err != nil || p.Stats == "" {
		return err
	}
	dir, name := splitLoc(p.Stats)
	out, err := objstore.Open(ctx, dir)
	if err != nil {
		return err
	}
	defer out.Close()
	return out.PutBytes(ctx, name, b)
}
