package store

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// A document's shingle set, as a record keeps it (docs/format/store.md,
// "Shingle sets"): the sorted, distinct 64-bit shingle hashes, coded by
// their gaps with a Golomb-Rice code. The hashes are uniform, so their
// gaps are nearly geometric, and a Rice code with k = floor(log2(max/n))
// low bits takes about k + 2 bits a hash: 7.3 bytes a hash for a 1 KB
// document (about 170 hashes) where the raw hashes take 8 and their
// uvarint gaps 9 (docs/bench/store.md). The value is
//
//	uvarint n       the number of hashes, at least 1
//	byte    k       the Rice parameter, at most 63
//	bits            n codes, least significant bit first: gap g (the first
//	                hash itself, then each hash minus the one before it,
//	                minus one) as q = g >> k one-bits, a zero bit, then the
//	                k low bits of g, low bit first; zero bits pad the last
//	                byte
//
// With k chosen so, the n quotients sum to less than 2n, so a set of n
// hashes takes at most n(k + 3) bits whatever the hashes are.

// appendSet appends the code of set (sorted, distinct, not empty) to dst.
func appendSet(dst []byte, set []uint64) []byte {
	n := len(set)
	dst = binary.AppendUvarint(dst, uint64(n))
	k := riceParam(set[n-1], n)
	dst = append(dst, byte(k))
	w := bitWriter{dst: dst}
	prev := uint64(0)
	for i, h := range set {
		g := h - prev
		if i > 0 {
			g-- // ascending: every later gap is at least 1
		}
		prev = h
		q := g >> k
		for ; q >= 48; q -= 48 {
			w.put(1<<48-1, 48)
		}
		w.put(1<<q-1, uint(q)+1) // q ones, then the zero
		w.put(g&(1<<k-1), k)
	}
	return w.finish()
}

// riceParam is floor(log2(max/n)), 0 when max < n.
func riceParam(max uint64, n int) uint {
	r := max / uint64(n)
	if r == 0 {
		return 0
	}
	return uint(bits.Len64(r) - 1)
}

// bitWriter appends bits to dst, least significant first.
type bitWriter struct {
	dst []byte
	acc uint64
	n   uint // bits in acc, fewer than 8 between calls
}

// put appends the width low bits of v (width at most 63): acc holds
// fewer than 8 bits between calls, so up to 56 go in at once.
func (w *bitWriter) put(v uint64, width uint) {
	if width > 56 {
		w.put(v&(1<<32-1), 32)
		v, width = v>>32, width-32
	}
	w.acc |= (v & (1<<width - 1)) << w.n
	w.n += width
	for w.n >= 8 {
		w.dst = append(w.dst, byte(w.acc))
		w.acc >>= 8
		w.n -= 8
	}
}

func (w *bitWriter) finish() []byte {
	if w.n > 0 {
		w.dst = append(w.dst, byte(w.acc))
	}
	return w.dst
}

// decodeSet decodes a set coded by appendSet, the whole of src, into dst
// (reused). Anything else (truncated, trailing bytes, bits set in the
// padding, hashes that overflow or do not ascend, a k or a length that
// appendSet would not write) is ErrCorrupt: a set has one code.
func decodeSet(dst []uint64, src []byte) ([]uint64, error) {
	dst = dst[:0]
	n, w := binary.Uvarint(src)
	if w <= 0 || w != len(binary.AppendUvarint(nil, n)) || n == 0 || len(src) < w+1 {
		return dst, fmt.Errorf("%w: shingle set length", ErrCorrupt)
	}
	k := uint(src[w])
	src = src[w+1:]
	if k > 63 || n > uint64(len(src))*8/(uint64(k)+1) {
		return dst, fmt.Errorf("%w: shingle set of %d hashes, k %d, in %d bytes", ErrCorrupt, n, k, len(src))
	}
	// Each hash is read from one 64-bit window of src (the 8 bytes at its
	// first bit) when src has them and its code fits in the window
	// (q+1+k bits: almost always); else by the bit reader (readHash).
	prev, pos := uint64(0), uint(0) // pos: the next hash's first bit
	for i := range n {
		var q, low uint64
		ok := false
		if int(pos>>3)+8 <= len(src) {
			w := binary.LittleEndian.Uint64(src[pos>>3:]) >> (pos & 7)
			t := uint(bits.TrailingZeros64(^w))
			if ok = t+1+k <= 64-pos&7; ok {
				q, low = uint64(t), w>>(t+1)&(1<<k-1)
				pos += t + 1 + k
			}
		}
		if !ok {
			if q, low, pos, ok = readHash(src, pos, k); !ok {
				return dst, fmt.Errorf("%w: shingle set truncated at hash %d of %d", ErrCorrupt, i, n)
			}
		}
		if q > ^uint64(0)>>k {
			return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
		}
		g := q<<k | low
		if i > 0 {
			if g == ^uint64(0) {
				return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
			}
			g++
		}
		if g > ^prev {
			return dst, fmt.Errorf("%w: shingle set hash %d of %d overflows", ErrCorrupt, i, n)
		}
		prev += g
		dst = append(dst, prev)
	}
	r := bitReaderAt(src, pos)
	if riceParam(prev, int(n)) != k {
		return dst, fmt.Errorf("%w: shingle set coded with k %d, want %d", ErrCorrupt, k, riceParam(prev, int(n)))
	}
	if !r.done() {
		return dst, fmt.Errorf("%w: shingle set: trailing bits", ErrCorrupt)
	}
	return dst, nil
}

// readHash reads a hash's code (a run of ones, its zero, k bits) at bit
// pos of src with a bit reader, and returns the run's length, the k bits
// and the bit after them; false when src ends first.
func readHash(src []byte, pos, k uint) (q, low uint64, next uint, ok bool) {
	r := bitReaderAt(src, pos)
	if q, ok = r.ones(); !ok {
		return 0, 0, 0, false
	}
	if low, ok = r.get(k); !ok {
		return 0, 0, 0, false
	}
	return q, low, uint(8*(len(src)-len(r.src))) - r.n, true
}

// bitReaderAt is a bit reader of src from its bit pos (at most its bits).
func bitReaderAt(src []byte, pos uint) bitReader {
	r := bitReader{src: src[pos>>3:]}
	r.get(pos & 7)
	return r
}

// bitReader reads bits from src, least significant first.
type bitReader struct {
	src []byte
	acc uint64
	n   uint // bits in acc
}

// fill tops acc up to more than 56 bits, or to the end of src: whole
// bytes, 8 at a time where src has them. Bits of acc above n stay zero.
func (r *bitReader) fill() {
	if len(r.src) >= 8 && r.n <= 56 {
		take := (64 - r.n) / 8
		word := binary.LittleEndian.Uint64(r.src)
		if take < 8 {
			word &= 1<<(take*8) - 1
		}
		r.acc |= word << r.n
		r.src = r.src[take:]
		r.n += take * 8
		return
	}
	for r.n <= 56 && len(r.src) > 0 {
		r.acc |= uint64(r.src[0]) << r.n
		r.src = r.src[1:]
		r.n += 8
	}
}

// get reads width bits (at most 63); false when src ends first.
func (r *bitReader) get(width uint) (uint64, bool) {
	if width > 56 {
		lo, ok := r.get(32)
		if !ok {
			return 0, false
		}
		hi, ok := r.get(width - 32)
		return lo | hi<<32, ok
	}
	if r.n < width {
		r.fill()
		if r.n < width {
			return 0, false
		}
	}
	v := r.acc & (1<<width - 1)
	r.acc >>= width
	r.n -= width
	return v, true
}

// ones reads a run of one-bits and the zero-bit that ends it, and returns
// the run's length; false when src ends first.
func (r *bitReader) ones() (uint64, bool) {
	var q uint64
	for {
		if r.n == 0 || r.acc == 1<<r.n-1 {
			// Every bit in acc is a one (or acc is empty): take them.
			q += uint64(r.n)
			r.acc, r.n = 0, 0
			r.fill()
			if r.n == 0 {
				return 0, false
			}
			continue
		}
		t := uint(bits.TrailingZeros64(^r.acc)) // < r.n: a zero is in acc
		q += uint64(t)
		r.acc >>= t + 1
		r.n -= t + 1
		return q, true
	}
}

// done reports whether only zero padding (fewer than 8 bits) is left.
func (r *bitReader) done() bool { return len(r.src) == 0 && r.n < 8 && r.acc == 0 }
