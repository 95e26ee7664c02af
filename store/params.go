package store

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"

	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/text"
)

// Method is the near-duplicate method of an index.
type Method uint8

const (
	// MinHash indexes MinHash signatures by LSH band keys; a duplicate is a
	// document whose estimated Jaccard similarity is at least
	// Params.Threshold.
	MinHash Method = 1
	// SimHash indexes SimHash fingerprints in permuted tables; a duplicate
	// is a document within Hamming distance Params.Distance.
	SimHash Method = 2
)

// String returns "minhash" or "simhash".
func (m Method) String() string {
	switch m {
	case MinHash:
		return "minhash"
	case SimHash:
		return "simhash"
	}
	return fmt.Sprintf("method(%d)", uint8(m))
}

// ParseMethod parses the names returned by Method.String.
func ParseMethod(s string) (Method, error) {
	switch s {
	case "minhash":
		return MinHash, nil
	case "simhash":
		return SimHash, nil
	}
	return 0, fmt.Errorf("%w: unknown method %q (want minhash or simhash)", ErrParams, s)
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
	DefaultBits     = 64
	DefaultDistance = 3
	// DefaultExpectedDocs is the index size the SimHash table design is
	// chosen for when Params.Blocks is zero.
	DefaultExpectedDocs = 1 << 20
	// maxTables bounds the SimHash tables: each is one key per document
	// on disk and one seek per query.
	maxTables = 64
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
	// PermutationFamily selects minhash.Permutation, the reference family
	// (about 4x slower to sketch than OPH), as Family does; kept for
	// callers written when Permutation was the zero Family. Indexes keep the family they were created with:
	// those made before DefaultFamily was OPH stay Permutation.
	PermutationFamily bool

	// SimHash: fingerprint bits (0 means 64; at most 128), the largest
	// Hamming distance of a duplicate (0 means 3), and the number of blocks
	// of the permuted-table design (0: chosen by simhash.ChooseDesign for
	// DefaultExpectedDocs documents).
	Bits     int
	Distance int
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

// resolve returns p with every zero value replaced by the default it
// stands for, and checks it.
func (p Params) resolve() (Params, error) {
	if p.Shingle.N == 0 {
		p.Shingle.N = DefaultNgram
	}
	if p.Shingle.Seed == 0 {
		p.Shingle.Seed = shingle.DefaultSeed
	}
	if p.Shingle.N < 1 || p.Shingle.N > shingle.MaxN {
		return p, fmt.Errorf("%w: n-gram size %d must be between 1 and %d", ErrParams, p.Shingle.N, shingle.MaxN)
	}
	if _, err := shingle.ParseUnit(p.Shingle.Unit.String()); err != nil {
		return p, fmt.Errorf("%w: %v", ErrParams, err)
	}
	if _, err := text.New(p.Normalize); err != nil {
		return p, fmt.Errorf("%w: normalisation: %v", ErrParams, err)
	}
	switch p.Method {
	case MinHash:
		if p.NumPerm == 0 {
			p.NumPerm = DefaultNumPerm
		}
		if p.Seed == 0 {
			p.Seed = minhash.DefaultSeed
		}
		if p.Threshold == 0 {
			p.Threshold = DefaultThreshold
		}
		if !(p.Threshold > 0 && p.Threshold <= 1) {
			return p, fmt.Errorf("%w: threshold %v must be in (0, 1]", ErrParams, p.Threshold)
		}
		switch {
		case p.Bands == 0 && p.Rows == 0:
			b, err := lsh.DefaultParams(p.Threshold, p.NumPerm)
			if err != nil {
				return p, fmt.Errorf("%w: %v", ErrParams, err)
			}
			p.Bands, p.Rows = b.Bands, b.Rows
		case p.Rows == 0 && p.Bands > 0:
			p.Rows = p.NumPerm / p.Bands
		case p.Bands == 0 && p.Rows > 0:
			p.Bands = p.NumPerm / p.Rows
		}
		// The zero Family is minhash.OPH, DefaultFamily: PermutationFamily
		// turns it into Permutation and contradicts any other.
		if p.PermutationFamily {
			switch p.Family {
			case DefaultFamily:
				p.Family = minhash.Permutation
			case minhash.Permutation:
			default:
				return p, fmt.Errorf("%w: PermutationFamily with family %s", ErrParams, p.Family)
			}
		}
		p.PermutationFamily = p.Family == minhash.Permutation
		if p.Bits != 0 || p.Distance != 0 || p.Blocks != 0 || p.ExactOnly {
			return p, fmt.Errorf("%w: bits, distance and blocks are SimHash parameters", ErrParams)
		}
		if _, err := minhash.New(minhash.Options{NumPerm: p.NumPerm, Family: p.Family, Seed: p.Seed}); err != nil {
			return p, fmt.Errorf("%w: %v", ErrParams, err)
		}
		if err := (lsh.Params{Bands: p.Bands, Rows: p.Rows}).Validate(p.NumPerm); err != nil {
			return p, fmt.Errorf("%w: %d bands x %d rows for %d permutations: %v", ErrParams, p.Bands, p.Rows, p.NumPerm, err)
		}
		if p.Bands > math.MaxUint16 {
			return p, fmt.Errorf("%w: at most %d bands", ErrParams, math.MaxUint16)
		}
	case SimHash:
		if p.Bits == 0 {
			p.Bits = DefaultBits
		}
		if p.ExactOnly {
			if p.Distance != 0 {
				return p, fmt.Errorf("%w: ExactOnly with distance %d", ErrParams, p.Distance)
			}
		} else if p.Distance == 0 {
			p.Distance = DefaultDistance
		}
		if p.Seed == 0 {
			p.Seed = simhash.DefaultSeed
		}
		if p.NumPerm != 0 || p.Bands != 0 || p.Rows != 0 || p.Threshold != 0 || p.Family != 0 || p.PermutationFamily {
			return p, fmt.Errorf("%w: permutations, family, bands, rows and threshold are MinHash parameters", ErrParams)
		}
		if p.Bits < 1 || p.Bits > simhash.MaxBits {
			return p, fmt.Errorf("%w: bits %d must be between 1 and %d", ErrParams, p.Bits, simhash.MaxBits)
		}
		if p.Distance < 0 || p.Distance >= p.Bits {
			return p, fmt.Errorf("%w: distance %d must be at least 0 and below %d bits", ErrParams, p.Distance, p.Bits)
		}
		if p.Blocks != 0 && (p.Blocks <= p.Distance || p.Blocks > p.Bits || binom(p.Blocks, p.Distance) > maxTables) {
			return p, fmt.Errorf("%w: %d blocks for %d bits and distance %d (more than the distance, at most the bits, at most %d tables)", ErrParams, p.Blocks, p.Bits, p.Distance, maxTables)
		}
		if p.Distance+1 > maxTables {
			return p, fmt.Errorf("%w: distance %d needs more than %d tables", ErrParams, p.Distance, maxTables)
		}
		d, err := simhash.ChooseDesign(DefaultExpectedDocs, p.Bits, p.Distance, false,
			simhash.DesignOptions{Blocks: p.Blocks, MaxTables: maxTables})
		if err != nil {
			return p, fmt.Errorf("%w: %v", ErrParams, err)
		}
		p.Blocks = d.Blocks
		if p.Blocks <= p.Distance || p.Blocks > p.Bits {
			return p, fmt.Errorf("%w: %d blocks for %d bits and distance %d", ErrParams, p.Blocks, p.Bits, p.Distance)
		}
		if binom(p.Blocks, p.Distance) > maxTables {
			return p, fmt.Errorf("%w: %d blocks and distance %d make %d tables (at most %d)", ErrParams, p.Blocks, p.Distance, binom(p.Blocks, p.Distance), maxTables)
		}
	default:
		return p, fmt.Errorf("%w: unknown method %d", ErrParams, p.Method)
	}
	return p, nil
}

// Tables returns the number of band keys (MinHash) or table keys (SimHash)
// of each document.
func (p Params) Tables() int {
	if p.Method == MinHash {
		return p.Bands
	}
	return binom(p.Blocks, p.Distance)
}

func binom(n, k int) int {
	if k < 0 || k > n {
		return 0
	}
	// C(n, k) = C(n, n-k); capped, since only small counts are useful.
	if k > n-k {
		k = n - k
	}
	r := 1
	for i := 1; i <= k; i++ {
		r = r * (n - k + i) / i
		if r > 1<<30 {
			return 1 << 30
		}
	}
	return r
}

// Check returns an error wrapping ErrIncompatible, naming the first
// difference, unless q makes the same sketches and duplicates as p. Zero
// values in q are resolved to the defaults first.
func (p Params) Check(q Params) error {
	rq, err := q.resolve()
	if err != nil {
		return err
	}
	a, _ := p.MarshalJSON()
	b, _ := rq.MarshalJSON()
	if bytes.Equal(a, b) {
		return nil
	}
	var ma, mb map[string]any
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	if d := firstDiff("", ma, mb); d != "" {
		return fmt.Errorf("%w: %s", ErrIncompatible, d)
	}
	return fmt.Errorf("%w: parameters differ", ErrIncompatible)
}

func firstDiff(path string, a, b any) string {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for _, k := range sortedKeys(am, bm) {
			if d := firstDiff(path+"."+k, am[k], bm[k]); d != "" {
				return d
			}
		}
		return ""
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if bytes.Equal(ja, jb) {
		return ""
	}
	return fmt.Sprintf("index has %s = %s, asked for %s", path[1:], ja, jb)
}

func sortedKeys(a, b map[string]any) []string {
	seen := map[string]bool{}
	var ks []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				ks = append(ks, k)
			}
		}
	}
	// A fixed order keeps messages stable.
	for i := 1; i < len(ks); i++ {
		for j := i; j > 0 && ks[j] < ks[j-1]; j-- {
			ks[j], ks[j-1] = ks[j-1], ks[j]
		}
	}
	return ks
}

// The JSON form of Params, stored under the params key
// (docs/format/store.md). Every field is explicit so that the meaning of a
// stored index does not follow later changes of the Go structs.
type paramsJSON struct {
	Method    string        `json:"method"`
	Normalize normalizeJSON `json:"normalize"`
	Shingle   shingleJSON   `json:"shingle"`
	MinHash   *minhashJSON  `json:"minhash,omitempty"`
	SimHash   *simhashJSON  `json:"simhash,omitempty"`
}

type normalizeJSON struct {
	NFKC            bool     `json:"nfkc"`
	CaseFold        bool     `json:"case_fold"`
	Whitespace      bool     `json:"whitespace"`
	KeepNewlines    bool     `json:"keep_newlines"`
	Punctuation     bool     `json:"punctuation"`
	PunctuationMode string   `json:"punctuation_mode"`
	Invisible       bool     `json:"invisible"`
	HTML            bool     `json:"html"`
	T2S             bool     `json:"t2s"`
	StopWords       bool     `json:"stop_words"`
	StopWordList    []string `json:"stop_word_list,omitempty"`
}

type shingleJSON struct {
	Unit string `json:"unit"`
	N    int    `json:"n"`
	Seed uint64 `json:"seed"`
}

type minhashJSON struct {
	NumPerm   int     `json:"num_perm"`
	Family    string  `json:"family"`
	Seed      uint64  `json:"seed"`
	Bands     int     `json:"bands"`
	Rows      int     `json:"rows"`
	Threshold float64 `json:"threshold"`
}

type simhashJSON struct {
	Bits     int    `json:"bits"`
	Distance int    `json:"distance"`
	Seed     uint64 `json:"seed"`
	Blocks   int    `json:"blocks"`
}

func punctModeString(m text.PunctuationMode) string {
	switch m {
	case text.PunctSpace:
		return "space"
	case text.PunctCanonical:
		return "canonical"
	}
	return fmt.Sprintf("mode(%d)", uint8(m))
}

// MarshalJSON writes p in the stored form (docs/format/store.md).
func (p Params) MarshalJSON() ([]byte, error) {
	n := p.Normalize
	j := paramsJSON{
		Method: p.Method.String(),
		Normalize: normalizeJSON{
			NFKC: n.NFKC, CaseFold: n.CaseFold, Whitespace: n.Whitespace, KeepNewlines: n.KeepNewlines,
			Punctuation: n.Punctuation, PunctuationMode: punctModeString(n.PunctuationMode),
			Invisible: n.Invisible, HTML: n.HTML, T2S: n.T2S, StopWords: n.StopWords, StopWordList: n.StopWordList,
		},
		Shingle: shingleJSON{Unit: p.Shingle.Unit.String(), N: p.Shingle.N, Seed: p.Shingle.Seed},
	}
	switch p.Method {
	case MinHash:
		j.MinHash = &minhashJSON{NumPerm: p.NumPerm, Family: p.Family.String(), Seed: p.Seed,
			Bands: p.Bands, Rows: p.Rows, Threshold: p.Threshold}
	case SimHash:
		j.SimHash = &simhashJSON{Bits: p.Bits, Distance: p.Distance, Seed: p.Seed, Blocks: p.Blocks}
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads the stored form. Unknown fields, unknown names and
// parameters that do not validate are errors.
func (p *Params) UnmarshalJSON(b []byte) error {
	var j paramsJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	if dec.More() {
		return fmt.Errorf("%w: params: trailing data", ErrCorrupt)
	}
	var q Params
	m, err := ParseMethod(j.Method)
	if err != nil {
		return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	q.Method = m
	n := j.Normalize
	q.Normalize = text.Options{NFKC: n.NFKC, CaseFold: n.CaseFold, Whitespace: n.Whitespace, KeepNewlines: n.KeepNewlines,
		Punctuation: n.Punctuation, Invisible: n.Invisible, HTML: n.HTML, T2S: n.T2S, StopWords: n.StopWords, StopWordList: n.StopWordList}
	switch n.PunctuationMode {
	case "space":
		q.Normalize.PunctuationMode = text.PunctSpace
	case "canonical":
		q.Normalize.PunctuationMode = text.PunctCanonical
	default:
		return fmt.Errorf("%w: params: unknown punctuation mode %q", ErrCorrupt, n.PunctuationMode)
	}
	u, err := shingle.ParseUnit(j.Shingle.Unit)
	if err != nil {
		return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	q.Shingle = shingle.Options{Unit: u, N: j.Shingle.N, Seed: j.Shingle.Seed}
	switch {
	case m == MinHash && j.MinHash != nil && j.SimHash == nil:
		f, err := minhash.ParseFamily(j.MinHash.Family)
		if err != nil {
			return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
		}
		q.NumPerm, q.Family, q.Seed = j.MinHash.NumPerm, f, j.MinHash.Seed
		q.PermutationFamily = f == minhash.Permutation
		q.Bands, q.Rows, q.Threshold = j.MinHash.Bands, j.MinHash.Rows, j.MinHash.Threshold
	case m == SimHash && j.SimHash != nil && j.MinHash == nil:
		q.Bits, q.Distance, q.Seed, q.Blocks = j.SimHash.Bits, j.SimHash.Distance, j.SimHash.Seed, j.SimHash.Blocks
		q.ExactOnly = q.Distance == 0
	default:
		return fmt.Errorf("%w: params: method %s needs exactly its own section", ErrCorrupt, m)
	}
	if q.Shingle.N == 0 || q.Shingle.Seed == 0 || q.Seed == 0 || (m == MinHash && (q.NumPerm == 0 || q.Bands == 0 || q.Rows == 0 || q.Threshold == 0)) ||
		(m == SimHash && (q.Bits == 0 || q.Blocks == 0)) {
		return fmt.Errorf("%w: params: a stored parameter is zero (stored parameters are resolved)", ErrCorrupt)
	}
	r, err := q.resolve()
	if err != nil {
		return fmt.Errorf("%w: params: %v", ErrCorrupt, err)
	}
	*p = r
	return nil
}
