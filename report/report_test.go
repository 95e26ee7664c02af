package report

import (
	"bytes"
	"context"
	"encoding/base64"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"golang.org/x/net/html"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/internal/sample"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/sketch"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixture is a minhash run with hostile and CJK documents among its
// examples.
func fixture() *Run {
	cfg := dedup.Options{}
	cfg.Keep = cluster.First
	spec, err := sketch.Spec{MinHash: sketch.MinHashSpec{Bands: 9, Rows: 13}}.Resolve()
	if err != nil {
		panic(err)
	}
	s := &dedup.Stats{
		Method:       "minhash",
		Spec:         spec,
		Params:       dedup.Facts{Bands: 9, Rows: 13, NumPerm: 128, Threshold: 0.8, Unit: "word", Ngram: 5, Join: "signature estimate >= threshold"},
		Workers:      2,
		Documents:    10,
		Kept:         6,
		Removed:      4,
		Clusters:     2,
		Pairs:        5,
		InputBytes:   2048,
		Memory:       dedup.MemoryPlan{BudgetBytes: 8 << 30, EstimatedDocs: 10, EstimatedBytes: 4096},
		PeakRSSBytes: 40 << 20,
		Stages:       []dedup.Stage{{Name: "read+sketch+find", Seconds: 0.25}, {Name: "cluster", Seconds: 0.001}, {Name: "write", Seconds: 0.05}},
		ClusterSizes: []dedup.SizeCount{
			{Size: 1, Count: 4}, {Size: 2, Count: 1}, {Size: 4, Count: 1},
		},
		LargestCluster: 4,
		Examples: []dedup.Example{
			{Kind: "largest", Size: 4, Members: []dedup.ExampleDoc{
				{ID: "a<1>", Text: "In the beginning God created the heaven and the earth.", Kept: true},
				{ID: "a2", Text: "In the beginning God created the heaven and the earth.", Kept: false},
				{ID: "a3", Text: "In the beginning Elohim created the heaven and the earth.", Kept: false},
				{ID: "a4 & co", Text: "<script>alert('x')</script> In the beginning God created the heaven and the earth.", Kept: false},
			}},
			{Kind: "random", Size: 2, Members: []dedup.ExampleDoc{
				{ID: "zh/1", Text: "起初，神創造天地。", Kept: true},
				{ID: "zh/2", Text: "起初，神创造天地。", Kept: false},
			}},
		},
	}
	s.Similarity[16] = 1
	s.Similarity[19] = 4
	return &Run{Options: cfg, Stats: s, Source: "two test clusters", Command: "neardup dedup --report r.html t.jsonl",
		Memory: &Memory{HeapInUse: 3 << 20, TotalAlloc: 5 << 20, Sys: 12 << 20}}
}

func TestWriteGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture(), Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "report.golden.html")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		got := filepath.Join(t.TempDir(), "report.html")
		os.WriteFile(got, buf.Bytes(), 0o644)
		t.Errorf("report differs from %s; got is in %s (run go test -update if the change is intended)", golden, got)
	}
}

// parse parses the page and returns its nodes by element name.
func parse(t *testing.T, b []byte) map[string][]*html.Node {
	t.Helper()
	doc, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	els := map[string][]*html.Node{}
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			els[n.Data] = append(els[n.Data], n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return els
}

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func hasClass(n *html.Node, class string) bool {
	for _, c := range strings.Fields(attr(n, "class")) {
		if c == class {
			return true
		}
	}
	return false
}

// TestWriteEscapes checks that document text and ids are shown as text:
// a document holding a script element must not put one in the page.
func TestWriteEscapes(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture(), Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	els := parse(t, buf.Bytes())
	if n := len(els["script"]); n != 0 {
		t.Fatalf("page has %d script elements, want 0", n)
	}
	var found, foundID bool
	for _, td := range els["td"] {
		if hasClass(td, "doc") && strings.Contains(textOf(td), "<script>alert('x')</script> In the beginning") {
			found = true
		}
		if hasClass(td, "id") && strings.Contains(textOf(td), "a<1>") {
			foundID = true
		}
	}
	if !found {
		t.Error("the document holding <script> is not shown as text")
	}
	if !foundID {
		t.Error("the id a<1> is not shown as text")
	}
}

// TestWriteControlIDs: an id holding a control character (a tab, an
// escape) is shown quoted, as the CLI summary shows it (human.ID), and
// HTML-escaped; the raw character never reaches the page.
func TestWriteControlIDs(t *testing.T) {
	r := fixture()
	r.Stats.Examples = []dedup.Example{{Kind: "largest", Size: 2, Members: []dedup.ExampleDoc{
		{ID: "k\tone", Text: "the same text", Kept: true}, {ID: "r\x1b[31m<b>", Text: "the same text", Kept: false},
	}}}
	var buf bytes.Buffer
	if err := Write(&buf, r, Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	if strings.Contains(page, "\x1b") || strings.Contains(page, "k\tone") {
		t.Error("the page holds an id's raw control character")
	}
	var kept, removed bool
	for _, td := range parse(t, buf.Bytes())["td"] {
		if hasClass(td, "id") {
			kept = kept || strings.Contains(textOf(td), `"k\tone"`)
			removed = removed || strings.Contains(textOf(td), `"r\x1b[31m<b>"`)
		}
	}
	if !kept || !removed {
		t.Errorf("ids not shown quoted (kept %v, removed %v)", kept, removed)
	}
}

// TestWritePlots checks that every plot is an embedded PNG that decodes
// to the documented size, and that the page loads nothing from elsewhere.
func TestWritePlots(t *testing.T) {
	_, page := renderedSample(t)
	els := parse(t, page)
	imgs := els["img"]
	if len(imgs) != 4 { // S-curve, similarity, sizes, stages
		t.Fatalf("page has %d images, want 4", len(imgs))
	}
	for _, img := range imgs {
		src := attr(img, "src")
		b64, ok := strings.CutPrefix(src, "data:image/png;base64,")
		if !ok {
			t.Fatalf("image %q: src is not an embedded PNG: %.40q", attr(img, "alt"), src)
		}
		b, err := base64.StdEncoding.DecodeString(b64)
		if err != nil {
			t.Fatalf("image %q: %v", attr(img, "alt"), err)
		}
		im, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("image %q: %v", attr(img, "alt"), err)
		}
		if w, h := im.Bounds().Dx(), im.Bounds().Dy(); w != 810 || h != 480 {
			t.Errorf("image %q is %dx%d, want 810x480", attr(img, "alt"), w, h)
		}
	}
	for _, tag := range []string{"link", "iframe", "object", "embed", "script"} {
		if n := len(els[tag]); n != 0 {
			t.Errorf("page has %d %s elements, want none", n, tag)
		}
	}
}

func TestWriteClusters(t *testing.T) {
	var buf bytes.Buffer
	if err := Write(&buf, fixture(), Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	els := parse(t, buf.Bytes())
	var tables, rows int
	for _, tb := range els["table"] {
		if hasClass(tb, "members") {
			tables++
		}
	}
	for _, tr := range els["tr"] {
		if hasClass(tr, "removed") {
			rows++
		}
	}
	if tables != 2 || rows != 4 {
		t.Errorf("page has %d cluster tables with %d removed rows, want 2 and 4", tables, rows)
	}
	var dels, inss []string
	for _, n := range els["del"] {
		dels = append(dels, textOf(n))
	}
	for _, n := range els["ins"] {
		inss = append(inss, textOf(n))
	}
	// The legend has one of each; then the changes of a3, a4 and zh/2.
	wantDel := []string{"struck-through red text", "God", "創"}
	wantIns := []string{"green text", "Elohim", "<script>alert('x')</script> ", "创"}
	if strings.Join(dels, "|") != strings.Join(wantDel, "|") {
		t.Errorf("deletions %q, want %q", dels, wantDel)
	}
	if strings.Join(inss, "|") != strings.Join(wantIns, "|") {
		t.Errorf("insertions %q, want %q", inss, wantIns)
	}
}

func TestWriteLongDocument(t *testing.T) {
	r := fixture()
	long := strings.Repeat("word ", 3000)
	r.Stats.Examples = []dedup.Example{{Kind: "largest", Size: 2, Members: []dedup.ExampleDoc{
		{ID: "k", Text: long, Kept: true}, {ID: "r", Text: long + "tail", Kept: false},
	}}}
	var buf bytes.Buffer
	if err := Write(&buf, r, Options{noPlots: true, MaxRunes: 100}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "(14900 more characters)") || !strings.Contains(buf.String(), "(14904 more characters)") {
		t.Error("long documents are not cut at MaxRunes with a note of what was left out")
	}
}

// TestBanding: the S-curve's banding is the run's, from the resolved
// Spec its Stats carry (no parsing of the method's parameters), or from
// its Options when the Stats have none; a jaccard run has none.
func TestBanding(t *testing.T) {
	spec, err := sketch.Spec{MinHash: sketch.MinHashSpec{Bands: 9, Rows: 13}}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	given := dedup.Options{Spec: sketch.Spec{MinHash: sketch.MinHashSpec{Bands: 9, Rows: 13}}}
	for _, tt := range []struct {
		name string
		run  Run
		want lsh.Params
		from string
	}{
		{"stats", Run{Stats: &dedup.Stats{Method: "minhash", Spec: spec}}, lsh.Params{Bands: 9, Rows: 13}, "chosen by the run"},
		{"given", Run{Options: given, Stats: &dedup.Stats{Method: "minhash", Spec: spec}}, lsh.Params{Bands: 9, Rows: 13}, "given on the command line"},
		{"options", Run{Stats: &dedup.Stats{Method: "minhash"}}, lsh.Params{Bands: 13, Rows: 7}, "chosen by the run"},
	} {
		got, from, ok := banding(&tt.run)
		if got != tt.want || from != tt.from || !ok {
			t.Errorf("%s: banding = %v, %q, %v; want %v, %q", tt.name, got, from, ok, tt.want, tt.from)
		}
	}
	r := Run{Options: dedup.Options{Method: "jaccard"}, Stats: &dedup.Stats{Method: "jaccard", Spec: sketch.Default(sketch.Jaccard)}}
	if _, _, ok := banding(&r); ok {
		t.Error("banding of a jaccard run reports one")
	}
}

// TestWriteSampleRun checks the report of a real run over the embedded
// sample corpus.
func TestWriteSampleRun(t *testing.T) {
	r, page := renderedSample(t)
	els := parse(t, page)
	var tables int
	for _, tb := range els["table"] {
		if hasClass(tb, "members") {
			tables++
		}
	}
	if tables != len(r.Stats.Examples) || tables < 10 {
		t.Errorf("page has %d cluster tables, want %d (at least 10)", tables, len(r.Stats.Examples))
	}
	if n := len(els["figure"]); n != 4 {
		t.Errorf("page has %d figures, want 4 (S-curve, similarity, sizes, stages)", n)
	}
}

var sampleReport struct {
	once sync.Once
	run  *Run
	page []byte
	err  error
}

// renderedSample returns the run and the report, plots included, of the
// embedded sample corpus with seven hostile near-duplicates added (they
// try to run a script and form the largest cluster). It is made once:
// drawing the plots is the slow part of these tests.
func renderedSample(t *testing.T) (*Run, []byte) {
	t.Helper()
	sampleReport.once.Do(func() {
		var hostile string
		for i := range 7 {
			hostile += fmt.Sprintf(`{"id":"evil/%d","text":"<script>document.title='pwned'</script><img src=x onerror=\"document.title='pwned'\"> a hostile document that tries to run a script in the report page, copy %d"}`+"\n", i, i)
		}
		sampleReport.run, sampleReport.err = sampleRun(10, 10, hostile)
		if sampleReport.err != nil {
			return
		}
		var buf bytes.Buffer
		sampleReport.err = Write(&buf, sampleReport.run, Options{})
		sampleReport.page = buf.Bytes()
	})
	if sampleReport.err != nil {
		t.Fatal(sampleReport.err)
	}
	return sampleReport.run, sampleReport.page
}

// sampleRun deduplicates the embedded sample corpus, with extra JSONL
// lines, with the default configuration, as the README's first command
// does.
func sampleRun(largest, random int, extra ...string) (*Run, error) {
	cfg := dedup.Options{}
	in := dedup.Input{Files: []string{"-"}, Stdin: strings.NewReader(string(sample.JSONL) + strings.Join(extra, "")),
		Examples: largest, RandomExamples: random}
	var removed []string
	out := dedup.Outputs{Removed: func(id string) { removed = append(removed, id) }}
	stats, err := dedup.Run(context.Background(), cfg, in, out)
	if err != nil {
		return nil, err
	}
	return &Run{Options: cfg, Stats: stats, Source: "the embedded sample corpus", Memory: ReadMemory(), RemovedIDs: removed}, nil
}

// TestWriteNoDuplicates renders a run that found nothing: no pairs, no
// clusters, no examples, no stages, for a method without an S-curve.
func TestWriteNoDuplicates(t *testing.T) {
	cfg := dedup.Options{}
	cfg.Method = "exact"
	s := &dedup.Stats{Method: "exact", Documents: 3, Kept: 3, ClusterSizes: []dedup.SizeCount{{Size: 1, Count: 3}}}
	var buf bytes.Buffer
	if err := Write(&buf, &Run{Options: cfg, Stats: s}, Options{}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{
		"No two documents were found to be duplicates.",
		"No pairs were reported.",
		"No clusters with duplicates.",
		"their normalised texts are identical",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	els := parse(t, buf.Bytes())
	if n := len(els["img"]); n != 0 {
		t.Errorf("page has %d plots of nothing, want 0", n)
	}
	if err := Write(&buf, &Run{Options: cfg}, Options{}); err == nil {
		t.Error("Write without Stats did not fail")
	}
}

// TestClusterModeSummary: the summary says how clusters were formed:
// under leader clustering every removed document is a near-duplicate of
// its kept one; under components, how many removed documents a chain
// joined, when the run counted some.
func TestClusterModeSummary(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(r *Run)
		want  string
		never string
	}{
		{"components", func(r *Run) {}, "directly or through a chain of pairs", "joined through such a chain"},
		{"chained", func(r *Run) { n := 3; r.Stats.RemovedBelowThreshold = &n },
			"3 removed documents were joined through such a chain, not similar enough to the kept document itself", ""},
		{"leader", func(r *Run) { r.Stats.Params.Cluster = "leader" },
			"every removed document is a near-duplicate of the document kept in its place", "chain of pairs"},
	} {
		r := fixture()
		c.edit(r)
		var buf bytes.Buffer
		if err := Write(&buf, r, Options{}); err != nil {
			t.Fatal(err)
		}
		if page := buf.String(); !strings.Contains(page, c.want) || c.never != "" && strings.Contains(page, c.never) {
			t.Errorf("%s: the page lacks %q or has %q", c.name, c.want, c.never)
		}
	}
}

// stagedVariant is run as a staged job reports it: no stage times of one
// process and no process memory, its tasks' usage instead.
func stagedVariant(r *Run) *Run {
	st := *r.Stats
	st.Stages, st.PeakRSSBytes = nil, 0
	v := *r
	v.Stats, v.Memory = &st, nil
	v.Tasks = []StageUsage{{Stage: "sign", Tasks: 3, CPUSeconds: 1.5, LargestRSS: 50 << 20}, {Stage: "write", Tasks: 3, CPUSeconds: 0.25, LargestRSS: 40 << 20}, {Stage: "finish", Tasks: 1, CPUSeconds: 0.01, LargestRSS: 20 << 20}}
	return &v
}

// TestWriteStagedReport: a staged job's report shows its tasks' usage in
// place of the stage times and the process memory, and the same example
// clusters.
func TestWriteStagedReport(t *testing.T) {
	r, _ := renderedSample(t)
	var buf bytes.Buffer
	if err := Write(&buf, stagedVariant(r), Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`id="task-stages"`, "<td>write</td><td class=\"r\">3</td><td class=\"r\">0.250 s</td><td class=\"r\">40.0 MiB</td>", "usage.json", "tasks a stage (staged job)"} {
		if !strings.Contains(page, want) {
			t.Errorf("the staged report lacks %q", want)
		}
	}
	for _, not := range []string{`id="stages"`, "worker goroutines", "peak resident memory of the process", "<td>workers</td>"} {
		if strings.Contains(page, not) {
			t.Errorf("the staged report shows %q, which a staged job has not", not)
		}
	}
	if n := strings.Count(page, `<table class="members"`); n != len(r.Stats.Examples) {
		t.Errorf("%d cluster tables, want %d", n, len(r.Stats.Examples))
	}
}

// TestWriteThousands renders a run of 2,225 documents: the page wrote
// "2225" in its cards and summary where the command's summary says 2,225.
func TestWriteThousands(t *testing.T) {
	cfg := dedup.Options{}
	cfg.Method = "exact"
	s := &dedup.Stats{Method: "exact", Documents: 2225, Kept: 2225, ClusterSizes: []dedup.SizeCount{{Size: 1, Count: 2225}}}
	var buf bytes.Buffer
	if err := Write(&buf, &Run{Options: cfg, Stats: s}, Options{noPlots: true}); err != nil {
		t.Fatal(err)
	}
	page := buf.String()
	for _, want := range []string{`id="n-documents">2,225<`, `id="n-kept">2,225<`, "read 2,225 documents"} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if strings.Contains(page, "2225") {
		i := strings.Index(page, "2225")
		t.Errorf("page writes 2225 without the thousands separator: %q", page[max(i-80, 0):i+20])
	}
}
