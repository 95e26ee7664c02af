package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/lsh"
)

// Plot sizes: drawn at plotDPI and shown at half their pixel size, so that
// they stay sharp on high-density screens.
const (
	plotW   = 5.4 * vg.Inch
	plotH   = 3.2 * vg.Inch
	plotDPI = 150
)

var (
	barColor    = color.RGBA{R: 0x4c, G: 0x72, B: 0xb0, A: 0xff}
	markColor   = color.RGBA{R: 0xc4, G: 0x4e, B: 0x52, A: 0xff}
	secondColor = color.RGBA{R: 0x55, G: 0xa8, B: 0x68, A: 0xff}
)

// renderPNG draws p and returns the PNG bytes.
func renderPNG(p *plot.Plot) ([]byte, error) {
	c := vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(plotDPI), vgimg.UseBackgroundColor(color.White))
	p.Draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Title.TextStyle.Font.Size = vg.Points(13)
	p.X.Label.TextStyle.Font.Size = vg.Points(11)
	p.Y.Label.TextStyle.Font.Size = vg.Points(11)
	p.X.Tick.Label.Font.Size = vg.Points(10)
	p.Y.Tick.Label.Font.Size = vg.Points(10)
	return p
}

func vline(x, y0, y1 float64, c color.Color, dashed bool) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x, Y: y0}, {X: x, Y: y1}})
	if err != nil {
		return nil, err
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	if dashed {
		l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
	}
	return l, nil
}

// sCurvePlot draws P(candidate) = 1 - (1 - s^r)^b against the Jaccard
// similarity s, with the run's threshold and the curve's steepest point.
func sCurvePlot(bp lsh.Params, threshold float64) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("LSH S-curve: %d bands of %d rows", bp.Bands, bp.Rows),
		"Jaccard similarity of a pair", "P(pair is compared)")
	xys := make(plotter.XYs, 201)
	for i := range xys {
		s := float64(i) / 200
		xys[i] = plotter.XY{X: s, Y: bp.Probability(s)}
	}
	curve, err := plotter.NewLine(xys)
	if err != nil {
		return nil, err
	}
	curve.Color = barColor
	curve.Width = vg.Points(2)
	thr, err := vline(threshold, 0, 1, markColor, false)
	if err != nil {
		return nil, err
	}
	steep, err := vline(bp.Threshold(), 0, 1, secondColor, true)
	if err != nil {
		return nil, err
	}
	p.Add(plotter.NewGrid(), curve, thr, steep)
	p.Legend.Add("P(candidate)", curve)
	p.Legend.Add(fmt.Sprintf("threshold %.2f (P = %.2f)", threshold, bp.Probability(threshold)), thr)
	p.Legend.Add(fmt.Sprintf("steepest point ≈ %.2f", bp.Threshold()), steep)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.XOffs = vg.Points(6)
	p.Legend.YOffs = -vg.Points(4)
	p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1.02
	return p, nil
}

// histPlot draws bars over [lo+i*w, lo+(i+1)*w) with the given counts,
// and a vertical line at mark (unless NaN) labelled markLabel.
func histPlot(title, x string, lo, w float64, counts []int, mark float64, markLabel string) (*plot.Plot, error) {
	p := newPlot(title, x, "pairs")
	h := &plotter.Histogram{Width: w, FillColor: barColor, LineStyle: plotter.DefaultLineStyle}
	h.LineStyle.Color = color.White
	for i, c := range counts {
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: lo + float64(i)*w, Max: lo + float64(i+1)*w, Weight: float64(c)})
	}
	p.Add(plotter.NewGrid(), h)
	maxc := 1
	for _, c := range counts {
		maxc = max(maxc, c)
	}
	if !math.IsNaN(mark) {
		l, err := vline(mark, 0, float64(maxc)*1.05, markColor, false)
		if err != nil {
			return nil, err
		}
		p.Add(l)
		// A legend would cover the bars, which gather at one end.
		p.X.Label.Text += " (red line: " + markLabel + ")"
	}
	p.Y.Min = 0
	p.X.Min, p.X.Max = lo, lo+w*float64(len(counts))
	p.Y.Tick.Marker = integerTicks{}
	return p, nil
}

// sizesPlot draws the number of clusters of each size from 2 up.
func sizesPlot(sizes []dedup.SizeCount) (*plot.Plot, error) {
	p := newPlot("Clusters by size", "documents in the cluster", "clusters")
	h := &plotter.Histogram{Width: 1, FillColor: barColor, LineStyle: plotter.DefaultLineStyle}
	h.LineStyle.Color = color.White
	for _, sc := range sizes {
		if sc.Size < 2 {
			continue
		}
		h.Bins = append(h.Bins, plotter.HistogramBin{Min: float64(sc.Size) - 0.45, Max: float64(sc.Size) + 0.45, Weight: float64(sc.Count)})
	}
	p.Add(plotter.NewGrid(), h)
	p.Y.Min = 0
	p.X.Tick.Marker = integerTicks{}
	p.Y.Tick.Marker = integerTicks{}
	if n := len(h.Bins); n > 0 {
		p.X.Min, p.X.Max = h.Bins[0].Min-0.3, h.Bins[n-1].Max+0.3
	}
	return p, nil
}

// stagesPlot draws the wall time of each stage as horizontal bars.
func stagesPlot(stages []dedup.Stage) (*plot.Plot, error) {
	p := newPlot("Time per stage", "seconds", "")
	vs := make(plotter.Values, len(stages))
	names := make([]string, len(stages))
	for i, st := range stages {
		vs[i] = st.Seconds
		names[len(stages)-1-i] = st.Name
	}
	// Bars bottom-up, so the first stage is on top.
	rev := make(plotter.Values, len(vs))
	for i := range vs {
		rev[len(vs)-1-i] = vs[i]
	}
	b, err := plotter.NewBarChart(rev, vg.Points(18))
	if err != nil {
		return nil, err
	}
	b.Horizontal = true
	b.Color = barColor
	b.LineStyle.Color = color.White
	p.Add(plotter.NewGrid(), b)
	p.NominalY(names...)
	p.X.Min = 0
	return p, nil
}

// integerTicks labels only whole numbers.
type integerTicks struct{}

func (integerTicks) Ticks(lo, hi float64) []plot.Tick {
	// The step is 1, 2 or 5 times a power of ten, for about 5 to 10 ticks.
	step := 1.0
	for k := 0; (hi-lo)/step > 10; k++ {
		step *= [3]float64{2, 2.5, 2}[k%3]
	}
	var ts []plot.Tick
	for v := math.Ceil(lo/step) * step; v <= hi; v += step {
		if v == 0 {
			v = 0 // not -0
		}
		ts = append(ts, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', 0, 64)})
	}
	return ts
}
