package minhash

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Encoding is how the slots of a signature are written.
type Encoding uint8

const (
	// Raw32 writes each slot as 4 little-endian bytes: 4K bytes.
	Raw32 Encoding = 1
	// BBit keeps the low b bits of each slot, packed: ceil(K*b/8) bytes.
	// Lossy: estimate with EstimateBBit.
	BBit Encoding = 2
	// Varint writes each slot as an unsigned LEB128 varint. Slots are
	// minima, about 2^32/(N+1) for N shingles, so documents with more than
	// about 2^11 shingles take 3 bytes a slot instead of 4.
	Varint Encoding = 3
)

// String returns "raw32", "bbit" or "varint".
func (e Encoding) String() string {
	switch e {
	case Raw32:
		return "raw32"
	case BBit:
		return "bbit"
	case Varint:
		return "varint"
	}
	return fmt.Sprintf("Encoding(%d)", uint8(e))
}

// FormatVersion is the version of the binary format written by Writer.
// Readers refuse newer versions with ErrVersion.
const FormatVersion = 1

// magic opens every signature file.
const magic = "NDMH"

// headerSize is the size of the file header in bytes.
const headerSize = 24

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Header describes a file of signatures: how they were made and encoded.
type Header struct {
	Version  int // FormatVersion when written
	Encoding Encoding
	Bits     int // b of BBit (1..32); 32 otherwise
	Family   Family
	NumPerm  int
	Seed     uint64
}

// Header returns the header of signatures of h written with enc (bits is
// used by BBit only).
func (h *Hasher) Header(enc Encoding, bits int) Header {
	if enc != BBit {
		bits = 32
	}
	return Header{Version: FormatVersion, Encoding: enc, Bits: bits, Family: h.family, NumPerm: h.k, Seed: h.seed}
}

// Check returns an error wrapping ErrMismatch unless signatures with this
// header were made by h (same family, number of slots and seed), so that
// they compare with h's.
func (hd Header) Check(h *Hasher) error {
	switch {
	case hd.Family != h.family:
		return fmt.Errorf("%w: family %s, want %s", ErrMismatch, hd.Family, h.family)
	case hd.NumPerm != h.k:
		return fmt.Errorf("%w: %d slots, want %d", ErrMismatch, hd.NumPerm, h.k)
	case hd.Seed != h.seed:
		return fmt.Errorf("%w: seed %#x, want %#x", ErrMismatch, hd.Seed, h.seed)
	}
	return nil
}

func (hd Header) validate() error {
	if hd.NumPerm < 1 || hd.NumPerm > MaxNumPerm {
		return fmt.Errorf("%w: %d slots", ErrFormat, hd.NumPerm)
	}
	if hd.Family >= numFamilies {
		return fmt.Errorf("%w: unknown family", ErrFormat)
	}
	switch hd.Encoding {
	case Raw32, Varint:
		if hd.Bits != 32 {
			return fmt.Errorf("%w: %s with %d bits", ErrFormat, hd.Encoding, hd.Bits)
		}
	case BBit:
		if hd.Bits < 1 || hd.Bits > 32 {
			return fmt.Errorf("%w: b-bit with b = %d", ErrFormat, hd.Bits)
		}
	default:
		return fmt.Errorf("%w: encoding %d", ErrFormat, hd.Encoding)
	}
	return nil
}

// maxPayload is the largest encoded signature of the header's parameters.
func (hd Header) maxPayload() int {
	switch hd.Encoding {
	case BBit:
		return (hd.NumPerm*hd.Bits + 7) / 8
	case Varint:
		return hd.NumPerm * binary.MaxVarintLen32
	}
	return hd.NumPerm * 4
}

// AppendEncode appends the encoding of sig to dst. bits is used by BBit
// only. It does not allocate when dst has capacity.
func AppendEncode(dst []byte, sig Signature, enc Encoding, bits int) ([]byte, error) {
	switch enc {
	case Raw32:
		for _, v := range sig {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	case Varint:
		for _, v := range sig {
			dst = binary.AppendUvarint(dst, uint64(v))
		}
	case BBit:
		if bits < 1 || bits > 32 {
			return dst, fmt.Errorf("minhash: b-bit with b = %d: want 1..32", bits)
		}
		var acc uint64
		n := 0
		mask := uint64(1)<<bits - 1
		for _, v := range sig {
			acc |= (uint64(v) & mask) << n
			n += bits
			for n >= 8 {
				dst = append(dst, byte(acc))
				acc >>= 8
				n -= 8
			}
		}
		if n > 0 {
			dst = append(dst, byte(acc))
		}
	default:
		return dst, fmt.Errorf("minhash: unknown encoding %d", enc)
	}
	return dst, nil
}

// Decode decodes one signature of k slots from src into dst[:0] and returns
// it. src must hold exactly one encoded signature. Errors wrap ErrFormat.
func Decode(dst Signature, src []byte, enc Encoding, bits, k int) (Signature, error) {
	hd := Header{Encoding: enc, Bits: bits, NumPerm: k}
	if enc != BBit {
		hd.Bits = 32
	}
	if err := hd.validate(); err != nil {
		return dst, err
	}
	dst = grow(dst[:0], k)
	switch enc {
	case Raw32:
		if len(src) != 4*k {
			return dst, fmt.Errorf("%w: %d bytes for %d raw slots", ErrFormat, len(src), k)
		}
		for i := range dst {
			dst[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
	case Varint:
		for i := range dst {
			v, n := binary.Uvarint(src)
			if n <= 0 || v > 0xFFFFFFFF {
				return dst, fmt.Errorf("%w: bad varint in slot %d", ErrFormat, i)
			}
			dst[i] = uint32(v)
			src = src[n:]
		}
		if len(src) != 0 {
			return dst, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(src))
		}
	case BBit:
		if len(src) != (k*bits+7)/8 {
			return dst, fmt.Errorf("%w: %d bytes for %d slots of %d bits", ErrFormat, len(src), k, bits)
		}
		var acc uint64
		n := 0
		mask := uint64(1)<<bits - 1
		for i := range dst {
			for n < bits {
				acc |= uint64(src[0]) << n
				src = src[1:]
				n += 8
			}
			dst[i] = uint32(acc & mask)
			acc >>= bits
			n -= bits
		}
	}
	return dst, nil
}

// EstimateBBit returns the b-bit minhash estimate of the Jaccard similarity
// from two signatures reduced to their low b bits: (E - 2^-b) / (1 - 2^-b),
// where E is the fraction of equal slots, clamped to [0, 1]. This is Li and
// König's estimator for sets small relative to the hash space (the case of
// 32-bit slots over shingles). Its variance is P(1-P)/(K(1-C)^2) with
// C = 2^-b and P = C + (1-C)J: for b = 8 the standard error at J = 0.8
// grows by about 1% over Estimate's, for 1/4 of the bytes.
func EstimateBBit(a, b Signature, bits int) (float64, error) {
	if bits < 1 || bits > 32 {
		return 0, fmt.Errorf("minhash: b-bit with b = %d: want 1..32", bits)
	}
	e, err := Estimate(a, b)
	if err != nil {
		return 0, err
	}
	c := 1 / float64(uint64(1)<<bits)
	j := (e - c) / (1 - c)
	return min(max(j, 0), 1), nil
}

// Writer writes a signature file: a header, then one record per signature
// (docs/format/minhash-signature.md). It buffers nothing itself; wrap the
// destination in a bufio.Writer.
type Writer struct {
	w   io.Writer
	hd  Header
	buf []byte
	err error
}

// NewWriter writes hd to w and returns a Writer of signatures with hd's
// parameters. hd.Version is ignored: FormatVersion is written.
func NewWriter(w io.Writer, hd Header) (*Writer, error) {
	hd.Version = FormatVersion
	if hd.Encoding != BBit {
		hd.Bits = 32
	}
	if err := hd.validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, headerSize)
	b = append(b, magic...)
	b = append(b, byte(hd.Version), byte(hd.Encoding), wireFamily(hd.Family), byte(hd.Bits))
	b = binary.LittleEndian.AppendUint32(b, uint32(hd.NumPerm))
	b = binary.LittleEndian.AppendUint64(b, hd.Seed)
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	if _, err := w.Write(b); err != nil {
		return nil, err
	}
	return &Writer{w: w, hd: hd}, nil
}

// Write appends one signature record. Its length must be the header's
// NumPerm. Errors are sticky.
func (w *Writer) Write(sig Signature) error {
	if w.err != nil {
		return w.err
	}
	if len(sig) != w.hd.NumPerm {
		return fmt.Errorf("%w: %d slots, header says %d", ErrLength, len(sig), w.hd.NumPerm)
	}
	payload, err := AppendEncode(w.buf[:0], sig, w.hd.Encoding, w.hd.Bits)
	if err != nil {
		w.err = err
		return err
	}
	var lenBuf [binary.MaxVarintLen32]byte
	n := binary.PutUvarint(lenBuf[:], uint64(len(payload)))
	payload = binary.LittleEndian.AppendUint32(payload, crc32.Checksum(payload, castagnoli))
	w.buf = payload
	if _, err := w.w.Write(lenBuf[:n]); err != nil {
		w.err = err
		return err
	}
	if _, err := w.w.Write(payload); err != nil {
		w.err = err
		return err
	}
	return nil
}

// Reader reads a signature file written by Writer. It refuses files of
// newer versions (ErrVersion) and reports corruption with ErrFormat, giving
// the record number. The Signature returned after Next is reused by the
// following call.
type Reader struct {
	r   *bufio.Reader
	hd  Header
	buf []byte
	sig Signature
	n   int // records read
	err error
}

// NewReader reads and validates the header of r.
func NewReader(r io.Reader) (*Reader, error) {
	br := bufio.NewReader(r)
	var b [headerSize]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: short header", ErrFormat)
		}
		return nil, err
	}
	if string(b[:4]) != magic {
		return nil, fmt.Errorf("%w: not a signature file (bad magic)", ErrFormat)
	}
	hd := Header{
		Version:  int(b[4]),
		Encoding: Encoding(b[5]),
		Family:   familyOfWire(b[6]),
		Bits:     int(b[7]),
		NumPerm:  int(binary.LittleEndian.Uint32(b[8:])),
		Seed:     binary.LittleEndian.Uint64(b[12:]),
	}
	// The version comes before the checksum: a newer version may lay out
	// the rest of its header differently.
	if hd.Version != FormatVersion {
		return nil, fmt.Errorf("%w %d (this build reads version %d)", ErrVersion, hd.Version, FormatVersion)
	}
	if got, want := binary.LittleEndian.Uint32(b[20:]), crc32.Checksum(b[:20], castagnoli); got != want {
		return nil, fmt.Errorf("%w: header checksum mismatch", ErrFormat)
	}
	if err := hd.validate(); err != nil {
		return nil, err
	}
	return &Reader{r: br, hd: hd}, nil
}

// Header returns the file's header.
func (r *Reader) Header() Header { return r.hd }

// Next reads the next signature and reports whether there was one.
func (r *Reader) Next() bool {
	if r.err != nil {
		return false
	}
	size, err := binary.ReadUvarint(r.r)
	if err != nil {
		if err != io.EOF {
			r.err = fmt.Errorf("%w: record %d: length: %v", ErrFormat, r.n, err)
		}
		return false
	}
	if size > uint64(r.hd.maxPayload()) {
		r.err = fmt.Errorf("%w: record %d: length %d above %d", ErrFormat, r.n, size, r.hd.maxPayload())
		return false
	}
	need := int(size) + 4
	if cap(r.buf) < need {
		r.buf = make([]byte, need)
	}
	r.buf = r.buf[:need]
	if _, err := io.ReadFull(r.r, r.buf); err != nil {
		r.err = fmt.Errorf("%w: record %d: truncated", ErrFormat, r.n)
		return false
	}
	payload := r.buf[:size]
	if got, want := binary.LittleEndian.Uint32(r.buf[size:]), crc32.Checksum(payload, castagnoli); got != want {
		r.err = fmt.Errorf("%w: record %d: checksum mismatch", ErrFormat, r.n)
		return false
	}
	r.sig, err = Decode(r.sig, payload, r.hd.Encoding, r.hd.Bits, r.hd.NumPerm)
	if err != nil {
		r.err = fmt.Errorf("record %d: %w", r.n, err)
		return false
	}
	r.n++
	return true
}

// Signature returns the signature read by the last successful Next. It is
// overwritten by the next call.
func (r *Reader) Signature() Signature { return r.sig }

// Err returns the first error met, nil at a clean end of file.
func (r *Reader) Err() error { return r.err }

// AppendBottom appends a bottom-s sketch (sorted ascending, no repeats, as
// Bottom.Sketch makes it) in the delta/varint encoding: the number of
// values as a uvarint, then the first value and each difference to the
// previous one as uvarints. It returns an error, leaving dst as it was, for
// a sketch that is not strictly increasing or longer than MaxNumPerm.
func AppendBottom(dst []byte, sketch []uint64) ([]byte, error) {
	if len(sketch) > MaxNumPerm {
		return dst, fmt.Errorf("%w: bottom sketch of %d values", ErrFormat, len(sketch))
	}
	for i := 1; i < len(sketch); i++ {
		if sketch[i] <= sketch[i-1] {
			return dst, fmt.Errorf("%w: bottom sketch not strictly increasing at %d", ErrFormat, i)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(sketch)))
	prev := uint64(0)
	for _, v := range sketch {
		dst = binary.AppendUvarint(dst, v-prev)
		prev = v
	}
	return dst, nil
}

// DecodeBottom decodes one sketch written by AppendBottom from src (which
// must hold exactly that) into dst[:0]. Errors wrap ErrFormat.
func DecodeBottom(dst []uint64, src []byte) ([]uint64, error) {
	n, w := binary.Uvarint(src)
	if w <= 0 || n > MaxNumPerm {
		return dst[:0], fmt.Errorf("%w: bad bottom sketch length", ErrFormat)
	}
	src = src[w:]
	dst = dst[:0]
	prev := uint64(0)
	for i := range int(n) {
		d, w := binary.Uvarint(src)
		if w <= 0 {
			return dst, fmt.Errorf("%w: bad varint at value %d", ErrFormat, i)
		}
		if i > 0 && d == 0 {
			return dst, fmt.Errorf("%w: repeated value at %d", ErrFormat, i)
		}
		v := prev + d
		if v < prev {
			return dst, fmt.Errorf("%w: value %d overflows", ErrFormat, i)
		}
		dst = append(dst, v)
		prev = v
		src = src[w:]
	}
	if len(src) != 0 {
		return dst, fmt.Errorf("%w: %d trailing bytes", ErrFormat, len(src))
	}
	return dst, nil
}
