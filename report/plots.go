package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
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

// sans is the plots' typeface, a sans-serif like the page's text (gonum's
// default is Liberation Serif).
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Title.TextStyle.Font = font.From(sans, 13)
	p.X.Label.TextStyle.Font = font.From(sans, 11)
	p.Y.Label.TextStyle.Font = font.From(sans, 11)
	p.X.Tick.Label.Font = font.From(sans, 10)
	p.Y.Tick.Label.Font = font.From(sans, 10)
	p.Legend.TextStyle.Font = font.From(sans, 11)
	return p
}

// labelStyle is the style of the numbers written on bars.
func labelStyle() draw.TextStyle {
	return draw.TextStyle{Color: color.Black, Font: font.From(sans, 8), Handler: plot.DefaultTextHandler}
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

// histPlot draws bars over [lo+i*w, lo+(i+1)*w) with the given counts on
// a logarithmic count axis, each labelled with its count, and a vertical
// line at mark (unless NaN) labelled markLabel. The axis is logarithmic
// because the counts span orders of magnitude: when most pairs are exact
// duplicates (similarity 1, distance 0), a linear axis leaves the few near
// the threshold invisible.
func histPlot(title, x string, lo, w float64, counts []int, mark float64, markLabel string) (*plot.Plot, error) {
	p := newPlot(title, x, "pairs (log scale)")
	bars := &countBars{color: barColor}
	maxc := 1
	for i, c := range counts {
		bars.bins = append(bars.bins, plotter.HistogramBin{Min: lo + float64(i)*w, Max: lo + float64(i+1)*w, Weight: float64(c)})
		maxc = max(maxc, c)
	}
	p.Add(plotter.NewGrid(), bars)
	// Room above the tallest bar for its label.
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0.7, math.Pow(10, math.Log10(float64(maxc))*1.12+0.1)
	if !math.IsNaN(mark) {
		l, err := vline(mark, p.Y.Min, p.Y.Max, markColor, false)
		if err != nil {
			return nil, err
		}
		p.Add(l)
		// A legend would cover the bars, which gather at one end.
		p.X.Label.Text += " (red line: " + markLabel + ")"
	}
	p.X.Min, p.X.Max = lo, lo+w*float64(len(counts))
	return p, nil
}

// countBars draws histogram bins from the bottom of the axis up to their
// count, which works on a logarithmic axis (plotter.Histogram starts its
// bars at 0), and writes each non-zero count above its bar.
type countBars struct {
	bins  []plotter.HistogramBin
	color color.Color
}

func (b *countBars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := labelStyle()
	sty.XAlign = draw.XCenter
	for _, bin := range b.bins {
		if bin.Weight <= 0 {
			continue
		}
		x0, x1 := trX(bin.Min), trX(bin.Max)
		y0, y1 := trY(p.Y.Min), trY(bin.Weight)
		gap := min(vg.Points(0.5), (x1-x0)/4)
		c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: x0 + gap, Y: y0}, {X: x1 - gap, Y: y0}, {X: x1 - gap, Y: y1}, {X: x0 + gap, Y: y1}}))
		c.FillText(sty, vg.Point{X: (x0 + x1) / 2, Y: y1 + vg.Points(2)}, strconv.FormatFloat(bin.Weight, 'f', -1, 64))
	}
}

// DataRange implements plot.DataRanger.
func (b *countBars) DataRange() (xmin, xmax, ymin, ymax float64) {
	xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), 1, 1
	for _, bin := range b.bins {
		xmin, xmax = min(xmin, bin.Min), max(xmax, bin.Max)
		ymax = max(ymax, bin.Weight)
	}
	return xmin, xmax, ymin, ymax
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

// stagesPlot draws the wall time of each stage as horizontal bars, each
// labelled with its time. A bar is at least minStageBar of the longest, so
// that a stage of 0.07 ms beside one of 2 s stays visible; its label gives
// the true time.
func stagesPlot(stages []dedup.Stage) (*plot.Plot, error) {
	p := newPlot("Time per stage", "seconds (bars of very short stages are drawn at a minimum length)", "")
	p.X.Label.TextStyle.Font = font.From(sans, 9)
	longest := 0.0
	for _, st := range stages {
		longest = max(longest, st.Seconds)
	}
	// Bars bottom-up, so the first stage is on top.
	n := len(stages)
	rev := make(plotter.Values, n)
	names := make([]string, n)
	labels := plotter.XYLabels{XYs: make(plotter.XYs, n), Labels: make([]string, n)}
	for i, st := range stages {
		k := n - 1 - i
		rev[k] = max(st.Seconds, longest*minStageBar)
		names[k] = st.Name
		labels.XYs[k] = plotter.XY{X: rev[k], Y: float64(k)}
		labels.Labels[k] = " " + seconds(st.Seconds)
	}
	b, err := plotter.NewBarChart(rev, vg.Points(18))
	if err != nil {
		return nil, err
	}
	b.Horizontal = true
	b.Color = barColor
	b.LineStyle.Color = color.White
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, err
	}
	for i := range l.TextStyle {
		l.TextStyle[i] = labelStyle()
		l.TextStyle[i].Font = font.From(sans, 9)
		l.TextStyle[i].YAlign = draw.YCenter
	}
	p.Add(plotter.NewGrid(), b, l)
	p.NominalY(names...)
	p.Y.Tick.Label.Font = font.From(sans, 10)
	p.X.Min = 0
	if longest > 0 {
		p.X.Max = longest * 1.3 // room for the labels
	}
	return p, nil
}

// minStageBar is the shortest stage bar, as a fraction of the longest.
const minStageBar = 0.015

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
