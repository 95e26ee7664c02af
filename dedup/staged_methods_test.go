package dedup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/simhash"
)

// signTexts runs SketchRanges of cfg over texts (ids t0, t1, ...) and
// returns what the join needs of each document.
func signTexts(t *testing.T, cfg Options, texts []string) []JoinDoc {
	t.Helper()
	docs := make([]corpus.Document, len(texts))
	for i, s := range texts {
		docs[i] = corpus.Document{ID: fmt.Sprintf("t%d", i), Text: s}
	}
	open := func(name string, opts corpus.Options) (corpus.Reader, error) { return Docs(name, docs).Open(opts) }
	var out []JoinDoc
	_, err := SketchRanges(context.Background(), cfg, Input{}, open, []DocRange{{File: "mem", Lo: 0, Hi: int64(len(docs))}}, func(d *SignedDoc) error {
		out = append(out, JoinDoc{Doc: int64(len(out)), ID: d.ID, Len: d.Len, Sketch: bytes.Clone(d.Sketch)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStagedSimhashDesign: the simhash join uses the design of the whole
// input (JoinOptions.Sketched), not its group's: the pairs' orders that
// it gives follow the order in which its Finder met them, for a whole
// input too small to choose the design of a million documents and for a
// million (a join that chose its own design would meet the pairs of 5
// blocks in the order of 4).
func TestStagedSimhashDesign(t *testing.T) {
	cfg := Options{Method: "simhash", Workers: 2}
	docs := signTexts(t, cfg, fpTexts(800, 31))
	small, err := simhash.ChooseDesign(len(docs), 64, 3, true, simhash.DesignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	large, err := simhash.ChooseDesign(1<<20, 64, 3, true, simhash.DesignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if small.Blocks == large.Blocks {
		t.Fatalf("the designs for %d and 2^20 fingerprints are alike (%v): the test tests nothing", len(docs), small)
	}
	for _, sketched := range []int64{int64(len(docs)), 1 << 20} {
		// JoinComponents lets go of each document's sketch: a copy each run.
		res, err := JoinComponents(context.Background(), cfg, slices.Clone(docs), JoinOptions{Workers: 1, TmpDir: t.TempDir(), Sketched: sketched, Pairs: true})
		if err != nil {
			t.Fatal(err)
		}
		if res.PairsByDoc || len(res.PairLines) < 50 || len(res.PairLines) != res.Pairs {
			t.Fatalf("%d sketched: %d pairs, %d lines, by document %v", sketched, res.Pairs, len(res.PairLines), res.PairsByDoc)
		}
		for k := 1; k < len(res.PairLines); k++ {
			if bytes.Compare(res.PairLines[k-1].Order, res.PairLines[k].Order) >= 0 {
				t.Fatalf("%d sketched: pair %d (%s) met after pair %d (%s), which comes later", sketched, k, res.PairLines[k].Line, k-1, res.PairLines[k-1].Line)
			}
		}
		want, err := StagedParams(cfg, Facts{}, sketched)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := simhash.ChooseDesign(int(sketched), 64, 3, true, simhash.DesignOptions{})
		if want.Design != d.String() {
			t.Errorf("%d sketched: params say design %q, want %q", sketched, want.Design, d)
		}
	}
}

// TestJoinComponentsStreamed: a join whose sketches come from
// JoinOptions.Sketches (a component too large for memory; the buffer
// is overwritten at each call, as a file reader's is) gives the results
// of the join of the same documents held in memory, for each Finder the
// join runs, and leaves no scratch file.
func TestJoinComponentsStreamed(t *testing.T) {
	texts := append(fpTexts(500, 41), chainTexts(3, 80, 7)...)
	for _, cfg := range []Options{
		{},
		{Verify: true},
		{Cluster: cluster.Leader, Keep: cluster.Longest},
		{AllPairs: true},
		{Method: "simhash", Verify: true},
		{Method: "exact"},
	} {
		cfg.Workers = 2
		name := fmt.Sprintf("%+v", cfg)
		docs := signTexts(t, cfg, texts)
		opts := JoinOptions{Workers: 2, Sketched: int64(len(docs)), Pairs: true}
		opts.TmpDir = t.TempDir()
		want, err := JoinComponents(context.Background(), cfg, slices.Clone(docs), opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(want.Removed) < 100 {
			t.Fatalf("%s: %d documents removed: the test tests little", name, len(want.Removed))
		}
		bare := slices.Clone(docs)
		for i := range bare {
			bare[i].Sketch = nil
		}
		var buf []byte
		next := 0
		opts.Sketches = func() ([]byte, error) {
			buf = append(buf[:0], docs[next].Sketch...)
			next++
			return buf, nil
		}
		got, err := JoinComponents(context.Background(), cfg, bare, opts)
		if err != nil {
			t.Fatalf("%s, streamed: %v", name, err)
		}
		if next != len(docs) {
			t.Errorf("%s: %d of %d sketches read", name, next, len(docs))
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the streamed join's results differ: %d removed, %d pairs; want %d, %d", name, len(got.Removed), got.Pairs, len(want.Removed), want.Pairs)
		}
		if left, _ := os.ReadDir(opts.TmpDir); len(left) > 0 {
			t.Errorf("%s: scratch files left: %v", name, left)
		}
	}
}

// TestStagedKeyedSketchDamage: the staged sketches of simhash, exact and
// ksentence decode to what was encoded, and a cut or damaged one is an
// error or another sketch, never a panic.
func TestStagedKeyedSketchDamage(t *testing.T) {
	texts := []string{"alpha beta gamma delta epsilon. zeta eta theta iota kappa!", "  "}
	for _, cfg := range []Options{{Method: "simhash"}, {Method: "simhash", Verify: true}, {Method: "exact"}, {Method: "ksentence"}} {
		cfg.Workers = 1
		docs := signTexts(t, cfg, texts)
		if len(docs[0].Sketch) == 0 || len(docs[1].Sketch) != 0 {
			t.Fatalf("%s: sketches of %d and %d bytes", cfg.Method, len(docs[0].Sketch), len(docs[1].Sketch))
		}
		_, st, err := stagedOf(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b := docs[0].Sketch
		if _, err := st.decodeSigned(b, nil); err != nil {
			t.Fatalf("%s: %v", cfg.Method, err)
		}
		for n := range len(b) {
			if _, err := st.decodeSigned(b[:n], nil); err == nil {
				t.Errorf("%s: cut at %d of %d: no error", cfg.Method, n, len(b))
			}
		}
		for k := range len(b) {
			c := bytes.Clone(b)
			c[k] ^= 0xff
			st.decodeSigned(c, nil) // must not panic
		}
	}
}

// TestCheckStaged: what the staged pipeline refuses, and why.
func TestCheckStaged(t *testing.T) {
	for _, c := range []struct {
		cfg  Options
		want string // "" when staged
	}{
		{Options{}, ""},
		{Options{Method: "simhash", Verify: true}, ""},
		{Options{Method: "exact", AllPairs: true}, ""},
		{Options{Method: "ksentence"}, ""},
		{Options{Method: "bloom"}, "depends on every key inserted before it"},
		{Options{Method: "bloom-overlap"}, "depends on every key inserted before it"},
		{Options{Method: "jaccard"}, "not keyed"},
	} {
		err := CheckStaged(c.cfg)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.cfg, err)
		case c.want != "" && (err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want))):
			t.Errorf("%+v: %v, want an error saying %q", c.cfg, err, c.want)
		}
	}
}
