// Package extsort sorts (key, document) entries that may not fit in memory:
// entries are buffered up to a byte budget, each full buffer is sorted and
// written to a temporary run file, and the runs are merged with a heap when
// read back. Groups of entries with the same key come out together, with
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
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/neardup/neardup/internal/tempfile"
)

// Run files are named runPrefix + owner + runSuffix.
const (
	runPrefix = "neardup-run-"
	runSuffix = ".bin"
)

// Sweep removes the run files in dir ("" for the system temporary
// directory) of processes that are gone.
func Sweep(dir string) (tempfile.Swept, error) {
	return tempfile.Sweep(dir, runPrefix, runSuffix)
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

// entrySize is the in-memory and on-disk size of an entry.
const entrySize = 12

// Sorter accumulates entries and spills sorted runs to disk.
type Sorter struct {
	dir    string
	limit  int // entries held in memory before a spill
	buf    []Entry
	runs   []string
	closed bool
}

// New returns a Sorter that holds at most budget bytes of entries in memory
// (at least 64 KiB) and writes its runs under dir ("" for the system
// temporary directory).
func New(dir string, budget int64) *Sorter {
	limit := max(budget/entrySize, 64<<10/entrySize)
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
		// capacity stays within the budget.
		s.buf = slices.Grow(s.buf, min(max(len(s.buf), 1024), s.limit-len(s.buf)))
	}
	s.buf = append(s.buf, e)
	return nil
}

// Runs returns how many runs have been written to disk so far.
func (s *Sorter) Runs() int { return len(s.runs) }

func (s *Sorter) spill() error {
	slices.SortFunc(s.buf, compare)
	f, err := tempfile.Create(s.dir, runPrefix, runSuffix)
	if err != nil {
		return fmt.Errorf("extsort: %w", err)
	}
	s.runs = append(s.runs, f.Name())
	w := bufio.NewWriterSize(f, 1<<20)
	var rec [entrySize]byte
	for _, e := range s.buf {
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
	s.buf = s.buf[:0]
	return nil
}

// Groups merges everything added so far and calls fn once per distinct key
// with the documents of that key in ascending order (repeats kept). The
// docs slice is reused between calls. Groups may be called once.
func (s *Sorter) Groups(fn func(key uint64, docs []uint32) error) error {
	if s.closed {
		return errors.New("extsort: Groups after Close")
	}
	if cap(s.buf) > 2*len(s.buf)+1024 {
		// The buffer was sized for the budget and a spill emptied it:
		// keep only what is left, so that the merge's caller has the rest.
		s.buf = slices.Clone(s.buf)
	}
	slices.SortFunc(s.buf, compare)
	h := &mergeHeap{}
	if len(s.buf) > 0 {
		h.items = append(h.items, &source{mem: s.buf, cur: s.buf[0]})
	}
	var files []*os.File
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	for _, name := range s.runs {
		f, err := os.Open(name)
		if err != nil {
			return fmt.Errorf("extsort: %w", err)
		}
		files = append(files, f)
		src := &source{r: bufio.NewReaderSize(f, 256<<10), name: name}
		ok, err := src.next()
		if err != nil {
			return err
		}
		if ok {
			h.items = append(h.items, src)
		}
	}
	heap.Init(h)
	var docs []uint32
	var key uint64
	for h.Len() > 0 {
		top := h.items[0]
		e := top.cur
		if len(docs) > 0 && e.Key != key {
			if err := fn(key, docs); err != nil {
				return err
			}
			docs = docs[:0]
		}
		key = e.Key
		docs = append(docs, e.Doc)
		ok, err := top.next()
		if err != nil {
			return err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
	}
	if len(docs) > 0 {
		return fn(key, docs)
	}
	return nil
}

// Close removes the run files.
func (s *Sorter) Close() error {
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

// source is one sorted stream: the in-memory buffer or a run file.
type source struct {
	mem  []Entry
	pos  int
	r    *bufio.Reader
	name string
	cur  Entry
	rec  [entrySize]byte // next's buffer: a local one escapes through io.ReadFull, one allocation an entry
}

// next advances to the next entry; cur is valid when it returns true.
func (s *source) next() (bool, error) {
	if s.r == nil {
		s.pos++
		if s.pos >= len(s.mem) {
			return false, nil
		}
		s.cur = s.mem[s.pos]
		return true, nil
	}
	if _, err := io.ReadFull(s.r, s.rec[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("extsort: reading run %s: %w", s.name, err)
	}
	s.cur = Entry{Key: binary.LittleEndian.Uint64(s.rec[:8]), Doc: binary.LittleEndian.Uint32(s.rec[8:])}
	return true, nil
}

type mergeHeap struct{ items []*source }

func (h *mergeHeap) Len() int           { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool { return compare(h.items[i].cur, h.items[j].cur) < 0 }
func (h *mergeHeap) Swap(i, j int)      { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)         { h.items = append(h.items, x.(*source)) }
func (h *mergeHeap) Pop() any {
	x := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return x
}
