// Package sketch is the one definition of how a document becomes a sketch
// in neardup, shared by every part of it: the batch pipeline (package
// dedup), the persistent index (package store), the HTTP service, the
// report, and the distributed pipeline (module beam).
//
// A [Spec] says everything that gives a document its sketch and decides
// what a duplicate is: the normalisation (package text), the tokens and
// shingles (package shingle), the method and its parameters, and the
// seeds. Its zero value is the documented default: MinHash over word
// n-grams of DefaultNgram words, DefaultNumPerm slots of one permutation
// hashing, Jaccard threshold DefaultThreshold, banded as lsh.DefaultParams
// chooses (recall lsh.DefaultRecall at the threshold: 13 x 7 for these).
// The constants below are the one definition of each default in neardup:
// the command line, the index, the Python binding and neardup-beam refer
// to them. A Spec
// is validated once ([Spec.Resolve]), serialised with a version
// ([Spec.MarshalJSON]: stored in an index, printed in --stats, carried by a
// distributed job) and never changes the values it produces: signatures,
// band keys and table keys are pinned by golden tests.
//
// From a resolved Spec there is one implementation each of:
//
//   - text -> sketch: [Spec.NewSketcher] and [Sketcher.Sketch];
//   - sketch -> index keys: [Spec.AppendKeys] (LSH band keys, SimHash
//     permuted-table keys, content-hash keys);
//   - sketch x sketch -> similarity: [Spec.Similarity] and
//     [Spec.Duplicate];
//   - sketch <-> bytes: [Spec.AppendBinary] and [Spec.DecodeBinary].
//
// A Spec is a plain value, safe to copy and to share between goroutines.
// A Sketcher keeps scratch space: use one per goroutine. Validation
// errors wrap [ErrSpec]; a serialised Spec of a newer version is refused
// with [ErrVersion].
package sketch

import (
	"errors"
	"fmt"
	"math"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/text"
)

// Version is the version of the serialised form of a Spec written by this
// package. A Spec of a newer version is refused (ErrVersion); version 0 is
// the index parameters of store format 2, read as version 1.
const Version = 1

var (
	// ErrSpec is wrapped by every error of an invalid Spec.
	ErrSpec = errors.New("sketch: invalid specification")
	// ErrVersion is returned for a serialised Spec of a newer version.
	ErrVersion = errors.New("sketch: specification of a newer version")
	// ErrIncompatible is wrapped by Check when two Specs make different
	// sketches or duplicates.
	ErrIncompatible = errors.New("sketch: incompatible specifications")
	// ErrSketch is wrapped by the errors of DecodeBinary and of sketches
	// that do not belong to a Spec.
	ErrSketch = errors.New("sketch: malformed sketch")
)

// Method is how documents are sketched and compared.
type Method uint8

const (
	// MinHash (the zero value) signs the shingle set with MinHash
	// (package minhash), indexes it by LSH bands (package lsh) and
	// estimates the Jaccard similarity by the fraction of equal slots.
	MinHash Method = iota
	// SimHash fingerprints the weighted shingles (package simhash),
	// indexes them in permuted tables and compares by Hamming distance.
	SimHash
	// Exact hashes the normalised text (XXH3-128): identical texts.
	Exact
	// KSentence hashes the K longest sentences (MD5; package ksentence).
	KSentence
	// Jaccard keeps the shingle set itself: the exact Jaccard similarity.
	Jaccard
	numMethods
)

var methodNames = [numMethods]string{MinHash: "minhash", SimHash: "simhash", Exact: "exact", KSentence: "ksentence", Jaccard: "jaccard"}

// String returns the method's name as on the command line: minhash,
// simhash, exact, ksentence or jaccard.
func (m Method) String() string {
	if m < numMethods {
		return methodNames[m]
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// ParseMethod parses the names of Method.String.
func ParseMethod(s string) (Method, error) {
	for m, n := range methodNames {
		if n == s {
			return Method(m), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown method %q (want minhash, simhash, exact, ksentence or jaccard)", ErrSpec, s)
}

// Weighting is how SimHash weighs a document's shingles.
type Weighting uint8

const (
	// WeightSet (the zero value) weighs each distinct shingle 1: measured
	// the most precise on repetitive text (docs/defaults.md).
	WeightSet Weighting = iota
	// WeightCount weighs a shingle repeated c times c.
	WeightCount
	// WeightSublinear weighs it 1 + ln c.
	WeightSublinear
	// WeightTFIDF weighs it c x IDF, from a table learned over the corpus
	// (SketcherOptions.IDF).
	WeightTFIDF
	numWeightings
)

var weightingNames = [numWeightings]string{WeightSet: "set", WeightCount: "count", WeightSublinear: "sublinear", WeightTFIDF: "tfidf"}

// String returns set, count, sublinear or tfidf.
func (w Weighting) String() string {
	if w < numWeightings {
		return weightingNames[w]
	}
	return fmt.Sprintf("weighting(%d)", uint8(w))
}

// ParseWeighting parses the names of Weighting.String.
func ParseWeighting(s string) (Weighting, error) {
	for w, n := range weightingNames {
		if n == s {
			return Weighting(w), nil
		}
	}
	return 0, fmt.Errorf("%w: unknown SimHash weighting %q (want set, count, sublinear or tfidf)", ErrSpec, s)
}

// Defaults: the zero value of each field of Spec stands for these.
const (
	// DefaultNgram is the shingle size: word 5-grams (docs/defaults.md has
	// the evidence).
	DefaultNgram = 5
	// DefaultThreshold is the Jaccard similarity of a duplicate.
	DefaultThreshold = 0.8
	// DefaultNumPerm is the number of MinHash slots: the default of package
	// minhash (a zero minhash.Options.NumPerm), which sits below this one.
	DefaultNumPerm  = minhash.DefaultNumPerm
	DefaultBits     = 64 // SimHash fingerprint bits
	DefaultDistance = 3  // SimHash: Manku et al.'s k for 64 bits
	DefaultK        = 3  // KSentence: sentences hashed
	// ExactDistance as SimHash.Distance means distance 0 (only identical
	// fingerprints are duplicates), which the zero value cannot say.
	ExactDistance = -1
	// DefaultExpectedDocs is the index size the SimHash table design is
	// chosen for when SimHash.Blocks is zero.
	DefaultExpectedDocs = 1 << 20
	// MaxTables bounds the SimHash tables of a design: each is one key per
	// document in an index and one lookup per query.
	MaxTables = 64
)

// Spec is everything that turns a document into a sketch and decides what
// a duplicate is. The zero value is the documented default (see the
// package comment); fields that do not apply to Method must be zero.
type Spec struct {
	// Version is the version of the specification; 0 means Version.
	Version int
	// Method is how documents are sketched.
	Method Method
	// Normalize is the text normalisation; nil means
	// text.DefaultOptions(). KSentence adjusts it so that sentences can be
	// split: line breaks are kept and punctuation is not folded.
	Normalize *text.Options
	// Shingle chooses tokens and n-grams (MinHash, SimHash, Jaccard). A
	// zero N means DefaultNgram, a zero Seed shingle.DefaultSeed; the zero
	// Unit is words.
	Shingle shingle.Options
	// Threshold is the Jaccard similarity at or above which two documents
	// are duplicates (MinHash, Jaccard); 0 means DefaultThreshold.
	Threshold float64
	MinHash   MinHashSpec
	SimHash   SimHashSpec
	KSentence KSentenceSpec
}

// MinHashSpec are the parameters of the MinHash method.
type MinHashSpec struct {
	// NumPerm is the number of signature slots; 0 means DefaultNumPerm.
	NumPerm int
	// Family is the hash family; the zero value is one permutation
	// hashing (minhash.OPH).
	Family minhash.Family
	// Seed seeds the family; 0 means minhash.DefaultSeed.
	Seed uint64
	// Bands and Rows band the signature for LSH. Both zero: the banding
	// lsh.DefaultParams chooses for Threshold and NumPerm (13 x 7 for the
	// defaults); one of them zero: NumPerm divided by the other.
	Bands, Rows int
}

// SimHashSpec are the parameters of the SimHash method.
type SimHashSpec struct {
	// Bits is the fingerprint length, 1 to 128; 0 means DefaultBits.
	Bits int
	// Distance is the largest Hamming distance of a duplicate; 0 means
	// DefaultDistance and ExactDistance means 0.
	Distance int
	// Weights weighs the shingles; the zero value is WeightSet.
	Weights Weighting
	// Seed seeds the feature hash; 0 means simhash.DefaultSeed.
	Seed uint64
	// Blocks is the number of blocks of the permuted-table design (C(Blocks,
	// Distance) tables); 0 means the design simhash.ChooseDesign picks for
	// an index of DefaultExpectedDocs documents with at most MaxTables
	// tables.
	Blocks int
}

// KSentenceSpec are the parameters of the KSentence method.
type KSentenceSpec struct {
	// K is the number of longest sentences hashed; 0 means DefaultK.
	K int
}

// Default returns the resolved default Spec of method m.
func Default(m Method) Spec {
	s, err := Spec{Method: m}.Resolve()
	if err != nil {
		panic("sketch: default of " + m.String() + ": " + err.Error()) // a bug in this package, tested
	}
	return s
}

// Resolve returns s with every zero value replaced by the default it
// stands for, checked. Resolving a resolved Spec returns it unchanged.
func (s Spec) Resolve() (Spec, error) {
	switch {
	case s.Version == 0:
		s.Version = Version
	case s.Version < 0:
		return s, fmt.Errorf("%w: version %d", ErrSpec, s.Version)
	case s.Version > Version:
		return s, fmt.Errorf("%w: version %d (this build reads up to %d)", ErrVersion, s.Version, Version)
	}
	if s.Method >= numMethods {
		return s, fmt.Errorf("%w: unknown method %d", ErrSpec, s.Method)
	}
	norm := text.DefaultOptions()
	if s.Normalize != nil {
		norm = *s.Normalize
	}
	if s.Method == KSentence {
		norm = adjustForSentences(norm)
	}
	if _, err := text.New(norm); err != nil {
		return s, fmt.Errorf("%w: normalisation: %v", ErrSpec, err)
	}
	s.Normalize = &norm
	if s.usesShingles() {
		if s.Shingle.N == 0 {
			s.Shingle.N = DefaultNgram
		}
		if s.Shingle.Seed == 0 {
			s.Shingle.Seed = shingle.DefaultSeed
		}
		if s.Shingle.N < 1 || s.Shingle.N > shingle.MaxN {
			return s, fmt.Errorf("%w: n-gram size %d must be between 1 and %d", ErrSpec, s.Shingle.N, shingle.MaxN)
		}
		if _, err := shingle.New(s.Shingle); err != nil {
			return s, fmt.Errorf("%w: %v", ErrSpec, err)
		}
	} else if s.Shingle != (shingle.Options{}) {
		return s, fmt.Errorf("%w: %s does not shingle (unit and n-gram size do not apply)", ErrSpec, s.Method)
	}
	if s.Method == MinHash || s.Method == Jaccard {
		if s.Threshold == 0 {
			s.Threshold = DefaultThreshold
		}
		if !(s.Threshold > 0 && s.Threshold <= 1) {
			return s, fmt.Errorf("%w: threshold %v must be in (0, 1]", ErrSpec, s.Threshold)
		}
	} else if s.Threshold != 0 {
		return s, fmt.Errorf("%w: %s has no Jaccard threshold", ErrSpec, s.Method)
	}
	if s.Method != MinHash && s.MinHash != (MinHashSpec{}) {
		return s, fmt.Errorf("%w: MinHash parameters with method %s", ErrSpec, s.Method)
	}
	if s.Method != SimHash && s.SimHash != (SimHashSpec{}) {
		return s, fmt.Errorf("%w: SimHash parameters with method %s", ErrSpec, s.Method)
	}
	if s.Method != KSentence && s.KSentence != (KSentenceSpec{}) {
		return s, fmt.Errorf("%w: KSentence parameters with method %s", ErrSpec, s.Method)
	}
	var err error
	switch s.Method {
	case MinHash:
		s.MinHash, err = s.MinHash.resolve(s.Threshold)
	case SimHash:
		s.SimHash, err = s.SimHash.resolve()
	case KSentence:
		if s.KSentence.K == 0 {
			s.KSentence.K = DefaultK
		}
		if s.KSentence.K < 1 {
			err = fmt.Errorf("%w: %d sentences: must be at least 1", ErrSpec, s.KSentence.K)
		}
	}
	return s, err
}

// usesShingles reports whether the method sketches shingles.
func (s *Spec) usesShingles() bool {
	return s.Method == MinHash || s.Method == SimHash || s.Method == Jaccard
}

// adjustForSentences keeps what KSentence splits sentences on: line breaks
// (whitespace still folds, to one '\n' where a break was) and sentence
// punctuation (NFKC has already turned full-width ！？ into ASCII, and 。
// stays as it is).
func adjustForSentences(o text.Options) text.Options {
	if o.Whitespace {
		o.KeepNewlines = true
	}
	o.Punctuation = false
	return o
}

func (m MinHashSpec) resolve(threshold float64) (MinHashSpec, error) {
	if m.NumPerm == 0 {
		m.NumPerm = DefaultNumPerm
	}
	if m.Seed == 0 {
		m.Seed = minhash.DefaultSeed
	}
	if m.NumPerm < 1 || m.NumPerm > minhash.MaxNumPerm {
		return m, fmt.Errorf("%w: %d permutations: must be between 1 and %d", ErrSpec, m.NumPerm, minhash.MaxNumPerm)
	}
	if _, err := minhash.New(minhash.Options{NumPerm: m.NumPerm, Family: m.Family, Seed: m.Seed}); err != nil {
		return m, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	switch {
	case m.Bands < 0 || m.Rows < 0:
		return m, fmt.Errorf("%w: %d bands x %d rows: must not be negative", ErrSpec, m.Bands, m.Rows)
	case m.Bands == 0 && m.Rows == 0:
		b, err := lsh.DefaultParams(threshold, m.NumPerm)
		if err != nil {
			return m, fmt.Errorf("%w: %v", ErrSpec, err)
		}
		m.Bands, m.Rows = b.Bands, b.Rows
	case m.Rows == 0:
		m.Rows = m.NumPerm / m.Bands
	case m.Bands == 0:
		m.Bands = m.NumPerm / m.Rows
	}
	if err := (lsh.Params{Bands: m.Bands, Rows: m.Rows}).Validate(m.NumPerm); err != nil {
		return m, fmt.Errorf("%w: %d bands x %d rows for %d permutations: bands x rows must be at most the permutations, both at least 1: %v",
			ErrSpec, m.Bands, m.Rows, m.NumPerm, err)
	}
	if m.Bands > math.MaxUint16 {
		return m, fmt.Errorf("%w: at most %d bands", ErrSpec, math.MaxUint16)
	}
	return m, nil
}

func (m SimHashSpec) resolve() (SimHashSpec, error) {
	if m.Bits == 0 {
		m.Bits = DefaultBits
	}
	if m.Seed == 0 {
		m.Seed = simhash.DefaultSeed
	}
	if m.Weights >= numWeightings {
		return m, fmt.Errorf("%w: unknown SimHash weighting %d", ErrSpec, m.Weights)
	}
	if m.Bits < 1 || m.Bits > simhash.MaxBits {
		return m, fmt.Errorf("%w: %d bits: must be between 1 and %d", ErrSpec, m.Bits, simhash.MaxBits)
	}
	d := m.distance()
	if d < 0 || d >= m.Bits {
		return m, fmt.Errorf("%w: distance %d: must be at least 0 and below the %d bits", ErrSpec, m.Distance, m.Bits)
	}
	if m.Distance == 0 {
		m.Distance = DefaultDistance
	}
	if d+1 > MaxTables {
		return m, fmt.Errorf("%w: distance %d needs more than %d tables", ErrSpec, d, MaxTables)
	}
	if m.Blocks != 0 && (m.Blocks <= d || m.Blocks > m.Bits || binom(m.Blocks, d) > MaxTables) {
		return m, fmt.Errorf("%w: %d blocks for %d bits and distance %d (more than the distance, at most the bits, at most %d tables)",
			ErrSpec, m.Blocks, m.Bits, d, MaxTables)
	}
	design, err := simhash.ChooseDesign(DefaultExpectedDocs, m.Bits, d, false,
		simhash.DesignOptions{Blocks: m.Blocks, MaxTables: MaxTables})
	if err != nil {
		return m, fmt.Errorf("%w: %v", ErrSpec, err)
	}
	m.Blocks = design.Blocks
	return m, nil
}

// distance returns the Hamming distance the spec means (0 for
// ExactDistance, DefaultDistance for 0).
func (m SimHashSpec) distance() int {
	switch m.Distance {
	case 0:
		return DefaultDistance
	case ExactDistance:
		return 0
	}
	return m.Distance
}

// MaxDistance returns the largest Hamming distance of a duplicate: 0 when
// Distance is ExactDistance.
func (m SimHashSpec) MaxDistance() int { return m.distance() }

// Banding returns the LSH banding of a resolved MinHash Spec.
func (s Spec) Banding() lsh.Params { return lsh.Params{Bands: s.MinHash.Bands, Rows: s.MinHash.Rows} }

// NumKeys returns how many index keys AppendKeys gives a sketch of the
// resolved Spec: the bands (MinHash), the tables (SimHash), 1 (Exact,
// KSentence) or 0 (Jaccard).
func (s Spec) NumKeys() int {
	switch s.Method {
	case MinHash:
		return s.MinHash.Bands
	case SimHash:
		return binom(s.SimHash.Blocks, s.SimHash.MaxDistance())
	case Exact, KSentence:
		return 1
	}
	return 0
}

// binom returns C(n, k), saturating at 2^30.
func binom(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	k = min(k, n-k)
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<30 {
			return 1 << 30
		}
	}
	return r
}
