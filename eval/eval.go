// Package eval scores a predicted clustering of documents (the --clusters
// output of neardup dedup) against labelled truth.
//
// # Inputs
//
// Both sides are partitions of document ids (type Labels). The truth is a
// JSONL file of {"id", "cluster"} objects for every document (truth.jsonl),
// or a pairs file: tab-separated with a header "id1 id2 label ...", one
// labelled pair per line (pairs.tsv). A pairs file becomes a partition by
// taking the connected components of its positive pairs (labels listed in
// ReadOptions.Positive, "1" by default; any other label, such as 0 or a
// category, is a negative pair); ids that appear only in negative pairs are
// singletons, and ids that appear in no pair are not part of the
// evaluation. Components are transitive: a–b and b–c positive put a and c
// together even when a–c is labelled negative. Score also reports, per
// label, how many labelled pairs the prediction puts in one cluster.
// A pair listed more than once counts once per line in that report.
// Either file may be gzip-compressed. NewLabels builds a Labels from a
// clustering held in memory.
//
// The documents evaluated are the truth's ids. A truth id missing from the
// prediction counts as a predicted singleton; a predicted id the truth
// lacks is left out (its cluster sizes are counted without it). Both are
// reported in Result, with repeated ids (the first record wins), malformed
// lines and empty files, so that a caller can treat them as errors.
//
// # Metrics
//
// From the contingency table n_ij (documents in truth cluster i and
// predicted cluster j), its row sums a_i and column sums b_j, over n
// documents, with C(k) = k(k-1)/2:
//
//	TP = Σ_ij C(n_ij)      pairs together in both
//	T  = Σ_i C(a_i)        pairs together in the truth
//	P  = Σ_j C(b_j)        pairs together in the prediction
//	N  = C(n)              all pairs
//
//	pairwise precision = TP / P, recall = TP / T, F1 = 2·TP / (T + P)
//
// The Adjusted Rand Index (Hubert and Arabie, 1985) is the Rand index
// corrected for chance, written with the pair confusion counts FN = T - TP,
// FP = P - TP, TN = N - TP - FN - FP, as scikit-learn's adjusted_rand_score
// does:
//
//	ARI = 2·(TP·TN - FN·FP) / ((TP+FN)·(FN+TN) + (TP+FP)·(FP+TN))
//
// which equals (TP - E) / ((T+P)/2 - E) with E = T·P/N; ARI is 1 when FN =
// FP = 0 (identical partitions, including n < 2), about 0 for independent
// partitions, and can be negative.
//
// Document-level duplicate detection: a document is a duplicate when its
// cluster has more than one member (in the truth, and in the prediction,
// counted over the evaluated documents). Precision, recall and F1 are
// reported for the duplicate class and for the non-duplicate class; macro
// F1 is their mean (over the classes present in the truth or the
// prediction, as scikit-learn's macro average) and accuracy the fraction
// of documents classified right, as text-dedup reports them.
//
// A ratio whose denominator is 0 (precision with no predicted pair, for
// example) is reported as 0, as scikit-learn does by default; the counts
// are reported beside it.
//
// Everything is computed from counts, in time and memory linear in the
// number of documents: clusters of millions cost no more than singletons.
// The functions are safe for concurrent use on different inputs; Labels is
// read-only after it is read.
package eval

import (
	"errors"
	"fmt"

	"github.com/neardup/neardup/internal/human"
)

// ErrEmptyTruth is returned by Score when the truth has no document.
var ErrEmptyTruth = errors.New("eval: the truth holds no document")

// Result is the outcome of Score.
type Result struct {
	// Documents is the number of documents evaluated (the truth's).
	Documents int `json:"documents"`
	// TruthClusters and PredClusters count the clusters over the
	// evaluated documents (missing predictions are singletons).
	TruthClusters int `json:"truth_clusters"`
	PredClusters  int `json:"pred_clusters"`

	Pairs PairScores `json:"pairs"`
	// ARI is the Adjusted Rand Index.
	ARI  float64   `json:"ari"`
	Docs DocScores `json:"documents_level"`
	// Labels scores the labelled pairs of a pairs truth, per label.
	Labels []LabelScore `json:"labels,omitempty"`

	// Missing lists truth ids absent from the prediction (counted as
	// singletons); Extra lists predicted ids absent from the truth (left
	// out).
	Missing IDList `json:"missing"`
	Extra   IDList `json:"extra"`
	// TruthIssues and PredIssues are the problems found in each file.
	TruthIssues Issues `json:"truth_issues"`
	PredIssues  Issues `json:"pred_issues"`
}

// PairScores are the pairwise counts and scores.
type PairScores struct {
	True      int64   `json:"true"`      // T: same-cluster pairs in the truth
	Predicted int64   `json:"predicted"` // P: same-cluster pairs in the prediction
	Correct   int64   `json:"correct"`   // TP: in both
	Total     int64   `json:"total"`     // N: all pairs of documents
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// DocScores are the document-level duplicate detection scores.
type DocScores struct {
	Duplicate    ClassScores `json:"duplicate"`
	NonDuplicate ClassScores `json:"non_duplicate"`
	MacroF1      float64     `json:"macro_f1"`
	Accuracy     float64     `json:"accuracy"`
}

// ClassScores are precision, recall and F1 for one class; Support is the
// number of documents of the class in the truth, Predicted in the
// prediction.
type ClassScores struct {
	Support   int     `json:"support"`
	Predicted int     `json:"predicted"`
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
}

// LabelScore says, for the labelled pairs of one label, how many the
// prediction puts in one cluster (for a positive label that fraction is a
// recall; for a negative one, a false-positive rate).
type LabelScore struct {
	Label    string  `json:"label"`
	Positive bool    `json:"positive"`
	Pairs    int     `json:"pairs"`
	Together int     `json:"together"`
	Fraction float64 `json:"fraction"`
}

// IDList is a count of ids with the first few of them.
type IDList struct {
	Count    int      `json:"count"`
	Examples []string `json:"examples,omitempty"`
}

func (l *IDList) add(id string) {
	l.Count++
	if len(l.Examples) < maxExamples {
		l.Examples = append(l.Examples, id)
	}
}

// Problems returns one readable line per problem with the inputs: issues of
// either file, missing and extra ids. A strict caller treats any as an
// error.
func (r *Result) Problems(truthName, predName string) []string {
	out := r.TruthIssues.Messages(truthName)
	out = append(out, r.PredIssues.Messages(predName)...)
	if r.Missing.Count > 0 {
		out = append(out, fmt.Sprintf("%s missing from %s, counted as singletons, first: %s",
			human.Plural(r.Missing.Count, "truth id"), predName, quoteList(r.Missing.Examples)))
	}
	if r.Extra.Count > 0 {
		out = append(out, fmt.Sprintf("%s of %s not in the truth, left out, first: %s",
			human.Plural(r.Extra.Count, "id"), predName, quoteList(r.Extra.Examples)))
	}
	return out
}

// choose2 returns k(k-1)/2.
func choose2(k int64) int64 { return k * (k - 1) / 2 }

// ratio returns a/b, or 0 when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func f1(p, r float64) float64 { return ratio(2*p*r, p+r) }

// Score compares pred with truth. It returns ErrEmptyTruth when the truth
// has no document; every other problem is reported in the Result.
func Score(truth, pred *Labels) (*Result, error) {
	n := truth.Len()
	if n == 0 {
		return nil, ErrEmptyTruth
	}
	res := &Result{Documents: n, TruthIssues: truth.Issues, PredIssues: pred.Issues}

	// Predicted cluster of each truth document; missing ones get fresh
	// singleton clusters numbered from pred.NumClusters.
	pc := make([]int32, n)
	inTruth := make([]bool, pred.Len())
	next := int64(pred.NumClusters)
	for k, id := range truth.IDs {
		if p := pred.Index(id); p >= 0 {
			pc[k] = pred.Cluster[p]
			inTruth[p] = true
			continue
		}
		res.Missing.add(id)
		if next > 1<<31-1 {
			return nil, errors.New("eval: too many clusters")
		}
		pc[k] = int32(next)
		next++
	}
	for p, ok := range inTruth {
		if !ok {
			res.Extra.add(pred.IDs[p])
		}
	}

	// Contingency table, row and column sums.
	a := make([]int64, truth.NumClusters)
	b := make([]int64, next)
	cells := make(map[uint64]int64, n)
	for k := range n {
		t, p := truth.Cluster[k], pc[k]
		a[t]++
		b[p]++
		cells[uint64(t)<<32|uint64(uint32(p))]++
	}
	var tp, tt, pp int64
	for _, c := range cells {
		tp += choose2(c)
	}
	for _, c := range a {
		if c > 0 {
			res.TruthClusters++
		}
		tt += choose2(c)
	}
	for _, c := range b {
		if c > 0 {
			res.PredClusters++
		}
		pp += choose2(c)
	}
	all := choose2(int64(n))
	res.Pairs = PairScores{True: tt, Predicted: pp, Correct: tp, Total: all}
	res.Pairs.Precision = ratio(float64(tp), float64(pp))
	res.Pairs.Recall = ratio(float64(tp), float64(tt))
	res.Pairs.F1 = ratio(2*float64(tp), float64(tt+pp))
	res.ARI = ari(tp, tt, pp, all)

	// Document level.
	var dd, dn, nd, nn int // truth×pred: dup/dup, dup/non, non/dup, non/non
	for k := range n {
		td, pd := a[truth.Cluster[k]] > 1, b[pc[k]] > 1
		switch {
		case td && pd:
			dd++
		case td:
			dn++
		case pd:
			nd++
		default:
			nn++
		}
	}
	d := &res.Docs
	d.Duplicate = classScores(dd, dd+nd, dd+dn)
	d.NonDuplicate = classScores(nn, nn+dn, nn+nd)
	// Macro F1 over the classes present in the truth or the prediction,
	// as scikit-learn's f1_score(average="macro") does.
	switch {
	case dd+dn+nd == 0:
		d.MacroF1 = d.NonDuplicate.F1
	case nn+dn+nd == 0:
		d.MacroF1 = d.Duplicate.F1
	default:
		d.MacroF1 = (d.Duplicate.F1 + d.NonDuplicate.F1) / 2
	}
	d.Accuracy = float64(dd+nn) / float64(n)

	// Labelled pairs.
	if truth.Pairs != nil {
		res.Labels = make([]LabelScore, len(truth.PairLabels))
		for l, name := range truth.PairLabels {
			res.Labels[l] = LabelScore{Label: name, Positive: truth.Positive[l]}
		}
		for _, lp := range truth.Pairs {
			s := &res.Labels[lp.Label]
			s.Pairs++
			if lp.A == lp.B || pc[lp.A] == pc[lp.B] {
				s.Together++
			}
		}
		for l := range res.Labels {
			s := &res.Labels[l]
			s.Fraction = ratio(float64(s.Together), float64(s.Pairs))
		}
	}
	return res, nil
}

// classScores returns the scores of one class from the number of documents
// right (in the class in both), predicted in it and truly in it.
func classScores(right, predicted, support int) ClassScores {
	p := ratio(float64(right), float64(predicted))
	r := ratio(float64(right), float64(support))
	return ClassScores{Support: support, Predicted: predicted, Precision: p, Recall: r, F1: f1(p, r)}
}

// ari returns the Adjusted Rand Index from the pair counts.
func ari(tp, t, p, n int64) float64 {
	fn, fp := t-tp, p-tp
	if fn == 0 && fp == 0 {
		return 1
	}
	tn := n - tp - fn - fp
	// Products of pair counts exceed int64 for n above about 2^16: use
	// float64 (relative error about 1e-16, far below what is printed).
	ftp, ffn, ffp, ftn := float64(tp), float64(fn), float64(fp), float64(tn)
	return 2 * (ftp*ftn - ffn*ffp) / ((ftp+ffn)*(ffn+ftn) + (ftp+ffp)*(ffp+ftn))
}
