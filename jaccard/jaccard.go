// Package jaccard computes exact Jaccard similarity of shingle sets and bags
// (multisets), and finds all pairs of a collection at or above a threshold
// by an exact similarity join.
//
// Set(a, b) = |a ∩ b| / |a ∪ b| over sorted, de-duplicated hashes. Bag(a, b)
// = Σ min(count) / Σ max(count) over sorted hashes with repeats (the
// weighted Jaccard of seed 003: for "a rose is a rose is a rose" and "a rose
// is a flower which is a rose", word 1-grams give 0.7 as bags and 0.6 as
// sets). Both take the output of package shingle (AppendSet, AppendBag).
//
// Two empty inputs have similarity 1 (they are identical); one empty input
// and one non-empty have similarity 0. The functions do not allocate and are
// safe for concurrent use.
package jaccard

import "math"

// Set returns the Jaccard similarity of two sorted sets of distinct hashes.
func Set(a, b []uint64) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := Intersection(a, b)
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// Intersection returns |a ∩ b| for two sorted sets of distinct hashes (for
// sorted bags, the multiset intersection size Σ min(count)).
func Intersection(a, b []uint64) int {
	i, j, n := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			n++
			i++
			j++
		}
	}
	return n
}

// Bag returns the multiset Jaccard similarity Σmin/Σmax of two sorted lists
// of hashes with repeats. The merge walk of Intersection pairs each common
// occurrence once, so on bags it counts Σmin, and Σmax = |a| + |b| - Σmin:
// the formula of Set, applied to multisets.
func Bag(a, b []uint64) float64 { return Set(a, b) }

// OfCounts is the Jaccard similarity of two sets of na and nb distinct
// hashes with inter in common: Set's value, without the sets. It is the one
// formula every exact verification uses (dedup's tiered join, the index's
// check), so that they agree to the last bit.
func OfCounts(inter, na, nb int) float64 {
	if na == 0 && nb == 0 {
		return 1
	}
	return float64(inter) / float64(na+nb-inter)
}

// MinShared returns the fewest hashes two sets of na and nb distinct
// hashes must share for OfCounts to reach t (0 < t <= 1), and min(na, nb)
// + 1 when no number does.
func MinShared(na, nb int, t float64) int {
	most := min(na, nb)
	x := min(max(int(math.Ceil(t*float64(na+nb)/(1+t))), 0), most+1)
	for x > 0 && OfCounts(x-1, na, nb) >= t {
		x--
	}
	for x <= most && OfCounts(x, na, nb) < t {
		x++
	}
	return x
}
