package tune

import (
	"bytes"
	"fmt"
	"image/color"
	"io"
	"os"
	"slices"

	"github.com/neardup/neardup/report"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteMarkdown writes the trade-off table of trials as Markdown, one row
// per trial sorted by m (best first), with best (an index into trials,
// or -1) marked.
func WriteMarkdown(w io.Writer, trials []Trial, m Metric, best int) error {
	order := make([]int, len(trials))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		va, vb := trials[a].Scores.Value(m), trials[b].Scores.Value(m)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	var b bytes.Buffer
	fmt.Fprintf(&b, "| rank | configuration | precision | recall | F1 | ARI | macro F1 | pairs | seconds |\n")
	fmt.Fprintf(&b, "|---:|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for rank, i := range order {
		t := &trials[i]
		mark := ""
		if i == best {
			mark = " **(best)**"
		}
		s := t.Scores
		fmt.Fprintf(&b, "| %d | %s%s | %.4f | %.4f | %.4f | %.4f | %.4f | %s | %.2f |\n",
			rank+1, t.Label, mark, s.Precision, s.Recall, s.F1, s.ARI, s.MacroF1, report.Number(t.Pairs), t.Seconds)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// Plot colours.
var (
	pointColor = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	bestColor  = color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}
)

// PlotPNG draws the trade-off of a sweep, pairwise precision against
// recall with one point per trial and the best one (an index into trials,
// or -1) marked and labelled, and writes it to path as a PNG.
func PlotPNG(path, title string, trials []Trial, m Metric, best int) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "pairwise recall"
	p.Y.Label.Text = "pairwise precision"
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
	p.Add(plotter.NewGrid())
	xys := make(plotter.XYs, 0, len(trials))
	for _, t := range trials {
		xys = append(xys, plotter.XY{X: t.Scores.Recall, Y: t.Scores.Precision})
	}
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return err
	}
	sc.GlyphStyle.Color = pointColor
	sc.GlyphStyle.Radius = vg.Points(2.5)
	p.Add(sc)
	p.Legend.Add("configurations", sc)
	if best >= 0 && best < len(trials) {
		t := trials[best]
		bxy := plotter.XYs{{X: t.Scores.Recall, Y: t.Scores.Precision}}
		bs, err := plotter.NewScatter(bxy)
		if err != nil {
			return err
		}
		bs.GlyphStyle.Color = bestColor
		bs.GlyphStyle.Radius = vg.Points(5)
		bs.GlyphStyle.Shape = draw.RingGlyph{}
		p.Add(bs)
		p.Legend.Add(fmt.Sprintf("best %s %.3f: %s", m, t.Scores.Value(m), t.Label), bs)
	}
	p.Legend.Top = false
	p.Legend.Left = true
	c := vgimg.NewWith(vgimg.UseWH(6*vg.Inch, 4.5*vg.Inch), vgimg.UseDPI(120), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}
