//go:build cgo

package main

/*
#include <stdint.h>
#include <stdlib.h>
*/
import "C"

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/cli"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/store"
)

func main() {}

// ---- handles and errors ----

var (
	handleMu   sync.Mutex
	handles    = map[int64]any{}
	nextHandle int64
)

func putHandle(v any) int64 {
	handleMu.Lock()
	defer handleMu.Unlock()
	nextHandle++
	handles[nextHandle] = v
	return nextHandle
}

func getHandle[T any](h int64) (T, error) {
	handleMu.Lock()
	defer handleMu.Unlock()
	v, ok := handles[h].(T)
	if !ok {
		return v, fmt.Errorf("neardup: invalid or closed handle %d", h)
	}
	return v, nil
}

func dropHandle(h int64) any {
	handleMu.Lock()
	defer handleMu.Unlock()
	v := handles[h]
	delete(handles, h)
	return v
}

// setErr stores err's message in *errp (when errp is not NULL) for the
// caller to free with nd_free.
func setErr(errp **C.char, err error) {
	if errp != nil && err != nil {
		*errp = C.CString(err.Error())
	}
}

// recovered turns a panic into an error; deferred by every export.
func recovered(errp **C.char, rc *C.int64_t) {
	if r := recover(); r != nil {
		setErr(errp, fmt.Errorf("neardup: internal error: %v", r))
		*rc = -1
	}
}

// result is rc 0 for nil, or -1 with the error set.
func result(errp **C.char, err error) C.int64_t {
	if err != nil {
		setErr(errp, err)
		return -1
	}
	return 0
}

//export nd_free
func nd_free(p unsafe.Pointer) { C.free(p) }

// bytesAt is n bytes at p, not copied: valid during the call only.
func bytesAt(p *C.char, n int64) []byte {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
}

func int64sAt(p *C.int64_t, n int64) []int64 {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*int64)(unsafe.Pointer(p)), n)
}

func uint64sAt(p *C.uint64_t, n int64) []uint64 {
	if n == 0 || p == nil {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(p)), n)
}

// splitLens calls fn with each of the strings of buf, whose lengths are
// lens, in order; a length that does not fit is an error.
func splitLens(buf []byte, lens []int64, fn func(i int, s []byte)) error {
	off := int64(0)
	for i, n := range lens {
		if n < 0 || off+n > int64(len(buf)) {
			return fmt.Errorf("neardup: item %d: length %d past the end of a %d-byte buffer", i, n, len(buf))
		}
		fn(i, buf[off:off+n])
		off += n
	}
	return nil
}

// ---- dedup ----

// dedupRun is a dedup.Run in progress, reading JSONL from a pipe that
// nd_dedup_feed writes.
type dedupRun struct {
	cancel  context.CancelFunc
	pr      *io.PipeReader
	pw      *io.PipeWriter
	bw      *bufio.Writer
	done    chan struct{}
	tmpDir  string
	pairs   string
	fed     int64
	ids     map[string]int64 // first position of each id given; nil for positional ids
	line    []byte
	stats   *dedup.Stats
	err     error
	kept    []byte
	cluster []int64
}

// nd_dedup_start starts a run with flags (a JSON array of command-line
// flags of `neardup dedup`, without INPUT) and returns its handle, or -1
// with *err set. With pairs non-zero the run's pairs are kept for
// nd_dedup_pairs.
//
//export nd_dedup_start
func nd_dedup_start(flagsJSON *C.char, pairs C.int, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	var args []string
	if err := json.Unmarshal([]byte(C.GoString(flagsJSON)), &args); err != nil {
		return result(errp, fmt.Errorf("neardup: flags: %w", err))
	}
	cfg, in, err := cli.DedupConfig(args)
	if err != nil {
		return result(errp, err)
	}
	tmp, err := os.MkdirTemp("", "neardup-py-")
	if err != nil {
		return result(errp, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &dedupRun{cancel: cancel, pr: pr, pw: pw, bw: bufio.NewWriterSize(pw, 1<<20), done: make(chan struct{}), tmpDir: tmp}
	out := dedup.Outputs{TmpDir: tmp}
	if pairs != 0 {
		r.pairs = filepath.Join(tmp, "pairs.jsonl")
		out.Pairs = r.pairs
	}
	out.OnCluster = r.onCluster
	in.Files, in.Stdin = []string{"-"}, pr
	in.OnPlan = func(p dedup.MemoryPlan) { debug.SetMemoryLimit(p.GCLimit()) }
	prevLimit := debug.SetMemoryLimit(-1)
	go func() {
		defer close(r.done)
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("neardup: internal error: %v", p)
			}
			debug.SetMemoryLimit(prevLimit)
			// A writer still feeding learns that the run is over.
			pr.CloseWithError(errRunOver)
		}()
		r.stats, r.err = dedup.Run(ctx, cfg, in, out)
		r.err = cli.DedupError(r.err)
	}()
	return C.int64_t(putHandle(r))
}

var errRunOver = errors.New("neardup: the run has ended")

func (r *dedupRun) onCluster(id, cluster string, kept bool) {
	k := byte(0)
	if kept {
		k = 1
	}
	r.kept = append(r.kept, k)
	at := int64(-1)
	if r.ids != nil {
		if p, ok := r.ids[cluster]; ok {
			at = p
		}
	} else if p, err := strconv.ParseInt(cluster, 10, 64); err == nil {
		at = p
	}
	r.cluster = append(r.cluster, at)
}

// nd_dedup_feed sends n documents: their texts, concatenated in texts
// with their byte lengths in textLens, and their ids likewise, or, with
// ids NULL, the ids "0", "1", ... by position in the whole input (then
// every call must pass ids NULL). It returns 0, or -1 with *err set; -2
// when the run has already ended (nd_dedup_wait gives its error).
//
//export nd_dedup_feed
func nd_dedup_feed(h C.int64_t, texts *C.char, textLens *C.int64_t, ids *C.char, idLens *C.int64_t, n C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	r, err := getHandle[*dedupRun](int64(h))
	if err != nil {
		return result(errp, err)
	}
	tl := int64sAt(textLens, int64(n))
	total := int64(0)
	for _, l := range tl {
		total += l
	}
	tb := bytesAt(texts, total)
	var idStrs []string
	if ids != nil {
		il := int64sAt(idLens, int64(n))
		itotal := int64(0)
		for _, l := range il {
			itotal += l
		}
		if r.ids == nil {
			if r.fed > 0 {
				return result(errp, errors.New("neardup: ids given after documents without ids"))
			}
			r.ids = map[string]int64{}
		}
		idStrs = make([]string, n)
		if err := splitLens(bytesAt(ids, itotal), il, func(i int, s []byte) { idStrs[i] = string(s) }); err != nil {
			return result(errp, err)
		}
	} else if r.ids != nil {
		return result(errp, errors.New("neardup: documents without ids after documents with ids"))
	}
	var werr error
	err = splitLens(tb, tl, func(i int, s []byte) {
		if werr != nil {
			return
		}
		pos := r.fed + int64(i)
		r.line = append(r.line[:0], `{"id":`...)
		if idStrs != nil {
			id := idStrs[i]
			if _, ok := r.ids[id]; !ok {
				r.ids[id] = pos
			}
			r.line = corpus.AppendJSONString(r.line, id)
		} else {
			r.line = append(r.line, '"')
			r.line = strconv.AppendInt(r.line, pos, 10)
			r.line = append(r.line, '"')
		}
		r.line = append(r.line, `,"text":`...)
		r.line = corpus.AppendJSONString(r.line, string(s))
		r.line = append(r.line, "}\n"...)
		_, werr = r.bw.Write(r.line)
	})
	if err != nil {
		return result(errp, err)
	}
	if werr == nil {
		werr = r.bw.Flush()
	}
	if werr != nil {
		if errors.Is(werr, errRunOver) {
			return -2
		}
		return result(errp, werr)
	}
	r.fed += int64(n)
	return 0
}

// nd_dedup_close_input says that every document has been sent.
//
//export nd_dedup_close_input
func nd_dedup_close_input(h C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	r, err := getHandle[*dedupRun](int64(h))
	if err != nil {
		return result(errp, err)
	}
	if err := r.bw.Flush(); err != nil && !errors.Is(err, errRunOver) {
		return result(errp, err)
	}
	r.pw.Close()
	return 0
}

// nd_dedup_wait waits up to timeoutMs milliseconds for the run to end
// and returns 1 when it has ended (successfully: nd_dedup_count then
// gives the number of documents; or not: *err is set), 0 when it is still
// running, -1 with *err set when it failed.
//
//export nd_dedup_wait
func nd_dedup_wait(h C.int64_t, timeoutMs C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	r, err := getHandle[*dedupRun](int64(h))
	if err != nil {
		return result(errp, err)
	}
	t := time.NewTimer(time.Duration(timeoutMs) * time.Millisecond)
	defer t.Stop()
	select {
	case <-r.done:
	case <-t.C:
		return 0
	}
	if r.err != nil {
		return result(errp, r.err)
	}
	if int64(len(r.kept)) != r.fed {
		return result(errp, fmt.Errorf("neardup: %d documents sent but %d in the clusters", r.fed, len(r.kept)))
	}
	return 1
}

// nd_dedup_result copies the outcome of an ended run into the caller's
// arrays of n entries: kept[i] is 1 for a kept document, cluster[i] the
// position of the document whose id names i's cluster (-1 if none
// does), and returns a malloc'd JSON string of the run's Stats.
//
//export nd_dedup_result
func nd_dedup_result(h C.int64_t, kept *C.uint8_t, cluster *C.int64_t, n C.int64_t, errp **C.char) (s *C.char) {
	var rc C.int64_t
	defer recovered(errp, &rc)
	r, err := getHandle[*dedupRun](int64(h))
	if err == nil && int64(n) != int64(len(r.kept)) {
		err = fmt.Errorf("neardup: result of %d documents asked, the run has %d", n, len(r.kept))
	}
	if err != nil {
		setErr(errp, err)
		return nil
	}
	if n > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(kept)), n), r.kept)
		copy(unsafe.Slice((*int64)(unsafe.Pointer(cluster)), n), r.cluster)
	}
	b, err := json.Marshal(r.stats)
	if err != nil {
		setErr(errp, err)
		return nil
	}
	return C.CString(string(b))
}

// nd_dedup_pairs returns the run's pairs file (JSONL) as a malloc'd
// buffer of *size bytes (NULL when empty).
//
//export nd_dedup_pairs
func nd_dedup_pairs(h C.int64_t, size *C.int64_t, errp **C.char) (p unsafe.Pointer) {
	var rc C.int64_t
	defer recovered(errp, &rc)
	*size = 0
	r, err := getHandle[*dedupRun](int64(h))
	if err != nil {
		setErr(errp, err)
		return nil
	}
	if r.pairs == "" {
		return nil
	}
	b, err := os.ReadFile(r.pairs)
	if err != nil {
		setErr(errp, err)
		return nil
	}
	if len(b) == 0 {
		return nil
	}
	*size = C.int64_t(len(b))
	return C.CBytes(b)
}

// nd_dedup_free stops the run if it is still going (Ctrl-C), waits for
// it, removes its temporary files and frees the handle.
//
//export nd_dedup_free
func nd_dedup_free(h C.int64_t) {
	defer func() { recover() }()
	r, ok := dropHandle(int64(h)).(*dedupRun)
	if !ok {
		return
	}
	r.cancel()
	r.pw.CloseWithError(context.Canceled)
	<-r.done
	os.RemoveAll(r.tmpDir)
}

// ---- MinHash ----

type hasherKey struct {
	k    int
	seed uint64
}

var hashers sync.Map // hasherKey -> *minhash.Hasher

func hasher(k int, seed uint64) (*minhash.Hasher, error) {
	key := hasherKey{k, seed}
	if h, ok := hashers.Load(key); ok {
		return h.(*minhash.Hasher), nil
	}
	h, err := minhash.New(minhash.Options{NumPerm: k, Family: minhash.MultiplyShift, Seed: seed})
	if err != nil {
		return nil, err
	}
	hashers.Store(key, h)
	return h, nil
}

type scratch struct {
	hashes []uint64
	sig    minhash.Signature
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// hashChunk bounds the hashes signed at once.
const hashChunk = 1 << 14

// minInto lowers sig (uint64 slots, datasketch's layout) to the
// signature of hashes.
func minInto(h *minhash.Hasher, sc *scratch, sig []uint64, hashes []uint64) {
	for len(hashes) > 0 {
		n := min(len(hashes), hashChunk)
		sc.sig = h.Sign(sc.sig, hashes[:n])
		for i, v := range sc.sig {
			sig[i] = min(sig[i], uint64(v))
		}
		hashes = hashes[n:]
	}
}

// nd_minhash_update lowers the k slots of sig to the MinHash of the n
// byte strings in buf (lengths in lens), hashed with xxh3; with buf
// NULL, lens holds the n hashes themselves (a user's hash function).
//
//export nd_minhash_update
func nd_minhash_update(k C.int64_t, seed C.uint64_t, sig *C.uint64_t, buf *C.char, lens *C.int64_t, n C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	h, err := hasher(int(k), uint64(seed))
	if err != nil {
		return result(errp, err)
	}
	s := uint64sAt(sig, int64(k))
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if buf == nil {
		minInto(h, sc, s, uint64sAt((*C.uint64_t)(unsafe.Pointer(lens)), int64(n)))
		return 0
	}
	l := int64sAt(lens, int64(n))
	total := int64(0)
	for _, x := range l {
		total += x
	}
	sc.hashes = sc.hashes[:0]
	err = splitLens(bytesAt(buf, total), l, func(_ int, b []byte) {
		sc.hashes = append(sc.hashes, xxh3.Hash(b))
		if len(sc.hashes) == hashChunk {
			minInto(h, sc, s, sc.hashes)
			sc.hashes = sc.hashes[:0]
		}
	})
	minInto(h, sc, s, sc.hashes)
	return result(errp, err)
}

// nd_minhash_update_list is nd_minhash_update over a CPython list of
// bytes objects read in place, with no copy and no per-item Python work:
// list is the address of the list (id(list)), bytesType that of the
// bytes type, and the offsets, which the caller has checked on this
// interpreter, are those of a variable-size object's length (ob_size),
// of a list's item array (ob_item) and of a bytes object's data
// (ob_sval). The caller holds the GIL (ctypes.PyDLL) and the list must
// not change during the call. It returns 0, -3 (nothing done) when an
// item is not exactly bytes, or -1 with *err set.
//
//export nd_minhash_update_list
func nd_minhash_update_list(k C.int64_t, seed C.uint64_t, sig *C.uint64_t, list, bytesType unsafe.Pointer, offSize, offItems, offData C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	h, err := hasher(int(k), uint64(seed))
	if err != nil {
		return result(errp, err)
	}
	// The objects are Python's memory, outside the Go heap.
	ptrAt := func(p unsafe.Pointer, off C.int64_t) unsafe.Pointer { return *(*unsafe.Pointer)(unsafe.Add(p, off)) }
	sizeAt := func(p unsafe.Pointer) int { return int(*(*int64)(unsafe.Add(p, offSize))) }
	n := sizeAt(list)
	if n == 0 {
		return 0
	}
	items := unsafe.Slice((*unsafe.Pointer)(ptrAt(list, offItems)), n)
	const offType = 8 // ob_type follows ob_refcnt in every PyObject
	for _, it := range items {
		if ptrAt(it, offType) != bytesType {
			return -3
		}
	}
	s := uint64sAt(sig, int64(k))
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	sc.hashes = sc.hashes[:0]
	for _, it := range items {
		sc.hashes = append(sc.hashes, xxh3.Hash(unsafe.Slice((*byte)(unsafe.Add(it, offData)), sizeAt(it))))
		if len(sc.hashes) == hashChunk {
			minInto(h, sc, s, sc.hashes)
			sc.hashes = sc.hashes[:0]
		}
	}
	minInto(h, sc, s, sc.hashes)
	return 0
}

// nd_minhash_bulk signs nsets sets at once: set i is counts[i] byte
// strings of buf (lengths in lens, sets one after another); sigs holds
// nsets*k slots, each set's lowered from what it holds.
//
//export nd_minhash_bulk
func nd_minhash_bulk(k C.int64_t, seed C.uint64_t, sigs *C.uint64_t, buf *C.char, lens *C.int64_t, counts *C.int64_t, nsets C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	h, err := hasher(int(k), uint64(seed))
	if err != nil {
		return result(errp, err)
	}
	cs := int64sAt(counts, int64(nsets))
	nitems := int64(0)
	for _, c := range cs {
		if c < 0 {
			return result(errp, errors.New("neardup: negative count"))
		}
		nitems += c
	}
	l := int64sAt(lens, nitems)
	total := int64(0)
	for _, x := range l {
		total += x
	}
	b := bytesAt(buf, total)
	all := uint64sAt(sigs, int64(nsets)*int64(k))
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	off, item := int64(0), int64(0)
	for i, c := range cs {
		sc.hashes = sc.hashes[:0]
		for _, n := range l[item : item+c] {
			if n < 0 || off+n > int64(len(b)) {
				return result(errp, fmt.Errorf("neardup: set %d: a length past the end of the buffer", i))
			}
			sc.hashes = append(sc.hashes, xxh3.Hash(b[off:off+n]))
			off += n
		}
		item += c
		minInto(h, sc, all[int64(i)*int64(k):int64(i+1)*int64(k)], sc.hashes)
	}
	return 0
}

// ---- LSH ----

// lshIndex is a MinHashLSH's index. Its calls come without the GIL (the
// library is loaded with ctypes.CDLL), so Python threads may call on one
// index at once: mu serialises them, as neither lsh.Index nor the
// buffers here are safe for concurrent use.
type lshIndex struct {
	mu   sync.Mutex
	ix   *lsh.Index
	k    int
	sig  []uint32
	out  []uint32
	keys []uint64
	sigs []uint32 // id*k...: every inserted signature, for remove and the views
}

// lockedLSH is the index of handle h, locked: the caller unlocks it.
func lockedLSH(h C.int64_t) (*lshIndex, error) {
	x, err := getHandle[*lshIndex](int64(h))
	if err != nil {
		return nil, err
	}
	x.mu.Lock()
	return x, nil
}

// stored is the signature inserted under id.
func (x *lshIndex) stored(id uint32) ([]uint32, error) {
	if !x.ix.Has(id) {
		return nil, fmt.Errorf("neardup: id %d is not in the index", id)
	}
	return x.sigs[int(id)*x.k : int(id+1)*x.k], nil
}

func (x *lshIndex) load(sig *C.uint64_t) []uint32 {
	s := uint64sAt(sig, int64(x.k))
	x.sig = x.sig[:0]
	for _, v := range s {
		x.sig = append(x.sig, uint32(min(v, uint64(minhash.Empty))))
	}
	return x.sig
}

// nd_lsh_new returns the handle of an empty banded index of k-slot
// signatures: bands x rows when bands > 0, else datasketch's optimal
// banding for threshold with the weights wfp and wfn (lsh.Optimal),
// written to br[0] and br[1].
//
//export nd_lsh_new
func nd_lsh_new(threshold C.double, k C.int64_t, wfp, wfn C.double, bands, rows C.int64_t, br *C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	p := lsh.Params{Bands: int(bands), Rows: int(rows)}
	if bands <= 0 {
		var err error
		p, err = lsh.Optimal(float64(threshold), int(k), lsh.Weights{FalsePositive: float64(wfp), FalseNegative: float64(wfn)})
		if err != nil {
			return result(errp, err)
		}
	}
	ix, err := lsh.New(p, int(k), lsh.Options{})
	if err != nil {
		return result(errp, err)
	}
	out := unsafe.Slice((*int64)(unsafe.Pointer(br)), 2)
	out[0], out[1] = int64(p.Bands), int64(p.Rows)
	return C.int64_t(putHandle(&lshIndex{ix: ix, k: int(k)}))
}

//export nd_lsh_insert
func nd_lsh_insert(h C.int64_t, id C.uint32_t, sig *C.uint64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, err := lockedLSH(h)
	if err != nil {
		return result(errp, err)
	}
	defer x.mu.Unlock()
	sg := x.load(sig)
	if err := x.ix.Insert(uint32(id), sg); err != nil {
		return result(errp, err)
	}
	if need := (int(id) + 1) * x.k; need > len(x.sigs) {
		x.sigs = slices.Grow(x.sigs, need-len(x.sigs))[:need]
	}
	copy(x.sigs[int(id)*x.k:], sg)
	return 0
}

// nd_lsh_query writes up to cap candidate ids of sig to out and returns
// how many there are (more than cap: call again with room for them).
//
//export nd_lsh_query
func nd_lsh_query(h C.int64_t, sig *C.uint64_t, out *C.uint32_t, cap C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, err := lockedLSH(h)
	if err != nil {
		return result(errp, err)
	}
	defer x.mu.Unlock()
	x.out, err = x.ix.Query(x.out[:0], x.load(sig))
	if err != nil {
		return result(errp, err)
	}
	if cap > 0 {
		copy(unsafe.Slice((*uint32)(unsafe.Pointer(out)), cap), x.out)
	}
	return C.int64_t(len(x.out))
}

// lshStored is the index of handle h, locked (the caller unlocks it),
// and the signature inserted under id.
func lshStored(h C.int64_t, id C.uint32_t) (*lshIndex, []uint32, error) {
	x, err := lockedLSH(h)
	if err != nil {
		return nil, nil, err
	}
	sg, err := x.stored(uint32(id))
	if err != nil {
		x.mu.Unlock()
	}
	return x, sg, err
}

//export nd_lsh_remove
func nd_lsh_remove(h C.int64_t, id C.uint32_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, sg, err := lshStored(h, id)
	if err != nil {
		return result(errp, err)
	}
	defer x.mu.Unlock()
	return result(errp, x.ix.Remove(uint32(id), sg))
}

// nd_lsh_keys writes the band keys of the signature inserted under id
// (Bands values) to out, or with slots non-zero the signature itself (k
// values).
//
//export nd_lsh_keys
func nd_lsh_keys(h C.int64_t, id C.uint32_t, slots C.int, out *C.uint64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, sg, err := lshStored(h, id)
	if err != nil {
		return result(errp, err)
	}
	defer x.mu.Unlock()
	if slots != 0 {
		o := uint64sAt(out, int64(x.k))
		for i, v := range sg {
			o[i] = uint64(v)
		}
		return 0
	}
	x.keys = x.ix.Params().AppendKeys(x.keys[:0], sg)
	copy(uint64sAt(out, int64(len(x.keys))), x.keys)
	return 0
}

//export nd_lsh_free
func nd_lsh_free(h C.int64_t) {
	defer func() { recover() }()
	if x, ok := dropHandle(int64(h)).(*lshIndex); ok {
		x.mu.Lock() // after the calls under way
		defer x.mu.Unlock()
		x.ix.Close()
	}
}

// ---- persistent index ----

type index struct {
	ix store.Index
	pl *store.Pipeline
}

// nd_index_open opens the index at loc, a directory or Redis URL,
// creating it when there is none with flags (a JSON array of `neardup
// index create` flags), and returns its handle.
//
//export nd_index_open
func nd_index_open(loc *C.char, flagsJSON *C.char, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	var args []string
	if err := json.Unmarshal([]byte(C.GoString(flagsJSON)), &args); err != nil {
		return result(errp, fmt.Errorf("neardup: flags: %w", err))
	}
	ix, err := cli.IndexAt(C.GoString(loc), args)
	if err != nil {
		return result(errp, err)
	}
	pl, err := store.NewPipeline(ix, 0)
	if err != nil {
		ix.Close()
		return result(errp, err)
	}
	return C.int64_t(putHandle(&index{ix: ix, pl: pl}))
}

type indexResult struct {
	Added   bool          `json:"added"`
	Matches []store.Match `json:"matches"`
	Error   string        `json:"error,omitempty"`
}

// nd_index_batch runs one operation over n documents (ids and texts
// concatenated, with their lengths) and returns a malloc'd JSON array of
// one result per document: op 0 queries (ids unused), 1 checks and adds
// (store.Index.CheckAndAddBatch), 2 adds. limit bounds the matches.
//
//export nd_index_batch
func nd_index_batch(h C.int64_t, op C.int64_t, ids *C.char, idLens *C.int64_t, texts *C.char, textLens *C.int64_t, n C.int64_t, limit C.int64_t, errp **C.char) (s *C.char) {
	var rc C.int64_t
	defer recovered(errp, &rc)
	x, err := getHandle[*index](int64(h))
	if err != nil {
		setErr(errp, err)
		return nil
	}
	tl := int64sAt(textLens, int64(n))
	total := int64(0)
	for _, l := range tl {
		total += l
	}
	docs := make([]store.Doc, n)
	txt := make([]string, n)
	err = splitLens(bytesAt(texts, total), tl, func(i int, b []byte) { txt[i] = string(b) })
	if err == nil && op != 0 {
		il := int64sAt(idLens, int64(n))
		itotal := int64(0)
		for _, l := range il {
			itotal += l
		}
		err = splitLens(bytesAt(ids, itotal), il, func(i int, b []byte) { docs[i].ID = string(b) })
	}
	if err != nil {
		setErr(errp, err)
		return nil
	}
	var sop store.Op
	switch op {
	case 0:
		sop = store.OpQuery
	case 1:
		sop = store.OpCheckAndAdd
	case 2:
		sop = store.OpAdd
	default:
		setErr(errp, fmt.Errorf("neardup: unknown index operation %d", op))
		return nil
	}
	res, err := x.pl.Run(sop, docs, func(i int) string { return txt[i] }, int(limit))
	if err != nil {
		setErr(errp, err)
		return nil
	}
	out := make([]indexResult, n)
	for i, r := range res {
		if sop == store.OpQuery && r.Err != nil {
			setErr(errp, r.Err) // the index's error, not the document's
			return nil
		}
		out[i] = indexResult{Added: r.Added, Matches: r.Matches}
		if r.Err != nil {
			out[i].Error = r.Err.Error()
		}
	}
	for i := range out {
		if out[i].Matches == nil {
			out[i].Matches = []store.Match{}
		}
	}
	b, err := json.Marshal(out)
	if err != nil {
		setErr(errp, err)
		return nil
	}
	return C.CString(string(b))
}

//export nd_index_remove
func nd_index_remove(h C.int64_t, id *C.char, idLen C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, err := getHandle[*index](int64(h))
	if err != nil {
		return result(errp, err)
	}
	return result(errp, x.ix.Remove(string(bytesAt(id, int64(idLen)))))
}

// nd_index_info returns a malloc'd JSON object: the index's parameters
// and its number of documents.
//
//export nd_index_info
func nd_index_info(h C.int64_t, errp **C.char) (s *C.char) {
	var rc C.int64_t
	defer recovered(errp, &rc)
	x, err := getHandle[*index](int64(h))
	if err != nil {
		setErr(errp, err)
		return nil
	}
	b, err := json.Marshal(map[string]any{"params": x.ix.Spec(), "documents": x.ix.Len()})
	if err != nil {
		setErr(errp, err)
		return nil
	}
	return C.CString(string(b))
}

// nd_index_close closes the index and frees the handle.
//
//export nd_index_close
func nd_index_close(h C.int64_t, errp **C.char) (rc C.int64_t) {
	defer recovered(errp, &rc)
	x, ok := dropHandle(int64(h)).(*index)
	if !ok {
		return 0
	}
	return result(errp, x.ix.Close())
}
