// Package extsort sorts (key, document) entries that may not fit in memory:
// entries are buffered up to a byte budget, each full buffer is sorted and
// written to a temporary run file by a goroutine while the next buffer
// fills (the budget is the two buffers'), and the runs are merged with a
// heap when read back (GroupsParts: in key ranges, a heap and a goroutine
// each). Groups of entries with the same key come out together, with
// their documents in ascending order.
//
// An entry is 12 bytes on disk: the key (8 bytes, little endian) and the
// document number (4 bytes). Run files live under the directory given to
// New and are removed by Close; they are named after their process
// (package internal/tempfile), so that Sweep can remove the runs of a
// process killed before Close.
//
// A Sorter is not safe for concurrent use.
package extsort

import (
	"bufio"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/neardup/neardup/internal/tempfile"
)

// Run files are named runPrefix + owner + runSuffix.
const (
	runPrefix = "neardup-run-"
	runSuffix = ".bin"
)

// Scratch is the pattern of the run files' names, for tempfile.SweepAll.
var Scratch = tempfile.Pattern{Prefix: runPrefix, Suffix: runSuffix}

// Sweep removes the run files in dir ("" for the system temporary
// directory) of processes that are gone.
func Sweep(dir string) (tempfile.Swept, error) {
	return tempfile.SweepAll(dir, Scratch)
}

// Entry is one key and the document it belongs to.
type Entry struct {
	Key uint64
	Doc uint32
}

func compare(a, b Entry) int {
	if c := cmp.Compare(a.Key, b.Key); c != 0 {
		return c
	}
	return cmp.Compare(a.Doc, b.Doc)
}

// entrySize is the on-disk size of an entry.
const entrySize = 12

// memEntrySize is the in-memory size of an entry: the key, the document
// and 4 bytes of padding. The budget counts entries at this size.
const memEntrySize = int64(unsafe.Sizeof(Entry{}))

// Sorter accumulates entries and spills sorted runs to disk.
type Sorter struct {
	dir    string
	limit  int // entries held in a buffer before a spill
	buf    []Entry
	spare  []Entry    // the buffer the last spill wrote
	done   chan error // the spill in flight's result; nil when none
	runs   []string
	closed bool
	// Workers sort the entries left in the buffer at Groups, each a part
	// (at most one a 64Ki entries); 0 or 1: the calling goroutine.
	Workers int
}

// New returns a Sorter that holds at most budget bytes of entries in memory
// (at least 64 KiB): the buffer it fills and the one a goroutine sorts and
// writes, half of budget each. Its runs go under dir ("" for the system
// temporary directory).
func New(dir string, budget int64) *Sorter {
	limit := max(budget/2/memEntrySize, 32<<10/memEntrySize)
	return &Sorter{dir: dir, limit: int(min(limit, 1<<31-1))}
}

// Add adds an entry, spilling a sorted run when the buffer is full.
func (s *Sorter) Add(e Entry) error {
	if s.closed {
		return errors.New("extsort: Add after Close")
	}
	if len(s.buf) >= s.limit {
		if err := s.spill(); err != nil {
			return err
		}
	}
	if len(s.buf) == cap(s.buf) {
		// Grow by doubling, but never past the limit, so the buffer's
		// capacity stays within the budget (slices.Grow would round it
		// up, past the limit).
		buf := make([]Entry, len(s.buf), len(s.buf)+min(max(len(s.buf), 1024), s.limit-len(s.buf)))
		copy(buf, s.buf)
		s.buf = buf
	}
	s.buf = append(s.buf, e)
	return nil
}

// Buffered returns the bytes of the entries held in memory and not yet
// written to a run: after the last Add, what Groups and GroupsParts hold
// through the merge (beside a block of each run).
func (s *Sorter) Buffered() int64 { return int64(len(s.buf)) * memEntrySize }

// Runs returns how many runs have been written to disk so far.
func (s *Sorter) Runs() int { return len(s.runs) }

// spill hands the full buffer to a goroutine that sorts and writes it as
// a run, after the run before it is written, and goes on with the spare
// buffer.
func (s *Sorter) spill() error {
	if err := s.wait(); err != nil {
		return err
	}
	f, err := tempfile.Create(s.dir, runPrefix, runSuffix)
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	full := s.buf
	s.buf, s.spare = s.spare[:0], nil
	s.done = make(chan error, 1)
	go func() {
		err := writeRun(f, full)
		s.spare = full
		s.done <- err
	}()
	return nil
}

// wait waits for the spill in flight, if any, and returns its error.
func (s *Sorter) wait() error {
	if s.done == nil {
		return nil
	}
	err := <-s.done
	s.done = nil
	return err
}

// writeRun sorts buf and writes it to f, which it closes.
func writeRun(f *os.File, buf []Entry) error {
	slices.SortFunc(buf, compare)
	w := bufio.NewWriterSize(f, 1<<20)
	var rec [entrySize]byte
	for _, e := range buf {
		binary.LittleEndian.PutUint64(rec[:8], e.Key)
		binary.LittleEndian.PutUint32(rec[8:], e.Doc)
		if _, err := w.Write(rec[:]); err != nil {
			f.Close()
			return fmt.Errorf("extsort: writing run %s: %w", f.Name(), err)
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("extsort: writing run %s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	return nil
}

// Groups merges everything added so far and calls fn once per distinct key
// with the documents of that key in ascending order (repeats kept). The
// docs slice is reused between calls. Groups (or GroupsParts) may be
// called once.
func (s *Sorter) Groups(fn func(key uint64, docs []uint32) error) error {
	bufParts, files, err := s.open()
	defer closeAll(files)
	if err != nil {
		return err
	}
	var h mergeHeap
	for _, part := range bufParts {
		h = append(h, &source{blk: part})
	}
	for i, f := range files {
		h = append(h, &source{r: f, name: s.runs[i], raw: make([]byte, blockEntries*entrySize)})
	}
	return merge(h, fn)
}

// GroupsParts is Groups on parts goroutines at once: the keys are cut
// into parts ranges at quantiles of a sample of the entries, and each
// range is merged on a goroutine of its own, which calls fn(part, key,
// docs) for the range's groups in ascending key order. Every key's group
// comes whole from one part. fn is called for different parts at once,
// never twice at once for one part, and each part has its own docs
// slice. The first error stops every part and is returned. The merges
// read the runs in blocks of blockEntries/parts entries (at least
// minPartBlock), so they hold about what one merge does.
func (s *Sorter) GroupsParts(parts int, fn func(part int, key uint64, docs []uint32) error) error {
	if parts <= 1 {
		return s.Groups(func(key uint64, docs []uint32) error { return fn(0, key, docs) })
	}
	bufParts, files, err := s.open()
	defer closeAll(files)
	if err != nil {
		return err
	}
	sizes := make([]int64, len(files)) // entries in each run
	for i, f := range files {
		st, err := f.Stat()
		if err != nil {
			return fmt.Errorf("extsort: %w", err)
		}
		if st.Size()%entrySize != 0 {
			return fmt.Errorf("extsort: run %s: %d bytes, not a whole number of entries", s.runs[i], st.Size())
		}
		sizes[i] = st.Size() / entrySize
	}
	// The cuts: quantiles of up to 64 keys taken evenly from each source.
	var sample []uint64
	for _, part := range bufParts {
		for k := range min(len(part), 64) {
			sample = append(sample, part[k*len(part)/min(len(part), 64)].Key)
		}
	}
	for i, f := range files {
		n := sizes[i]
		for k := range min(n, 64) {
			e, err := readEntry(f, s.runs[i], k*n/min(n, 64))
			if err != nil {
				return err
			}
			sample = append(sample, e.Key)
		}
	}
	slices.Sort(sample)
	cuts := make([]uint64, 0, parts-1) // part p holds keys in [cuts[p-1], cuts[p])
	for p := 1; p < parts && len(sample) > 0; p++ {
		cuts = append(cuts, sample[p*len(sample)/parts])
	}
	// Where each cut falls in each run: the first entry with a key at or
	// above it, found by binary search in the file.
	at := make([][]int64, len(files)) // at[i][p]: part p's first entry in run i; at[i][len(cuts)+1] = sizes[i]
	for i, f := range files {
		at[i] = make([]int64, len(cuts)+2)
		for p, c := range cuts {
			lo, hi := at[i][p], sizes[i]
			for lo < hi {
				mid := lo + (hi-lo)/2
				e, err := readEntry(f, s.runs[i], mid)
				if err != nil {
					return err
				}
				if e.Key < c {
					lo = mid + 1
				} else {
					hi = mid
				}
			}
			at[i][p+1] = lo
		}
		at[i][len(cuts)+1] = sizes[i]
	}
	block := max(blockEntries/parts, minPartBlock)
	var failed atomic.Bool
	errs := make([]error, len(cuts)+1)
	var wg sync.WaitGroup
	for p := range len(cuts) + 1 {
		var h mergeHeap
		for _, part := range bufParts {
			lo, hi := 0, len(part)
			if p > 0 {
				lo, _ = slices.BinarySearchFunc(part, cuts[p-1], func(e Entry, k uint64) int { return cmp.Compare(e.Key, k) })
			}
			if p < len(cuts) {
				hi, _ = slices.BinarySearchFunc(part, cuts[p], func(e Entry, k uint64) int { return cmp.Compare(e.Key, k) })
			}
			h = append(h, &source{blk: part[lo:hi]})
		}
		for i, f := range files {
			lo, hi := at[i][p], at[i][p+1]
			h = append(h, &source{r: io.NewSectionReader(f, lo*entrySize, (hi-lo)*entrySize), name: s.runs[i],
				raw: make([]byte, block*entrySize)})
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[p] = merge(h, func(key uint64, docs []uint32) error {
				if failed.Load() {
					return errPartStopped
				}
				if err := fn(p, key, docs); err != nil {
					failed.Store(true)
					return err
				}
				return nil
			})
			if errs[p] != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil && !errors.Is(err, errPartStopped) {
			return err
		}
	}
	return nil
}

// errPartStopped ends a part's merge when another part failed.
var errPartStopped = errors.New("extsort: stopped by another part")

// minPartBlock is the least block a part's merge reads from a run.
const minPartBlock = 512

// prepare makes the buffer ready for a merge, sorted in Workers parts at
// once, and returns the parts.
func (s *Sorter) prepare() ([][]Entry, error) {
	if s.closed {
		return nil, errors.New("extsort: Groups after Close")
	}
	if err := s.wait(); err != nil {
		return nil, err
	}
	s.spare = nil
	if cap(s.buf) > 2*len(s.buf)+1024 {
		// The buffer was sized for the budget and a spill emptied it:
		// keep only what is left, so that the merge's caller has the rest.
		s.buf = slices.Clone(s.buf)
	}
	n := max(min(s.Workers, len(s.buf)/minPart), 1)
	var parts [][]Entry
	var wg sync.WaitGroup
	for k := range n {
		part := s.buf[k*len(s.buf)/n : (k+1)*len(s.buf)/n]
		wg.Add(1)
		go func() {
			defer wg.Done()
			slices.SortFunc(part, compare)
		}()
		if len(part) > 0 {
			parts = append(parts, part)
		}
	}
	wg.Wait()
	return parts, nil
}

// open prepares the buffer (prepare) and opens the run files, in order;
// on error, the files it opened are returned with it, for the caller to
// close.
func (s *Sorter) open() (bufParts [][]Entry, files []*os.File, err error) {
	if bufParts, err = s.prepare(); err != nil {
		return nil, nil, err
	}
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return nil, files, fmt.Errorf("extsort: %w", err)
		}
		files = append(files, f)
	}
	return bufParts, files, nil
}

func closeAll(files []*os.File) {
	for _, f := range files {
		f.Close()
	}
}

// readEntry reads entry k of a run file.
func readEntry(f *os.File, name string, k int64) (Entry, error) {
	var rec [entrySize]byte
	if _, err := f.ReadAt(rec[:], k*entrySize); err != nil {
		return Entry{}, fmt.Errorf("extsort: reading run %s: %w", name, err)
	}
	return Entry{Key: binary.LittleEndian.Uint64(rec[:8]), Doc: binary.LittleEndian.Uint32(rec[8:])}, nil
}

// merge merges the sources (sorted streams) and calls fn once per
// distinct key with the documents of that key in ascending order.
func merge(h mergeHeap, fn func(key uint64, docs []uint32) error) error {
	live := h[:0]
	for _, src := range h {
		if src.r != nil {
			ok, err := src.refill()
			if err != nil {
				return err
			}
			if !ok {
				continue
			}
		} else if len(src.blk) == 0 {
			continue
		}
		live = append(live, src)
	}
	h = live
	h.init()
	var docs []uint32
	var key uint64
	for len(h) > 0 {
		top := h[0]
		e := top.blk[top.pos]
		if len(docs) > 0 && e.Key != key {
			if err := fn(key, docs); err != nil {
				return err
			}
			docs = docs[:0]
		}
		key = e.Key
		docs = append(docs, e.Doc)
		if top.pos++; top.pos == len(top.blk) {
			ok, err := top.refill()
			if err != nil {
				return err
			}
			if !ok {
				h[0] = h[len(h)-1]
				h = h[:len(h)-1]
			}
		}
		h.down(0)
	}
	if len(docs) > 0 {
		return fn(key, docs)
	}
	return nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
	s.wait()
	s.closed = true
	var first error
	for _, name := range s.runs {
		if err := os.Remove(name); err != nil && first == nil && !errors.Is(err, os.ErrNotExist) {
			first = err
		}
	}
	s.runs, s.buf = nil, nil
	return first
}

// source is one sorted stream: the in-memory buffer, or a run file read
// in blocks of blockEntries.
type source struct {
	blk  []Entry // the entries at hand; blk[pos] is the stream's next
	pos  int
	r    io.Reader // nil for the buffer
	raw  []byte
	name string
}

// minPart is the fewest entries of a part of the buffer that Groups sorts
// on a goroutine of its own (tests lower it).
var minPart = 64 << 10

// blockEntries are decoded from a run file at a time.
const blockEntries = 4096

// refill decodes the next block of the run file; false at its end.
func (s *source) refill() (bool, error) {
	if s.r == nil {
		return false, nil
	}
	n, err := io.ReadFull(s.r, s.raw)
	switch {
	case err == io.EOF:
		return false, nil
	case err != nil && err != io.ErrUnexpectedEOF:
		return false, fmt.Errorf("extsort: reading run %s: %w", s.name, err)
	case n%entrySize != 0:
		return false, fmt.Errorf("extsort: reading run %s: %w", s.name, io.ErrUnexpectedEOF)
	}
	s.blk = s.blk[:0]
	for b := s.raw[:n]; len(b) > 0; b = b[entrySize:] {
		s.blk = append(s.blk, Entry{Key: binary.LittleEndian.Uint64(b), Doc: binary.LittleEndian.Uint32(b[8:])})
	}
	s.pos = 0
	return true, nil
}

// mergeHeap is a binary min-heap of the sources by their next entry.
type mergeHeap []*source

func (h mergeHeap) less(i, j int) bool {
	a, b := h[i].blk[h[i].pos], h[j].blk[h[j].pos]
	return a.Key < b.Key || a.Key == b.Key && a.Doc < b.Doc
}

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

// down moves h[i] down to its place.
func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
