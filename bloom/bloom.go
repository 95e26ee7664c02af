// Package bloom implements a Bloom filter (Bloom, "Space/time trade-offs
// in hash coding with allowable errors", CACM 1970) that is safe for
// concurrent adds and tests, can be saved, loaded and merged, and is sized
// from the number of items and the false-positive probability.
//
// # Sizing
//
// For n items and a false-positive probability p (seed 001):
//
//	m = -n ln p / (ln 2)²      bits
//	k = (m / n) ln 2           hash functions (rounded, at least 1)
//	FPP = (1 - e^(-kn/m))^k    the false-positive probability after n adds
//
// so p = 1e-6 costs 28.8 bits and 20 hash functions per item. Optimal
// returns (m, k); FPP evaluates the formula for any (n, m, k). The filter
// never gives a false negative.
//
// # Hashing
//
// A key is hashed once with 128-bit XXH3 (seeded; DefaultSeed unless
// Options.Seed is set) and the k bit positions are derived from the two
// 64-bit halves by enhanced double hashing (Kirsch and Mitzenmacher, "Less
// hashing, same performance", 2006; Dillinger and Manolios 2004): g_i = h1 +
// i·h2 + (i³ - i)/6, each reduced to [0, m) by a multiply-shift. A key that
// is already a 64-bit hash (a shingle) is mixed into the two halves instead
// (AddHash, TestHash). This is a classic (unblocked) filter: every probe
// touches up to k cache lines, but its false-positive rate follows the
// formula; the tests measure it, and docs/bench/simbloom.md on real text.
//
// # Concurrency
//
// Add, Test and their variants may be called from many goroutines at once:
// bits are set with atomic OR and read with atomic loads. Add reports
// whether every bit was already set, so of two goroutines adding the same
// new key at the same moment both may report it absent. Merge, WriteTo and
// Save read the bits atomically word by word: adds that run concurrently
// may or may not be included.
//
// # Files
//
// WriteTo writes, and Read reads, a versioned binary format with CRC-32C
// checksums (docs/format/bloom.md); Save writes atomically (temporary file,
// fsync, rename). Read refuses truncated or corrupt input (ErrCorrupt),
// unknown magic (ErrFormat) and newer versions (ErrVersion); LoadFor and
// Merge refuse a filter built with other parameters (ErrIncompatible).
// Errors from Load and LoadFor name the file.
package bloom

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"sync/atomic"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/internal/mix"
)

// DefaultSeed seeds the key hash when Options.Seed is zero. It is part of
// every saved filter, fixed forever.
const DefaultSeed uint64 = 0x626c6f6f6d317365 // "bloom1se"

// Limits on the parameters, for safety against hostile files.
const (
	MaxBits   = 1 << 40 // 128 GiB of bits
	MaxHashes = 64
)

// Errors.
var (
	ErrParams       = errors.New("bloom: invalid parameters")
	ErrIncompatible = errors.New("bloom: filters built with different parameters")
)

// Options configures a filter. The zero value means DefaultSeed.
type Options struct {
	// Seed seeds the key hash; 0 means DefaultSeed.
	Seed uint64
}

// Optimal returns the number of bits and of hash functions for n items at
// false-positive probability p, by the formulas of the package comment
// (m rounded up to a multiple of 64, k rounded to the nearest integer).
func Optimal(n uint64, p float64) (m uint64, k int, err error) {
	if n == 0 || !(p > 0 && p < 1) {
		return 0, 0, fmt.Errorf("%w: n = %d, p = %v: want n >= 1 and 0 < p < 1", ErrParams, n, p)
	}
	fm := math.Ceil(-float64(n) * math.Log(p) / (math.Ln2 * math.Ln2))
	if fm > MaxBits {
		return 0, 0, fmt.Errorf("%w: n = %d, p = %v needs %.3g bits, more than %d", ErrParams, n, p, fm, uint64(MaxBits))
	}
	m = (uint64(fm) + 63) &^ 63
	k = int(math.Round(fm / float64(n) * math.Ln2))
	k = min(max(k, 1), MaxHashes)
	return m, k, nil
}

// FPP returns the expected false-positive probability of a filter of m bits
// and k hash functions after n distinct adds: (1 - e^(-kn/m))^k.
func FPP(n, m uint64, k int) float64 {
	if m == 0 {
		return 1
	}
	return math.Pow(-math.Expm1(-float64(k)*float64(n)/float64(m)), float64(k))
}

// Filter is a Bloom filter. Safe for concurrent use (see the package
// comment).
type Filter struct {
	words       []uint64 // accessed atomically
	m           uint64
	k           int
	seed, seed2 uint64
	n           uint64  // capacity it was sized for (0 if sized by hand)
	p           float64 // target FPP (0 if sized by hand)
	count       atomic.Uint64
}

// New returns an empty filter sized for n items at false-positive
// probability p.
func New(n uint64, p float64, opts Options) (*Filter, error) {
	m, k, err := Optimal(n, p)
	if err != nil {
		return nil, err
	}
	f, err := NewMK(m, k, opts)
	if err != nil {
		return nil, err
	}
	f.n, f.p = n, p
	return f, nil
}

// NewMK returns an empty filter of m bits (rounded up to a multiple of 64)
// and k hash functions.
func NewMK(m uint64, k int, opts Options) (*Filter, error) {
	if m == 0 || m > MaxBits || k < 1 || k > MaxHashes {
		return nil, fmt.Errorf("%w: m = %d bits, k = %d: want 1..%d bits and 1..%d hashes", ErrParams, m, k, uint64(MaxBits), MaxHashes)
	}
	m = (m + 63) &^ 63
	seed := opts.Seed
	if seed == 0 {
		seed = DefaultSeed
	}
	return &Filter{words: make([]uint64, m/64), m: m, k: k, seed: seed, seed2: seed2Of(seed)}, nil
}

func seed2Of(seed uint64) uint64 { return mix.Fmix64(seed ^ 0x9e3779b97f4a7c15) }

// Params are what make two filters compatible: same bits, hashes, hash
// function and seed.
type Params struct {
	M    uint64 // bits
	K    int    // hash functions
	Seed uint64
	Hash uint32 // hash scheme id; HashXXH3 is the only one
}

// HashXXH3 is the hash scheme of this version: XXH3-128 and enhanced double
// hashing with multiply-shift reduction (see the package comment).
const HashXXH3 uint32 = 1

// Params returns the filter's parameters.
func (f *Filter) Params() Params { return Params{M: f.m, K: f.k, Seed: f.seed, Hash: HashXXH3} }

// Check returns an error wrapping ErrIncompatible when want differs from
// the filter's parameters.
func (f *Filter) Check(want Params) error {
	if got := f.Params(); got != want {
		return fmt.Errorf("%w: have m=%d k=%d seed=%#x hash=%d, want m=%d k=%d seed=%#x hash=%d",
			ErrIncompatible, got.M, got.K, got.Seed, got.Hash, want.M, want.K, want.Seed, want.Hash)
	}
	return nil
}

// M returns the number of bits.
func (f *Filter) M() uint64 { return f.m }

// K returns the number of hash functions.
func (f *Filter) K() int { return f.k }

// Capacity returns the n and p the filter was sized for (0, 0 for NewMK).
func (f *Filter) Capacity() (n uint64, p float64) { return f.n, f.p }

// Count returns the number of adds that set at least one new bit: about
// the number of distinct keys added (false positives are not counted).
func (f *Filter) Count() uint64 { return f.count.Load() }

// EstimatedFPP returns the false-positive probability the formula predicts
// after Count() distinct adds.
func (f *Filter) EstimatedFPP() float64 { return FPP(f.Count(), f.m, f.k) }

// FillRatio returns the fraction of bits set.
func (f *Filter) FillRatio() float64 {
	var ones int
	for i := range f.words {
		ones += bits.OnesCount64(atomic.LoadUint64(&f.words[i]))
	}
	return float64(ones) / float64(f.m)
}

// hash returns the two 64-bit halves the positions derive from.
func (f *Filter) hash(key []byte) (uint64, uint64) {
	h := xxh3.Hash128Seed(key, f.seed)
	return h.Lo, h.Hi
}

func (f *Filter) hashString(key string) (uint64, uint64) {
	h := xxh3.HashString128Seed(key, f.seed)
	return h.Lo, h.Hi
}

func (f *Filter) hashUint64(x uint64) (uint64, uint64) {
	return mix.Fmix64(x ^ f.seed), mix.Fmix64(x ^ f.seed2)
}

// add sets the k bits of (h1, h2) and reports whether all were set.
func (f *Filter) add(h1, h2 uint64) bool {
	present := true
	for i := 0; i < f.k; i++ {
		pos, _ := bits.Mul64(h1, f.m)
		mask := uint64(1) << (pos & 63)
		w := &f.words[pos>>6]
		// Set only bits that are clear: an atomic load is much cheaper
		// than an atomic OR, and most bits of a busy filter are set.
		if atomic.LoadUint64(w)&mask == 0 && atomic.OrUint64(w, mask)&mask == 0 {
			present = false
		}
		h1 += h2
		h2 += uint64(i)
	}
	if !present {
		f.count.Add(1)
	}
	return present
}

// test reports whether the k bits of (h1, h2) are all set.
func (f *Filter) test(h1, h2 uint64) bool {
	for i := 0; i < f.k; i++ {
		pos, _ := bits.Mul64(h1, f.m)
		if atomic.LoadUint64(&f.words[pos>>6])&(uint64(1)<<(pos&63)) == 0 {
			return false
		}
		h1 += h2
		h2 += uint64(i)
	}
	return true
}

// Add adds key and reports whether it was (probably) present already. It
// does not allocate.
func (f *Filter) Add(key []byte) bool { return f.add(f.hash(key)) }

// AddString is Add for a string key.
func (f *Filter) AddString(key string) bool { return f.add(f.hashString(key)) }

// AddHash adds a key given as a 64-bit hash (for example a shingle hash).
func (f *Filter) AddHash(h uint64) bool { return f.add(f.hashUint64(h)) }

// Test reports whether key is (probably) in the filter. It does not
// allocate.
func (f *Filter) Test(key []byte) bool { return f.test(f.hash(key)) }

// TestString is Test for a string key.
func (f *Filter) TestString(key string) bool { return f.test(f.hashString(key)) }

// TestHash is Test for a key given as a 64-bit hash.
func (f *Filter) TestHash(h uint64) bool { return f.test(f.hashUint64(h)) }

// Key is a key hashed ahead of time by HashKey, so that the hashing can
// run on other goroutines than the adds (the positions still derive from
// it at AddKey/TestKey).
type Key struct{ h1, h2, seed uint64 }

// HashKey hashes key for filters with the given seed (0 means DefaultSeed,
// as in Options). It does not allocate.
func HashKey(key []byte, seed uint64) Key {
	if seed == 0 {
		seed = DefaultSeed
	}
	h := xxh3.Hash128Seed(key, seed)
	return Key{h.Lo, h.Hi, seed}
}

// AppendHex appends the key's 128-bit hash as 32 hex digits (high half
// first), for display.
func (k Key) AppendHex(dst []byte) []byte {
	const digits = "0123456789abcdef"
	for _, w := range [2]uint64{k.h2, k.h1} {
		for shift := 60; shift >= 0; shift -= 4 {
			dst = append(dst, digits[w>>uint(shift)&15])
		}
	}
	return dst
}

// AddKey is Add for a key hashed by HashKey. A key hashed with another seed
// than the filter's is refused with ErrIncompatible and not added.
func (f *Filter) AddKey(k Key) (present bool, err error) {
	if k.seed != f.seed {
		return false, fmt.Errorf("%w: key hashed with seed %#x, filter seed %#x", ErrIncompatible, k.seed, f.seed)
	}
	return f.add(k.h1, k.h2), nil
}

// TestKey is Test for a key hashed by HashKey; ErrIncompatible for a key
// hashed with another seed.
func (f *Filter) TestKey(k Key) (bool, error) {
	if k.seed != f.seed {
		return false, fmt.Errorf("%w: key hashed with seed %#x, filter seed %#x", ErrIncompatible, k.seed, f.seed)
	}
	return f.test(k.h1, k.h2), nil
}

// Merge adds every key of g to f (a bitwise OR). g must have the same
// parameters (ErrIncompatible otherwise). The count becomes the sum of the
// counts, an upper bound when the filters share keys.
func (f *Filter) Merge(g *Filter) error {
	if err := f.Check(g.Params()); err != nil {
		return fmt.Errorf("bloom: merge refused: %w", err)
	}
	if f == g {
		return nil
	}
	for i := range f.words {
		atomic.OrUint64(&f.words[i], atomic.LoadUint64(&g.words[i]))
	}
	f.count.Add(g.Count())
	return nil
}

// appendUint64 appends x little-endian.
func appendUint64(b []byte, x uint64) []byte { return binary.LittleEndian.AppendUint64(b, x) }
