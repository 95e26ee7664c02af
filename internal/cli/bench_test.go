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

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/eval"
	"github.com/neardup/neardup/shingle"
)

// dedupArgs must reproduce the configuration when dedup parses it.
func TestDedupArgsRoundTrip(t *testing.T) {
	var cfgs []dedup.Config
	add := func(f func(c *dedup.Config)) {
		c := dedup.DefaultConfig()
		f(&c)
		cfgs = append(cfgs, c)
	}
	add(func(c *dedup.Config) {})
	add(func(c *dedup.Config) {
		c.Shingle = shingle.Options{Unit: shingle.Char, N: 4}
		c.Threshold, c.NumPerm, c.Bands, c.Rows, c.Verify, c.Seed = 0.55, 64, 16, 4, true, 9
		c.Normalize.T2S, c.Normalize.Punctuation = true, false
	})
	add(func(c *dedup.Config) {
		c.Method, c.Bits, c.Distance, c.Weights = "simhash", 128, 7, "tfidf"
		c.Shingle = shingle.Options{Unit: shingle.Char, N: 2}
		c.Normalize.HTML = true
	})
	add(func(c *dedup.Config) { c.Method, c.Threshold = "jaccard", 0.3 })
	add(func(c *dedup.Config) { c.Method, c.KSentences = "ksentence", 2 })
	add(func(c *dedup.Config) { c.Method = "exact" })
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(docs, []byte(`{"id":"a","text":"one two three four five six. seven eight."}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stats := filepath.Join(dir, "stats.json")
	for _, want := range cfgs {
		args := dedupArgs(want)
		var stderr bytes.Buffer
		if code := Main(append(append([]string{"dedup"}, args...), "-q", "-j", "1", "--stats", stats, docs), nil, io.Discard, &stderr); code != 0 {
			t.Fatalf("dedup %v: exit %d: %s", args, code, stderr.String())
		}
		b, err := os.ReadFile(stats)
		if err != nil {
			t.Fatal(err)
		}
		var got dedup.Stats
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		m, err := dedup.NewMethod(want)
		if err != nil {
			t.Fatal(err)
		}
		// Through JSON, as the stats file holds them.
		var wantParams map[string]any
		b, _ = json.Marshal(m.Describe())
		json.Unmarshal(b, &wantParams)
		// Every parameter the method describes before a run must come out
		// the same; keys that depend on the corpus (the index design chosen
		// at Flush, the IDF table) are left out, and keys the run adds are
		// ignored.
		for _, k := range []string{"design_for_1M_docs", "idf_docs", "idf_features", "index"} {
			delete(wantParams, k)
		}
		gotParams := map[string]any{}
		for k := range wantParams {
			gotParams[k] = got.Params[k]
		}
		if diff := cmp.Diff(wantParams, gotParams); diff != "" {
			t.Errorf("dedup %s: parameters differ (-want +got):\n%s", strings.Join(args, " "), diff)
		}
		if want.Normalize.T2S != strings.Contains(strings.Join(args, " "), "--t2s=true") ||
			want.Normalize.HTML != strings.Contains(strings.Join(args, " "), "--html=true") ||
			want.Normalize.Punctuation == strings.Contains(strings.Join(args, " "), "--fold-punct=false") {
			t.Errorf("dedup %s: normalisation flags do not match %+v", strings.Join(args, " "), want.Normalize)
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
