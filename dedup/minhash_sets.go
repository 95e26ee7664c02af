package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/sketch"
)

// The minhash Finder's shingle sets (the tiered join and --verify), and
// those of the spill path (splitKeyed: minhash, simhash --verify), live in
// a scratch file, not on the Go heap: 8 bytes a shingle would be two
// thirds of the run's memory at 1M documents of 1 KB (docs/benchmarks.md),
// and the tiered join reads only the few sets whose pairs the estimate
// cannot decide. The file is named setsPrefix + owner + setsSuffix
// (package internal/tempfile) in the run's temporary directory, removed
// by Close and swept after a killed run like the spill files.
const (
	setsPrefix = "neardup-sets-"
	setsSuffix = ".bin"
)

// setFile appends the documents' shingle hashes, in document order, 8
// bytes little-endian each, and keeps one offset a document and one bit:
// whether the set was stored distinct (putSet), or as the shingler
// produced it, with repeats (put). get reads one set back sorted and
// distinct; getDistinct reads it distinct in any order, removing repeats
// only from a set stored with them. Its errors are sticky: after a failed
// write every call fails with that error.
type setFile struct {
	dir     string // "" for os.TempDir()
	f       *os.File
	out     io.Writer // f (a test's failing writer)
	start   []int64   // start[i], start[i+1]: document i's hashes; missing past the last set
	dist    []uint64  // bit i: document i's set is stored without repeats
	size    int64     // hashes appended, buffered ones included
	pending []uint64  // the hashes from flushed to size, not yet written
	flushed int64     // hashes in the file
	enc     []byte    // flush's scratch where the machine is big-endian
	win     []uint64  // getAhead's window of the file, from winAt
	winAt   int64
	err     error
	// wrap, when set, makes the writer of the file once it is created
	// (the component join writes behind the collector: asyncWriter; it
	// reads nothing back before it has waited for the writes).
	wrap func(*os.File) io.Writer
	// readOnly: a copy that only reads (the component join's replayers
	// and CountBelow's workers share the file). Its getDistinct marks a
	// set found distinct in the shared dist only where shareDist made
	// dist cover it (atomically: the copies read and mark at once), and
	// never grows dist, which would part it from the others'.
	readOnly bool
	// memOnly keeps the sets in the write buffer, which grows, and never
	// makes the file: the staged join, whose memory budget counts them.
	// putSet stores every set distinct (dd makes it so), so that reads
	// are views that no reader changes (copies share the buffer).
	memOnly bool
	dd      hashSet
}

// setWriteBuffer is the scratch file's write buffer in bytes; the sets
// still in it are read from it.
const setWriteBuffer = 1 << 20

// nativeLittleEndian: the machine stores a uint64 as the file does, so the
// hashes are written and read as they lie in memory (one copy); otherwise
// they are encoded and decoded. A variable so that a test runs both.
var nativeLittleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// put appends document i's hashes, in any order and with repeats (i
// greater than every earlier i). The file is created on the first call.
func (s *setFile) put(i int, h []uint64) error { return s.putSet(i, h, false) }

// putSet is put for a set without repeats when distinct is true:
// getDistinct returns it as it was stored.
func (s *setFile) putSet(i int, h []uint64, distinct bool) error {
	return s.store(i, h, distinct, nil, nil)
}

// putHeld is putSet for a set that a sketcher wrote into one of its
// blocks, and releases it. Where the file is written behind the caller
// (wrap makes an asyncWriter), the writing goroutine writes the hashes
// from the block and then releases it: no copy on the calling goroutine
// (the component join's collector). Either way set is empty afterwards.
func (s *setFile) putHeld(i int, set *lazySet) error {
	held := false
	err := s.store(i, set.h, set.sorted, set.blk, &held)
	if held {
		*set = lazySet{}
	} else {
		set.release()
	}
	return err
}

// store is putSet; with blk, h lies in blk, and store sets *held when it
// has passed the hold on blk to the writer.
func (s *setFile) store(i int, h []uint64, distinct bool, blk *hashBlock, held *bool) error {
	if s.err != nil {
		return s.err
	}
	if s.memOnly {
		if s.pending == nil {
			s.pending = make([]uint64, 0, setWriteBuffer/8)
		}
	} else if s.f == nil {
		f, err := tempfile.Create(s.dir, setsPrefix, setsSuffix)
		if err != nil {
			s.err = fmt.Errorf("scratch file for shingle sets: %w", err)
			return s.err
		}
		s.f, s.out, s.pending = f, f, make([]uint64, 0, setWriteBuffer/8)
		if s.wrap != nil {
			s.out = s.wrap(f)
		}
	}
	if len(s.start) > i+1 {
		return fmt.Errorf("shingle set of document %d stored out of order", i)
	}
	if len(s.start) == 0 {
		s.start = append(s.start, 0)
	}
	for len(s.start) <= i { // documents without a set in between
		s.start = append(s.start, s.size)
	}
	if distinct {
		s.setDistinct(i)
	}
	if s.memOnly {
		at := len(s.pending)
		s.pending = append(s.pending, h...)
		if !distinct {
			s.pending = s.pending[:at+len(s.dd.build(s.pending[at:]))]
			s.setDistinct(i)
		}
		s.size += int64(len(s.pending) - at)
		h = nil
	} else if s.wrap != nil && nativeLittleEndian && len(s.pending) == 0 {
		// Written behind the caller, which reads nothing back before
		// the writes are done: no need of the pending buffer, and one
		// copy of the hashes fewer; none where the writer writes them
		// from the sketcher's block (putHeld).
		var err error
		if a, ok := s.out.(*asyncWriter); ok && blk != nil {
			err = a.writeHeld(wordBytes(h), blk)
			*held = true
		} else {
			_, err = s.out.Write(wordBytes(h))
		}
		if err != nil {
			s.err = fmt.Errorf("writing shingle sets to %s: %w", s.f.Name(), err)
			return s.err
		}
		s.size += int64(len(h))
		s.flushed = s.size
		s.start = append(s.start, s.size)
		return nil
	}
	for len(h) > 0 {
		if len(s.pending) == cap(s.pending) {
			if err := s.flush(); err != nil {
				return err
			}
		}
		n := min(len(h), cap(s.pending)-len(s.pending))
		s.pending = append(s.pending, h[:n]...)
		s.size += int64(n)
		h = h[n:]
	}
	s.start = append(s.start, s.size)
	return nil
}

// setDistinct marks document i's set as one without repeats. The marks
// are atomic: readOnly copies share dist (see shareDist).
func (s *setFile) setDistinct(i int) {
	for len(s.dist) <= i/64 {
		s.dist = append(s.dist, 0)
	}
	atomic.OrUint64(&s.dist[i/64], 1<<(i%64))
}

// shareDist makes dist cover every stored set before readOnly copies of s
// are made, so that the copies share it: a set one of them finds without
// repeats is not checked again by any (the component join's replay and
// CountBelow read many sets more than once; the streaming Finder marks
// its own, unshared).
func (s *setFile) shareDist() {
	for len(s.dist)*64 < len(s.start) {
		s.dist = append(s.dist, 0)
	}
}

// isDistinct reports whether document i's set was stored without
// repeats, or found so.
func (s *setFile) isDistinct(i int) bool {
	return i/64 < len(s.dist) && atomic.LoadUint64(&s.dist[i/64])&(1<<(i%64)) != 0
}

// flush writes the pending hashes to the file.
func (s *setFile) flush() error {
	var b []byte
	if nativeLittleEndian {
		b = wordBytes(s.pending)
	} else {
		s.enc = s.enc[:0]
		for _, v := range s.pending {
			s.enc = binary.LittleEndian.AppendUint64(s.enc, v)
		}
		b = s.enc
	}
	if _, err := s.out.Write(b); err != nil {
		s.err = fmt.Errorf("writing shingle sets to %s: %w", s.f.Name(), err)
		return s.err
	}
	s.flushed += int64(len(s.pending))
	s.pending = s.pending[:0]
	return nil
}

// flushAll writes every pending hash to the file, so that reading a set
// (get) writes nothing and several goroutines may read at once.
func (s *setFile) flushAll() error {
	if s.err != nil || s.f == nil || s.memOnly || len(s.pending) == 0 {
		return s.err
	}
	return s.flush()
}

// wordBytes is the memory of w as bytes.
func wordBytes(w []uint64) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(w))), 8*len(w))
}

// readWords fills dst with the hashes at hash offset off of the file.
func (s *setFile) readWords(dst []uint64, off int64) error {
	if nativeLittleEndian {
		_, err := s.f.ReadAt(wordBytes(dst), 8*off)
		return err
	}
	b := make([]byte, 8*len(dst)) // not s.enc: readers may run at once
	if _, err := s.f.ReadAt(b, 8*off); err != nil {
		return err
	}
	for x := range dst {
		dst[x] = binary.LittleEndian.Uint64(b[8*x:])
	}
	return nil
}

// get returns document i's set in dst (reused), sorted by sc and
// distinct; empty when the document has none.
func (s *setFile) get(i int, dst []uint64, sc *sketch.HashSorter) ([]uint64, error) {
	h, view, err := s.hashes(i, dst, false)
	if err != nil {
		return dst[:0], err
	}
	if view {
		h = append(dst[:0], h...)
	}
	sc.Sort(h)
	return slices.Compact(h), nil
}

// getDistinct returns document i's set, distinct, in the order it was
// stored: a view of the write buffer or the read-ahead window when the
// set is there (valid until the next putSet or read ahead), else in dst
// (reused). With ahead, for reading many sets in document order, it reads
// the file a window of setWindow bytes at a time. dd removes the repeats
// of a set stored with them, in place (the set stays the same), and a set
// found without repeats is marked so, not to be checked again.
func (s *setFile) getDistinct(i int, dst []uint64, dd *hashSet, ahead bool) ([]uint64, error) {
	h, _, err := s.hashes(i, dst, ahead)
	if err != nil || s.isDistinct(i) {
		return h, err
	}
	d := dd.build(h)
	if len(d) == len(h) && (!s.readOnly || i/64 < len(s.dist)) {
		s.setDistinct(i)
	}
	return d, nil
}

// inMemory reports whether document i's set is in the write buffer or
// the read-ahead window, where getDistinct returns a view of it.
func (s *setFile) inMemory(i int) bool {
	if !s.has(i) {
		return false
	}
	from, to := s.start[i], s.start[i+1]
	return from >= s.flushed || from >= s.winAt && to <= s.winAt+int64(len(s.win))
}

// setWindow is the read-ahead window in bytes.
const setWindow = 1 << 20

// hashes returns document i's hashes as stored, and whether they are a
// view of the write buffer or of the read-ahead window (see getDistinct)
// rather than read into dst (reused). With ahead, a set not in memory is
// read with the setWindow bytes that follow it.
func (s *setFile) hashes(i int, dst []uint64, ahead bool) (h []uint64, view bool, err error) {
	if s.err != nil {
		return dst[:0], false, s.err
	}
	if !s.has(i) {
		return dst[:0], false, nil
	}
	from, to := s.start[i], s.start[i+1]
	switch {
	case s.memOnly: // distinct: getDistinct does not change it, get copies it
		return s.pending[from:to], true, nil
	case from >= s.flushed: // not yet written
		return s.pending[from-s.flushed : to-s.flushed], true, nil
	case from >= s.winAt && to <= s.winAt+int64(len(s.win)):
		return s.win[from-s.winAt : to-s.winAt], true, nil
	}
	if to > s.flushed {
		if err := s.flush(); err != nil {
			return dst[:0], false, err
		}
	}
	n := int(to - from)
	if ahead {
		m := int(min(max(int64(n), setWindow/8), s.flushed-from))
		s.win = slices.Grow(s.win[:0], m)[:m]
		s.winAt = from
		if err = s.readWords(s.win, from); err == nil {
			return s.win[:n], true, nil
		}
		s.win = s.win[:0]
	} else {
		dst = slices.Grow(dst[:0], n)[:n]
		if err = s.readWords(dst, from); err == nil {
			return dst, false, nil
		}
	}
	return dst[:0], false, fmt.Errorf("reading the shingle set of document %d from %s: %w", i, s.f.Name(), err)
}

// has reports whether document i has a stored set.
func (s *setFile) has(i int) bool {
	return i >= 0 && i+1 < len(s.start) && s.start[i] != s.start[i+1]
}

// Close removes the file; calling it again does nothing.
func (s *setFile) Close() error {
	if s.f == nil {
		if s.memOnly {
			s.start, s.dist, s.pending = nil, nil, nil
			if s.err == nil {
				s.err = errClosedSets
			}
		}
		return nil
	}
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	s.f, s.out, s.start, s.dist, s.pending, s.win = nil, nil, nil, nil, nil, nil
	if s.err == nil {
		s.err = errClosedSets
	}
	return err
}

var errClosedSets = errors.New("shingle sets already freed")

// hashSet is a set of 64-bit shingle hashes in an open-addressing table,
// for the exact Jaccard of one document with each of its candidates
// without sorting either set: built once from the document's hashes (a
// few nanoseconds a hash; sorting them took five times as long), then
// probed with each candidate's distinct hashes. Shingle hashes are
// uniform, so a multiplicative hash of them spreads well; a table whose
// probes run long all the same (a crafted input) is replaced by the
// sorted hashes and binary search, so that no input costs more than
// O(n log n). The zero value is ready; it keeps its memory.
type hashSet struct {
	table  []uint64 // 0 marks a free cell
	shift  uint     // 64 - log2(len(table))
	zero   bool     // the hash 0 is in the set
	n      int      // distinct hashes
	keys   []uint64 // the distinct hashes given to build (the caller's memory)
	sorted []uint64 // the fallback: keys sorted, when probes ran long
	sc     sketch.HashSorter
}

// hashMul spreads the hashes over the table (the golden ratio, odd).
const hashMul = 0x9e3779b97f4a7c15

// probeBudget bounds the probe steps of one build or count to
// probeBudget x (hashes + 8) before falling back to binary search; at a
// load of at most one half, the expected number is below 1.5 a hash.
const probeBudget = 8

// build makes the set of h's hashes and returns h's distinct hashes,
// moved to its front in place (in the order of their first occurrence,
// or sorted after a fallback). The set refers to them: h must not change
// while the set is used.
func (t *hashSet) build(h []uint64) []uint64 {
	size := 1 << bits.Len(uint(2*len(h)|7)) // at least twice len(h), at least 8
	t.table = slices.Grow(t.table[:0], size)[:size]
	clear(t.table)
	t.shift = uint(64 - bits.TrailingZeros(uint(size)))
	t.zero, t.sorted = false, nil
	mask := size - 1
	w, steps, budget := 0, 0, probeBudget*(len(h)+8)
	for x, v := range h {
		if v == 0 {
			if !t.zero {
				t.zero = true
				h[w] = 0
				w++
			}
			continue
		}
		for p := int((v * hashMul) >> t.shift); ; p = (p + 1) & mask {
			c := t.table[p]
			if c == v {
				break
			}
			if c == 0 {
				t.table[p] = v
				h[w] = v
				w++
				break
			}
			steps++
		}
		if steps > budget {
			// h[:w] and h[x+1:] hold every distinct hash.
			w += copy(h[w:], h[x+1:])
			t.sc.Sort(h[:w])
			h = slices.Compact(h[:w])
			t.keys, t.n = h, len(h)
			t.sorted = h
			return h
		}
	}
	t.keys, t.n = h[:w], w
	return h[:w]
}

// count returns how many of the distinct hashes b are in the set: |a ∩ b|
// for the set a it was built from.
func (t *hashSet) count(b []uint64) int {
	n, _ := t.countAtLeast(b, 0)
	return n
}

// countAtLeast is count when the count matters only if it reaches need:
// it stops, with ok false, as soon as more than len(b) - need hashes of b
// were not found (the count can no longer reach need). With ok true, n is
// the exact count.
func (t *hashSet) countAtLeast(b []uint64, need int) (n int, ok bool) {
	misses := len(b) - need // the most that may be missing
	if misses < 0 {
		return 0, false
	}
	if t.sorted != nil {
		return countSorted(t.sorted, b, misses)
	}
	mask := len(t.table) - 1
	steps, budget := 0, probeBudget*(len(b)+8)
	for x, v := range b {
		found := false
		if v == 0 {
			found = t.zero
		} else {
			for p := int((v * hashMul) >> t.shift); ; p = (p + 1) & mask {
				c := t.table[p]
				if c == v {
					found = true
					break
				}
				if c == 0 {
					break
				}
				steps++
			}
		}
		if found {
			n++
		} else if misses--; misses < 0 {
			return n, false
		}
		if steps > budget {
			t.sorted = slices.Clone(t.keys)
			t.sc.Sort(t.sorted)
			m, ok := countSorted(t.sorted, b[x+1:], misses)
			return n + m, ok
		}
	}
	return n, true
}

// countSorted is countAtLeast on the sorted set a, with misses the most
// hashes of b that may be missing.
func countSorted(a, b []uint64, misses int) (n int, ok bool) {
	for _, v := range b {
		if _, found := slices.BinarySearch(a, v); found {
			n++
		} else if misses--; misses < 0 {
			return n, false
		}
	}
	return n, true
}

// minShared is jaccard.MinShared: the fewest hashes two sets of na and nb
// distinct hashes must share for jaccardOf to reach t.
func minShared(na, nb int, t float64) int { return jaccard.MinShared(na, nb, t) }

// jaccardOf is jaccard.OfCounts, the one formula of the exact
// verification, which the index's check shares.
func jaccardOf(inter, na, nb int) float64 { return jaccard.OfCounts(inter, na, nb) }
