package dedup

import (
	"encoding/json"

	"github.com/neardup/neardup/internal/human"
)

// Facts are what a method decided for a run beyond its sketch.Spec (which
// Stats.Spec records): the banding rule, the join, the table design, the
// Bloom filter's size... A fact that does not apply to the method is left
// zero (and out of the JSON). The JSON keys are those of --stats "params".
type Facts struct {
	// The parameters, repeated from the Spec for the summary.
	Threshold float64 `json:"threshold,omitempty"`
	NumPerm   int     `json:"num_perm,omitempty"`
	Family    string  `json:"family,omitempty"`
	Seed      string  `json:"seed,omitempty"` // hex: "0x..."
	Unit      string  `json:"unit,omitempty"`
	Ngram     int     `json:"ngram,omitempty"`
	// MinHash: the banding and how it was chosen, its effective threshold
	// and the probability that a pair at the threshold is a candidate.
	Bands              int     `json:"bands,omitempty"`
	Rows               int     `json:"rows,omitempty"`
	Banding            string  `json:"banding,omitempty"`
	EffectiveThreshold float64 `json:"effective_threshold,omitempty"`
	PAtThreshold       float64 `json:"p_at_threshold,omitempty"`
	// Verify (minhash, simhash) says whether every candidate is verified
	// by exact Jaccard; nil where it does not apply.
	Verify *bool `json:"verify,omitempty"`
	// Join is the rule that decides a candidate pair; Cluster how pairs
	// become clusters (components or leader).
	Join    string `json:"join,omitempty"`
	Cluster string `json:"cluster,omitempty"`
	// SimHash: the fingerprint bits, the largest distance (nil where it
	// does not apply), the weights, the index, the similarity the pairs
	// report, the table design (chosen at Flush, or for a million
	// documents before), the design of a spilled run's keys (chosen for
	// the plan's estimate of the documents) and the IDF table's size.
	Bits            uint64 `json:"bits,omitempty"` // bloom: the filter's bits
	Distance        *int   `json:"distance,omitempty"`
	Weights         string `json:"weights,omitempty"`
	Index           string `json:"index,omitempty"`
	Similarity      string `json:"similarity,omitempty"`
	Design          string `json:"design,omitempty"`
	DesignFor1MDocs string `json:"design_for_1M_docs,omitempty"`
	SpillDesign     string `json:"spill_design,omitempty"`
	IDFDocs         int64  `json:"idf_docs,omitempty"`
	IDFFeatures     int    `json:"idf_features,omitempty"`
	// Exact, KSentence: the hash and how sentences are found.
	Hash       string `json:"hash,omitempty"`
	KSentences int    `json:"k_sentences,omitempty"`
	Sentences  string `json:"sentences,omitempty"`
	// Bloom: the expected items, the target false-positive probability,
	// the hash functions, the filter's bytes and construction, the
	// probability at n items, what a duplicate is, the mode and the key.
	N         uint64  `json:"n,omitempty"`
	FPP       float64 `json:"fpp,omitempty"`
	Hashes    int     `json:"hashes,omitempty"`
	Bytes     uint64  `json:"bytes,omitempty"`
	Filter    string  `json:"filter,omitempty"`
	Formula   string  `json:"formula,omitempty"`
	FPPAtN    float64 `json:"fpp_at_n,omitempty"`
	Duplicate string  `json:"duplicate,omitempty"`
	Mode      string  `json:"mode,omitempty"`
	Key       string  `json:"key,omitempty"`
}

// Map returns the facts that apply, by their JSON keys, for a listing
// (the summary, the report).
func (f Facts) Map() map[string]any {
	b, err := json.Marshal(f)
	if err != nil {
		return nil
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m
}

func ptr[T any](v T) *T { return &v }

// number writes n with thousands separators (24,684,096), as the
// summary's counts, in the facts written as sentences (Duplicate), which
// the summary and --stats "params" show alike: they are prose for people.
func number(n int) string { return human.Number(n) }
