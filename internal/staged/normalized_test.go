package staged

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/store"
	"github.com/neardup/neardup/text"
)

// textOnly hides StoreIndex's NewNormalizedChecker: dedup looks every
// document up by its raw text, as before the normalised path.
type textOnly struct{ x StoreIndex }

func (t textOnly) NewChecker() (func(string) (string, float64, bool, error), error) {
	return t.x.NewChecker()
}
func (t textOnly) MemoryBytes() int64 { return t.x.MemoryBytes() }

// countingIndex is StoreIndex counting the lookups by each path.
type countingIndex struct {
	StoreIndex
	text, norm, sketch *atomic.Int64
}

func (c countingIndex) NewChecker() (func(string) (string, float64, bool, error), error) {
	f, err := c.StoreIndex.NewChecker()
	return func(s string) (string, float64, bool, error) { c.text.Add(1); return f(s) }, err
}

func (c countingIndex) NewNormalizedChecker() (func([]byte) (string, float64, bool, error), error) {
	f, err := c.StoreIndex.NewNormalizedChecker()
	return func(b []byte) (string, float64, bool, error) { c.norm.Add(1); return f(b) }, err
}

func (c countingIndex) NewSketchChecker() (func(*sketch.Sketch) (string, float64, bool, error), error) {
	f, err := c.StoreIndex.NewSketchChecker()
	return func(s *sketch.Sketch) (string, float64, bool, error) { c.sketch.Add(1); return f(s) }, err
}

// TestNormalizedCheckerMatchesText: dedup with --against an index looks a
// document up by its own normalised text when the index's specification
// is the run's (NormalizedIndex), and by its raw text otherwise; either
// way -o, --clusters, --pairs and --stats' counts are those of the raw
// text's lookups, on bbc-news (its first 1,200 articles indexed, the
// others and 300 indexed ones, some edited, as input), for minhash and
// simhash indexes and minhash, simhash (in memory and spilled, and
// --verify), the cascade before either, exact and ksentence runs. The
// indexes of other shingles or another normalisation take the raw text.
func TestNormalizedCheckerMatchesText(t *testing.T) {
	const corpusPath = "/work/shared/data/bbc-news/docs.jsonl.gz"
	f, err := os.Open(corpusPath)
	if err != nil {
		t.Skipf("bbc-news: %v", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	type doc struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	}
	var docs []doc
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var d doc
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		docs = append(docs, d)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	const nOld = 1200
	dir := t.TempDir()
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, d := range docs[nOld:] {
		enc.Encode(d)
	}
	for i, d := range docs[:300] {
		d.ID = "copy-" + d.ID
		switch i % 3 {
		case 1: // a near duplicate: its last sentence dropped
			if k := strings.LastIndex(strings.TrimSpace(d.Text), "."); k > 0 {
				d.Text = d.Text[:k]
			}
		case 2: // case and spacing only
			d.Text = strings.ToUpper(strings.ReplaceAll(d.Text, " ", "  "))
		}
		enc.Encode(d)
	}
	input := filepath.Join(dir, "in.jsonl")
	if err := os.WriteFile(input, in.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	makeIndex := func(name string, sp sketch.Spec, estimateOnly bool) StoreIndex {
		t.Helper()
		loc := filepath.Join(dir, name)
		ix, err := store.CreateIndex(loc, sp, store.Options{NoSync: true, EstimateOnly: estimateOnly})
		if err != nil {
			t.Fatal(err)
		}
		sk, err := ix.NewSketcher()
		if err != nil {
			t.Fatal(err)
		}
		var add []store.Doc
		for _, d := range docs[:nOld] {
			s := sk.Sketch(d.Text)
			s.Sig = slices.Clone(s.Sig) // reused by the next Sketch
			add = append(add, store.Doc{ID: d.ID, Sketch: s})
		}
		rs, err := ix.AddBatch(add)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rs {
			if r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		if err := ix.Close(); err != nil {
			t.Fatal(err)
		}
		ro, err := OpenIndex(loc)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ro.Close() })
		if ro.Len() != nOld {
			t.Fatalf("%s: %d documents indexed, want %d", name, ro.Len(), nOld)
		}
		return StoreIndex{ro}
	}
	noFold := text.DefaultOptions()
	noFold.CaseFold = false // the upper-case copies are not found
	indexes := []struct {
		name string
		ix   StoreIndex
	}{
		{"minhash", makeIndex("minhash", sketch.Spec{}, false)},
		{"minhash-estimate", makeIndex("minhash-estimate", sketch.Spec{}, true)},
		{"minhash-3", makeIndex("minhash-3", sketch.Spec{Shingle: shingle.Options{N: 3}}, false)},
		{"simhash", makeIndex("simhash", sketch.Spec{Method: sketch.SimHash}, false)},
		{"minhash-case", makeIndex("minhash-case", sketch.Spec{Normalize: &noFold}, false)},
	}

	run := func(name string, cfg dedup.Options, ix dedup.Index) [4][]byte {
		t.Helper()
		out := filepath.Join(dir, name)
		if err := os.Mkdir(out, 0o755); err != nil {
			t.Fatal(err)
		}
		st, err := dedup.Run(context.Background(), cfg, dedup.Input{Files: []string{input}, AgainstIndexes: []dedup.Index{ix}},
			dedup.Outputs{Kept: out + "/out.jsonl", Clusters: out + "/cl.jsonl", Pairs: out + "/pairs.jsonl", TmpDir: dir})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b [4][]byte
		for k, f := range []string{"out.jsonl", "cl.jsonl", "pairs.jsonl"} {
			if b[k], err = os.ReadFile(filepath.Join(out, f)); err != nil {
				t.Fatal(err)
			}
		}
		counts := struct {
			Docs, Kept, Removed, Pairs, IndexMatches, Clusters int64
			Similarity                                         any
		}{int64(st.Documents), int64(st.Kept), int64(st.Removed), int64(st.Pairs), int64(st.IndexMatches), int64(st.Clusters), st.Similarity}
		b[3], _ = json.Marshal(counts)
		if st.IndexMatches == 0 {
			t.Fatalf("%s: no document found in the index: the comparison shows nothing (%+v)", name, *st)
		}
		return b
	}
	runs := []struct {
		name string
		cfg  dedup.Options
	}{
		{"minhash", dedup.Options{Method: "minhash"}},
		{"minhash-verify", dedup.Options{Method: "minhash", Verify: true}},
		{"minhash-estimate", dedup.Options{Method: "minhash", EstimateOnly: true}},
		{"minhash-spill", dedup.Options{Method: "minhash", Spill: true, Memory: 1 << 20}},
		{"simhash", dedup.Options{Method: "simhash"}},
		{"simhash-verify", dedup.Options{Method: "simhash", Verify: true}},
		{"simhash-spill", dedup.Options{Method: "simhash", Spill: true, Memory: 1 << 20}},
		{"cascade-minhash", dedup.Options{Method: "minhash", Cascade: true}},
		{"cascade-simhash", dedup.Options{Method: "simhash", Cascade: true}},
		{"exact", dedup.Options{Method: "exact"}},
		{"ksentence", dedup.Options{Method: "ksentence"}},
	}
	for _, x := range indexes {
		for _, rc := range runs {
			cfg := rc.cfg
			cfg.Workers = 2
			name := x.name + "-" + rc.name
			var text, norm, sk atomic.Int64
			want := run(name+"-text", cfg, textOnly{x.ix})
			got := run(name+"-auto", cfg, countingIndex{x.ix, &text, &norm, &sk})
			for k, f := range []string{"-o", "--clusters", "--pairs", "--stats' counts"} {
				if !bytes.Equal(got[k], want[k]) {
					t.Errorf("%s: %s differs from the raw text's lookups", name, f)
				}
			}
			spec, err := cfg.ResolveSpec()
			if err != nil {
				t.Fatal(err)
			}
			// The indexes of the default specification take the
			// run's normalised text, a MinHash or SimHash run's
			// sketches; a cascade's copies (none sketched) their
			// normalised text.
			same := spec.Method == x.ix.Spec().Method && (x.name == "minhash" || x.name == "minhash-estimate" || x.name == "simhash")
			bySketch := same && (spec.Method == sketch.MinHash || spec.Method == sketch.SimHash)
			if same != (text.Load() == 0) || bySketch != (sk.Load() > 0) || same && !bySketch && norm.Load() == 0 ||
				bySketch && cfg.Cascade != (norm.Load() > 0) {
				t.Errorf("%s: %d lookups by raw text, %d by normalised text, %d by sketch; want the normalised path %v, the sketch's %v",
					name, text.Load(), norm.Load(), sk.Load(), same, bySketch)
			}
		}
	}
}
