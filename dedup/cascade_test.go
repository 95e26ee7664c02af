package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
)

// cascadeCorpus makes documents with many exact copies (some differing
// only in case and punctuation, identical after normalisation), near
// copies (a few words changed), copies of near copies, empty texts and
// texts too short for a shingle, with their copies. distinct is the
// number of distinct non-empty normalised texts (at most: two random
// texts are different).
func cascadeCorpus(n int) (texts []string) {
	rng := rand.New(rand.NewPCG(7, 11))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%d", i)
	}
	random := func() string {
		w := make([]string, 30+rng.IntN(40))
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	for len(texts) < n {
		switch k := rng.IntN(20); {
		case k < 6 || len(texts) == 0:
			texts = append(texts, random())
		case k < 12: // an exact copy of an earlier document
			t := texts[rng.IntN(len(texts))]
			if rng.IntN(2) == 0 {
				t = strings.ToUpper(t) + "!"
			}
			texts = append(texts, t)
		case k < 17: // a near copy
			w := strings.Fields(texts[rng.IntN(len(texts))])
			if len(w) < 10 {
				texts = append(texts, random())
				continue
			}
			w[rng.IntN(len(w))] = vocab[rng.IntN(len(vocab))]
			texts = append(texts, strings.Join(w, " "))
		case k < 18:
			texts = append(texts, "")
		default: // too short for a shingle, copied by k's later draws
			texts = append(texts, fmt.Sprintf("w%d", rng.IntN(3)))
		}
	}
	return texts
}

// TestCascadeMatchesMethodAlone: the cascade's clusters and kept
// documents are byte for byte those of its near method alone, for any
// number of workers, in memory and spilled, whatever is kept; its pairs
// are the same file for any number of workers (-j 1's streaming Finder
// wrote minhash's pairs among the copies', the component join after
// them).
func TestCascadeMatchesMethodAlone(t *testing.T) {
	path := writeTexts(t, t.TempDir(), cascadeCorpus(3000), "d%d")
	run := func(cfg Options) ([3][]byte, *Stats) {
		t.Helper()
		dir := t.TempDir()
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"), Kept: filepath.Join(dir, "k.jsonl"), TmpDir: t.TempDir()}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Memory.Spill != cfg.Spill {
			t.Fatalf("spill = %v, want %v", st.Memory.Spill, cfg.Spill)
		}
		o := readOutputs(t, out)
		return [3][]byte{o[0], o[2], o[1]}, st
	}
	for _, c := range []struct {
		method string
		spill  bool
		keep   cluster.Policy
		all    bool
	}{
		{method: "minhash"},
		{method: "minhash", keep: cluster.Longest},
		{method: "minhash", spill: true},
		{method: "minhash", all: true},
		{method: "simhash"},
		{method: "simhash", spill: true, keep: cluster.Longest},
		{method: "jaccard"},
	} {
		name := fmt.Sprintf("%s/spill=%v/keep=%v/all=%v", c.method, c.spill, c.keep, c.all)
		t.Run(name, func(t *testing.T) {
			base := Options{Method: c.method, Spill: c.spill, Keep: c.keep, AllPairs: c.all, Workers: 2}
			if c.spill {
				base.Memory = 1 << 20
			}
			want, wst := run(base)
			if wst.Removed == 0 {
				t.Fatal("the corpus has no duplicates")
			}
			var pairs []byte
			for _, j := range []int{1, 2, 8} {
				cfg := base
				cfg.Cascade, cfg.Workers = true, j
				got, st := run(cfg)
				if j == 1 {
					pairs = got[2]
				} else if !bytes.Equal(got[2], pairs) {
					t.Errorf("-j %d: the cascade's pairs differ from -j 1's", j)
				}
				for x, what := range []string{"clusters", "kept documents"} {
					if !bytes.Equal(got[x], want[x]) {
						t.Errorf("-j %d: the cascade's %s differ from %s alone", j, what, c.method)
					}
				}
				if !st.Cascade || st.ExactCopies == 0 || st.ExactCopies >= st.Removed {
					t.Errorf("-j %d: cascade %v, %d exact copies of %d removed: want some copies and some near duplicates", j, st.Cascade, st.ExactCopies, st.Removed)
				}
			}
		})
	}
}

// TestCascadeSkipsCopies: with one worker no exact copy is sketched;
// with more, a copy is sketched only when it overtook its first
// occurrence.
func TestCascadeSkipsCopies(t *testing.T) {
	texts := cascadeCorpus(3000)
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	for _, j := range []int{1, 4} {
		cfg := Options{Method: "minhash", Cascade: true, Workers: j}
		r, err := newRun(cfg, Input{Files: []string{path}}, Outputs{TmpDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		if err := r.open(); err != nil {
			t.Fatal(err)
		}
		if err := r.pass1(context.Background()); err != nil {
			t.Fatal(err)
		}
		r.cleanup()
		distinct := 0 // the distinct non-empty texts: their first occurrences are sketched
		for k := range r.cascade.shards {
			distinct += len(r.cascade.shards[k].m)
		}
		sketched := int(r.cascade.sketched.Load())
		if j == 1 && sketched != distinct {
			t.Errorf("-j 1: %d documents sketched, want %d (the first occurrences)", sketched, distinct)
		}
		// With more workers how many copies overtake their first
		// occurrence depends on the scheduling: only the bounds hold.
		if sketched < distinct || sketched > distinct+r.stats.ExactCopies {
			t.Errorf("-j %d: %d documents sketched for %d first occurrences and %d copies", j, sketched, distinct, r.stats.ExactCopies)
		}
		if r.stats.ExactCopies < len(texts)/5 {
			t.Errorf("-j %d: %d exact copies of %d documents", j, r.stats.ExactCopies, len(texts))
		}
	}
}

// TestCascadeResolve: the collector's decisions: a copy of a document
// with a sketch joins it, a copy of one without joins nothing (as with
// the method alone, where neither has a sketch to compare), a document
// whose claimer was never consumed is sketched by the collector.
func TestCascadeResolve(t *testing.T) {
	r, err := newRun(Options{Method: "minhash", Cascade: true}, Input{}, Outputs{})
	if err != nil {
		t.Fatal(err)
	}
	c := r.cascade
	worker := func(text string, index int) DocSketch {
		sk := &cascadeSketcher{c: c, inner: nilSketcher{}}
		s, err := sk.Sketch(&Doc{Index: index, Text: []byte(text)})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// Worker order 1, 0, 2, 3: document 1 (a copy of 0) got there first.
	s1, s0, s2, s3 := worker("a", 1), worker("a", 0), worker("a", 2), worker("b", 3)
	if c.sketched.Load() != 3 || !s2.(*cascadeSketch).copy {
		t.Fatalf("%d sketched, document 2 copy %v: want 3, true", c.sketched.Load(), s2.(*cascadeSketch).copy)
	}
	for i, s := range []DocSketch{s0, s1, s2, s3} {
		got, err := c.resolve(r, i, &rawDoc{text: "b"}, s)
		if err != nil {
			t.Fatal(err)
		}
		if got != nil { // nilSketcher: no document has a sketch
			t.Errorf("document %d: resolve = %#v, want nil (its first occurrence has no sketch)", i, got)
		}
	}
	if c.copies != 0 {
		t.Errorf("%d copies counted, want 0", c.copies)
	}
	// A copy whose claimer (index 4, dropped) is never consumed.
	worker("c", 4)
	s6 := worker("c", 6)
	if !s6.(*cascadeSketch).copy {
		t.Fatal("document 6 was sketched")
	}
	s6.(*cascadeSketch).copy = true
	got, err := c.resolve(r, 5, &rawDoc{text: "w1 w2 w3 w4 w5 w6 w7"}, s6)
	if err != nil || got == nil {
		t.Fatalf("resolve = %v, %v: want the collector's sketch", got, err)
	}
	if _, ok := got.(cascadeCopy); ok {
		t.Fatal("a document whose claimer was dropped is a copy")
	}
}

// nilSketcher returns no sketch for every document.
type nilSketcher struct{}

func (nilSketcher) Sketch(*Doc) (DocSketch, error) { return nil, nil }

// TestCascadeRefused: the configurations the cascade does not run are
// refused with an option error naming the conflict.
func TestCascadeRefused(t *testing.T) {
	path := writeTexts(t, t.TempDir(), []string{"a b c d e f", "a b c d e f"}, "d%d")
	for _, c := range []struct {
		name string
		cfg  Options
		in   Input
		sign bool
	}{
		{name: "exact", cfg: Options{Method: "exact", Cascade: true}},
		{name: "bloom", cfg: Options{Method: "bloom", Cascade: true}},
		{name: "leader", cfg: Options{Method: "minhash", Cascade: true, Cluster: cluster.Leader}},
		{name: "gpu", cfg: Options{Method: "minhash", Cascade: true, Device: DeviceGPU}},
		{name: "resume", cfg: Options{Method: "minhash", Cascade: true}, in: Input{Resume: true}},
		{name: "sign", cfg: Options{Method: "minhash", Cascade: true}, sign: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := c.in
			in.Files = []string{path}
			dir := t.TempDir()
			var err error
			if c.sign {
				_, err = Sign(context.Background(), c.cfg, in, filepath.Join(dir, "s.jsonl"))
			} else {
				_, err = Run(context.Background(), c.cfg, in, Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: dir})
			}
			var oe *OptionError
			if !errors.As(err, &oe) {
				t.Fatalf("err = %v, want an *OptionError", err)
			}
		})
	}
	if err := CheckStaged(Options{Method: "minhash", Cascade: true}); err != nil {
		t.Errorf("CheckStaged refuses the cascade before minhash: %v", err)
	}
	if err := CheckStaged(Options{Method: "jaccard", Cascade: true}); err == nil {
		t.Error("CheckStaged accepts the cascade before jaccard, which is not staged")
	}
	if _, err := NewSigner(Options{Method: "jaccard", Cascade: true}); err == nil {
		t.Error("NewSigner accepts the cascade before jaccard, which is not staged")
	}
}

// TestStagedCascade: the staged cascade's sign (SketchRanges, one call a
// shard) and join (JoinComponents, every document in one group) give
// Run's cascade: the same removed documents, clusters and exact copies.
// A copy within a shard carries its content id alone (SignedDoc.Copy); a
// copy of another shard's document is sketched, its shard cannot know.
func TestStagedCascade(t *testing.T) {
	texts := cascadeCorpus(1200)
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	for _, method := range []string{"minhash", "simhash"} {
		cfg := Options{Method: method, Cascade: true, Workers: 2}
		dir := t.TempDir()
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: dir})
		if err != nil {
			t.Fatal(err)
		}
		var want []Removal
		cl, _ := os.ReadFile(filepath.Join(dir, "c.jsonl"))
		for i, line := range bytes.Split(bytes.TrimSpace(cl), []byte("\n")) {
			var r struct {
				Cluster string `json:"cluster"`
				Kept    bool   `json:"kept"`
			}
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatal(err)
			}
			if !r.Kept {
				want = append(want, Removal{Doc: int64(i), Cluster: r.Cluster})
			}
		}
		var docs []JoinDoc
		copies, crossCopies := 0, 0
		seen := map[string]int{} // normalised text -> its shard
		for shard, rg := range []DocRange{{File: path, Lo: 0, Hi: 500}, {File: path, Lo: 500, Hi: -1}} {
			_, err := SketchRanges(context.Background(), cfg, Input{}, corpus.Open, []DocRange{rg}, func(d *SignedDoc) error {
				i := len(docs)
				docs = append(docs, JoinDoc{Doc: int64(i), ID: d.ID, Len: d.Len, Sketch: bytes.Clone(d.Sketch)})
				if d.Copy {
					copies++
					if len(d.Sketch) != contentIDBytes || len(d.Keys) != 1 {
						t.Errorf("%s: copy %s: a sketch of %d bytes and %d keys, want its content id alone", method, d.ID, len(d.Sketch), len(d.Keys))
					}
				}
				norm := strings.ToLower(strings.TrimSuffix(texts[i], "!"))
				if s, ok := seen[norm]; ok && s != shard && !d.Copy && len(d.Sketch) > contentIDBytes {
					crossCopies++
				} else if !ok {
					seen[norm] = shard
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if copies == 0 || crossCopies == 0 {
			t.Fatalf("%s: %d copies within a shard, %d sketched across: the corpus shows nothing", method, copies, crossCopies)
		}
		var sketched int64
		for _, d := range docs {
			if len(d.Sketch) > 0 {
				sketched++
			}
		}
		res, err := JoinComponents(context.Background(), cfg, docs, JoinOptions{Workers: 2, TmpDir: t.TempDir(), Sketched: sketched, Documents: int64(len(docs))})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Removed, want) || res.ExactCopies != st.ExactCopies || st.ExactCopies == 0 {
			t.Errorf("%s: staged %d removed, %d exact copies; Run %d, %d (or the removed differ)", method, len(res.Removed), res.ExactCopies, len(want), st.ExactCopies)
		}
	}
}

// TestCascadeAgainst: with an old corpus (Input.Against) the cascade's
// clusters are those of the method alone too: a new copy of an old text
// joins the old document.
func TestCascadeAgainst(t *testing.T) {
	texts := cascadeCorpus(2000)
	oldDir, newDir := t.TempDir(), t.TempDir()
	old := writeTexts(t, oldDir, texts[:700], "old%d")
	cur := writeTexts(t, newDir, texts[500:], "new%d")
	run := func(cascade bool) []byte {
		dir := t.TempDir()
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Kept: filepath.Join(dir, "k.jsonl"), TmpDir: dir}
		cfg := Options{Method: "minhash", Cascade: cascade, Workers: 2}
		if _, err := Run(context.Background(), cfg, Input{Files: []string{cur}, Against: []string{old}}, out); err != nil {
			t.Fatal(err)
		}
		o := readOutputs(t, Outputs{Clusters: out.Clusters, Pairs: out.Clusters, Kept: out.Kept})
		return append(o[0], o[2]...)
	}
	if !bytes.Equal(run(true), run(false)) {
		t.Error("with an old corpus the cascade's clusters or kept documents differ from minhash alone")
	}
}

// TestCascadePlan: the memory plan counts the claim table.
func TestCascadePlan(t *testing.T) {
	path := writeTexts(t, t.TempDir(), cascadeCorpus(2000), "d%d")
	plan := func(cascade bool) MemoryPlan {
		return planOf(t, Options{Method: "minhash", Cascade: cascade}, path)
	}
	with, without := plan(true), plan(false)
	if want := without.EstimatedBytes + without.EstimatedDocs*cascadeEntryBytes; with.EstimatedBytes != want || want == without.EstimatedBytes {
		t.Errorf("estimated %d bytes with the cascade, want %d (%d without)", with.EstimatedBytes, want, without.EstimatedBytes)
	}
}
