// Package tune sweeps the parameters of a dedup method over a labelled
// sample and scores every configuration against the truth.
//
// A sweep is the Cartesian product of the parameter lists of a Space that
// apply to the method (see Space.Configs): threshold, shingle unit and
// size, permutations and banding for minhash; shingles, bits, Hamming
// distance and weights for simhash; K for ksentence; threshold and
// shingles for jaccard. Each configuration runs the whole pipeline
// in-process (dedup.Run), writes its clusters to a temporary file, and is
// scored by eval.Score: pairwise precision, recall and F1 over
// same-cluster pairs, the Adjusted Rand Index, and document-level macro F1
// and accuracy. Best picks the configuration with the highest value of a
// Metric, the first in the sweep's order on a tie.
//
// Sample draws a reproducible subset of a large labelled set: whole truth
// clusters, chosen by a seeded hash, until a document budget is reached, so
// that every true pair of a chosen cluster stays in the sample.
//
// Times are wall-clock seconds of dedup.Run on a possibly shared machine:
// compare them within one sweep, not across machines. The functions are
// synchronous and safe for concurrent use on different inputs.
package tune

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

// Metric names the score a sweep maximises.
type Metric string

// The metrics Best can maximise.
const (
	F1        Metric = "f1"        // pairwise F1
	ARI       Metric = "ari"       // Adjusted Rand Index
	Precision Metric = "precision" // pairwise precision
	Recall    Metric = "recall"    // pairwise recall
	MacroF1   Metric = "macro_f1"  // document-level macro F1 (text-dedup's)
)

// Metrics lists the metrics in the order tables show them.
var Metrics = []Metric{F1, ARI, Precision, Recall, MacroF1}

// ParseMetric parses a metric name.
func ParseMetric(s string) (Metric, error) {
	for _, m := range Metrics {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("unknown metric %q (want f1, ari, precision, recall or macro_f1)", s)
}

// Scores are the measures of one configuration against the truth.
type Scores struct {
	Precision float64 `json:"precision"`
	Recall    float64 `json:"recall"`
	F1        float64 `json:"f1"`
	ARI       float64 `json:"ari"`
	MacroF1   float64 `json:"macro_f1"`
	Accuracy  float64 `json:"accuracy"`
	// TruePairs, PredictedPairs and CorrectPairs are the pair counts.
	TruePairs      int64 `json:"true_pairs"`
	PredictedPairs int64 `json:"predicted_pairs"`
	CorrectPairs   int64 `json:"correct_pairs"`
	// Labels are the per-label fractions of a pairs truth.
	Labels []eval.LabelScore `json:"labels,omitempty"`
}

// ScoresOf extracts Scores from an eval.Result.
func ScoresOf(r *eval.Result) Scores {
	return Scores{
		Precision: r.Pairs.Precision, Recall: r.Pairs.Recall, F1: r.Pairs.F1, ARI: r.ARI,
		MacroF1: r.Docs.MacroF1, Accuracy: r.Docs.Accuracy,
		TruePairs: r.Pairs.True, PredictedPairs: r.Pairs.Predicted, CorrectPairs: r.Pairs.Correct,
		Labels: r.Labels,
	}
}

// Value returns the value of metric m in s.
func (s Scores) Value(m Metric) float64 {
	switch m {
	case ARI:
		return s.ARI
	case Precision:
		return s.Precision
	case Recall:
		return s.Recall
	case MacroF1:
		return s.MacroF1
	}
	return s.F1
}

// Space lists the values to sweep for each parameter. An empty list keeps
// the base configuration's value. A parameter that does not apply to the
// method is ignored.
type Space struct {
	Thresholds []float64         // minhash, jaccard
	Shingles   []shingle.Options // minhash, simhash, jaccard
	NumPerms   []int             // minhash
	// Bandings lists (bands, rows) pairs for minhash; {0, 0} means chosen
	// from the threshold. A pair that needs more than the permutations is
	// skipped.
	Bandings   [][2]int
	Bits       []int    // simhash
	Distances  []int    // simhash
	Weights    []string // simhash: count, tfidf
	KSentences []int    // ksentence
	Verify     []bool   // minhash, simhash
}

// DefaultSpace returns the sweep used when none is given: word 1-, 2-, 3-
// and 5-grams and char 3-, 4- and 5-grams; thresholds 0.3 to 0.9 by 0.1;
// 64, 128 and 256 permutations with the banding chosen from the threshold;
// 64-bit simhash at distances 0 to 12 with count and TF-IDF weights; K from
// 1 to 5.
func DefaultSpace() Space {
	var sh []shingle.Options
	for _, n := range []int{1, 2, 3, 5} {
		sh = append(sh, shingle.Options{Unit: shingle.Word, N: n})
	}
	for _, n := range []int{3, 4, 5} {
		sh = append(sh, shingle.Options{Unit: shingle.Char, N: n})
	}
	return Space{
		Thresholds: []float64{0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9},
		Shingles:   sh,
		NumPerms:   []int{64, 128, 256},
		Bandings:   [][2]int{{0, 0}},
		Bits:       []int{64},
		Distances:  []int{0, 1, 2, 3, 4, 5, 6, 8, 10, 12},
		Weights:    []string{"count", "tfidf"},
		KSentences: []int{1, 2, 3, 4, 5},
		Verify:     []bool{false},
	}
}

// Configs returns the configurations of the sweep of base.Method: base
// with every combination of the lists that apply to the method.
func (s Space) Configs(base dedup.Options) []dedup.Options {
	out := []dedup.Options{base}
	// expand replaces out by len(vals) copies of each element, set by set.
	expand := func(n int, set func(c *dedup.Options, i int) bool) {
		if n == 0 {
			return
		}
		next := make([]dedup.Options, 0, len(out)*n)
		for _, c := range out {
			for i := range n {
				c2 := c
				if set(&c2, i) {
					next = append(next, c2)
				}
			}
		}
		out = next
	}
	thresholds := func() {
		expand(len(s.Thresholds), func(c *dedup.Options, i int) bool {
			c.Spec.Threshold, c.VerifyThreshold = s.Thresholds[i], s.Thresholds[i]
			return true
		})
	}
	shingles := func() {
		expand(len(s.Shingles), func(c *dedup.Options, i int) bool {
			seed := c.Spec.Shingle.Seed
			c.Spec.Shingle = s.Shingles[i]
			c.Spec.Shingle.Seed = seed
			return true
		})
	}
	verify := func() {
		expand(len(s.Verify), func(c *dedup.Options, i int) bool { c.Verify = s.Verify[i]; return true })
	}
	method := base.Method
	if method == "" {
		method = base.Spec.Method.String()
	}
	switch method {
	case "minhash":
		shingles()
		expand(len(s.NumPerms), func(c *dedup.Options, i int) bool { c.Spec.MinHash.NumPerm = s.NumPerms[i]; return true })
		expand(len(s.Bandings), func(c *dedup.Options, i int) bool {
			b := s.Bandings[i]
			c.Spec.MinHash.Bands, c.Spec.MinHash.Rows = b[0], b[1]
			k := c.Spec.MinHash.NumPerm
			if k == 0 {
				k = sketch.DefaultNumPerm
			}
			return b[0]*b[1] <= k
		})
		verify()
		thresholds()
	case "jaccard", "bloom-overlap":
		shingles()
		thresholds()
	case "simhash":
		shingles()
		expand(len(s.Weights), func(c *dedup.Options, i int) bool {
			w, err := sketch.ParseWeighting(s.Weights[i])
			c.Spec.SimHash.Weights = w
			return err == nil
		})
		expand(len(s.Bits), func(c *dedup.Options, i int) bool { c.Spec.SimHash.Bits = s.Bits[i]; return true })
		expand(len(s.Distances), func(c *dedup.Options, i int) bool {
			d := s.Distances[i]
			c.Spec.SimHash.Distance = d
			if d == 0 {
				c.Spec.SimHash.Distance = sketch.ExactDistance
			}
			bits := c.Spec.SimHash.Bits
			if bits == 0 {
				bits = sketch.DefaultBits
			}
			return d >= 0 && d < bits
		})
		verify()
		// Verified candidates are decided at a threshold: sweep it when
		// any configuration verifies (--verify true alone swept nothing
		// before, --thresholds ignored for the default 0.8).
		if base.Verify || slices.Contains(s.Verify, true) {
			thresholds()
		}
	case "ksentence":
		expand(len(s.KSentences), func(c *dedup.Options, i int) bool { c.Spec.KSentence.K = s.KSentences[i]; return true })
	}
	return out
}

// Trial is one configuration of a sweep and its scores.
type Trial struct {
	// Label is a short description of the swept parameters
	// ("word-5 t=0.8 perm=128 13x7").
	Label   string        `json:"label"`
	Options dedup.Options `json:"-"`
	// Params are the method's facts (dedup.Stats.Params).
	Params  dedup.Facts `json:"params"`
	Scores  Scores      `json:"scores"`
	Seconds float64     `json:"seconds"`
	// Pairs is the number of pairs the method reported.
	Pairs int `json:"pairs"`
}

// Label describes the parameters of cfg that a sweep can change, for
// tables and plots.
func Label(cfg dedup.Options) string {
	spec, err := cfg.ResolveSpec()
	method := cfg.Method
	if method == "" {
		method = cfg.Spec.Method.String()
	}
	if err != nil {
		return method
	}
	sh := func() string { return fmt.Sprintf("%s-%d", spec.Shingle.Unit, spec.Shingle.N) }
	var parts []string
	switch method {
	case "minhash":
		parts = append(parts, sh(), fmt.Sprintf("t=%g", spec.Threshold), fmt.Sprintf("perm=%d", spec.MinHash.NumPerm))
		if cfg.Spec.MinHash.Bands > 0 {
			parts = append(parts, fmt.Sprintf("%dx%d", spec.MinHash.Bands, spec.MinHash.Rows))
		}
		if cfg.Verify {
			parts = append(parts, "verify")
		}
	case "jaccard", "bloom-overlap":
		parts = append(parts, sh(), fmt.Sprintf("t=%g", spec.Threshold))
	case "simhash":
		parts = append(parts, sh(), spec.SimHash.Weights.String(), fmt.Sprintf("f=%d", spec.SimHash.Bits), fmt.Sprintf("k=%d", spec.SimHash.MaxDistance()))
		if cfg.Verify {
			t := cfg.VerifyThreshold
			if t == 0 {
				t = sketch.DefaultThreshold
			}
			parts = append(parts, fmt.Sprintf("verify t=%g", t))
		}
	case "ksentence":
		parts = append(parts, fmt.Sprintf("K=%d", spec.KSentence.K))
	default:
		parts = append(parts, method)
	}
	return strings.Join(parts, " ")
}

// Evaluate runs cfg on in, scores its clusters against truth, and returns
// the trial. Temporary files go to tmpDir ("" for the system default) and
// are removed. in.Outputs are ignored.
func Evaluate(ctx context.Context, cfg dedup.Options, in dedup.Input, truth *eval.Labels, tmpDir string) (Trial, error) {
	t := Trial{Label: Label(cfg), Options: cfg}
	dir, err := os.MkdirTemp(tmpDir, "neardup-tune-")
	if err != nil {
		return t, err
	}
	defer os.RemoveAll(dir)
	clusters := filepath.Join(dir, "clusters.jsonl")
	in.Examples, in.RandomExamples = 0, 0
	start := time.Now()
	stats, err := dedup.Run(ctx, cfg, in, dedup.Outputs{Clusters: clusters, TmpDir: dir})
	if err != nil {
		return t, fmt.Errorf("%s: %w", t.Label, err)
	}
	t.Seconds = time.Since(start).Seconds()
	t.Params, t.Pairs = stats.Params, stats.Pairs
	f, err := os.Open(clusters)
	if err != nil {
		return t, err
	}
	defer f.Close()
	pred, err := eval.ReadClusters(f, clusters)
	if err != nil {
		return t, err
	}
	res, err := eval.Score(truth, pred)
	if err != nil {
		return t, err
	}
	if pred.Len() > 0 && res.Extra.Count == pred.Len() {
		return t, fmt.Errorf("%w (the input's first ids: %s; the truth's: %s)", ErrNoCommonIDs, quoteFirst(pred.IDs), quoteFirst(truth.IDs))
	}
	t.Scores = ScoresOf(res)
	return t, nil
}

// ErrNoCommonIDs is returned by Evaluate (and Sweep) when no document of
// the input is in the truth: every score would be that of an empty
// prediction, the same for every configuration.
var ErrNoCommonIDs = errors.New("no document of the input is in the truth: the input and the truth are not about the same documents")

// quoteFirst quotes the first three ids, comma-separated.
func quoteFirst(ids []string) string {
	q := make([]string, 0, 3)
	for _, id := range ids[:min(3, len(ids))] {
		q = append(q, strconv.Quote(id))
	}
	return strings.Join(q, ", ")
}

// ErrNoConfig is returned by Sweep when the space yields no configuration.
var ErrNoConfig = errors.New("tune: the sweep has no configuration")

// Sweep evaluates every configuration of space for base.Method, in order,
// and calls progress (when not nil) after each. It stops at the first
// error, returning the trials done so far.
func Sweep(ctx context.Context, base dedup.Options, space Space, in dedup.Input, truth *eval.Labels, tmpDir string,
	progress func(done, total int, t *Trial)) ([]Trial, error) {
	cfgs := space.Configs(base)
	if len(cfgs) == 0 {
		return nil, ErrNoConfig
	}
	trials := make([]Trial, 0, len(cfgs))
	for _, cfg := range cfgs {
		if err := ctx.Err(); err != nil {
			return trials, err
		}
		t, err := Evaluate(ctx, cfg, in, truth, tmpDir)
		if err != nil {
			return trials, err
		}
		trials = append(trials, t)
		if progress != nil {
			progress(len(trials), len(cfgs), &trials[len(trials)-1])
		}
	}
	return trials, nil
}

// Best returns the index of the trial with the highest value of m; on a
// tie, the earlier one in the sweep's order (not the faster: times are
// noisy, and the choice must not depend on them). It returns -1 for no
// trial.
func Best(trials []Trial, m Metric) int {
	best := -1
	for i := range trials {
		if best < 0 {
			best = i
			continue
		}
		if trials[i].Scores.Value(m) > trials[best].Scores.Value(m) {
			best = i
		}
	}
	return best
}
