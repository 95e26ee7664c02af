package cli

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// dedupArgs must reproduce the configuration when dedup parses it.
func TestDedupArgsRoundTrip(t *testing.T) {
	var cfgs []dedup.Options
	add := func(f func(c *dedup.Options)) {
		c := dedup.Options{}
		f(&c)
		cfgs = append(cfgs, c)
	}
	add(func(c *dedup.Options) {})
	add(func(c *dedup.Options) {
		c.Spec.Shingle = shingle.Options{Unit: shingle.Char, N: 4, Seed: 9}
		c.Spec.Threshold, c.Verify = 0.55, true
		c.Spec.MinHash = sketch.MinHashSpec{NumPerm: 64, Bands: 16, Rows: 4, Seed: 9}
		c.Spec.Normalize = normalizeWith(func(o *text.Options) { o.T2S, o.Punctuation = true, false })
	})
	add(func(c *dedup.Options) {
		c.Method, c.Spec.SimHash = "simhash", sketch.SimHashSpec{Bits: 128, Distance: 7, Weights: sketch.WeightTFIDF}
		c.Spec.Shingle = shingle.Options{Unit: shingle.Char, N: 2}
		c.Spec.Normalize = normalizeWith(func(o *text.Options) { o.HTML = true })
	})
	add(func(c *dedup.Options) { c.Method, c.Spec.Threshold = "jaccard", 0.3 })
	add(func(c *dedup.Options) { c.Method, c.Spec.KSentence.K = "ksentence", 2 })
	add(func(c *dedup.Options) { c.Method = "exact" })
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(docs, []byte(`{"id":"a","text":"one two three four five six. seven eight."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(dir, "stats.json")
	for _, want := range cfgs {
		args := dedupArgs(want)
		got := dedupStats(t, stats, append(append([]string{"dedup"}, args...), "-q", "-j", "1", "--stats", stats, docs)...)
		// Through JSON, as the stats file holds them.
		wantParams := describedParams(t, want)
		// Every parameter the method describes before a run must come out
		// the same; keys that depend on the corpus (the index design chosen
		// at Flush, the IDF table) are left out, and keys the run adds are
		// ignored.
		gotParams := got.Params
		for _, f := range []*dedup.Facts{&wantParams, &gotParams} {
			f.DesignFor1MDocs, f.Design, f.IDFDocs, f.IDFFeatures = "", "", 0, 0
		}
		if diff := cmp.Diff(wantParams, gotParams); diff != "" {
			t.Errorf("dedup %s: parameters differ (-want +got):\n%s", strings.Join(args, " "), diff)
		}
		// The whole resolved specification, normalisation included.
		wantSpec, err := want.ResolveSpec()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(wantSpec, got.Spec); diff != "" {
			t.Errorf("dedup %s: specification differs (-want +got):\n%s", strings.Join(args, " "), diff)
		}
	}
}

func TestVersionRecall(t *testing.T) {
	read := func(s string) *eval.Labels {
		l, err := eval.ReadClusters(strings.NewReader(s), "x")
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	truth := read(`{"id":"KJV/1","cluster":"1"}
{"id":"ASV/1","cluster":"1"}
{"id":"BBE/1","cluster":"1"}
{"id":"KJV/2","cluster":"2"}
{"id":"ASV/2","cluster":"2"}
{"id":"BBE/2","cluster":"2"}
{"id":"ASV/3","cluster":"3"}
`)
	pred := read(`{"id":"KJV/1","cluster":"k"}
{"id":"ASV/1","cluster":"k"}
{"id":"BBE/1","cluster":"k"}
{"id":"KJV/2","cluster":"m"}
{"id":"ASV/2","cluster":"n"}
{"id":"BBE/2","cluster":"m"}
`)
	got := versionRecall(truth, pred, "KJV")
	want := map[string]float64{"ASV": 0.5, "BBE": 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("versionRecall (-want +got):\n%s", diff)
	}
}

// TestOptionsJSON: bench's child runs get dedup.Options as JSON (no
// flags rebuilt from them): the child's run has the same resolved Spec
// and the same method parameters as the options in process.
func TestOptionsJSON(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(docs, []byte(`{"id":"a","text":"one two three four five six. seven eight."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []dedup.Options{
		{},
		{Method: "simhash", Verify: true, VerifyThreshold: 0.6, Spec: sketch.Spec{SimHash: sketch.SimHashSpec{Bits: 32, Distance: 4, Weights: sketch.WeightCount}}},
		{Method: "minhash", Cluster: cluster.Leader, Spec: sketch.Spec{Threshold: 0.7, MinHash: sketch.MinHashSpec{NumPerm: 64, Bands: 8}}},
		{Method: "bloom-overlap", BloomFPP: 1e-4, Spec: sketch.Spec{Shingle: shingle.Options{Unit: shingle.Char, N: 3}, Threshold: 0.5}},
		{Method: "ksentence", Keep: cluster.Longest, Spec: sketch.Spec{Normalize: normalizeWith(func(o *text.Options) { o.HTML = true })}},
	} {
		path := filepath.Join(dir, "options.json")
		if err := writeOptionsJSON(path, cfg); err != nil {
			t.Fatal(err)
		}
		stats := filepath.Join(dir, "stats.json")
		got := dedupStats(t, stats, "dedup", "--options-json", path, "-q", "--stats", stats, docs)
		wantSpec, err := cfg.ResolveSpec()
		if err != nil {
			t.Fatal(err)
		}
		wantParams := describedParams(t, cfg)
		for _, f := range []*dedup.Facts{&wantParams, &got.Params} {
			f.DesignFor1MDocs, f.Design, f.Banding = "", "", ""
		}
		if diff := cmp.Diff(wantSpec, got.Spec); diff != "" {
			t.Errorf("%s: specification differs (-want +got):\n%s", got.Method, diff)
		}
		if diff := cmp.Diff(wantParams, got.Params); diff != "" {
			t.Errorf("%s: parameters differ (-want +got):\n%s", got.Method, diff)
		}
	}
}

// dedupStats runs neardup with args, which write the --stats file
// statsPath, and returns the stats.
func dedupStats(t *testing.T, statsPath string, args ...string) dedup.Stats {
	t.Helper()
	var stderr bytes.Buffer
	if code := Main(args, nil, io.Discard, &stderr); code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr.String())
	}
	b, err := os.ReadFile(statsPath)
	if err != nil {
		t.Fatal(err)
	}
	var st dedup.Stats
	if err := json.Unmarshal(b, &st); err != nil {
		t.Fatal(err)
	}
	return st
}

// describedParams returns the facts cfg's method states before a run.
func describedParams(t *testing.T, cfg dedup.Options) dedup.Facts {
	t.Helper()
	m, err := dedup.NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m.Facts()
}

// TestTunedJaccard checks that jaccard's tuned row runs the exact join with
// minhash's tuned shingling and threshold, and that every tuned
// configuration resolves.
func TestTunedJaccard(t *testing.T) {
	for name, prof := range benchProfiles {
		for _, m := range benchMethods {
			f := prof.tunedFunc(m)
			if f == nil {
				continue
			}
			c := prof.config(m)
			f(&c)
			if err := c.Validate(); err != nil {
				t.Errorf("%s, tuned %s: %v", name, m, err)
			}
		}
		j, mh := prof.tunedFunc("jaccard"), prof.tunedFunc("minhash")
		if prof.noTunedJaccard || mh == nil {
			if j != nil {
				t.Errorf("%s: a tuned jaccard row without minhash's or against noTunedJaccard", name)
			}
			continue
		}
		cj, cm := prof.config("jaccard"), prof.config("minhash")
		j(&cj)
		mh(&cm)
		if cj.Spec.Shingle != cm.Spec.Shingle || cj.Spec.Threshold != cm.Spec.Threshold {
			t.Errorf("%s: tuned jaccard %+v at %v, minhash %+v at %v", name, cj.Spec.Shingle, cj.Spec.Threshold, cm.Spec.Shingle, cm.Spec.Threshold)
		}
		if cj.Spec.MinHash != (sketch.MinHashSpec{}) {
			t.Errorf("%s: tuned jaccard carries MinHash parameters %+v", name, cj.Spec.MinHash)
		}
	}
	if benchProfiles["bible-distant"].tunedFunc("jaccard") != nil {
		t.Error("bible-distant has a tuned jaccard row (out of the time budget)")
	}
}
