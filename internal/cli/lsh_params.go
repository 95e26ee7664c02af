package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/neardup/neardup/internal/atomicfile"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/sketch"
)

type lshParamsOpts struct {
	threshold    float64
	numPerm      int
	fpWeight     float64
	fnWeight     float64
	targetRecall float64
	json         bool
	plot         string
}

func newLSHParamsCmd() *cobra.Command {
	o := &lshParamsOpts{}
	cmd := &cobra.Command{
		Use:   "lsh-params --threshold T --num-perm K",
		Short: "Choose LSH bands and rows for a threshold",
		Long: `Choose the MinHash LSH banding (b bands of r rows, b*r <= K) for a Jaccard
threshold, and show its S-curve: a pair of similarity s becomes a candidate
with probability 1 - (1 - s^r)^b, which rises most steeply near the effective
threshold (1/b)^(1/r).

By default (b, r) is the cheapest banding that catches a fraction
--target-recall (0.95) of the pairs at the threshold: the fewest false
positives among those. This is the banding that dedup --method minhash and
index create choose when --bands and --rows are not given (one set of
defaults, lsh.DefaultParams): 13 bands of 7 rows at 0.8 with 128
permutations.

--target-recall 0, or --fp-weight / --fn-weight without --target-recall,
instead minimises fp-weight * false-positive area + fn-weight *
false-negative area (the integrals of the S-curve below the threshold and of
its complement above it), the rule of datasketch's MinHashLSH: 128
permutations at 0.8 give 9 bands of 13 rows. That rule misses many pairs
near high thresholds (9x13 catches 40% of pairs of similarity exactly 0.8).

--plot FILE writes the S-curve as a PNG.

` + exitHelp,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fs := cmd.Flags()
			if (fs.Changed("fp-weight") || fs.Changed("fn-weight")) && !fs.Changed("target-recall") {
				o.targetRecall = 0
			}
			return runLSHParams(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.Float64Var(&o.threshold, "threshold", sketch.DefaultThreshold, "Jaccard similarity threshold, in (0, 1]")
	fs.IntVar(&o.numPerm, "num-perm", sketch.DefaultNumPerm, "permutations (signature slots)")
	fs.Float64Var(&o.fpWeight, "fp-weight", 0.5, "weight of the false-positive area")
	fs.Float64Var(&o.fnWeight, "fn-weight", 0.5, "weight of the false-negative area")
	fs.Float64Var(&o.targetRecall, "target-recall", lsh.DefaultRecall, "choose the cheapest banding catching this fraction of pairs at the threshold, as dedup and index create do (0: use the weighted areas)")
	fs.BoolVar(&o.json, "json", false, "print JSON")
	fs.StringVar(&o.plot, "plot", "", "write the S-curve as a PNG to this file")
	return cmd
}

// lshParamsResult is what lsh-params prints.
type lshParamsResult struct {
	Threshold          float64        `json:"threshold"`
	NumPerm            int            `json:"num_perm"`
	Rule               string         `json:"rule"`
	FPWeight           float64        `json:"fp_weight,omitempty"`
	FNWeight           float64        `json:"fn_weight,omitempty"`
	TargetRecall       float64        `json:"target_recall,omitempty"`
	Bands              int            `json:"bands"`
	Rows               int            `json:"rows"`
	SlotsUsed          int            `json:"slots_used"`
	EffectiveThreshold float64        `json:"effective_threshold"`
	FalsePositiveArea  float64        `json:"false_positive_area"`
	FalseNegativeArea  float64        `json:"false_negative_area"`
	Probabilities      []lshProbPoint `json:"p_candidate"`
	Plot               string         `json:"plot,omitempty"`
	Warning            string         `json:"warning,omitempty"`
}

type lshProbPoint struct {
	Similarity  float64 `json:"similarity"`
	Probability float64 `json:"probability"`
}

func runLSHParams(_ context.Context, o *lshParamsOpts, stdout io.Writer) error {
	if !(o.threshold > 0 && o.threshold <= 1) {
		return usageErr("--threshold %v: must be in (0, 1]", o.threshold)
	}
	if o.numPerm < 1 || o.numPerm > 1<<16 {
		return usageErr("--num-perm %d: must be between 1 and 65536", o.numPerm)
	}
	res := lshParamsResult{Threshold: o.threshold, NumPerm: o.numPerm}
	var p lsh.Params
	var err error
	if o.targetRecall != 0 {
		if !(o.targetRecall > 0 && o.targetRecall < 1) {
			return usageErr("--target-recall %v: must be in (0, 1)", o.targetRecall)
		}
		res.Rule, res.TargetRecall = "target recall at the threshold, fewest false positives", o.targetRecall
		p, err = lsh.ForRecall(o.threshold, o.numPerm, o.targetRecall)
		if errors.Is(err, lsh.ErrRecall) {
			res.Warning = err.Error()
		} else if err != nil {
			return usageErr("%v", err)
		}
	} else {
		res.Rule, res.FPWeight, res.FNWeight = "minimum weighted false-positive and false-negative areas (datasketch)", o.fpWeight, o.fnWeight
		if o.fpWeight == 0 && o.fnWeight == 0 {
			return usageErr("--fp-weight and --fn-weight: not both zero")
		}
		p, err = lsh.Optimal(o.threshold, o.numPerm, lsh.Weights{FalsePositive: o.fpWeight, FalseNegative: o.fnWeight})
		if err != nil {
			return usageErr("%v", err)
		}
	}
	res.Bands, res.Rows, res.SlotsUsed = p.Bands, p.Rows, p.Bands*p.Rows
	res.EffectiveThreshold = p.Threshold()
	res.FalsePositiveArea = p.FalsePositiveArea(o.threshold)
	res.FalseNegativeArea = p.FalseNegativeArea(o.threshold)
	sims := []float64{0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 1}
	if !slices.Contains(sims, o.threshold) {
		sims = append(sims, o.threshold)
		slices.Sort(sims)
	}
	for _, s := range sims {
		res.Probabilities = append(res.Probabilities, lshProbPoint{s, p.Probability(s)})
	}
	if o.plot != "" {
		if err := writeSCurvePNG(o.plot, p, o.threshold); err != nil {
			return outputErr("--plot", o.plot, err)
		}
		res.Plot = o.plot
	}
	if o.json {
		return writeJSON(stdout, res)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "threshold %v, %d permutations\n", res.Threshold, res.NumPerm)
	fmt.Fprintf(&b, "rule: %s\n", res.Rule)
	if res.TargetRecall == 0 {
		fmt.Fprintf(&b, "  weights: false positives %v, false negatives %v\n", res.FPWeight, res.FNWeight)
	} else {
		fmt.Fprintf(&b, "  target recall at the threshold: %v\n", res.TargetRecall)
	}
	if res.Warning != "" {
		fmt.Fprintf(&b, "warning: %s\n", res.Warning)
	}
	fmt.Fprintf(&b, "bands %d, rows %d (%d of %d slots used)\n", res.Bands, res.Rows, res.SlotsUsed, res.NumPerm)
	fmt.Fprintf(&b, "effective threshold (1/b)^(1/r): %.4f\n", res.EffectiveThreshold)
	fmt.Fprintf(&b, "false-positive area %.6f, false-negative area %.6f\n", res.FalsePositiveArea, res.FalseNegativeArea)
	fmt.Fprintf(&b, "P(candidate) = 1 - (1 - s^%d)^%d:\n", res.Rows, res.Bands)
	for _, q := range res.Probabilities {
		fmt.Fprintf(&b, "  s = %-5v %.4f\n", q.Similarity, q.Probability)
	}
	if res.Plot != "" {
		fmt.Fprintf(&b, "S-curve written to %s\n", res.Plot)
	}
	_, err = stdout.Write(b.Bytes())
	return err
}

// writeSCurvePNG draws the S-curve of p with the threshold and the
// effective threshold marked, and writes it atomically to path.
func writeSCurvePNG(path string, p lsh.Params, threshold float64) error {
	pl := plot.New()
	pl.Title.Text = fmt.Sprintf("LSH S-curve: %d bands of %d rows", p.Bands, p.Rows)
	pl.X.Label.Text = "Jaccard similarity s"
	pl.Y.Label.Text = "P(candidate) = 1 - (1 - s^r)^b"
	pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max = 0, 1, 0, 1
	xys := make(plotter.XYs, 401)
	for i := range xys {
		s := float64(i) / 400
		xys[i] = plotter.XY{X: s, Y: p.Probability(s)}
	}
	curve, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	curve.Color = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	curve.Width = vg.Points(2)
	pl.Add(curve, plotter.NewGrid())
	pl.Legend.Add("S-curve", curve)
	for _, m := range []struct {
		x     float64
		c     color.RGBA
		label string
	}{
		{threshold, color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}, fmt.Sprintf("threshold %.3g", threshold)},
		{p.Threshold(), color.RGBA{R: 0x55, G: 0xa8, B: 0x68, A: 0xff}, fmt.Sprintf("(1/b)^(1/r) = %.3f", p.Threshold())},
	} {
		l, err := plotter.NewLine(plotter.XYs{{X: m.x, Y: 0}, {X: m.x, Y: 1}})
		if err != nil {
			return err
		}
		l.Color = m.c
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		pl.Add(l)
		pl.Legend.Add(m.label, l)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	c := vgimg.NewWith(vgimg.UseWH(6*vg.Inch, 4*vg.Inch), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))
	pl.Draw(draw.New(c))
	f, err := atomicfile.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(f); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}
