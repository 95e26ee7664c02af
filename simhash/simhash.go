// Package simhash computes SimHash fingerprints (Charikar, "Similarity
// estimation techniques from rounding algorithms", STOC 2002) of weighted
// features, and finds fingerprints within a Hamming distance with the
// permuted-table index of Manku, Jain and Das Sarma ("Detecting
// near-duplicates for web crawling", WWW 2007).
//
// # Fingerprints
//
// Every feature (a 64-bit shingle hash from package shingle, or any 64-bit
// id) is mapped to an f-bit hash whose bits are independent and uniformly
// distributed: the feature is mixed with a seeded bijective finaliser
// (murmur3's fmix64; a second, differently seeded one gives bits 64..127).
// Seed 002 explains why this matters: with biased bits (for example short
// hashes padded with zeros) most fingerprints share their high blocks and
// the index collapses into a few huge buckets. For bit i the weights of the
// features whose hash has bit i set are added and those of the others
// subtracted; bit i of the fingerprint is 1 when the sum is positive (a sum
// of exactly 0 gives 0). The fingerprint has Options.Bits bits (default 64,
// at most 128); the CLI offers 64 and 128.
//
// Weights:
//
//   - by count (the default): AddFeatures adds every occurrence with weight
//     1, so a feature that occurs c times weighs c. This path uses integer
//     SWAR counters (eight bits per 64-bit add) and does not allocate.
//   - TF-IDF: AddIDF weighs every occurrence by the feature's inverse
//     document frequency, so a feature weighs tf·idf. The IDF table is
//     learned in a first pass over the corpus (IDFBuilder, LearnIDF) or read
//     from a file (ReadIDF, LoadIDF).
//   - given by the caller: Add(feature, weight) or AddHash(hash, weight) for
//     a pre-computed hash (no mixing; the seed 004 example).
//
// Seed 004's example: weights 5, 2, 3, 1, 4 on the 6-bit hashes 100101,
// 101011, 100111, 101111, 111011 sum to [15, -7, -1, 3, 5, 15] (leftmost
// bit first) and give the fingerprint 100111.
//
// # Distance
//
// Fingerprint.Distance is the Hamming distance, by popcount of the XOR.
// Two documents with cosine similarity θ between their weighted feature
// vectors differ in each bit with probability θ/π, so the distance
// concentrates around f·θ/π; Manku et al. use f = 64 and k = 3 for web
// pages.
//
// # Index
//
// Index holds fingerprints and returns those within distance k of a query,
// exactly: the fingerprint is cut into b blocks and every choice of b−k
// blocks is the key of one table, so two fingerprints within k, which
// differ in at most k blocks, share the key of at least one table (b = k+1
// is the pigeonhole case: 4 tables of 16 bits for f = 64, k = 3). ChooseDesign
// picks b from (N, f, k) by minimising the expected cost of a probe (tables
// looked up plus candidates checked, for uniformly random fingerprints)
// under a limit on the number of tables, or as the fewest tables that keep
// the expected candidates per probe under a bound
// (DesignOptions.MaxCandidates); Design.String says what was chosen. AllPairs finds every pair of a batch within k, sorting one table
// at a time, in memory linear in N. Both return exactly what a linear scan
// returns; the tests check it against one for k from 0 to 8.
//
// # Concurrency
//
// A Hasher keeps accumulators and is not safe for concurrent use: one per
// goroutine. An Index is not safe for concurrent use. An IDF is read-only
// once built and safe for concurrent use; an IDFBuilder is not.
//
// # Errors
//
// Constructors validate their options (ErrBits, ErrDistance). ReadIDF
// returns ErrIDFFormat, wrapped with the line number, for input that does
// not parse; LoadIDF adds the file name. Nothing panics on input.
package simhash

import (
	"errors"
	"fmt"
	"math/bits"

	"github.com/neardup/neardup/internal/mix"
)

// DefaultSeed seeds the feature hash when Options.Seed is zero. Changing it
// changes every fingerprint, so it is fixed forever.
const DefaultSeed uint64 = 0x73696d6861736831 // "simhash1"

// MaxBits is the largest fingerprint size.
const MaxBits = 128

// ErrBits is returned for a fingerprint size outside 1..MaxBits.
var ErrBits = errors.New("simhash: bits must be between 1 and 128")

// Fingerprint is a SimHash fingerprint of up to 128 bits: bits 0..63 in Lo,
// bits 64..127 in Hi. A fingerprint of 64 bits or fewer has Hi == 0.
type Fingerprint struct{ Hi, Lo uint64 }

// Distance returns the Hamming distance between a and b.
func (a Fingerprint) Distance(b Fingerprint) int {
	return bits.OnesCount64(a.Hi^b.Hi) + bits.OnesCount64(a.Lo^b.Lo)
}

// Bit returns bit i (0 is the least significant) as 0 or 1.
func (a Fingerprint) Bit(i int) uint {
	if i >= 64 {
		return uint(a.Hi>>(uint(i)-64)) & 1
	}
	return uint(a.Lo>>uint(i)) & 1
}

const hexDigits = "0123456789abcdef"

// AppendHex appends the lowest nbits bits of a as ceil(nbits/4) lowercase
// hex digits, most significant first (16 digits for 64 bits, 32 for 128).
func (a Fingerprint) AppendHex(dst []byte, nbits int) []byte {
	nbits = min(max(nbits, 1), MaxBits)
	for d := (nbits+3)/4 - 1; d >= 0; d-- {
		var w uint64
		if d >= 16 {
			w = a.Hi >> (uint(d-16) * 4)
		} else {
			w = a.Lo >> (uint(d) * 4)
		}
		dst = append(dst, hexDigits[w&15])
	}
	return dst
}

// ParseHex parses what AppendHex writes: 1 to 32 hex digits (either case).
// It returns the fingerprint and its size in bits, 4 per digit.
func ParseHex(s string) (Fingerprint, int, error) {
	if len(s) == 0 || len(s) > 32 {
		return Fingerprint{}, 0, fmt.Errorf("simhash: fingerprint %q: want 1 to 32 hex digits", s)
	}
	var fp Fingerprint
	for i := 0; i < len(s); i++ {
		c := s[i]
		var v uint64
		switch {
		case c >= '0' && c <= '9':
			v = uint64(c - '0')
		case c >= 'a' && c <= 'f':
			v = uint64(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = uint64(c-'A') + 10
		default:
			return Fingerprint{}, 0, fmt.Errorf("simhash: fingerprint %q: %q is not a hex digit", s, c)
		}
		fp.Hi = fp.Hi<<4 | fp.Lo>>60
		fp.Lo = fp.Lo<<4 | v
	}
	return fp, 4 * len(s), nil
}

// Options configures a Hasher. The zero value means 64 bits and
// DefaultSeed.
type Options struct {
	// Bits is the fingerprint size, 1..128; 0 means 64.
	Bits int
	// Seed seeds the feature hash; 0 means DefaultSeed.
	Seed uint64
}

// Hasher accumulates weighted features and returns their fingerprint. The
// zero value is not usable; call New. Not safe for concurrent use.
type Hasher struct {
	nbits       int
	seed, seed2 uint64
	mask        Fingerprint

	// Count path: SWAR byte lanes. Lane b of acc[j] counts the features
	// whose hash has bit 8b+j set (acc[8+j] for bits 64+8b+j), flushed into
	// cnt every 255 features so a lane never overflows.
	acc  [16]uint64
	pend int
	cnt  [MaxBits]int64
	n    int64 // features added by count

	// Weighted path: w[i] is the weight of the features with bit i set,
	// wsum the weight of all of them.
	w        [MaxBits]float64
	wsum     float64
	weighted bool
}

// New returns a Hasher for opts.
func New(opts Options) (*Hasher, error) {
	if opts.Bits == 0 {
		opts.Bits = 64
	}
	if opts.Bits < 1 || opts.Bits > MaxBits {
		return nil, fmt.Errorf("%w (got %d)", ErrBits, opts.Bits)
	}
	if opts.Seed == 0 {
		opts.Seed = DefaultSeed
	}
	h := &Hasher{nbits: opts.Bits, seed: opts.Seed, seed2: mix.Fmix64(opts.Seed ^ 0x9e3779b97f4a7c15)}
	h.mask = maskOf(opts.Bits)
	return h, nil
}

func maskOf(nbits int) Fingerprint {
	switch {
	case nbits >= 128:
		return Fingerprint{^uint64(0), ^uint64(0)}
	case nbits > 64:
		return Fingerprint{^uint64(0) >> (128 - uint(nbits)), ^uint64(0)}
	case nbits == 64:
		return Fingerprint{0, ^uint64(0)}
	}
	return Fingerprint{0, ^uint64(0) >> (64 - uint(nbits))}
}

// Bits returns the fingerprint size.
func (h *Hasher) Bits() int { return h.nbits }

// Seeds returns the seeds of the feature hash: bits 0-63 of a feature's
// hash are Fmix64(feature ^ lo), bits 64-127 Fmix64(feature ^ hi) (for
// implementations elsewhere, such as the GPU kernel of internal/gpu).
func (h *Hasher) Seeds() (lo, hi uint64) { return h.seed, h.seed2 }

// FeatureHash returns the hash of a feature as the Hasher uses it: its
// lowest Bits() bits are independent and uniformly distributed.
func (h *Hasher) FeatureHash(feature uint64) Fingerprint {
	fp := Fingerprint{Lo: mix.Fmix64(feature ^ h.seed)}
	if h.nbits > 64 {
		fp.Hi = mix.Fmix64(feature ^ h.seed2)
	}
	fp.Hi &= h.mask.Hi
	fp.Lo &= h.mask.Lo
	return fp
}

// Reset forgets every feature added.
func (h *Hasher) Reset() {
	h.acc = [16]uint64{}
	h.pend = 0
	h.cnt = [MaxBits]int64{}
	h.n = 0
	if h.weighted {
		h.w = [MaxBits]float64{}
		h.wsum = 0
		h.weighted = false
	}
}

const lanes = 0x0101010101010101

// AddFeatures adds every feature with weight 1; a feature repeated c times
// weighs c (weights by count). It does not allocate.
func (h *Hasher) AddFeatures(features []uint64) {
	wide := h.nbits > 64
	for _, x := range features {
		lo := mix.Fmix64(x ^ h.seed)
		a := &h.acc
		a[0] += lo & lanes
		a[1] += (lo >> 1) & lanes
		a[2] += (lo >> 2) & lanes
		a[3] += (lo >> 3) & lanes
		a[4] += (lo >> 4) & lanes
		a[5] += (lo >> 5) & lanes
		a[6] += (lo >> 6) & lanes
		a[7] += (lo >> 7) & lanes
		if wide {
			hi := mix.Fmix64(x ^ h.seed2)
			a[8] += hi & lanes
			a[9] += (hi >> 1) & lanes
			a[10] += (hi >> 2) & lanes
			a[11] += (hi >> 3) & lanes
			a[12] += (hi >> 4) & lanes
			a[13] += (hi >> 5) & lanes
			a[14] += (hi >> 6) & lanes
			a[15] += (hi >> 7) & lanes
		}
		h.pend++
		if h.pend == 255 {
			h.flush()
		}
	}
	h.n += int64(len(features))
}

// flush moves the SWAR lanes into the counters.
func (h *Hasher) flush() {
	words := 8
	if h.nbits > 64 {
		words = 16
	}
	for j := 0; j < words; j++ {
		x := h.acc[j]
		base := j / 8 * 64 // 0 for the low word, 64 for the high one
		jj := j & 7
		for b := 0; b < 8; b++ {
			h.cnt[base+8*b+jj] += int64(x >> (8 * uint(b)) & 0xff)
		}
		h.acc[j] = 0
	}
	h.pend = 0
}

// Add adds one feature with the given weight (weights given by the caller).
// A negative weight counts against the feature's bits.
func (h *Hasher) Add(feature uint64, weight float64) {
	h.AddHash(h.FeatureHash(feature), weight)
}

// AddHash adds a feature by its hash, used as given (no mixing, only its
// lowest Bits() bits), with the given weight. Use it for hashes computed
// elsewhere; their bits must be uniformly distributed for the index to
// work well.
func (h *Hasher) AddHash(hash Fingerprint, weight float64) {
	h.weighted = true
	h.wsum += weight
	addBytes(h.w[:64], hash.Lo&h.mask.Lo, weight)
	if h.nbits > 64 {
		addBytes(h.w[64:], hash.Hi&h.mask.Hi, weight)
	}
}

// byteBits[b][j] is bit j of b as 0 or 1, so that the weighted path adds
// without converting bits to floats one by one.
var byteBits = func() (t [256][8]float64) {
	for b := range t {
		for j := range t[b] {
			t[b][j] = float64(b >> j & 1)
		}
	}
	return t
}()

// addBytes adds weight to w[i] for every set bit i of x (len(w) >= 64).
func addBytes(w []float64, x uint64, weight float64) {
	w = w[:64]
	for b := 0; b < 8; b++ {
		t := &byteBits[x>>(8*uint(b))&0xff]
		v := w[8*b : 8*b+8 : 8*b+8]
		v[0] += weight * t[0]
		v[1] += weight * t[1]
		v[2] += weight * t[2]
		v[3] += weight * t[3]
		v[4] += weight * t[4]
		v[5] += weight * t[5]
		v[6] += weight * t[6]
		v[7] += weight * t[7]
	}
}

// AddIDF adds every feature with weight idf.Weight(feature): a feature
// repeated c times weighs c·idf (TF-IDF with raw term frequency). It does
// not allocate.
func (h *Hasher) AddIDF(features []uint64, idf *IDF) {
	for _, x := range features {
		h.Add(x, idf.Weight(x))
	}
}

// AppendSums appends the weight sum of every bit, bit 0 first, to dst: a
// bit of the fingerprint is 1 when its sum is positive.
func (h *Hasher) AppendSums(dst []float64) []float64 {
	if h.pend > 0 {
		h.flush()
	}
	for i := 0; i < h.nbits; i++ {
		s := float64(2*h.cnt[i] - h.n)
		if h.weighted {
			s += 2*h.w[i] - h.wsum
		}
		dst = append(dst, s)
	}
	return dst
}

// Sum returns the fingerprint of the features added since the last Reset.
// It does not reset the Hasher.
func (h *Hasher) Sum() Fingerprint {
	if h.pend > 0 {
		h.flush()
	}
	var fp Fingerprint
	for i := 0; i < h.nbits; i++ {
		var pos bool
		if h.weighted {
			pos = float64(2*h.cnt[i]-h.n)+2*h.w[i]-h.wsum > 0
		} else {
			pos = 2*h.cnt[i] > h.n
		}
		if pos {
			if i >= 64 {
				fp.Hi |= 1 << uint(i-64)
			} else {
				fp.Lo |= 1 << uint(i)
			}
		}
	}
	return fp
}

// Hash returns the fingerprint of features weighted by count: Reset,
// AddFeatures, Sum. It does not allocate.
func (h *Hasher) Hash(features []uint64) Fingerprint {
	h.Reset()
	h.AddFeatures(features)
	return h.Sum()
}
