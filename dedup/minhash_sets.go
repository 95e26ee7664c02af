package dedup

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/neardup/neardup/internal/tempfile"
	"github.com/neardup/neardup/sketch"
)

// The minhash Finder's shingle sets (the tiered join and --verify) live in
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

// setFile appends the documents' shingle hashes, in document order, as
// they came (unsorted, 8 bytes little-endian each), and keeps one offset a
// document; get reads one set back, sorted and distinct. Its errors are
// sticky: after a failed write every call fails with that error.
type setFile struct {
	dir     string // "" for os.TempDir()
	f       *os.File
	out     io.Writer // f (a test's failing writer)
	start   []int64   // start[i], start[i+1]: document i's bytes; missing past the last set
	size    int64     // bytes appended, buffered ones included
	pending []byte    // the bytes from flushed to size, not yet written
	flushed int64     // bytes in the file
	raw     []byte    // read scratch
	win     []byte    // getAhead's window of the file, from winAt
	winAt   int64
	err     error
}

// setWriteBuffer is the scratch file's write buffer; the sets still in it
// are read from it.
const setWriteBuffer = 1 << 20

// put appends document i's hashes (i greater than every earlier i). The
// file is created on the first call.
func (s *setFile) put(i int, h []uint64) error {
	if s.err != nil {
		return s.err
	}
	if s.f == nil {
		f, err := tempfile.Create(s.dir, setsPrefix, setsSuffix)
		if err != nil {
			s.err = fmt.Errorf("minhash: scratch file for shingle sets: %w", err)
			return s.err
		}
		s.f, s.out, s.pending = f, f, make([]byte, 0, setWriteBuffer)
	}
	if len(s.start) > i+1 {
		return fmt.Errorf("minhash: shingle set of document %d stored out of order", i)
	}
	if len(s.start) == 0 {
		s.start = append(s.start, 0)
	}
	for len(s.start) <= i { // documents without a set in between
		s.start = append(s.start, s.size)
	}
	for len(h) > 0 {
		if cap(s.pending)-len(s.pending) < 8 {
			if err := s.flush(); err != nil {
				return err
			}
		}
		n := min(len(h), (cap(s.pending)-len(s.pending))/8)
		for _, v := range h[:n] {
			s.pending = binary.LittleEndian.AppendUint64(s.pending, v)
		}
		s.size += int64(8 * n)
		h = h[n:]
	}
	s.start = append(s.start, s.size)
	return nil
}

// flush writes the pending bytes to the file.
func (s *setFile) flush() error {
	if _, err := s.out.Write(s.pending); err != nil {
		s.err = fmt.Errorf("minhash: writing shingle sets to %s: %w", s.f.Name(), err)
		return s.err
	}
	s.flushed += int64(len(s.pending))
	s.pending = s.pending[:0]
	return nil
}

// get returns document i's set in dst (reused), sorted by sc and distinct;
// empty when the document has none.
func (s *setFile) get(i int, dst []uint64, sc *sketch.HashSorter) ([]uint64, error) {
	dst = dst[:0]
	if s.err != nil {
		return dst, s.err
	}
	if i < 0 || i+1 >= len(s.start) || s.start[i] == s.start[i+1] {
		return dst, nil
	}
	raw, err := s.read(i, false)
	if err != nil {
		return dst, err
	}
	return decodeSet(dst, raw, sc), nil
}

// getAhead is get for reading many sets in document order: it reads the
// file a window of setWindow bytes at a time.
func (s *setFile) getAhead(i int, dst []uint64, sc *sketch.HashSorter) ([]uint64, error) {
	dst = dst[:0]
	if s.err != nil {
		return dst, s.err
	}
	if !s.has(i) {
		return dst, nil
	}
	raw, err := s.read(i, true)
	if err != nil {
		return dst, err
	}
	return decodeSet(dst, raw, sc), nil
}

// decodeSet appends the hashes of raw to dst, sorted (by sc) and distinct.
func decodeSet(dst []uint64, raw []byte, sc *sketch.HashSorter) []uint64 {
	dst = slices.Grow(dst, len(raw)/8)
	for b := raw; len(b) >= 8; b = b[8:] {
		dst = append(dst, binary.LittleEndian.Uint64(b))
	}
	sc.Sort(dst)
	return slices.Compact(dst)
}

// setWindow is getAhead's read size.
const setWindow = 1 << 20

// read returns document i's bytes (which it has), valid until the next
// call; ahead reads through the window.
func (s *setFile) read(i int, ahead bool) ([]byte, error) {
	from, to := s.start[i], s.start[i+1]
	if from >= s.flushed { // not yet written: from memory
		return s.pending[from-s.flushed : to-s.flushed], nil
	}
	if to > s.flushed {
		if err := s.flush(); err != nil {
			return nil, err
		}
	}
	n := int(to - from)
	if ahead {
		if from >= s.winAt && to <= s.winAt+int64(len(s.win)) {
			return s.win[from-s.winAt : to-s.winAt], nil
		}
		m := int(min(max(int64(n), setWindow), s.flushed-from))
		s.win = slices.Grow(s.win[:0], m)[:m]
		s.winAt = from
		if _, err := s.f.ReadAt(s.win, from); err != nil {
			s.win = s.win[:0]
			return nil, fmt.Errorf("minhash: reading the shingle set of document %d from %s: %w", i, s.f.Name(), err)
		}
		return s.win[:n], nil
	}
	s.raw = slices.Grow(s.raw[:0], n)[:n]
	if _, err := s.f.ReadAt(s.raw, from); err != nil {
		return nil, fmt.Errorf("minhash: reading the shingle set of document %d from %s: %w", i, s.f.Name(), err)
	}
	return s.raw, nil
}

// has reports whether document i has a stored set.
func (s *setFile) has(i int) bool {
	return i >= 0 && i+1 < len(s.start) && s.start[i] != s.start[i+1]
}

// Close removes the file; calling it again does nothing.
func (s *setFile) Close() error {
	if s.f == nil {
		return nil
	}
	err := s.f.Close()
	if rerr := os.Remove(s.f.Name()); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	s.f, s.out, s.start, s.pending = nil, nil, nil, nil
	if s.err == nil {
		s.err = errClosedSets
	}
	return err
}

var errClosedSets = errors.New("minhash: shingle sets already freed")
