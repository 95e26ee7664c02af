package tune

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/shingle"
)

func TestConfigsProduct(t *testing.T) {
	sp := DefaultSpace()
	nsh, nt := len(sp.Shingles), len(sp.Thresholds)
	tests := []struct {
		method string
		want   int
	}{
		{"exact", 1},
		{"bloom", 1},
		{"ksentence", len(sp.KSentences)},
		{"jaccard", nsh * nt},
		{"minhash", nsh * len(sp.NumPerms) * nt},
		{"simhash", nsh * len(sp.Weights) * len(sp.Distances)},
	}
	for _, tt := range tests {
		base := dedup.Options{}
		base.Method = tt.method
		cfgs := sp.Configs(base)
		if len(cfgs) != tt.want {
			t.Errorf("Configs(%s) has %d configurations, want %d", tt.method, len(cfgs), tt.want)
		}
		seen := map[string]bool{}
		for _, c := range cfgs {
			if c.Method != tt.method {
				t.Errorf("Configs(%s) changed the method to %s", tt.method, c.Method)
			}
			l := Label(c)
			if seen[l] {
				t.Errorf("Configs(%s): label %q twice", tt.method, l)
			}
			seen[l] = true
		}
	}
}

func TestConfigsSkipsImpossibleBanding(t *testing.T) {
	sp := Space{NumPerms: []int{32, 128}, Bandings: [][2]int{{0, 0}, {16, 4}}, Thresholds: []float64{0.8}}
	base := dedup.Options{}
	cfgs := sp.Configs(base)
	var got []string
	for _, c := range cfgs {
		got = append(got, Label(c))
	}
	want := []string{"word-5 t=0.8 perm=32", "word-5 t=0.8 perm=128", "word-5 t=0.8 perm=128 16x4"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Configs = %q, want %q", got, want)
	}
	for _, c := range cfgs {
		if _, err := dedup.NewMethod(c); err != nil {
			t.Errorf("%s: %v", Label(c), err)
		}
	}
}

func TestBest(t *testing.T) {
	tr := []Trial{
		{Label: "a", Scores: Scores{F1: 0.5, ARI: 0.9}, Seconds: 1},
		{Label: "b", Scores: Scores{F1: 0.8, ARI: 0.1}, Seconds: 9},
		{Label: "c", Scores: Scores{F1: 0.8, ARI: 0.2}, Seconds: 0.1},
	}
	for _, tt := range []struct {
		m    Metric
		want int
	}{{F1, 1}, {ARI, 0}, {Precision, 0}} {
		if got := Best(tr, tt.m); got != tt.want {
			t.Errorf("Best(%s) = %d, want %d", tt.m, got, tt.want)
		}
	}
	if got := Best(nil, F1); got != -1 {
		t.Errorf("Best(nil) = %d, want -1", got)
	}
}

// truthOf builds Labels from "id cluster" pairs.
func truthOf(t *testing.T, pairs [][2]string) *eval.Labels {
	t.Helper()
	var b strings.Builder
	for _, p := range pairs {
		fmt.Fprintf(&b, "{\"id\":%q,\"cluster\":%q}\n", p[0], p[1])
	}
	l, err := eval.ReadClusters(strings.NewReader(b.String()), "truth")
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestSampleKeepsWholeClusters(t *testing.T) {
	dir := t.TempDir()
	var docs strings.Builder
	var pairs [][2]string
	for c := range 40 {
		for m := range 1 + c%4 {
			id := fmt.Sprintf("c%d-m%d", c, m)
			fmt.Fprintf(&docs, "{\"id\":%q,\"text\":\"text of %s\"}\n", id, id)
			pairs = append(pairs, [2]string{id, fmt.Sprint(c)})
		}
	}
	fmt.Fprintf(&docs, "{\"id\":\"stray\",\"text\":\"not in the truth\"}\n")
	path := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(path, []byte(docs.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	truth := truthOf(t, pairs)
	run := func(seed uint64) (string, *eval.Labels) {
		var d, tr bytes.Buffer
		n, err := Sample([]string{path}, corpus.Options{}, truth, 25, seed, &d, &tr)
		if err != nil {
			t.Fatal(err)
		}
		if n > 25 || n == 0 {
			t.Fatalf("Sample wrote %d documents, want 1..25", n)
		}
		got, err := eval.ReadClusters(&tr, "sample")
		if err != nil {
			t.Fatal(err)
		}
		if got.Len() != n || strings.Count(d.String(), "\n") != n {
			t.Fatalf("Sample: %d truth lines, %d doc lines, n = %d", got.Len(), strings.Count(d.String(), "\n"), n)
		}
		return d.String(), got
	}
	d1, s1 := run(7)
	d2, _ := run(7)
	if d1 != d2 {
		t.Error("Sample with the same seed gave different documents")
	}
	if d3, _ := run(8); d3 == d1 {
		t.Error("Sample with another seed gave the same documents")
	}
	if strings.Contains(d1, "stray") {
		t.Error("Sample kept a document the truth lacks")
	}
	// Every cluster of the sample is complete: its size in the sample is
	// its size in the truth (1 + c%4).
	size := map[int32]int{}
	for _, c := range s1.Cluster {
		size[c]++
	}
	for k, id := range s1.IDs {
		var c, m int
		fmt.Sscanf(id, "c%d-m%d", &c, &m)
		if got := size[s1.Cluster[k]]; got != 1+c%4 {
			t.Errorf("cluster of %s has %d members in the sample, want %d", id, got, 1+c%4)
		}
	}
}

const fixture = `{"id":"a1","text":"the quick brown fox jumps over the lazy dog near the river bank today"}
{"id":"b1","text":"a stitch in time saves nine and a penny saved is a penny earned always"}
{"id":"a2","text":"the quick brown fox jumps over the lazy dog near the river bank"}
{"id":"c1","text":"colorless green ideas sleep furiously while the old man reads his paper"}
{"id":"a3","text":"The quick brown fox jumps over the lazy dog near the RIVER bank today!"}
{"id":"b2","text":"a stitch in time saves nine and a penny saved is a penny earned"}
`

func TestSweepScoresAgainstTruth(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(path, []byte(fixture), 0o644); err != nil {
		t.Fatal(err)
	}
	truth := truthOf(t, [][2]string{{"a1", "a"}, {"a2", "a"}, {"a3", "a"}, {"b1", "b"}, {"b2", "b"}, {"c1", "c"}})
	base := dedup.Options{}
	base.Method = "jaccard"
	base.Workers = 1
	sp := Space{Shingles: []shingle.Options{{Unit: shingle.Word, N: 1}}, Thresholds: []float64{0.5, 0.95}}
	var calls int
	trials, err := Sweep(context.Background(), base, sp, dedup.Input{Files: []string{path}}, truth, dir,
		func(done, total int, _ *Trial) {
			calls++
			if done != calls || total != 2 {
				t.Errorf("progress(%d, %d) at call %d", done, total, calls)
			}
		})
	if err != nil {
		t.Fatal(err)
	}
	// True pairs: a1-a2, a1-a3, a2-a3, b1-b2 (4). At 0.5 (word-1 J of the
	// near-copies is 11/12) all are found; at 0.95 only a1-a3,
	// identical after normalisation.
	want := []Scores{
		{Precision: 1, Recall: 1, F1: 1, TruePairs: 4, PredictedPairs: 4, CorrectPairs: 4},
		{Precision: 1, Recall: 0.25, F1: 0.4, TruePairs: 4, PredictedPairs: 1, CorrectPairs: 1},
	}
	for i, tr := range trials {
		s := tr.Scores
		if s.TruePairs != want[i].TruePairs || s.PredictedPairs != want[i].PredictedPairs || s.CorrectPairs != want[i].CorrectPairs ||
			s.Precision != want[i].Precision || s.Recall != want[i].Recall || s.F1 != want[i].F1 {
			t.Errorf("%s: scores %+v, want %+v", tr.Label, s, want[i])
		}
		if tr.Params.Threshold != sp.Thresholds[i] {
			t.Errorf("%s: params %v", tr.Label, tr.Params)
		}
	}
	if Best(trials, F1) != 0 {
		t.Errorf("Best = %d, want 0", Best(trials, F1))
	}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, trials, F1, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 1 | word-1 t=0.5 **(best)** | 1.0000 | 1.0000 | 1.0000 |") {
		t.Errorf("table:\n%s", md.String())
	}
	png := filepath.Join(dir, "p.png")
	if err := PlotPNG(png, "test", trials, F1, 0); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
		t.Errorf("plot is not a PNG (%v)", err)
	}
}

// TestWriteMarkdownNumbers: the table is read by people, and its pairs
// column writes counts as the command's summaries do, with thousands
// separators (it wrote 1234567).
func TestWriteMarkdownNumbers(t *testing.T) {
	trials := []Trial{{Label: "word-5 t=0.8", Scores: Scores{F1: 0.5}, Pairs: 1234567, Seconds: 1}}
	var md bytes.Buffer
	if err := WriteMarkdown(&md, trials, F1, 0); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "| 1,234,567 | 1.00 |") {
		t.Errorf("table:\n%s\nwant the pairs written 1,234,567", md.String())
	}
}

// TestConfigsSimHashVerifyThresholds: simhash with --verify true alone
// sweeps --thresholds, each configuration verifying at its own (before,
// every configuration verified at the default 0.8, the list ignored).
func TestConfigsSimHashVerifyThresholds(t *testing.T) {
	sp := DefaultSpace()
	sp.Shingles, sp.Weights, sp.Distances = sp.Shingles[:1], []string{"count"}, []int{3}
	sp.Verify, sp.Thresholds = []bool{true}, []float64{0.5, 0.7}
	base := dedup.Options{}
	base.Method = "simhash"
	cfgs := sp.Configs(base)
	if len(cfgs) != 2 {
		t.Fatalf("%d configurations, want 2 (one a threshold)", len(cfgs))
	}
	for i, c := range cfgs {
		if !c.Verify || c.VerifyThreshold != sp.Thresholds[i] {
			t.Errorf("configuration %d (%s): verify %v at %g, want true at %g", i, Label(c), c.Verify, c.VerifyThreshold, sp.Thresholds[i])
		}
	}
}
