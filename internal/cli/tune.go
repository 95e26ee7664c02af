package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/tune"
)

type tuneOpts struct {
	truth      string
	positive   []string
	method     string
	metric     string
	maxDocs    int
	sampleSeed uint64

	thresholds []float64
	units      []string
	ngrams     []int
	numPerms   []int
	bandsRows  []string
	bits       []int
	distances  []int
	weights    []string
	kSentences []int
	verify     []bool

	table   string
	jsonOut string
	plot    string
	tmpDir  string
	workers int
	quiet   bool

	text  textFlags
	input inputFlags
}

func newTuneCmd() *cobra.Command {
	o := &tuneOpts{}
	cmd := &cobra.Command{
		Use:   "tune --truth TRUTH --method M [flags] INPUT...",
		Short: "Sweep a method's parameters on a labelled sample and report the best",
		Long: `Run one method over a grid of parameters on labelled documents (INPUT,
as for dedup) and score every configuration against TRUTH (as for eval:
JSONL {id, cluster} per document, or a pairs TSV whose --positive labels
mean duplicate). Print the trade-off table, best first by --metric, and
the dedup command line of the best. An INPUT none of whose documents is
in TRUTH, and a pairs TSV none of whose labels is --positive, are an
error (exit 3).

The grid is the product of the lists that apply to the method:
  minhash    --thresholds x --units x --ngrams x --num-perms x --bands-rows
  simhash    --units x --ngrams x --weights x --bits x --distances
  jaccard    --thresholds x --units x --ngrams
  ksentence  --k-sentences
  exact, bloom: one run (nothing to tune)
A list left out takes its default (shown below). --verify true,false adds
candidate verification by exact Jaccard to minhash and simhash (simhash
then also sweeps --thresholds). A list given for a method it does not
apply to (--distances with minhash) is a usage error (exit 2).

Large sets: --max-docs samples whole truth clusters (a seeded hash picks
them) up to that many documents, so every true pair of a chosen cluster is
in the sample; 0 uses everything. Every configuration runs the whole
pipeline in this process; times are wall-clock seconds.

--table writes the table as Markdown, --json every trial, --plot a PNG of
precision against recall with the best configuration marked.

` + exitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usageErr("no INPUT: give the labelled documents")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runTune(cmd.Context(), cmd, o, args, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.SortFlags = false
	sp := tune.DefaultSpace()
	fs.StringVar(&o.truth, "truth", "", "labelled truth: JSONL {id, cluster} per document, or a pairs TSV; .gz accepted")
	fs.StringSliceVar(&o.positive, "positive", []string{"1"}, "labels of a pairs truth that mean duplicate (comma-separated, e.g. cut,light), as for eval")
	fs.StringVar(&o.method, "method", "minhash", "method to tune: minhash, simhash, jaccard, ksentence, exact or bloom")
	fs.StringVar(&o.metric, "metric", "f1", "what to maximise: f1, ari, precision, recall or macro_f1")
	fs.IntVar(&o.maxDocs, "max-docs", 5000, "sample whole truth clusters up to this many documents (0: all)")
	fs.Uint64Var(&o.sampleSeed, "sample-seed", 1, "seed of the cluster sample")
	fs.Float64SliceVar(&o.thresholds, "thresholds", sp.Thresholds, "Jaccard thresholds to try")
	var units []string
	for _, s := range sp.Shingles {
		if u := s.Unit.String(); !slices.Contains(units, u) {
			units = append(units, u)
		}
	}
	fs.StringSliceVar(&o.units, "units", units, "token units to try: word, char, cjkword")
	fs.IntSliceVar(&o.ngrams, "ngrams", []int{1, 2, 3, 5}, "n-gram sizes to try (for unit char, sizes below 3 are skipped unless listed alone)")
	fs.IntSliceVar(&o.numPerms, "num-perms", sp.NumPerms, "minhash: permutations to try")
	fs.StringSliceVar(&o.bandsRows, "bands-rows", []string{"auto"}, "minhash: bandings to try, BxR or auto (chosen from the threshold)")
	fs.IntSliceVar(&o.bits, "bits", sp.Bits, "simhash: fingerprint sizes to try (1 to 128)")
	fs.IntSliceVar(&o.distances, "distances", sp.Distances, "simhash: Hamming distances to try")
	fs.StringSliceVar(&o.weights, "weights", sp.Weights, "simhash: feature weights to try (count, set, sublinear, tfidf)")
	fs.IntSliceVar(&o.kSentences, "k-sentences", sp.KSentences, "ksentence: K values to try")
	fs.BoolSliceVar(&o.verify, "verify", sp.Verify, "minhash, simhash: verify candidates by exact Jaccard (true, false or both)")
	fs.StringVar(&o.table, "table", "", "write the trade-off table here as Markdown")
	fs.StringVar(&o.jsonOut, "json", "", "write every trial here as JSON")
	fs.StringVar(&o.plot, "plot", "", "write a PNG of precision against recall here")
	fs.StringVar(&o.tmpDir, "tmp-dir", "", "directory for the sample and the runs' files (default: the system's)")
	fs.IntVarP(&o.workers, "workers", "j", 0, "workers of each run (0: all cores)")
	fs.BoolVarP(&o.quiet, "quiet", "q", false, "no progress lines")
	o.text.register(fs)
	o.input.register(fs)
	return cmd
}

// space builds the sweep from the flags. Char n-grams below 3 are left out
// of the default grid (single characters and bigrams of Latin text are
// noise), unless --ngrams was given.
// tuneSweeps lists, for each method, the sweep flags that apply to it
// (the grid of the help text); --units and --ngrams are left to the
// methods' own checks.
var tuneSweeps = map[string][]string{
	"minhash":       {"thresholds", "num-perms", "bands-rows", "verify"},
	"simhash":       {"bits", "distances", "weights", "verify", "thresholds"}, // --thresholds with --verify true
	"jaccard":       {"thresholds"},
	"ksentence":     {"k-sentences"},
	"exact":         {},
	"bloom":         {},
	"bloom-overlap": {"thresholds"},
}

// sweepFlagsApply refuses a sweep flag given for a method it does not
// apply to (before, tune --method minhash --distances 5 ran the default
// grid, the flag ignored in silence).
func (o *tuneOpts) sweepFlagsApply(cmd *cobra.Command) error {
	applies, known := tuneSweeps[o.method]
	if !known {
		return nil // the unknown method is refused where it is parsed
	}
	for _, f := range []string{"thresholds", "num-perms", "bands-rows", "bits", "distances", "weights", "k-sentences", "verify"} {
		if !cmd.Flags().Changed(f) {
			continue
		}
		if o.method == "simhash" && f == "thresholds" && !slices.Contains(o.verify, true) {
			return usageErr("--thresholds applies to --method simhash only with --verify true (candidates verified by exact Jaccard); give --verify true or leave --thresholds out")
		}
		if slices.Contains(applies, f) {
			continue
		}
		var owners []string
		for _, m := range []string{"minhash", "simhash", "jaccard", "ksentence"} {
			if slices.Contains(tuneSweeps[m], f) {
				owners = append(owners, m)
			}
		}
		return usageErr("--%s does not apply to --method %s (it sweeps --method %s): leave it out, or give --method %s", f, o.method, strings.Join(owners, ", "), owners[0])
	}
	return nil
}

func (o *tuneOpts) space(ngramsGiven bool) (tune.Space, error) {
	sp := tune.Space{Thresholds: o.thresholds, NumPerms: o.numPerms, Bits: o.bits, Distances: o.distances,
		Weights: o.weights, KSentences: o.kSentences, Verify: o.verify}
	for _, t := range o.thresholds {
		if err := checkUnit01("--thresholds", t); err != nil {
			return sp, err
		}
	}
	for _, u := range o.units {
		unit, err := shingle.ParseUnit(u)
		if err != nil {
			return sp, usageErr("--units: %v", err)
		}
		ngrams := o.ngrams
		if unit == shingle.Char && !ngramsGiven {
			ngrams = []int{3, 4, 5}
		}
		for _, n := range ngrams {
			if n < 1 || n > shingle.MaxN {
				return sp, usageErr("--ngrams %d: must be between 1 and %d", n, shingle.MaxN)
			}
			sp.Shingles = append(sp.Shingles, shingle.Options{Unit: unit, N: n})
		}
	}
	for _, p := range o.numPerms {
		if p < 1 {
			return sp, usageErr("--num-perms %d: must be at least 1", p)
		}
	}
	for _, br := range o.bandsRows {
		if br == "auto" {
			sp.Bandings = append(sp.Bandings, [2]int{0, 0})
			continue
		}
		bs, rs, ok := strings.Cut(br, "x")
		b, err1 := strconv.Atoi(bs)
		r, err2 := strconv.Atoi(rs)
		if !ok || err1 != nil || err2 != nil || b < 1 || r < 1 {
			return sp, usageErr("--bands-rows %q: want BxR (e.g. 16x8) or auto", br)
		}
		sp.Bandings = append(sp.Bandings, [2]int{b, r})
	}
	for _, b := range o.bits {
		if b != 64 && b != 128 {
			return sp, usageErr("--bits %d: must be 64 or 128", b)
		}
	}
	for _, w := range o.weights {
		if w != "count" && w != "set" && w != "sublinear" && w != "tfidf" {
			return sp, usageErr("--weights %q: must be count, set, sublinear or tfidf", w)
		}
	}
	for _, k := range o.kSentences {
		if k < 1 {
			return sp, usageErr("--k-sentences %d: must be at least 1", k)
		}
	}
	return sp, nil
}

// tuneReport is what --json writes.
type tuneReport struct {
	Method    string       `json:"method"`
	Metric    string       `json:"metric"`
	Inputs    []string     `json:"inputs"`
	Truth     string       `json:"truth"`
	Documents int          `json:"documents"`
	Sampled   bool         `json:"sampled"`
	Best      int          `json:"best"`
	BestArgs  []string     `json:"best_args"`
	Trials    []tune.Trial `json:"trials"`
}

func runTune(ctx context.Context, cmd *cobra.Command, o *tuneOpts, args []string, stdout, stderr io.Writer) error {
	if o.truth == "" {
		return usageErr("--truth is required")
	}
	metric, err := tune.ParseMetric(o.metric)
	if err != nil {
		return usageErr("--metric: %v", err)
	}
	if o.maxDocs < 0 {
		return usageErr("--max-docs %d: must not be negative", o.maxDocs)
	}
	if o.workers < 0 {
		return usageErr("--workers %d: must not be negative", o.workers)
	}
	// The method is refused before its flags: no flag makes it right.
	if o.method == "bloom-overlap" {
		// Its removed documents name no earlier document: each is a
		// cluster of its own, and every configuration would score 0.
		return usageErr("--method bloom-overlap: tune scores the clusters of a run against the truth, and bloom-overlap forms none (a removed document names no earlier one, docs/outputs.md), so every configuration would score 0; tune --method jaccard for the threshold and shingles")
	}
	if err := o.sweepFlagsApply(cmd); err != nil {
		return err
	}
	space, err := o.space(cmd.Flags().Changed("ngrams"))
	if err != nil {
		return err
	}
	// The outputs are written after the sweep: a path that cannot be
	// written fails now, not after every configuration has run.
	for _, out := range []struct{ flag, path string }{{"--table", o.table}, {"--json", o.jsonOut}, {"--plot", o.plot}} {
		if err := checkOutputPath(out.flag, out.path); err != nil {
			return err
		}
	}
	norm := o.text.opts
	base := dedup.Options{Method: o.method, Workers: o.workers}
	base.Spec.Normalize = &norm
	if _, err := dedup.NewMethod(base); err != nil {
		if err = optionErr(err); errors.Is(err, errUsage) {
			return err
		}
		return usageErr("--method: %v", err)
	}
	ropts, err := o.input.options()
	if err != nil {
		return err
	}
	ex, err := expandInputs(args, nil)
	if err != nil {
		return err
	}
	if err := outputsNotReads([]outputFlag{{"--table", o.table}, {"--json", o.jsonOut}, {"--plot", o.plot}},
		inputFile{"an input file", ex.Files}, inputFile{"the --truth file", []string{o.truth}}); err != nil {
		return err
	}
	files := ex.Files
	if len(o.positive) == 0 {
		return usageErr("--positive: give at least one label")
	}
	truth, err := readLabelFile(o.truth, eval.ReadOptions{Positive: o.positive})
	if err != nil {
		return labelFileErr("--truth", err)
	}
	if truth.Len() == 0 {
		return fmt.Errorf("%w: --truth %s holds no document", errInvalidData, o.truth)
	}
	if cmd.Flags().Changed("positive") {
		if err := positiveNeedsPairs(truth, o.truth); err != nil {
			return err
		}
	}
	if p := noPositiveLabel(truth, o.truth, o.positive); p != "" {
		// Every configuration would score against a truth without
		// duplicates (clough's pairs.tsv with the default label 1).
		return fmt.Errorf("%w: %s", errInvalidData, p)
	}
	tmp, err := os.MkdirTemp(o.tmpDir, "neardup-tune-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The sample: whole truth clusters up to --max-docs, or everything.
	docs, sampled := files, false
	if o.maxDocs > 0 && truth.Len() > o.maxDocs {
		dp, tp := filepath.Join(tmp, "sample.jsonl"), filepath.Join(tmp, "sample-truth.jsonl")
		df, err := os.Create(dp)
		if err != nil {
			return err
		}
		tf, err := os.Create(tp)
		if err != nil {
			df.Close()
			return err
		}
		n, err := tune.Sample(files, ropts, truth, o.maxDocs, o.sampleSeed, df, tf)
		if cerr := df.Close(); err == nil {
			err = cerr
		}
		if cerr := tf.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
		if truth, err = readLabelFile(tp, eval.ReadOptions{}); err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: no document of INPUT is in --truth %s", errInvalidData, o.truth)
		}
		docs, sampled = []string{dp}, true
		// The sample is JSONL with the original fields.
		ropts.TextField, ropts.IDField = o.input.fields.TextField, o.input.fields.IDField
	}
	in := dedup.Input{Files: docs, Options: ropts, SkipInvalid: o.input.skipInvalid}
	cfgs := space.Configs(base)
	if !o.quiet {
		what := "all documents"
		if sampled {
			what = fmt.Sprintf("a sample of %s documents (whole truth clusters, seed %d)", number(truth.Len()), o.sampleSeed)
		}
		fmt.Fprintf(stderr, "tune: %s, %s configurations, on %s\n", o.method, number(len(cfgs)), what)
	}
	progress := func(done, total int, t *tune.Trial) {
		if !o.quiet {
			// The run's number right-aligned to the total's width keeps
			// the columns in place past run 9 (and 99, ...).
			n := number(total)
			fmt.Fprintf(stderr, "tune: [%*s/%s] %-40s P %.4f R %.4f F1 %.4f ARI %.4f %.2fs\n",
				len(n), number(done), n, t.Label, t.Scores.Precision, t.Scores.Recall, t.Scores.F1, t.Scores.ARI, t.Seconds)
		}
	}
	trials, err := tune.Sweep(ctx, base, space, in, truth, tmp, progress)
	if errors.Is(err, tune.ErrNoCommonIDs) {
		return fmt.Errorf("%w: --truth %s: %v", errInvalidData, o.truth, err)
	}
	if err != nil {
		return err
	}
	best := tune.Best(trials, metric)
	bestArgs := dedupArgs(trials[best].Options)

	var b bytes.Buffer
	if err := tune.WriteMarkdown(&b, trials, metric, best); err != nil {
		return err
	}
	// A failed write to standard output (closed early by `| head`) is
	// returned once the files are written.
	_, outErr := fmt.Fprintf(stdout, "Best by %s: %s (%s %.4f)\n  neardup dedup %s\n\n", metric, trials[best].Label, metric,
		trials[best].Scores.Value(metric), strings.Join(bestArgs, " "))
	if outErr == nil {
		_, outErr = stdout.Write(b.Bytes())
	}
	if o.table != "" {
		var t bytes.Buffer
		fmt.Fprintf(&t, "Tuning %s by %s on %s (%s documents%s); best: `neardup dedup %s`\n\n",
			o.method, metric, strings.Join(args, " "), number(truth.Len()), map[bool]string{true: ", sampled by cluster", false: ""}[sampled],
			strings.Join(bestArgs, " "))
		t.Write(b.Bytes())
		if err := writeFileAtomic(o.table, t.Bytes()); err != nil {
			return outputErr("--table", o.table, err)
		}
	}
	if o.jsonOut != "" {
		rep := tuneReport{Method: o.method, Metric: string(metric), Inputs: args, Truth: o.truth, Documents: truth.Len(),
			Sampled: sampled, Best: best, BestArgs: bestArgs, Trials: trials}
		if err := writeJSONFile(o.jsonOut, rep); err != nil {
			return outputErr("--json", o.jsonOut, err)
		}
	}
	if o.plot != "" {
		title := fmt.Sprintf("neardup tune --method %s (%s documents)", o.method, number(truth.Len()))
		if err := tune.PlotPNG(o.plot, title, trials, metric, best); err != nil {
			return outputErr("--plot", o.plot, err)
		}
	}
	if outErr != nil {
		return fmt.Errorf("standard output: %w", outErr)
	}
	return nil
}

// writeFileAtomic writes b to path, atomically for regular files.
func writeFileAtomic(path string, b []byte) error {
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	defer f.Abort()
	if _, err := f.Write(b); err != nil {
		return err
	}
	return f.Commit()
}
