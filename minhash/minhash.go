// Package minhash computes MinHash signatures of shingle sets and estimates
// their Jaccard similarity (Broder, "On the resemblance and containment of
// documents", 1997; seed 003 of the design).
//
// # Signatures
//
// A Signature is K 32-bit slots (K = Options.NumPerm, default
// DefaultNumPerm). Slot i holds the minimum of h_i(x) over the shingle
// hashes x of a document (the uint64 hashes of package shingle; repeats are
// harmless, order does not matter). Two sets A and B agree in a slot with probability J(A, B) (up to
// the 2^-32 chance of a 32-bit collision), so the fraction of equal slots,
// Estimate, is an unbiased estimator of the Jaccard similarity with variance
// J(1-J)/K: a standard error of at most 0.044 at K = 128, 0.031 at K = 256.
//
// Three hash families are provided (Options.Family):
//
//   - Permutation, the reference: h_i(x) = ((a_i*x + b_i) mod p) mod 2^32
//     with the Mersenne prime p = 2^61-1, a_i in [1, p) and b_i in [0, p)
//     drawn from a SplitMix64 stream started at the seed (the same family as
//     datasketch's MinHash). Exact 128-bit arithmetic.
//   - MultiplyShift: h_i(x) = (a_i*x + b_i) >> 32 in 64-bit arithmetic, with
//     a_i odd (Dietzfelbinger's multiply-add-shift). Same estimator and
//     variance (tested), about 2.5 times as fast; cost O(N*K) for N
//     shingles. On amd64 CPUs with AVX-512 (F and DQ) an assembly kernel
//     (ms_amd64.s, in the default build; the build tag purego leaves it
//     out) computes 8 slots per instruction, with identical results (tested
//     against the portable code). Measurements: docs/bench/minhash.md.
//   - OPH: one permutation hashing (Li, Owen and Zhang, NIPS 2012) with
//     optimal densification (Shrivastava, ICML 2017). Each shingle is hashed
//     once into one of K bins and each bin keeps its minimum; an empty bin
//     copies the value of the first non-empty bin along a probe sequence
//     that depends only on the bin number and the seed, so that the two
//     documents of a pair probe alike. Each slot still collides with
//     probability exactly J (the estimator stays unbiased), the cost is
//     O(N + K) instead of O(N*K), but when N is well below K the slots are
//     correlated (copies of the same bins): the variance of Estimate is
//     larger than J(1-J)/K and LSH banding sees fewer independent rows than
//     it assumes. Prefer it for documents with at least K shingles.
//
// The bottom-s sketch of seed 003 (the s smallest hashes of a set, and the
// estimator |MIN_s(S(A) ∪ S(B)) ∩ S(A) ∩ S(B)| / |MIN_s(S(A) ∪ S(B))|) is
// Bottom; it also estimates the sizes of sets and of unions.
//
// # Empty sets
//
// A document with no shingles has the signature whose every slot is Empty
// (0xFFFFFFFF). Two such signatures estimate 1 (two empty sets are equal, as
// in package jaccard); an empty and a non-empty signature estimate 0.
// IsEmpty reports it, so that indexes can skip such documents.
//
// # Encodings
//
// Signatures are stored with the versioned binary format of
// docs/format/minhash-signature.md (Writer, Reader): raw 32-bit slots,
// b-bit minhash (Li and König, WWW 2010; lossy, with its own estimator
// EstimateBBit) or unsigned varints. The header carries the family, K and
// seed; Header.Check refuses signatures made with other parameters.
// Bottom-s sketches, sorted 64-bit values, have a delta/varint encoding
// (AppendBottom, DecodeBottom): the gaps between the s smallest of N
// hashes are about 2^64/N, so it saves about log2(N)/8 bytes a value.
// Measured sizes are in docs/format/minhash-signature.md.
//
// # Concurrency and errors
//
// A Hasher is immutable after New and safe for concurrent use; Sign writes
// only to the slice it is given and does not allocate when that slice has
// capacity for K slots. A Bottom keeps scratch space and is not safe for
// concurrent use. Errors are returned for invalid options (ErrNumPerm,
// ErrFamily), signatures of different lengths (ErrLength), families that
// cannot merge (ErrMerge), and malformed, newer or mismatching encoded data
// (ErrFormat, ErrVersion, ErrMismatch). Nothing panics on input.
package minhash

import (
	"errors"
	"fmt"
	"math"
	"math/bits"

	"github.com/neardup/neardup/internal/mix"
)

// DefaultNumPerm is the number of slots when Options.NumPerm is zero.
const DefaultNumPerm = 128

// MaxNumPerm is the largest number of slots accepted.
const MaxNumPerm = 1 << 16

// DefaultSeed seeds the hash families when Options.Seed is zero. It is part
// of every persisted signature's meaning and is fixed forever.
const DefaultSeed uint64 = 0x6d696e6861736831 // "minhash1"

// Empty is the value of every slot of the signature of an empty set.
const Empty uint32 = math.MaxUint32

// mersenne61 is the Mersenne prime 2^61-1 of the Permutation family.
const mersenne61 = 1<<61 - 1

// Errors returned by the package.
var (
	ErrNumPerm  = errors.New("minhash: number of permutations must be between 1 and 65536")
	ErrFamily   = errors.New("minhash: unknown hash family")
	ErrLength   = errors.New("minhash: signatures of different lengths")
	ErrMerge    = errors.New("minhash: signatures of this family cannot be merged")
	ErrFormat   = errors.New("minhash: malformed signature data")
	ErrVersion  = errors.New("minhash: unsupported signature format version")
	ErrMismatch = errors.New("minhash: signature parameters do not match")
)

// Family is a family of hash functions standing in for random permutations.
type Family uint8

const (
	// OPH is one permutation hashing with optimal densification: the
	// default (the zero value), about 4x faster to sign than Permutation.
	OPH Family = iota
	// MultiplyShift is (a*x+b)>>32 in 64-bit arithmetic.
	MultiplyShift
	// Permutation is a*x+b mod 2^61-1, kept to 32 bits: the reference.
	Permutation
	numFamilies
)

// wireFamily is the family's byte in the signature file header
// (docs/format/minhash-signature.md), fixed when the constants were in the order
// permutation, multiply-shift, oph: the numbering of the constants may
// change, the bytes on disk do not.
func wireFamily(f Family) byte { return [numFamilies]byte{OPH: 2, MultiplyShift: 1, Permutation: 0}[f] }

// familyOfWire is the inverse of wireFamily; an unknown byte gives
// numFamilies, which validation refuses.
func familyOfWire(b byte) Family {
	switch b {
	case 0:
		return Permutation
	case 1:
		return MultiplyShift
	case 2:
		return OPH
	}
	return numFamilies
}

// String returns the family's name as used on the command line and in
// JSON: "permutation", "multiply-shift" or "oph".
func (f Family) String() string {
	switch f {
	case Permutation:
		return "permutation"
	case MultiplyShift:
		return "multiply-shift"
	case OPH:
		return "oph"
	}
	return fmt.Sprintf("Family(%d)", uint8(f))
}

// ParseFamily parses the names returned by Family.String.
func ParseFamily(s string) (Family, error) {
	for f := range numFamilies {
		if f.String() == s {
			return f, nil
		}
	}
	return 0, fmt.Errorf("%w %q (want permutation, multiply-shift or oph)", ErrFamily, s)
}

// Options configures a Hasher. The zero value means DefaultNumPerm slots of
// the OPH family with DefaultSeed.
type Options struct {
	// NumPerm is the number of slots K; 0 means DefaultNumPerm.
	NumPerm int
	// Family is the hash family; the zero value is OPH.
	Family Family
	// Seed seeds the family's coefficients; 0 means DefaultSeed.
	Seed uint64
}

// Signature is a MinHash signature: one 32-bit minimum per slot.
type Signature []uint32

// Hasher computes signatures. It is immutable and safe for concurrent use.
type Hasher struct {
	k      int
	family Family
	seed   uint64
	a, b   []uint64 // per-slot coefficients (Permutation, MultiplyShift)
	probe  uint64   // densification seed (OPH)
}

// New returns a Hasher for opts.
func New(opts Options) (*Hasher, error) {
	if opts.NumPerm == 0 {
		opts.NumPerm = DefaultNumPerm
	}
	if opts.NumPerm < 1 || opts.NumPerm > MaxNumPerm {
		return nil, fmt.Errorf("%w (got %d)", ErrNumPerm, opts.NumPerm)
	}
	if opts.Family >= numFamilies {
		return nil, fmt.Errorf("%w (%d)", ErrFamily, opts.Family)
	}
	if opts.Seed == 0 {
		opts.Seed = DefaultSeed
	}
	h := &Hasher{k: opts.NumPerm, family: opts.Family, seed: opts.Seed}
	rng := splitmix{opts.Seed}
	switch opts.Family {
	case Permutation:
		h.a = make([]uint64, h.k)
		h.b = make([]uint64, h.k)
		for i := range h.a {
			// Rejection sampling keeps a and b uniform on [1, p) and [0, p).
			for h.a[i] == 0 || h.a[i] >= mersenne61 {
				h.a[i] = rng.next() >> 3
			}
			h.b[i] = mersenne61
			for h.b[i] >= mersenne61 {
				h.b[i] = rng.next() >> 3
			}
		}
	case MultiplyShift:
		h.a = make([]uint64, h.k)
		h.b = make([]uint64, h.k)
		for i := range h.a {
			h.a[i] = rng.next() | 1
			h.b[i] = rng.next()
		}
	case OPH:
		h.a = []uint64{rng.next()} // element mixing key
		h.probe = rng.next()
	}
	return h, nil
}

// NumPerm returns the number of slots K.
func (h *Hasher) NumPerm() int { return h.k }

// Family returns the hash family.
func (h *Hasher) Family() Family { return h.family }

// Seed returns the seed (DefaultSeed when Options.Seed was zero).
func (h *Hasher) Seed() uint64 { return h.seed }

// Coefficients returns the family's constants, for implementations of
// the same family elsewhere (the GPU kernel of package internal/gpu):
// multiply-shift's a and b (NumPerm each, nil for the other families;
// they must not be modified), and one permutation hashing's element key
// and densification seed (0 for the other families).
func (h *Hasher) Coefficients() (a, b []uint64, key, probe uint64) {
	if h.family == OPH {
		return nil, nil, h.a[0], h.probe
	}
	if h.family == MultiplyShift {
		return h.a, h.b, 0, 0
	}
	return nil, nil, 0, 0
}

// Sign appends the signature of the set of shingle hashes to dst[:0] and
// returns it. Repeated hashes are allowed and ignored. It does not allocate
// when cap(dst) >= NumPerm (except OPH above 1024 slots, which allocates a
// bitmap of K bits).
func (h *Hasher) Sign(dst Signature, hashes []uint64) Signature {
	dst = grow(dst[:0], h.k)
	for i := range dst {
		dst[i] = Empty
	}
	if len(hashes) == 0 {
		return dst
	}
	switch h.family {
	case Permutation:
		h.signPermutation(dst, hashes)
	case MultiplyShift:
		if !h.signMultiplyShiftSIMD(dst, hashes) {
			h.signMultiplyShift(dst, hashes)
		}
	case OPH:
		h.signOPH(dst, hashes)
	}
	return dst
}

func grow(s Signature, n int) Signature {
	if cap(s) < n {
		return make(Signature, n)
	}
	return s[:n]
}

// modMersenne returns x mod 2^61-1 for x < 2^122 given as hi:lo.
func modMersenne(hi, lo uint64) uint64 {
	// x = hi*2^64 + lo = (hi<<3 | lo>>61)*2^61 + (lo & p), and 2^61 = 1 mod p.
	r := (lo & mersenne61) + (hi<<3 | lo>>61)
	r = (r & mersenne61) + (r >> 61)
	if r >= mersenne61 {
		r -= mersenne61
	}
	return r
}

func (h *Hasher) signPermutation(dst Signature, hashes []uint64) {
	a, b := h.a[:len(dst)], h.b[:len(dst)]
	for _, x := range hashes {
		x = modMersenne(0, x) // x < 2^64 < 2^122
		for i := range dst {
			hi, lo := bits.Mul64(a[i], x)
			lo, c := bits.Add64(lo, b[i], 0)
			hi += c
			v := uint32(modMersenne(hi, lo))
			dst[i] = min(dst[i], clampSlot(v))
		}
	}
}

// clampSlot keeps real values off the Empty marker; the bias is 2^-32.
func clampSlot(v uint32) uint32 {
	if v == Empty {
		return Empty - 1
	}
	return v
}

func (h *Hasher) signMultiplyShift(dst Signature, hashes []uint64) {
	a, b := h.a[:len(dst)], h.b[:len(dst)]
	// Slot-major: one slot's coefficients stay in registers while the
	// shingles stream from L1, and four running minima break the
	// dependency chain of min. The minima are kept on the full 64-bit
	// values a*x+b and shifted once at the end: v -> v>>32 is monotone, so
	// the high half of the minimum is the minimum of the high halves.
	for i := range dst {
		ai, bi := a[i], b[i]
		m0, m1, m2, m3 := ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)
		xs := hashes
		for len(xs) >= 4 {
			m0 = min(m0, ai*xs[0]+bi)
			m1 = min(m1, ai*xs[1]+bi)
			m2 = min(m2, ai*xs[2]+bi)
			m3 = min(m3, ai*xs[3]+bi)
			xs = xs[4:]
		}
		for _, x := range xs {
			m0 = min(m0, ai*x+bi)
		}
		dst[i] = clampSlot(uint32(min(m0, m1, m2, m3) >> 32)) // never the empty marker
	}
}

func (h *Hasher) signOPH(dst Signature, hashes []uint64) {
	k := uint64(len(dst))
	key := h.a[0]
	for _, x := range hashes {
		v := mix.SplitMix64(x ^ key)
		bin := (v >> 32) * k >> 32 // fast range: the high 32 bits choose the bin
		val := clampSlot(uint32(v))
		dst[bin] = min(dst[bin], val)
	}
	// Optimal densification: an empty bin j takes the value of bin
	// probe(j, 1), probe(j, 2), ... until one that hashing filled (copies
	// are never sources). The probe sequence depends only on j and the
	// seed. At least one bin is filled, so the loop ends; the expected
	// number of probes is K/m for m filled bins.
	var small [16]uint64
	filled := small[:]
	if n := (len(dst) + 63) / 64; n > len(small) {
		filled = make([]uint64, n)
	}
	empty := 0
	for j, v := range dst {
		if v != Empty {
			filled[j/64] |= 1 << (j % 64)
		} else {
			empty++
		}
	}
	if empty == 0 {
		return
	}
	for j := range dst {
		if dst[j] != Empty || filled[j/64]&(1<<(j%64)) != 0 {
			continue
		}
		for attempt := uint64(1); ; attempt++ {
			src, _ := bits.Mul64(mix.SplitMix64(h.probe^uint64(j)<<32^attempt), k)
			if filled[src/64]&(1<<(src%64)) != 0 {
				dst[j] = dst[src]
				break
			}
		}
	}
}
