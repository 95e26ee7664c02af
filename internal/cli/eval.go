package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/internal/human"
)

type evalOpts struct {
	truth    string
	clusters string
	positive []string
	// positiveSet: --positive was given (it reads a pairs truth only).
	positiveSet bool
	json        bool
	strict      bool

	stdin  io.Reader
	stderr io.Writer
}

func newEvalCmd() *cobra.Command {
	o := &evalOpts{}
	cmd := &cobra.Command{
		Use:   "eval --truth TRUTH --clusters PRED [flags]",
		Short: "Score predicted clusters against labelled truth",
		Long: `Score the --clusters output of 'neardup dedup' (PRED) against labelled
truth (TRUTH), and print pairwise precision, recall and F1 over same-cluster
pairs, the Adjusted Rand Index, and document-level duplicate detection
(precision, recall and F1 for duplicates and non-duplicates, macro F1,
accuracy; a document is a duplicate when its cluster has two or more
members). docs/eval.md gives the formulas.

TRUTH is either JSONL, one {"id": ..., "cluster": ...} per document, or a
pairs file: tab-separated with a header "id1 id2 label ...", one labelled
pair per line. The format is recognised from the content, and either file
may be gzip-compressed. A pairs file becomes a partition by taking the
connected components of its positive pairs (--positive lists the labels
that mean "duplicate"; every other label is a negative pair); the documents
evaluated are then those that appear in some pair, and the output adds, per
label, the fraction of labelled pairs that PRED puts in one cluster.

The documents evaluated are TRUTH's. Ids of TRUTH missing from PRED count
as singletons; ids of PRED missing from TRUTH are left out. These, repeated
ids (the first record wins), malformed lines and an empty PRED are warned
about on standard error; with --strict they are an error (exit 3). An
empty TRUTH, a PRED none of whose ids is in TRUTH, and a pairs TRUTH none
of whose labels is in --positive are always an error (exit 3).
--positive with a JSONL TRUTH is a usage error (exit 2). Either file may
be - for standard input.

` + exitHelp,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 0 {
				return usageErr("eval takes no arguments (got %q): use --truth and --clusters", args)
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.stdin, o.stderr = cmd.InOrStdin(), cmd.ErrOrStderr()
			o.positiveSet = cmd.Flags().Changed("positive")
			return runEval(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.truth, "truth", "", "labelled truth: JSONL {id, cluster} per document, or a pairs TSV (id1, id2, label); .gz accepted")
	fs.StringVar(&o.clusters, "clusters", "", "predicted clusters: the --clusters output of neardup dedup (JSONL {id, cluster, kept})")
	fs.StringSliceVar(&o.positive, "positive", []string{"1"}, "labels of a pairs truth that mean duplicate (comma-separated, e.g. cut,light)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.BoolVar(&o.strict, "strict", false, "fail (exit 3) on any problem with the inputs: missing, extra or repeated ids, malformed lines, an empty file")
	return cmd
}

// evalReport is what eval prints with --json.
type evalReport struct {
	Truth    evalFile `json:"truth"`
	Clusters evalFile `json:"clusters"`
	*eval.Result
	Problems []string `json:"problems"`
}

type evalFile struct {
	File      string `json:"file"`
	Format    string `json:"format"`
	Documents int    `json:"documents"`
	Clusters  int    `json:"clusters"`
}

func runEval(ctx context.Context, o *evalOpts, stdout io.Writer) error {
	if o.truth == "" || o.clusters == "" {
		return usageErr("eval needs --truth and --clusters")
	}
	if o.truth == "-" && o.clusters == "-" {
		return usageErr("--truth and --clusters cannot both be standard input")
	}
	if len(o.positive) == 0 {
		return usageErr("--positive: give at least one label")
	}
	ropts := eval.ReadOptions{Positive: o.positive}
	truth, err := readLabels(ctx, o, "--truth", o.truth, ropts)
	if err != nil {
		return err
	}
	if o.positiveSet {
		// Ignored in silence before: the scores did not change.
		if err := positiveNeedsPairs(truth, o.truth); err != nil {
			return err
		}
	}
	pred, err := readLabels(ctx, o, "--clusters", o.clusters, eval.ReadOptions{})
	if err != nil {
		return err
	}
	if pred.Format != eval.JSONL {
		return fmt.Errorf("%w: --clusters %s: not JSONL (a pairs file?)", errInvalidData, o.clusters)
	}
	if truth.Len() == 0 {
		msg := "no valid record"
		if m := truth.Issues.Messages(o.truth); len(m) > 0 {
			msg = strings.Join(m, "; ")
		}
		if is := truth.Issues; is.Malformed > 0 && strings.HasSuffix(is.MalformedLines[0], `: no "cluster" field`) {
			// A corpus (or dedup's -o output) given for --truth: say what
			// to give, not the path over and over ("X: no valid record;
			// X: 100 malformed lines skipped, first: X:1: no ...").
			first := strings.TrimSuffix(is.MalformedLines[0], `: no "cluster" field`)
			msg = fmt.Sprintf(`its records have no "cluster" field (%s, %s in all): give labelled truth, {"id", "cluster"} per document or a pairs TSV (id1, id2, label), not the corpus`,
				first, human.Plural(is.Malformed, "such line"))
		}
		return fmt.Errorf("%w: --truth %s: %s", errInvalidData, o.truth, msg)
	}
	if p := noPositiveLabel(truth, o.truth, o.positive); p != "" {
		// Scored as a truth without duplicates, exit 0, before session
		// 26, where tune refused it: exit 3 for both.
		return fmt.Errorf("%w: %s", errInvalidData, p)
	}
	res, err := eval.Score(truth, pred)
	if err != nil {
		return fmt.Errorf("%w: %v", errInvalidData, err)
	}
	if pred.Len() > 0 && res.Extra.Count == pred.Len() {
		// Every score would be that of an empty prediction.
		return fmt.Errorf("%w: no id of --clusters %s is in --truth %s (the first ids of --clusters: %s; of --truth: %s): the two files are not about the same documents",
			errInvalidData, o.clusters, o.truth, quoteFirst(pred.IDs, 3), quoteFirst(truth.IDs, 3))
	}
	problems := res.Problems(o.truth, o.clusters)
	if pred.Len() == 0 && len(pred.Issues.MalformedLines) > 0 && strings.HasSuffix(pred.Issues.MalformedLines[0], `: no "cluster" field`) {
		// dedup's -o output (the kept documents) given for its --clusters.
		problems = append(problems, fmt.Sprintf(`%s: its records have no "cluster" field: give the file that 'neardup dedup --clusters FILE' writes (-o writes the kept documents)`, o.clusters))
	}
	if o.strict && len(problems) > 0 {
		return fmt.Errorf("%w (--strict): %s", errInvalidData, strings.Join(problems, "; "))
	}
	if o.stderr != nil {
		for _, p := range problems {
			fmt.Fprintf(o.stderr, "neardup eval: warning: %s\n", p)
		}
	}
	rep := &evalReport{
		Truth:    describeFile(o.truth, truth, res.TruthClusters),
		Clusters: describeFile(o.clusters, pred, res.PredClusters),
		Result:   res,
		Problems: problems,
	}
	rep.Clusters.Documents = pred.Len()
	if rep.Problems == nil {
		rep.Problems = []string{}
	}
	if o.json {
		return writeJSON(stdout, rep)
	}
	return writeEvalTable(stdout, rep)
}

// positiveNeedsPairs refuses --positive (exit 2) with a truth that is
// not a pairs TSV: only a pairs truth has labels.
func positiveNeedsPairs(truth *eval.Labels, name string) error {
	if truth.Format == eval.PairsTSV {
		return nil
	}
	return usageErr("--positive reads the labels of a pairs truth (id1 id2 label); --truth %s is JSONL, a partition whose clusters already say which documents are duplicates: leave --positive out", name)
}

// quoteFirst quotes the first n ids, comma-separated.
func quoteFirst(ids []string, n int) string {
	q := make([]string, 0, n)
	for _, id := range ids[:min(n, len(ids))] {
		q = append(q, strconv.Quote(id))
	}
	return strings.Join(q, ", ")
}

// noPositiveLabel says, for a pairs truth none of whose labels is in
// --positive, that every pair would count as a negative: the scores would
// be those of a truth without duplicates, which is not what was meant (the
// graded clough set's labels are cut, light, heavy and non). eval and tune
// refuse such a truth (exit 3) with this message. "" otherwise.
func noPositiveLabel(truth *eval.Labels, name string, positive []string) string {
	if truth.Format != eval.PairsTSV || len(truth.PairLabels) == 0 || slices.Contains(truth.Positive, true) {
		return ""
	}
	return fmt.Sprintf("--truth %s: no pair has a label of --positive %s, so every pair would be a negative one and the truth would hold no duplicate (its labels: %s); --positive LABELS names the labels that mean duplicate",
		name, strings.Join(positive, ","), strings.Join(truth.PairLabels, ", "))
}

func describeFile(name string, l *eval.Labels, clusters int) evalFile {
	f := evalFile{File: name, Format: "jsonl", Documents: l.Len(), Clusters: clusters}
	if l.Format == eval.PairsTSV {
		f.Format = "pairs"
	}
	return f
}

// readLabels opens and reads one labels file ("-" is standard input),
// given by flag.
func readLabels(ctx context.Context, o *evalOpts, flag, path string, ropts eval.ReadOptions) (*eval.Labels, error) {
	var r io.Reader
	if path == "-" {
		r = o.stdin
		if r == nil {
			r = os.Stdin
		}
	} else {
		f, err := openLabelFile(path)
		if err != nil {
			return nil, labelFileErr(flag, err)
		}
		defer f.Close()
		r = f
	}
	l, err := eval.Read(ctxReader{ctx, r}, path, ropts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, labelFileErr(flag, err)
	}
	return l, nil
}

// ctxReader stops reading once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

func writeEvalTable(w io.Writer, rep *evalReport) error {
	r := rep.Result
	fmt.Fprintf(w, "truth     %s (%s): %s documents in %s clusters\n", rep.Truth.File, rep.Truth.Format, number(rep.Truth.Documents), number(rep.Truth.Clusters))
	fmt.Fprintf(w, "clusters  %s: %s documents; %s clusters over the truth's documents\n", rep.Clusters.File, number(rep.Clusters.Documents), number(rep.Clusters.Clusters))
	fmt.Fprintf(w, "          %s truth ids missing (singletons), %s ids not in the truth (left out)\n", number(r.Missing.Count), number(r.Extra.Count))

	fmt.Fprintf(w, "\npairwise (same-cluster pairs)\n")
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  true pairs\t%s\n", number(r.Pairs.True))
	fmt.Fprintf(tw, "  predicted pairs\t%s\n", number(r.Pairs.Predicted))
	fmt.Fprintf(tw, "  correct pairs\t%s\n", number(r.Pairs.Correct))
	fmt.Fprintf(tw, "  precision\t%.4f\n", r.Pairs.Precision)
	fmt.Fprintf(tw, "  recall\t%.4f\n", r.Pairs.Recall)
	fmt.Fprintf(tw, "  F1\t%.4f\n", r.Pairs.F1)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "adjusted Rand index  %.4f\n", r.ARI)

	fmt.Fprintf(w, "\ndocuments (a duplicate is in a cluster of two or more)\n")
	tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "  class\tprecision\trecall\tF1\tsupport\tpredicted\n")
	for _, c := range []struct {
		name string
		s    eval.ClassScores
	}{{"duplicate", r.Docs.Duplicate}, {"non-duplicate", r.Docs.NonDuplicate}} {
		fmt.Fprintf(tw, "  %s\t%.4f\t%.4f\t%.4f\t%s\t%s\n", c.name, c.s.Precision, c.s.Recall, c.s.F1, number(c.s.Support), number(c.s.Predicted))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  macro F1 %.4f, accuracy %.4f\n", r.Docs.MacroF1, r.Docs.Accuracy)

	if len(r.Labels) > 0 {
		fmt.Fprintf(w, "\nlabelled pairs in one predicted cluster\n")
		tw = tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
		fmt.Fprintf(tw, "  label\tpositive\tpairs\ttogether\tfraction\n")
		for _, l := range r.Labels {
			pos := "no"
			if l.Positive {
				pos = "yes"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%.4f\n", l.Label, pos, number(l.Pairs), number(l.Together), l.Fraction)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(rep.Problems) > 0 {
		_, err := fmt.Fprintf(w, "\n%d problem(s) with the inputs (see the warnings; --strict makes them errors)\n", len(rep.Problems))
		return err
	}
	return nil
}

// openLabelFile opens a labels file; a directory is a *labelDirError
// (reading one said "FILE:1: read FILE: is a directory").
func openLabelFile(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, &labelDirError{path}
	}
	return f, nil
}

// labelDirError is a labels file that is a directory.
type labelDirError struct{ path string }

func (e *labelDirError) Error() string { return e.path + ": is a directory" }

// labelFileErr names the flag of a labels file that could not be opened:
// a usage error (exit 2) when it does not exist, exit 1 otherwise
// (docs/eval.md).
func labelFileErr(flag string, err error) error {
	var de *labelDirError
	if errors.As(err, &de) {
		what := "the truth must be a file: JSONL clusters or a TSV of pairs (docs/eval.md)"
		if flag == "--clusters" {
			what = "the clusters must be a file: the JSONL that neardup dedup --clusters writes"
		}
		return fmt.Errorf("%s %s: is a directory; %s", flag, de.path, what)
	}
	if errors.Is(err, fs.ErrNotExist) {
		// A file that is not there is a mistyped command line, as an
		// INPUT, --against or --idf that is not there is for dedup.
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return usageErr("%s %s: no such file or directory", flag, pe.Path)
		}
		return usageErr("%s: %v", flag, err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) {
		// Not the file system's: the content (a truncated or corrupt
		// gzip stream, a header that is not a pairs file), bad input
		// data for eval and tune alike (tune said exit 1).
		return fmt.Errorf("%w: %s %v", errInvalidData, flag, err)
	}
	return fmt.Errorf("%s: %w", flag, err)
}
