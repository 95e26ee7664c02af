package sketch

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/simhash"
)

// Flags of the binary form of a sketch.
const (
	binEmpty = 1 << iota // no shingles: nothing else follows but the set flag
	binSet               // the shingle set follows the method's payload
	binFlags = binEmpty | binSet
)

// AppendBinary appends the binary form of sk (docs/format/sketch.md) to
// dst: a flags byte (1: empty, 2: a set follows), then unless empty the
// method's payload (MinHash: NumPerm little-endian uint32 slots; SimHash:
// 8 bytes, or 16 for more than 64 bits, little-endian low word first;
// Exact and KSentence: the 16 hash bytes; Jaccard: nothing), then, when
// the sketch has a set (always for Jaccard), its length and the gaps
// between its ascending hashes as uvarints. s must be resolved.
func (s Spec) AppendBinary(dst []byte, sk *Sketch) []byte {
	var flags byte
	if sk.Empty {
		flags |= binEmpty
	}
	if !sk.Empty && (sk.Set != nil || s.Method == Jaccard) {
		flags |= binSet
	}
	dst = append(dst, flags)
	if sk.Empty {
		return dst
	}
	switch s.Method {
	case MinHash:
		for _, v := range sk.Sig {
			dst = binary.LittleEndian.AppendUint32(dst, v)
		}
	case SimHash:
		dst = binary.LittleEndian.AppendUint64(dst, sk.FP.Lo)
		if s.SimHash.Bits > 64 {
			dst = binary.LittleEndian.AppendUint64(dst, sk.FP.Hi)
		}
	case Exact, KSentence:
		dst = append(dst, sk.Hash[:]...)
	}
	if flags&binSet != 0 {
		dst = binary.AppendUvarint(dst, uint64(len(sk.Set)))
		prev := uint64(0)
		for _, h := range sk.Set {
			dst = binary.AppendUvarint(dst, h-prev)
			prev = h
		}
	}
	return dst
}

// DecodeBinary decodes the binary form of a sketch of s into dst, reusing
// dst's Sig and Set, and returns the bytes that follow it. Malformed input
// (truncated, a signature of the wrong length, bits above the fingerprint,
// a set that is not ascending) is an error wrapping ErrSketch; it never
// panics. s must be resolved.
func (s Spec) DecodeBinary(dst *Sketch, src []byte) (rest []byte, err error) {
	sig, set := dst.Sig[:0], dst.Set[:0]
	*dst = Sketch{}
	if len(src) < 1 {
		return src, fmt.Errorf("%w: empty input", ErrSketch)
	}
	flags := src[0]
	src = src[1:]
	if flags&^binFlags != 0 || flags == binEmpty|binSet {
		return src, fmt.Errorf("%w: flags %#x", ErrSketch, flags)
	}
	if flags&binEmpty != 0 {
		dst.Empty = true
		return src, nil
	}
	need := 0
	switch s.Method {
	case MinHash:
		need = 4 * s.MinHash.NumPerm
	case SimHash:
		need = 8
		if s.SimHash.Bits > 64 {
			need = 16
		}
	case Exact, KSentence:
		need = 16
	}
	if len(src) < need {
		return src, fmt.Errorf("%w: %d bytes, want %d for a %s sketch", ErrSketch, len(src), need, s.Method)
	}
	switch s.Method {
	case MinHash:
		sig = minhash.Signature(growUint32(sig, s.MinHash.NumPerm))
		for i := range sig {
			sig[i] = binary.LittleEndian.Uint32(src[4*i:])
		}
		dst.Sig = sig
	case SimHash:
		dst.FP = simhash.Fingerprint{Lo: binary.LittleEndian.Uint64(src)}
		if need == 16 {
			dst.FP.Hi = binary.LittleEndian.Uint64(src[8:])
		}
		lo, hi := FingerprintMask(s.SimHash.Bits)
		if dst.FP.Lo&^lo != 0 || dst.FP.Hi&^hi != 0 {
			return src, fmt.Errorf("%w: fingerprint bits above %d", ErrSketch, s.SimHash.Bits)
		}
	case Exact, KSentence:
		copy(dst.Hash[:], src)
	}
	src = src[need:]
	if flags&binSet == 0 {
		if s.Method == Jaccard {
			return src, fmt.Errorf("%w: a jaccard sketch without its set", ErrSketch)
		}
		return src, nil
	}
	n, w := binary.Uvarint(src)
	if w <= 0 || w != uvarintLen(n) || n == 0 || n > uint64(len(src)-w) { // a set is not empty; each hash takes at least one byte
		return src, fmt.Errorf("%w: set length", ErrSketch)
	}
	src = src[w:]
	set = set[:0]
	prev := uint64(0)
	for i := range n {
		d, w := binary.Uvarint(src)
		if w <= 0 || w != uvarintLen(d) || (i > 0 && d == 0) || d > ^prev {
			return src, fmt.Errorf("%w: set hash %d of %d", ErrSketch, i, n)
		}
		prev += d
		set = append(set, prev)
		src = src[w:]
	}
	dst.Set = set
	return src, nil
}

// uvarintLen is the length of the shortest uvarint of x: a longer one
// (padded with 0x80 bytes) is malformed, so that each sketch has one
// encoding.
func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

func growUint32(s []uint32, n int) []uint32 {
	if cap(s) < n {
		return make([]uint32, n)
	}
	return s[:n]
}
