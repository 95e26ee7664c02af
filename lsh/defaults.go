package lsh

import "errors"

// The MinHash defaults, in one place: dedup --method minhash
// (the zero dedup.Options), a new persistent index (store.DefaultParams, index
// create) and lsh-params start from these values, so that the three agree
// on what a duplicate is and how it is found.
const (
	// DefaultThreshold is the Jaccard similarity of a duplicate.
	DefaultThreshold = 0.8
	// DefaultNumPerm is the number of MinHash slots.
	DefaultNumPerm = 128
	// DefaultNgram is the shingle size, in words: word 5-grams
	// (docs/defaults.md has the evidence).
	DefaultNgram = 5
	// DefaultRecall is the probability that DefaultParams gives a pair of
	// similarity exactly the threshold of becoming a candidate.
	DefaultRecall = 0.95
)

// DefaultParams returns the banding chosen for threshold when the caller
// gives none: ForRecall at DefaultRecall, the fewest false positives among
// the bandings that catch 95% of the pairs at the threshold (13x7 at 0.8
// with 128 slots). datasketch's area rule (Optimal) is not the default: it
// catches only 40% of the pairs at exactly 0.8 (9x13). When no banding of
// numPerm slots reaches the recall, the one closest to it is returned with
// a nil error; the caller can compare Probability(threshold) with
// DefaultRecall to say so.
func DefaultParams(threshold float64, numPerm int) (Params, error) {
	p, err := ForRecall(threshold, numPerm, DefaultRecall)
	if errors.Is(err, ErrRecall) && p.Bands > 0 {
		return p, nil
	}
	return p, err
}
