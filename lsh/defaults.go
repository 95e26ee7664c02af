package lsh

import "errors"

// DefaultRecall is the probability that DefaultParams gives a pair of
// similarity exactly the threshold of becoming a candidate.
//
// The other MinHash defaults (the threshold, the number of slots, the
// shingles) are package sketch's (sketch.DefaultThreshold,
// sketch.DefaultNumPerm, sketch.DefaultNgram), which dedup, a new index and
// lsh-params start from; this package sits below sketch and takes them as
// arguments.
const DefaultRecall = 0.95

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
