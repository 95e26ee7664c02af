package sketch

import (
	"math"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/minhash"
)

// Margins of the tiered join of MinHash candidates (dedup's default join
// and the index's check), in standard errors of the estimate at the
// threshold. A pair below the threshold is accepted without verification
// only when its estimate exceeds the threshold by AcceptSigmas standard
// errors: for a pair at J = t - 0.02 with 128 slots at t = 0.8 the chance
// is about 1e-6, so among the hundreds of thousands of such pairs of a
// templated corpus at most a few are accepted and single linkage has
// almost nothing false to chain. A pair at or above the threshold is
// rejected without verification only below RejectSigmas standard errors
// under it (chance at most 0.0013 at J = t, far less above).
const (
	AcceptSigmas = 4.5
	RejectSigmas = 3.0
)

// Margins returns the MinHash estimates below which (lo) the tiered join
// rejects a candidate pair and at or above which (hi) it may accept it
// without computing the exact Jaccard similarity, for an estimate that
// rests on keff effectively independent slots (minhash.EffectiveSlots: a
// densified one-permutation signature of a short or repetitive text rests
// on fewer than it has). keff is clamped to [1, NumPerm]. s must be a
// resolved MinHash specification.
func (s Spec) Margins(keff int) (lo, hi float64) {
	keff = min(max(keff, 1), max(s.MinHash.NumPerm, 1))
	t := s.Threshold
	// The standard error of the estimate at J = t, floored so that a
	// threshold near 1 still leaves a margin.
	se := math.Sqrt(max(t*(1-t), 0.01) / float64(keff))
	return t - RejectSigmas*se, t + AcceptSigmas*se
}

// Verdict is the decision on a candidate pair of MinHash sketches.
type Verdict struct {
	// Similarity is the exact Jaccard similarity of the shingle sets when
	// Exact, else the signature estimate (the fraction of equal slots).
	Similarity float64
	// Exact tells that Similarity was computed from the shingle sets.
	Exact bool
	// Duplicate is the decision.
	Duplicate bool
}

// DecideLeader decides whether the document of sketch b joins a, a kept
// document, as dedup's leader clustering (--cluster leader) decides it in
// its default tiered join, so that an index that adds a document only when
// no kept document accepts it keeps exactly what dedup --cluster leader
// --keep first keeps:
//
//   - the estimate (the low 16 bits of each slot compared, minhash.Matches16)
//     below the lower margin (Margins, for the fewer effective slots of the
//     two signatures) rejects the pair without the sets;
//   - otherwise the pair is a duplicate when the exact Jaccard similarity of
//     the two shingle sets (Sketch.Set, sorted and distinct) is at least the
//     threshold, and that similarity is reported.
//
// A pair in which either sketch has no set (an index made before sets were
// kept, or created estimate-only) is decided by the full 32-bit estimate
// alone, at least the threshold, as before. Empty sketches are never
// duplicates. s must be a resolved MinHash specification.
func (s Spec) DecideLeader(a, b *Sketch) Verdict {
	if a.Empty || b.Empty || len(a.Sig) != len(b.Sig) || len(a.Sig) == 0 {
		return Verdict{}
	}
	k := float64(len(a.Sig))
	if a.Set == nil || b.Set == nil {
		est := float64(minhash.Matches(a.Sig, b.Sig)) / k
		return Verdict{Similarity: est, Duplicate: est >= s.Threshold}
	}
	if !s.WithinMargin(a, b) {
		return Verdict{Similarity: float64(minhash.Matches(a.Sig, b.Sig)) / k}
	}
	sim := jaccard.OfCounts(jaccard.Intersection(a.Set, b.Set), len(a.Set), len(b.Set))
	return Verdict{Similarity: sim, Exact: true, Duplicate: sim >= s.Threshold}
}

// WithinMargin reports whether the MinHash estimate of a and b (their low
// 16 bits compared) is at or above the tiered join's lower margin, where
// DecideLeader needs the shingle sets: a caller that reads sets from
// storage asks first, and reads them only then.
func (s Spec) WithinMargin(a, b *Sketch) bool {
	if len(a.Sig) != len(b.Sig) || len(a.Sig) == 0 {
		return false
	}
	est := float64(minhash.Matches16(a.Sig, b.Sig)) / float64(len(a.Sig))
	keff := min(minhash.EffectiveSlots(s.MinHash.Family, a.Sig), minhash.EffectiveSlots(s.MinHash.Family, b.Sig))
	lo, _ := s.Margins(keff)
	return est >= lo
}
