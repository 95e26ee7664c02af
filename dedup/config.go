package dedup

import (
	"fmt"
	"runtime"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// Config holds every parameter of a dedup run. The zero value is not
// usable; start from DefaultConfig. Fields that do not apply to the chosen
// method are ignored.
type Config struct {
	// Method is the --method name: exact, bloom, ksentence, simhash,
	// minhash or jaccard.
	Method string

	// Normalize configures text normalisation before any method sees the
	// text.
	Normalize text.Options

	// Shingle configures tokens and n-grams (minhash, simhash, jaccard,
	// and --verify).
	Shingle shingle.Options

	// Threshold is the Jaccard similarity at or above which two documents
	// are duplicates (minhash, jaccard, --verify, bloom overlap mode).
	Threshold float64

	// MinHash and LSH.
	NumPerm int // permutations (slots); default 128
	Bands   int // 0: chosen from Threshold and NumPerm
	Rows    int // 0: chosen from Threshold and NumPerm
	// Family is the MinHash hash family: oph (the default; one
	// permutation hashing with optimal densification: O(shingles + slots)
	// per document instead of O(shingles x slots)), multiply-shift
	// (independent slots) or permutation (a*x+b mod 2^61-1, the
	// reference).
	Family string
	// Seed seeds the hash families of minhash and simhash; 0 means the
	// package default.
	Seed uint64

	// SimHash.
	Bits     int    // 64 or 128; default 64
	Distance int    // maximum Hamming distance; default 3
	Weights  string // count, set, sublinear, tfidf; default set (docs/defaults.md)

	// IDFFile, with Weights "tfidf", is an IDF table to use instead of
	// learning one in a pre-pass; SaveIDF is where a successful run saves
	// the table it used (package simhash's IDF file format).
	IDFFile, SaveIDF string

	// Verify confirms every candidate pair by exact Jaccard of shingle
	// sets against Threshold before it joins a cluster. Without it (and
	// without EstimateOnly) minhash verifies only the candidates whose
	// signature estimate is within a few standard errors of Threshold.
	Verify bool
	// EstimateOnly (minhash) decides every candidate by its signature
	// estimate alone: the join of earlier versions, faster and with less
	// memory, but on templated text single linkage chains its false
	// positives into large wrong clusters (docs/defaults.md).
	EstimateOnly bool

	// Cluster is how pairs become clusters: cluster.Components (connected
	// components of the pairs, single linkage) or cluster.Leader (every
	// removed document has a verified similarity >= Threshold to the kept
	// document of its cluster; minhash with Keep first).
	Cluster cluster.Mode

	// KSentence.
	KSentences int // default 3

	// Bloom.
	KeyField string  // dedup on this field's value instead of the text
	BloomN   int     // expected number of items; 0: the number of documents if known, else 10M
	BloomFPP float64 // target false-positive probability; default 1e-6
	// BloomFile, when set, is a filter file carried across runs: loaded
	// when it exists (its own size and hash count then apply), so that
	// keys of earlier runs count as seen, and saved, atomically, when the
	// run succeeds.
	BloomFile string

	// AllPairs (--pairs-mode all) reports every pair the method verifies
	// (at or above the threshold, or within the distance) instead of a
	// spanning forest of each cluster (--pairs-mode spanning, the
	// default: only the pairs that joined two clusters). The clusters are
	// the same; the pairs output, Stats.Pairs and the similarity histogram
	// differ, and for large clusters all pairs can be many more
	// (quadratic in the cluster size). docs/outputs.md has the details
	// per method.
	AllPairs bool

	// Workers is the number of goroutines that normalise and sketch; 0
	// means GOMAXPROCS.
	Workers int

	// Keep chooses the kept document of each cluster.
	Keep cluster.Policy

	// Memory is the memory budget in bytes; 0 means half of the
	// machine's RAM. When the estimated need of a run exceeds it, methods
	// that support it (see Keyed) spill bucket keys to disk.
	Memory int64
	// Spill forces the spill path for methods that support it.
	Spill bool
}

// DefaultConfig returns the defaults a newcomer would choose: minhash at
// Jaccard 0.8 over word 5-grams with 128 permutations (the shared MinHash
// defaults of package lsh, which index create uses too).
func DefaultConfig() Config {
	return Config{
		Method:     "minhash",
		Normalize:  text.DefaultOptions(),
		Shingle:    shingle.Options{Unit: shingle.Word, N: lsh.DefaultNgram},
		Threshold:  lsh.DefaultThreshold,
		NumPerm:    lsh.DefaultNumPerm,
		Bits:       64,
		Distance:   3,
		Weights:    "set",
		KSentences: 3,
		BloomFPP:   1e-6,
	}
}

// Validate checks the parameters shared by every method; methods check
// their own at construction.
func (c *Config) Validate() error {
	if c.Threshold <= 0 || c.Threshold > 1 {
		return fmt.Errorf("--threshold %v: must be in (0, 1]", c.Threshold)
	}
	if c.Workers < 0 {
		return fmt.Errorf("--workers %d: must be at least 1 (0 means all cores)", c.Workers)
	}
	if c.Cluster == cluster.Leader && c.Method != "minhash" {
		return fmt.Errorf("--cluster leader: only --method minhash clusters by leader so far (not %s)", c.Method)
	}
	if c.Shingle.N < 0 || c.Shingle.N > shingle.MaxN {
		return fmt.Errorf("--ngram %d: must be between 1 and %d", c.Shingle.N, shingle.MaxN)
	}
	return nil
}

func (c *Config) workers() int {
	if c.Workers > 0 {
		return c.Workers
	}
	return runtime.GOMAXPROCS(0)
}
