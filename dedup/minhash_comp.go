package dedup

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"golang.org/x/sync/errgroup"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
)

// The component join: the minhash Finder on all cores, with the pairs,
// their order and the clusters of the streaming Finder (issue 25).
//
// The streaming Finder's decision for document i depends only on the
// documents that share a band key with i, transitively: a query sees only
// i's buckets, the union-find joins only along candidate pairs, an exact
// copy that is not inserted shares every bucket with its original. So the
// connected components of the candidate graph ("shares a band key") are
// independent: the Finder replayed on one component, its documents in input
// order, emits exactly the pairs the global Finder emits for them, in the
// same relative order. compFinder therefore
//
//  1. stores every document's record (its band keys and the low 16 bits
//     of its slots, encoded by the sketching workers: a scratch file of
//     fixed-size records, read back by offset) and shingle set (setFile)
//     in Add, on the collector's goroutine, which is all that stays
//     serial there: two copies into the buffers of the goroutines that
//     write the files behind it (asyncWriter);
//  2. at Flush reads the band keys back (in parallel), sorts each band's
//     (key, document) words (one band a worker) and joins the documents
//     of equal keys in a lock-free union-find (cuf): the components;
//  3. replays the streaming Finder on each component of two or more
//     documents, the largest first, on Options.Workers goroutines, each with
//     a Finder that is emptied and reused between components;
//  4. merges the components' pairs by the step that emitted them (the later
//     document: a streaming Finder emits pair (j, i) while adding i) and
//     hands them to emit in that order: the pairs file is the streaming
//     Finder's, byte for byte (its lines are made on the workers once
//     Flush is done: run.pairsLater).
//
// A truncated key (the document number takes the low bits of the sorted
// word) can only merge two components, never split one: the replay
// queries the real band keys inside a component, so the result is the
// same. A giant component (templated pages) is replayed on one goroutine.
//
// Leader clustering, Options.AllPairs and the direct join keep the
// streaming Finder (see useComponents).

// Scratch file of the component join's records.
const (
	sigsPrefix = "neardup-sigs-"
	sigsSuffix = ".bin"
)

// useComponents reports whether a run uses the component join: a method
// whose join can (componentJoiner: the minhash method's default, --verify
// and --estimate-only joins with connected components), more than one
// worker (or forceComponents, for tests), no index lookups (their pairs
// lines are written between the Finder's).
func (r *run) useComponents() bool {
	if r.caps.components == nil || len(r.in.AgainstIndexes) > 0 {
		return false
	}
	return r.cfg.workers() > 1 || forceComponents
}

// componentJoin: the component join replaces the streaming Finder of the
// default, --verify and --estimate-only joins with connected components.
func (m *minhashMethod) componentJoin() bool { return !m.leader && !m.allPairs && !m.direct }

// componentBytes: the signatures go to a scratch file; at its peak
// (Flush) the component join holds every document's band keys (8 bytes a
// band), the union-find and the grouping (20 bytes), beside the streaming
// Finder's per-document heap (heapBytesPerDoc); an index entry is the
// streaming Finder's.
func (m *minhashMethod) componentBytes() (perDoc, perEntry int64) {
	return int64(m.heapBytesPerDoc() + 8*m.params.Bands + 20), int64(m.mappedBytesPerEntry())
}

// forceComponents makes a run with one worker use the component join too
// (tests compare it with the streaming Finder).
var forceComponents = false

// compFinder is the component join's Finder (see above).
type compFinder struct {
	m       *minhashMethod
	k       int
	workers int
	sets    setFile // the shingle sets, when the join needs them
	sigFile *os.File
	sigW    *asyncWriter
	// sigsGone: the removal of sigFile, once dropped (dropSigs).
	sigsGone chan error
	setW     *asyncWriter // the shingle sets' writer
	pos      int64        // records written
	keys     []uint64     // scratch
	bands    int
	stride   int      // bytes a record: the band keys (8 bytes each), then the k slots' low 16 bits and keff (2 bytes each), padded to 8
	has      []uint64 // bit i: document i has a signature
	n        int      // documents added
	enc      []byte
	err      error
	// Timings of Flush's phases, for Stats (see phases), and their serial
	// parts (Stats.SerialParts): in components, and emitting the pairs.
	phases     []Stage
	serialComp time.Duration
	serialEmit time.Duration
	// ctx, when set, stops the replay early (an interrupted run).
	ctx context.Context
}

// newCompFinder returns the component join's Finder, with workers
// goroutines for the replay and its scratch files in dir.
func (m *minhashMethod) newCompFinder(workers int, dir string) *compFinder {
	k := m.spec.MinHash.NumPerm
	b := m.params.Bands
	f := &compFinder{m: m, k: k, bands: b, workers: max(workers, 1), stride: 8*b + (2*(k+1)+7)/8*8}
	m.bandKeys = true
	m.recordStride = f.stride
	f.sets.dir = dir
	f.sets.wrap = func(file *os.File) io.Writer {
		f.setW = newAsyncWriter(file)
		return f.setW
	}
	return f
}

func (f *compFinder) Add(i int, s DocSketch, emit func(Pair)) error {
	if f.err != nil {
		return f.err
	}
	if i > int(^uint32(0)>>1) {
		return fmt.Errorf("minhash: document %d: too many documents for one index", i)
	}
	if i != f.n {
		return fmt.Errorf("minhash: document %d added after %d", i, f.n-1)
	}
	f.n++
	if s == nil {
		return nil
	}
	sk, ok := s.(*minhashSketch)
	if !ok {
		return fmt.Errorf("minhash: sketch of type %T", s)
	}
	if sk.sig == nil {
		return nil
	}
	if len(sk.sig) != f.k {
		return fmt.Errorf("minhash: document %d: signature of %d slots, want %d", i, len(sk.sig), f.k)
	}
	if f.sigFile == nil {
		sf, err := tempfile.Create(f.sets.dir, sigsPrefix, sigsSuffix)
		if err != nil {
			f.err = fmt.Errorf("minhash: scratch file for signatures: %w", err)
			return f.err
		}
		f.sigFile, f.sigW = sf, newAsyncWriter(sf)
	}
	// Record i lies at i*stride: the documents without a signature
	// before it are holes (zeros).
	for w := i / 64; len(f.has) <= w; {
		f.has = append(f.has, 0)
	}
	f.has[i/64] |= 1 << (i % 64)
	if err := f.writeRecord(i, sk); err != nil {
		f.err = fmt.Errorf("minhash: writing signatures to %s: %w", f.sigFile.Name(), err)
		return f.err
	}
	if f.m.join.needSets() {
		// Stored: the block's memory goes back to the sketchers
		// (once written, when the set is written from it).
		if err := f.sets.putHeld(i, &sk.set); err != nil {
			return err
		}
	}
	return nil
}

func (f *compFinder) writeRecord(i int, sk *minhashSketch) error {
	for ; f.pos < int64(i); f.pos++ { // holes: documents without a signature
		f.enc = append(f.enc[:0], make([]byte, f.stride)...)
		if _, err := f.sigW.Write(f.enc); err != nil {
			return err
		}
	}
	f.pos++
	if len(sk.rec) == f.stride { // made by the sketching worker
		err := f.sigW.writeAdjacent(sk.rec)
		sk.rec = nil
		return err
	}
	keys := sk.keys
	if keys == nil { // a sketch from a checkpoint
		keys = f.m.params.AppendKeys(f.keys[:0], sk.sig)
		f.keys = keys
	}
	f.enc = appendSigRecord(f.enc[:0], keys, sk.sig, sk.keff, f.stride)
	_, err := f.sigW.Write(f.enc)
	return err
}

// appendSigRecord appends the component join's record of a signature to
// dst: its band keys, the low 16 bits of its slots and keff, padded to
// stride bytes.
func appendSigRecord(dst []byte, keys []uint64, sig minhash.Signature, keff, stride int) []byte {
	start := len(dst)
	for _, k := range keys {
		dst = binary.LittleEndian.AppendUint64(dst, k)
	}
	for _, v := range sig {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(v))
	}
	dst = binary.LittleEndian.AppendUint16(dst, uint16(keff))
	for len(dst)-start < stride {
		dst = append(dst, 0)
	}
	return dst
}

func (f *compFinder) hasSig(i int) bool { return i/64 < len(f.has) && f.has[i/64]&(1<<(i%64)) != 0 }

// readRecord reads document i's record into sk: its band keys, the low
// 16 bits of its slots (in sk.sig) and keff.
func (f *compFinder) readRecord(i int, sk *minhashSketch, buf []byte) error {
	if _, err := f.sigFile.ReadAt(buf[:f.stride], int64(i)*int64(f.stride)); err != nil {
		return fmt.Errorf("minhash: reading the signature of document %d from %s: %w", i, f.sigFile.Name(), err)
	}
	f.decode(buf, sk)
	return nil
}

// decode decodes a record into sk.
func (f *compFinder) decode(b []byte, sk *minhashSketch) {
	sk.keys = slices.Grow(sk.keys[:0], f.bands)[:f.bands]
	for x := range sk.keys {
		sk.keys[x] = binary.LittleEndian.Uint64(b[8*x:])
	}
	b = b[8*f.bands:]
	sk.sig = slices.Grow(sk.sig[:0], f.k)[:f.k]
	for x := range sk.sig {
		sk.sig[x] = uint32(binary.LittleEndian.Uint16(b[2*x:]))
	}
	sk.keff = int(binary.LittleEndian.Uint16(b[2*f.k:]))
}

// Close removes the scratch files.
func (f *compFinder) Close() error {
	if f.sigW != nil {
		f.sigW.Close()
	}
	if f.setW != nil {
		f.setW.Close()
	}
	err := f.sets.Close()
	f.dropSigs()
	if f.sigsGone != nil {
		if rerr := <-f.sigsGone; rerr != nil && err == nil {
			err = rerr
		}
		f.sigsGone = nil
	}
	return err
}

// dropSigs closes and removes the signatures' scratch file on a goroutine
// of its own (Close waits for it): the replay is its last reader, and
// unlinking its 350 MB at 1M documents took 0.1 s on the one goroutine at
// the end of the run.
func (f *compFinder) dropSigs() {
	if f.sigFile == nil {
		return
	}
	f.sigsGone = removeBehind(f.sigFile)
	f.sigFile = nil
}

// removeBehind closes and removes file on a goroutine, and returns where
// the removal's error (nil for a file already gone) comes.
func removeBehind(file *os.File) chan error {
	done := make(chan error, 1)
	go func() {
		file.Close()
		err := os.Remove(file.Name())
		if errors.Is(err, os.ErrNotExist) {
			err = nil
		}
		done <- err
	}()
	return done
}

// component is a run of compJob.members: its documents in input order.
type component struct{ start, n int32 }

// Flush finds the components, replays the streaming Finder on each and
// emits the pairs in the streaming Finder's order.
func (f *compFinder) Flush(emit func(Pair)) error {
	if f.err != nil {
		return f.err
	}
	if f.sigFile == nil {
		return nil // no document has a signature
	}
	if err := f.sigW.Close(); err != nil {
		return fmt.Errorf("minhash: writing signatures to %s: %w", f.sigFile.Name(), err)
	}
	if f.m.join.needSets() && f.sets.f != nil {
		if len(f.sets.pending) > 0 {
			if err := f.sets.flush(); err != nil {
				return err
			}
		}
		if err := f.setW.Close(); err != nil {
			return fmt.Errorf("minhash: writing shingle sets to %s: %w", f.sets.f.Name(), err)
		}
	}
	f.sets.shareDist() // before the replayers copy f.sets
	start := newMark()
	members, comps, err := f.components()
	if err != nil {
		return err
	}
	f.phase("components", start, int64(f.n))
	if len(comps) > 0 {
		// The largest component's size: the replay's serial part.
		f.phases = append(f.phases, Stage{Name: "largest component", Documents: int64(comps[0].n)})
	}
	start = newMark()
	pairs, err := f.replay(members, comps)
	if err != nil {
		return err
	}
	f.phase("replay", start, int64(len(members)))
	f.dropSigs()
	start = newMark()
	span := startSerial()
	// Each step's pairs come from one component, in emission order:
	// a stable sort by the step (B) restores the streaming order (a
	// counting sort: the steps are the documents).
	at := make([]int32, f.n+1)
	for _, p := range pairs {
		at[p.B+1]++
	}
	for i := 1; i <= f.n; i++ {
		at[i] += at[i-1]
	}
	sorted := make([]Pair, len(pairs))
	for _, p := range pairs {
		sorted[at[p.B]] = p
		at[p.B]++
	}
	for _, p := range sorted {
		emit(p)
	}
	f.serialEmit = span.stop()
	f.phase("emit pairs", start, int64(len(pairs)))
	return nil
}

// phase records one phase of Flush.
func (f *compFinder) phase(name string, since mark, docs int64) {
	st := Stage{Name: name, Seconds: time.Since(since.wall).Seconds(), CPUSeconds: cpuSeconds() - since.cpu, Documents: docs}
	f.phases = append(f.phases, st)
}

// components returns the components of two or more documents, largest
// first, as runs of members.
func (f *compFinder) components() ([]int32, []component, error) {
	n := f.n
	docBits := bits.Len(uint(n))
	// Band keys of every document, computed in parallel over ranges of
	// documents: keys[band] holds key<<docBits | document.
	count := 0
	for _, w := range f.has {
		count += bits.OnesCount64(w)
	}
	keys := make([][]uint64, f.bands)
	for b := range keys {
		keys[b] = make([]uint64, count)
	}
	// The slot of document i in keys[b]: its rank among the documents
	// with a signature.
	rank := make([]int32, len(f.has)+1)
	for w, x := range f.has {
		rank[w+1] = rank[w] + int32(bits.OnesCount64(x))
	}
	var g errgroup.Group
	chunk := (n + f.workers - 1) / f.workers
	chunk = max(chunk, 1024)
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		g.Go(func() error {
			const block = 1024 // records a read
			buf := make([]byte, block*f.stride)
			for at := lo; at < hi; at += block {
				m := min(block, hi-at)
				if _, err := f.sigFile.ReadAt(buf[:m*f.stride], int64(at)*int64(f.stride)); err != nil && !(errors.Is(err, io.EOF) && !f.hasSig(at+m-1)) {
					return fmt.Errorf("minhash: reading signatures from %s: %w", f.sigFile.Name(), err)
				}
				for i := at; i < at+m; i++ {
					if !f.hasSig(i) {
						continue
					}
					rec := buf[(i-at)*f.stride:]
					slot := rank[i/64] + int32(bits.OnesCount64(f.has[i/64]&(1<<(i%64)-1)))
					for b := range f.bands {
						keys[b][slot] = binary.LittleEndian.Uint64(rec[8*b:])<<docBits | uint64(i)
					}
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	// One band a worker: sort, then join the runs of equal keys in a
	// union-find shared by the workers (see cuf).
	uf := newCUF(n)
	sem := make(chan struct{}, f.workers)
	var wg sync.WaitGroup
	mask := uint64(1)<<docBits - 1
	for b := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			ks := keys[b]
			slices.Sort(ks)
			for x := 1; x < len(ks); x++ {
				if ks[x]>>docBits == ks[x-1]>>docBits {
					uf.union(int32(ks[x-1]&mask), int32(ks[x]&mask))
				}
			}
			keys[b] = nil
		}()
	}
	wg.Wait()
	span := startSerial()
	defer func() { f.serialComp = span.stop() }()
	// Members grouped by root (the smallest member), in input order
	// within a component.
	size := make([]int32, n)
	root := uf.parent // flattened in place
	for i := range n {
		r := uf.find(int32(i))
		root[i] = r
		size[r]++
	}
	var comps []component
	at := make([]int32, n) // root -> next free slot in members
	total := int32(0)
	for i := range n {
		if int(root[i]) == i && size[i] > 1 {
			comps = append(comps, component{start: total, n: size[i]})
			at[i] = total
			total += size[i]
		}
	}
	members := make([]int32, total)
	for i := range n {
		r := root[i]
		if size[r] > 1 {
			members[at[r]] = int32(i)
			at[r]++
		}
	}
	slices.SortStableFunc(comps, func(a, b component) int { return cmp.Compare(b.n, a.n) })
	return members, comps, nil
}

// replay runs the streaming Finder on every component and returns the
// pairs, each component's in emission order.
func (f *compFinder) replay(members []int32, comps []component) ([]Pair, error) {
	var next atomic.Int64
	outs := make([][]Pair, f.workers)
	g := errgroup.Group{}
	for w := range f.workers {
		g.Go(func() error {
			rf, err := f.newReplayer()
			if err != nil {
				return err
			}
			defer rf.closeReplay()
			buf := make([]byte, f.stride)
			sk := &minhashSketch{spec: &f.m.spec}
			var out []Pair
			var glob []int32
			emit := func(p Pair) {
				p.A, p.B = int(glob[p.A]), int(glob[p.B])
				out = append(out, p)
			}
			for {
				c := next.Add(1) - 1
				if c >= int64(len(comps)) {
					break
				}
				glob = members[comps[c].start : comps[c].start+comps[c].n]
				rf.startComponent(glob)
				for li, gi := range glob {
					if li%1024 == 0 && f.ctx != nil && f.ctx.Err() != nil {
						return f.ctx.Err()
					}
					if err := f.readRecord(int(gi), sk, buf); err != nil {
						return err
					}
					rf.uf.Grow(li + 1)
					if err := rf.add(li, sk, emit); err != nil {
						return fmt.Errorf("minhash: document %d: %w", gi, err)
					}
				}
				if err := rf.endComponent(); err != nil {
					return err
				}
			}
			outs[w] = out
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var total int
	for _, o := range outs {
		total += len(o)
	}
	pairs := make([]Pair, 0, total)
	for _, o := range outs {
		pairs = append(pairs, o...)
	}
	return pairs, nil
}

// newReplayer returns a streaming minhash Finder that reads the shingle
// sets of f's file (read only) and whose index is reused between
// components.
func (f *compFinder) newReplayer() (*minhashFinder, error) {
	rf := &minhashFinder{m: f.m, k: f.k, uf: cluster.NewUnionFind(0), curID: -1, tabID: -1}
	rf.sets = f.sets // a copy: its own read buffers, the file shared
	rf.sets.readOnly = true
	rf.sets.win = nil
	rf.sigs = newSigStore(f.k)
	ix, err := lsh.New(f.m.params, f.k, lsh.Options{OffHeap: true})
	if err != nil {
		return nil, err
	}
	rf.ix, rf.docOf, rf.monotone = ix, arena.NewArray[uint32](16), true
	return rf, nil
}

// startComponent prepares a replayer for a component whose documents (in
// input order) are glob.
func (rf *minhashFinder) startComponent(glob []int32) {
	rf.glob = glob
	rf.uf = cluster.NewUnionFind(0)
	rf.giant.reset()
	rf.monotone = true
	rf.tabID = -1
}

// replayReuseMax is the largest component whose replayer empties its
// index entry by entry (newest first, so each is the head of its buckets:
// constant time); after a larger one the index is made anew.
var replayReuseMax = 4096 // a variable for tests

// onComponentEnd, when set (by tests), is given the number of entries of
// each component's index as it is emptied.
var onComponentEnd func(entries int)

// endComponent empties the replayer's index for the next component.
func (rf *minhashFinder) endComponent() error {
	if onComponentEnd != nil {
		onComponentEnd(rf.ix.Len())
	}
	if len(rf.glob) > replayReuseMax {
		rf.ix.Close()
		ix, err := lsh.New(rf.m.params, rf.k, lsh.Options{OffHeap: true})
		if err != nil {
			return err
		}
		rf.ix = ix
	} else {
		b := rf.m.params.Bands
		for e := rf.ix.Len() - 1; e >= 0; e-- {
			if err := rf.ix.RemoveNewest(uint32(e), rf.insKeys[e*b:(e+1)*b]); err != nil {
				return err
			}
		}
	}
	rf.insKeys = rf.insKeys[:0]
	rf.glob = nil
	rf.giant.reset()
	return nil
}

// closeReplay releases a replayer's memory (not the shared files).
func (rf *minhashFinder) closeReplay() {
	rf.release()
}

// CountBelow: see minhashFinder.CountBelow.
func (f *compFinder) CountBelow(keep []int32, from int) (int, bool) {
	if !f.m.join.needSets() {
		return 0, false
	}
	n, ok := countBelow(f.m, &f.sets, keep, from, f.workers)
	f.sets.Close()
	return n, ok
}

// asyncWriter writes to a file behind its caller: Write copies into a
// buffer, and a full buffer goes to a goroutine that writes it while the
// caller fills the next (the collector's scratch files: the write system
// calls were most of its time). writeHeld writes from the caller's memory
// without a copy. Errors are sticky and returned by a later Write or by
// Close, which waits for the writes. Not safe for concurrent use.
type asyncWriter struct {
	buf  []byte
	todo chan asyncItem
	free chan []byte
	done chan struct{}
	err  atomic.Pointer[error]
	shut bool
	// run is the pending range of writeHeld (consecutive sets in the
	// block runBlk, runN holds on it) or writeAdjacent (runBlk nil).
	run    []byte
	runBlk *hashBlock
	runN   int32
}

// An asyncItem is one write of the writing goroutine: one of the
// buffers (own: it goes back to free), or a range of a hashBlock that
// holds n documents' hashes (released n times once written).
type asyncItem struct {
	p   []byte
	own bool
	blk *hashBlock
	n   int32
}

// asyncBuffers of asyncBufferLen bytes circulate between the caller and
// the writing goroutine; up to asyncQueue writes wait for it.
const (
	asyncBuffers   = 3
	asyncBufferLen = 1 << 20
	asyncQueue     = 16
)

func newAsyncWriter(w io.Writer) *asyncWriter {
	a := &asyncWriter{todo: make(chan asyncItem, asyncQueue), free: make(chan []byte, asyncBuffers), done: make(chan struct{})}
	for range asyncBuffers - 1 {
		a.free <- make([]byte, 0, asyncBufferLen)
	}
	a.buf = make([]byte, 0, asyncBufferLen)
	go func() {
		defer close(a.done)
		for it := range a.todo {
			if a.err.Load() == nil {
				if _, err := w.Write(it.p); err != nil {
					a.err.Store(&err)
				}
			}
			if it.blk != nil {
				it.blk.releaseN(it.n)
			}
			if it.own {
				a.free <- it.p[:0]
			}
		}
	}()
	return a
}

func (a *asyncWriter) Write(p []byte) (int, error) {
	if e := a.err.Load(); e != nil {
		return 0, *e
	}
	a.sendRun()
	n := len(p)
	for len(p) > 0 {
		if len(a.buf) == cap(a.buf) {
			a.sendBuf()
		}
		c := min(len(p), cap(a.buf)-len(a.buf))
		a.buf = append(a.buf, p[:c]...)
		p = p[c:]
	}
	return n, nil
}

// sendBuf passes the buffer to the writing goroutine and takes a free one.
func (a *asyncWriter) sendBuf() {
	a.todo <- asyncItem{p: a.buf, own: true}
	a.buf = <-a.free
}

// sendRun passes writeHeld's pending range, if any, to the writing
// goroutine.
func (a *asyncWriter) sendRun() {
	if a.runN > 0 {
		a.todo <- asyncItem{p: a.run, blk: a.runBlk, n: a.runN}
		a.run, a.runBlk, a.runN = nil, nil, 0
	}
}

// writeHeld writes p, which lies in blk and holds one of its holds,
// without copying it: the writing goroutine writes it from blk and then
// releases that hold. Documents that follow each other in a block make
// one write (the sketcher writes a batch's sets one after the other).
// The caller must not change p; blk is released even on error.
func (a *asyncWriter) writeHeld(p []byte, blk *hashBlock) error {
	if e := a.err.Load(); e != nil {
		blk.release()
		return *e
	}
	if a.runN > 0 && a.runBlk == blk && len(p) > 0 &&
		unsafe.Add(unsafe.Pointer(unsafe.SliceData(a.run)), len(a.run)) == unsafe.Pointer(unsafe.SliceData(p)) {
		// Within blk's array: the range grows over p.
		a.run = unsafe.Slice(unsafe.SliceData(a.run), len(a.run)+len(p))
		a.runN++
		return nil
	}
	a.startRun(p, blk)
	return nil
}

// writeAdjacent is writeHeld for memory that the garbage collector keeps
// (the writing goroutine holds p until it is written): p joins the
// pending range when it follows it in the range's capacity, that is in
// the same array.
func (a *asyncWriter) writeAdjacent(p []byte) error {
	if e := a.err.Load(); e != nil {
		return *e
	}
	if n := len(a.run); a.runN > 0 && a.runBlk == nil && len(p) > 0 && cap(a.run)-n >= len(p) && &a.run[:n+1][n] == &p[0] {
		a.run = a.run[:n+len(p)]
		a.runN++
		return nil
	}
	a.startRun(p, nil)
	return nil
}

// startRun sends the pending range and what is buffered, in that order,
// and begins a new range with p (held by blk, or nil).
func (a *asyncWriter) startRun(p []byte, blk *hashBlock) {
	a.sendRun()
	if len(a.buf) > 0 { // written first
		a.sendBuf()
	}
	a.run, a.runBlk, a.runN = p, blk, 1
}

// hand passes p itself to the writing goroutine, after what is buffered,
// and returns an empty buffer for the caller's next use: the caller must
// not touch p again. It is Write without the copy, for a caller that fills
// buffers of its own.
func (a *asyncWriter) hand(p []byte) ([]byte, error) {
	if e := a.err.Load(); e != nil {
		return p[:0], *e
	}
	if len(p) == 0 {
		return p, nil
	}
	a.sendRun()
	if len(a.buf) > 0 {
		a.sendBuf()
	}
	a.todo <- asyncItem{p: p, own: true}
	return <-a.free, nil
}

// Close writes what is buffered and waits for the writes; calling it again
// returns the same error.
func (a *asyncWriter) Close() error {
	if !a.shut {
		a.shut = true
		a.sendRun()
		if len(a.buf) > 0 {
			a.todo <- asyncItem{p: a.buf, own: true}
			a.buf = nil
		}
		close(a.todo)
		<-a.done
	}
	if e := a.err.Load(); e != nil {
		return *e
	}
	return nil
}

// cuf is a union-find that goroutines share without a lock: a root is
// linked under a smaller root with a compare-and-swap, and find halves
// paths with one. Each set's root is its smallest member whatever the
// order of the unions, so the result does not depend on the scheduling.
type cuf struct{ parent []int32 }

func newCUF(n int) *cuf {
	u := &cuf{parent: make([]int32, n)}
	for i := range u.parent {
		u.parent[i] = int32(i)
	}
	return u
}

func (u *cuf) find(x int32) int32 {
	for {
		p := atomic.LoadInt32(&u.parent[x])
		if p == x {
			return x
		}
		gp := atomic.LoadInt32(&u.parent[p])
		if gp != p {
			atomic.CompareAndSwapInt32(&u.parent[x], p, gp)
		}
		x = gp
	}
}

// union joins the sets of a and b, and reports whether they were two.
func (u *cuf) union(a, b int32) bool {
	for {
		ra, rb := u.find(a), u.find(b)
		if ra == rb {
			return false
		}
		if ra > rb {
			ra, rb = rb, ra
		}
		if atomic.CompareAndSwapInt32(&u.parent[rb], rb, ra) {
			return true
		}
	}
}
