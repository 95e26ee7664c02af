package store

import (
	"errors"
	"fmt"
	"strings"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// Method is the near-duplicate method of an index: MinHash or SimHash,
// the methods of package sketch that an index keys.
type Method = sketch.Method

const (
	// MinHash indexes MinHash signatures by LSH band keys; a duplicate is a
	// document whose estimated Jaccard similarity is at least
	// Params.Threshold.
	MinHash = sketch.MinHash
	// SimHash indexes SimHash fingerprints in permuted tables; a duplicate
	// is a document within Hamming distance Params.Distance.
	SimHash = sketch.SimHash
)

// ParseMethod parses "minhash" or "simhash".
func ParseMethod(s string) (Method, error) {
	m, err := sketch.ParseMethod(s)
	if err != nil || (m != MinHash && m != SimHash) {
		return 0, fmt.Errorf("%w: unknown method %q (an index holds minhash or simhash)", ErrParams, s)
	}
	return m, nil
}

// Defaults of DefaultParams. The MinHash ones are package lsh's, shared
// with dedup --method minhash and lsh-params: word 5-grams, 128 slots, a
// duplicate at 0.8, and the banding lsh.DefaultParams chooses for the
// threshold (13x7 at 0.8). Indexes created before (word 3-grams, 16x8,
// seed 000 section 7) keep the parameters stored in them. The SimHash ones
// are Manku et al.'s (64 bits, distance 3).
const (
	DefaultNgram     = lsh.DefaultNgram
	DefaultNumPerm   = lsh.DefaultNumPerm
	DefaultThreshold = lsh.DefaultThreshold
	// DefaultFamily is the MinHash family of new indexes: one-permutation
	// hashing with densification, 27 us per 1 KB document against 104 us
	// for Permutation (BenchmarkSketch), with the same S-curve
	// (TestOPHAccuracy).
	DefaultFamily   = minhash.OPH
	DefaultBits     = sketch.DefaultBits
	DefaultDistance = sketch.DefaultDistance
	// DefaultExpectedDocs is the index size the SimHash table design is
	// chosen for when Params.Blocks is zero.
	DefaultExpectedDocs = sketch.DefaultExpectedDocs
)

// Params are everything that gives a document its sketch and decides what
// a duplicate is. An index stores them when it is created and uses them for
// every document it sees afterwards; they never change.
type Params struct {
	Method Method

	// Normalize and Shingle turn a text into shingle hashes. A zero
	// Shingle.N means DefaultNgram and a zero Shingle.Seed the shingle
	// package's default.
	Normalize text.Options
	Shingle   shingle.Options

	// Seed seeds the MinHash family or the SimHash feature hash; 0 means
	// the package default (minhash.DefaultSeed, simhash.DefaultSeed).
	Seed uint64

	// MinHash: NumPerm slots of Family (0 means 128), banded into Bands x
	// Rows, and the estimated similarity at or above which a candidate is a
	// duplicate (0 means 0.8). Zero Bands and Rows mean the banding
	// lsh.DefaultParams chooses for Threshold and NumPerm; one of them
	// zero means NumPerm divided by the other. The zero Family
	// (minhash.OPH) is DefaultFamily.
	NumPerm   int
	Family    minhash.Family
	Bands     int
	Rows      int
	Threshold float64

	// SimHash: fingerprint bits (0 means 64; at most 128), the largest
	// Hamming distance of a duplicate (0 means 3), and the number of blocks
	// of the permuted-table design (0: chosen by simhash.ChooseDesign for
	// DefaultExpectedDocs documents).
	Bits     int
	Distance int
	// Weights weighs the shingles of a SimHash fingerprint; the zero value
	// is sketch.WeightSet, the default of every new index. Indexes created
	// before it existed weigh them by count (sketch.WeightCount).
	Weights sketch.Weighting
	// ExactOnly makes Distance 0 (only identical fingerprints are
	// duplicates), which the zero value of Distance cannot say.
	ExactOnly bool
	Blocks    int
}

// DefaultParams returns the defaults of method m, resolved: for MinHash
// the shared defaults of package lsh (word 5-shingles, 128 slots of
// DefaultFamily, threshold 0.8, 13x7 bands from lsh.DefaultParams), for
// SimHash 64-bit fingerprints within distance 3.
func DefaultParams(m Method) Params {
	p := Params{Method: m, Normalize: text.DefaultOptions()}
	r, err := p.resolve()
	if err != nil {
		return p
	}
	return r
}

// Resolve returns the parameters Create would store for p: every zero
// value replaced by the default it stands for, checked.
func (p Params) Resolve() (Params, error) { return p.resolve() }

// Spec returns p as the sketch specification it stands for (unresolved
// zeros stay zero).
func (p Params) Spec() sketch.Spec {
	norm := p.Normalize
	sp := sketch.Spec{Method: p.Method, Normalize: &norm, Shingle: p.Shingle, Threshold: p.Threshold}
	// Every parameter goes to its method's section, so that Resolve
	// refuses the parameters of the other method; the seed is the method's.
	d := p.Distance
	if p.ExactOnly && d == 0 {
		d = sketch.ExactDistance
	}
	sp.MinHash = sketch.MinHashSpec{NumPerm: p.NumPerm, Family: p.Family, Bands: p.Bands, Rows: p.Rows}
	sp.SimHash = sketch.SimHashSpec{Bits: p.Bits, Distance: d, Weights: p.Weights, Blocks: p.Blocks}
	switch p.Method {
	case MinHash:
		sp.MinHash.Seed = p.Seed
	case SimHash:
		sp.SimHash.Seed = p.Seed
	}
	return sp
}

// paramsOf returns the Params of a resolved MinHash or SimHash spec.
func paramsOf(sp sketch.Spec) Params {
	p := Params{Method: sp.Method, Normalize: *sp.Normalize, Shingle: sp.Shingle, Threshold: sp.Threshold}
	switch sp.Method {
	case MinHash:
		m := sp.MinHash
		p.NumPerm, p.Family, p.Seed, p.Bands, p.Rows = m.NumPerm, m.Family, m.Seed, m.Bands, m.Rows
	case SimHash:
		m := sp.SimHash
		p.Bits, p.Distance, p.Weights, p.Seed, p.Blocks = m.Bits, m.MaxDistance(), m.Weights, m.Seed, m.Blocks
		p.ExactOnly = p.Distance == 0
	}
	return p
}

// resolve returns p with every zero value replaced by the default it
// stands for, checked: package sketch resolves it (the one definition of
// the defaults and of what is valid), and the index adds its own limits.
func (p Params) resolve() (Params, error) {
	if p.Method != MinHash && p.Method != SimHash {
		return p, fmt.Errorf("%w: method %s (an index holds minhash or simhash)", ErrParams, p.Method)
	}
	if p.ExactOnly && p.Distance != 0 {
		return p, fmt.Errorf("%w: ExactOnly with distance %d", ErrParams, p.Distance)
	}
	sp, err := p.Spec().Resolve()
	if err != nil {
		return p, fmt.Errorf("%w: %v", ErrParams, err)
	}
	return paramsOf(sp), nil
}

// Tables returns the number of band keys (MinHash) or table keys (SimHash)
// of each document.
func (p Params) Tables() int { return p.Spec().NumKeys() }

// Check returns an error wrapping ErrIncompatible, naming the first
// difference, unless q makes the same sketches and duplicates as p. Zero
// values in q are resolved to the defaults first.
func (p Params) Check(q Params) error {
	rq, err := q.resolve()
	if err != nil {
		return err
	}
	if err := p.Spec().Check(rq.Spec()); err != nil {
		return fmt.Errorf("%w: %v", ErrIncompatible, strings.TrimPrefix(err.Error(), sketch.ErrIncompatible.Error()+": "))
	}
	return nil
}

// MarshalJSON writes p in the stored form: the serialised sketch.Spec
// (docs/format/sketch.md), stored under the params key
// (docs/format/store.md).
func (p Params) MarshalJSON() ([]byte, error) {
	r, err := p.resolve()
	if err != nil {
		return nil, err
	}
	return r.Spec().MarshalJSON()
}

// UnmarshalJSON reads the stored form, or the parameters of a format-2
// index (package sketch reads both). Anything that does not read as a
// valid MinHash or SimHash specification wraps ErrCorrupt (ErrVersion for a
// specification of a newer version).
func (p *Params) UnmarshalJSON(b []byte) error {
	var sp sketch.Spec
	if err := sp.UnmarshalJSON(b); err != nil {
		if errors.Is(err, sketch.ErrVersion) {
			return fmt.Errorf("%w: params: %v", ErrVersion, err)
		}
		return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	if sp.Method != MinHash && sp.Method != SimHash {
		return fmt.Errorf("%w: params: method %s (an index holds minhash or simhash)", ErrCorrupt, sp.Method)
	}
	*p = paramsOf(sp)
	return nil
}
