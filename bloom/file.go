package bloom

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync/atomic"

	"github.com/neardup/neardup/internal/atomicfile"
)

// File format errors.
var (
	ErrFormat  = errors.New("bloom: not a filter file")
	ErrVersion = errors.New("bloom: filter file version newer than this program reads")
	ErrCorrupt = errors.New("bloom: corrupt or truncated filter file")
)

// Magic starts every filter file.
const Magic = "NDBLOOM\x00"

// Version is the file format version this package writes and the newest it
// reads.
const Version = 1

// headerSize is the fixed header, its CRC included.
const headerSize = 68

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// FileSize returns the size in bytes of the file of a filter of m bits.
func FileSize(m uint64) int64 { return headerSize + int64(m/8) + 4 }

// WriteTo writes the filter in the format of docs/format/bloom.md:
// header, bits, checksum. Bits are read atomically word by word.
func (f *Filter) WriteTo(w io.Writer) (int64, error) {
	hdr := make([]byte, 0, headerSize)
	hdr = append(hdr, Magic...)
	hdr = binary.LittleEndian.AppendUint32(hdr, Version)
	hdr = binary.LittleEndian.AppendUint32(hdr, HashXXH3)
	hdr = appendUint64(hdr, f.m)
	hdr = binary.LittleEndian.AppendUint32(hdr, uint32(f.k))
	hdr = binary.LittleEndian.AppendUint32(hdr, 0) // reserved
	hdr = appendUint64(hdr, f.seed)
	hdr = appendUint64(hdr, f.n)
	hdr = appendUint64(hdr, math.Float64bits(f.p))
	hdr = appendUint64(hdr, f.Count())
	hdr = binary.LittleEndian.AppendUint32(hdr, crc32.Checksum(hdr, castagnoli))
	var total int64
	n, err := w.Write(hdr)
	total += int64(n)
	if err != nil {
		return total, err
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	crc := uint32(0)
	var buf [8 * 512]byte
	for i := 0; i < len(f.words); i += 512 {
		end := min(i+512, len(f.words))
		b := buf[:0]
		for j := i; j < end; j++ {
			b = appendUint64(b, atomic.LoadUint64(&f.words[j]))
		}
		crc = crc32.Update(crc, castagnoli, b)
		n, err := bw.Write(b)
		total += int64(n)
		if err != nil {
			return total, err
		}
	}
	n, err = bw.Write(binary.LittleEndian.AppendUint32(nil, crc))
	total += int64(n)
	if err != nil {
		return total, err
	}
	return total, bw.Flush()
}

// Save writes the filter to path atomically (a temporary file in the same
// directory, fsync, rename); "-" and special files are written directly.
func (f *Filter) Save(path string) error {
	out, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("bloom: filter file %s: %w", path, err)
	}
	defer out.Abort()
	if _, err := f.WriteTo(out); err != nil {
		return fmt.Errorf("bloom: filter file %s: %w", path, err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("bloom: filter file %s: %w", path, err)
	}
	return nil
}

// Read reads a filter written by WriteTo. It reads exactly the filter's
// bytes from r. It refuses a bad magic (ErrFormat), a newer version
// (ErrVersion), parameters out of range, a checksum mismatch or a short
// input (ErrCorrupt). Memory is allocated as the bits arrive, so a
// truncated file that claims a huge filter fails early.
func Read(r io.Reader) (*Filter, error) {
	var hdr [headerSize]byte
	if n, err := io.ReadFull(r, hdr[:]); err != nil {
		if m := min(n, len(Magic)); string(hdr[:m]) != Magic[:m] {
			return nil, fmt.Errorf("%w: bad magic", ErrFormat)
		}
		return nil, fmt.Errorf("%w: header: %d of %d bytes", ErrCorrupt, n, headerSize)
	}
	if string(hdr[:8]) != Magic {
		return nil, fmt.Errorf("%w: bad magic", ErrFormat)
	}
	le := binary.LittleEndian
	if v := le.Uint32(hdr[8:]); v > Version || v == 0 {
		if v == 0 {
			return nil, fmt.Errorf("%w: version 0", ErrCorrupt)
		}
		return nil, fmt.Errorf("%w: version %d, this program reads up to %d", ErrVersion, v, Version)
	}
	if got, want := crc32.Checksum(hdr[:64], castagnoli), le.Uint32(hdr[64:]); got != want {
		return nil, fmt.Errorf("%w: header checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	hash := le.Uint32(hdr[12:])
	m := le.Uint64(hdr[16:])
	k := le.Uint32(hdr[24:])
	seed := le.Uint64(hdr[32:])
	capN := le.Uint64(hdr[40:])
	capP := math.Float64frombits(le.Uint64(hdr[48:]))
	count := le.Uint64(hdr[56:])
	if hash != HashXXH3 {
		return nil, fmt.Errorf("%w: unknown hash scheme %d", ErrCorrupt, hash)
	}
	if m == 0 || m%64 != 0 || m > MaxBits || k < 1 || k > MaxHashes || seed == 0 || le.Uint32(hdr[28:]) != 0 {
		return nil, fmt.Errorf("%w: parameters out of range (m=%d k=%d seed=%#x)", ErrCorrupt, m, k, seed)
	}
	if capP < 0 || capP >= 1 || math.IsNaN(capP) || (capN == 0) != (capP == 0) {
		return nil, fmt.Errorf("%w: capacity out of range (n=%d p=%v)", ErrCorrupt, capN, capP)
	}
	nw := m / 64
	words := make([]uint64, 0, min(nw, 1<<17))
	crc := uint32(0)
	var buf [8 * 4096]byte
	for uint64(len(words)) < nw {
		chunk := min(nw-uint64(len(words)), 4096)
		b := buf[:8*chunk]
		if n, err := io.ReadFull(r, b); err != nil {
			return nil, fmt.Errorf("%w: bits: %d of %d bytes", ErrCorrupt, 8*uint64(len(words))+uint64(n), 8*nw)
		}
		crc = crc32.Update(crc, castagnoli, b)
		for i := uint64(0); i < chunk; i++ {
			words = append(words, le.Uint64(b[8*i:]))
		}
	}
	var tail [4]byte
	if _, err := io.ReadFull(r, tail[:]); err != nil {
		return nil, fmt.Errorf("%w: missing checksum of the bits", ErrCorrupt)
	}
	if want := le.Uint32(tail[:]); crc != want {
		return nil, fmt.Errorf("%w: checksum of the bits %08x, want %08x", ErrCorrupt, crc, want)
	}
	f := &Filter{words: words, m: m, k: int(k), seed: seed, seed2: seed2Of(seed), n: capN, p: capP}
	f.count.Store(count)
	return f, nil
}

// Load reads the filter file at path. The file must hold exactly one
// filter. Errors name the file.
func Load(path string) (*Filter, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("bloom: filter file: %w", err)
	}
	defer file.Close()
	br := bufio.NewReaderSize(file, 1<<16)
	f, err := Read(br)
	if err != nil {
		return nil, fmt.Errorf("filter file %s: %w", path, err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("filter file %s: %w: bytes after the filter", path, ErrCorrupt)
	}
	return f, nil
}

// LoadFor reads the filter file at path and checks that it was built with
// the parameters want (ErrIncompatible otherwise, naming the file).
func LoadFor(path string, want Params) (*Filter, error) {
	f, err := Load(path)
	if err != nil {
		return nil, err
	}
	if err := f.Check(want); err != nil {
		return nil, fmt.Errorf("filter file %s: %w", path, err)
	}
	return f, nil
}
