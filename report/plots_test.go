package report

import (
	"bytes"
	"encoding/base64"
	"image/png"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"

	"github.com/neardup/neardup/dedup"
)

// barPixels renders p and counts the pixels of the bar colour.
func barPixels(t *testing.T, p *plot.Plot) int {
	t.Helper()
	b, err := renderPNG(p)
	if err != nil {
		t.Fatal(err)
	}
	im, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	r0, g0, b0, _ := barColor.RGBA()
	bounds := im.Bounds()
	for y := bounds.Min.Y; y < bounds.Max.Y; y++ {
		for x := bounds.Min.X; x < bounds.Max.X; x++ {
			r, g, b, _ := im.At(x, y).RGBA()
			if r == r0 && g == g0 && b == b0 {
				n++
			}
		}
	}
	return n
}

// A bin of 3 pairs beside one of 30,000 (most pairs exact duplicates) is a
// visible bar: the count axis is logarithmic.
func TestHistogramSmallBinVisible(t *testing.T) {
	counts := make([]int, 20)
	counts[19] = 30000
	alone, err := histPlot("t", "x", 0, 0.05, counts, 0.8, "threshold")
	if err != nil {
		t.Fatal(err)
	}
	counts[16] = 3
	both, err := histPlot("t", "x", 0, 0.05, counts, 0.8, "threshold")
	if err != nil {
		t.Fatal(err)
	}
	if d := barPixels(t, both) - barPixels(t, alone); d < 400 {
		t.Errorf("the bin of 3 pairs takes %d pixels beside one of 30,000, want a visible bar (at least 400)", d)
	}
}

// A stage of 0.07 ms (or 0 s) beside one of 2 s is a visible bar.
func TestStageShortVisible(t *testing.T) {
	long := dedup.Stage{Name: "read+sketch+find", Seconds: 2}
	twoLong, err := stagesPlot([]dedup.Stage{long, {Name: "write", Seconds: 2}})
	if err != nil {
		t.Fatal(err)
	}
	perBar := barPixels(t, twoLong) / 2
	for _, sec := range []float64{0.00007, 0} {
		p, err := stagesPlot([]dedup.Stage{long, {Name: "cluster", Seconds: sec}})
		if err != nil {
			t.Fatal(err)
		}
		if d := barPixels(t, p) - perBar; d < 100 {
			t.Errorf("a stage of %v s takes %d pixels beside one of 2 s, want a visible bar (at least 100)", sec, d)
		}
	}
}

// The plots use the page's sans-serif typeface.
func TestPlotsSans(t *testing.T) {
	p := newPlot("t", "x", "y")
	for name, f := range map[string]string{"title": string(p.Title.TextStyle.Font.Variant), "x label": string(p.X.Label.TextStyle.Font.Variant),
		"y ticks": string(p.Y.Tick.Label.Font.Variant), "legend": string(p.Legend.TextStyle.Font.Variant)} {
		if f != "Sans" {
			t.Errorf("%s font variant %q, want Sans", name, f)
		}
	}
	if !strings.Contains(pageSource, "sans-serif") {
		t.Error("the page is no longer sans-serif: the plots' typeface should follow it")
	}
}

// The sample run keeps its Traditional and Simplified verses apart without
// --t2s: the report says what --t2s does, without claiming what it did
// not measure (that it would join them), and offers the
// removed ids as a download embedded in the page.
func TestReportT2SNoteAndRemovedIDs(t *testing.T) {
	r, page := renderedSample(t)
	if r.Stats.Traditional == 0 {
		t.Fatal("the sample has no Traditional Chinese documents; the test proves nothing")
	}
	if !bytes.Contains(page, []byte("--t2s compares texts in Simplified form; this run did not measure whether that would remove more documents")) {
		t.Error("no --t2s note in the report")
	}
	if bytes.Contains(page, []byte("to join them")) {
		t.Error("the --t2s note claims that --t2s would join texts, which the run did not measure")
	}
	m := regexp.MustCompile(`<a id="removed-ids" href="data:text/plain;charset=utf-8;base64,([A-Za-z0-9+/=]+)" download="removed-ids.txt">`).FindSubmatch(page)
	if m == nil {
		t.Fatal("no removed-ids download link")
	}
	ids, err := base64.StdEncoding.DecodeString(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(ids), "\n"), "\n")
	if len(lines) != r.Stats.Removed || !slices.Equal(lines, r.RemovedIDs) {
		t.Errorf("the download lists %d ids, want the %d removed", len(lines), r.Stats.Removed)
	}
	// Too many ids: none embedded, and the page says where to find them.
	big := *r
	big.RemovedIDs, big.RemovedOmitted = nil, true
	var buf bytes.Buffer
	if err := Write(&buf, &big, Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(buf.Bytes(), []byte(`id="removed-ids"`)) || !bytes.Contains(buf.Bytes(), []byte("The --clusters output lists them")) {
		t.Error("an omitted list is linked or not explained")
	}
}
