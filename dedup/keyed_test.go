package dedup

import (
	"context"
	"fmt"
	"github.com/neardup/neardup/sketch"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSpillMatchesInMemoryKeyed: simhash (64 and 128 bits, with and
// without --verify, count and TF-IDF weights) and ksentence spill their
// keys and give the clusters their in-memory finders give; the clusters
// are not trivial.
func TestSpillMatchesInMemoryKeyed(t *testing.T) {
	texts := mhCorpus(t)
	// KSentence needs sentences: a near-duplicate keeps its K longest.
	for i := range texts {
		if i%3 == 2 {
			texts[i] = texts[i-2] + ". A short tail."
		}
	}
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "d%d")
	for _, c := range []struct {
		name string
		cfg  func(*Options)
	}{
		{"simhash-64-k3", func(c *Options) { c.Method, c.Spec.SimHash.Distance = "simhash", 3 }},
		{"simhash-64-k8-verify", func(c *Options) {
			c.Method, c.Spec.SimHash.Distance, c.Verify, c.VerifyThreshold = "simhash", 8, true, 0.5
		}},
		{"simhash-128-k12-tfidf", func(c *Options) {
			c.Method, c.Spec.SimHash.Bits, c.Spec.SimHash.Distance, c.Spec.SimHash.Weights = "simhash", 128, 12, sketch.WeightTFIDF
		}},
		{"ksentence", func(c *Options) { c.Method, c.Spec.KSentence.K = "ksentence", 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			var clusters [2]string
			for k, spill := range []bool{false, true} {
				cfg := Options{}
				c.cfg(&cfg)
				cfg.Spill = spill
				if spill { // small batches; in memory, the default budget
					cfg.Memory = 1 << 20
				}
				out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: t.TempDir()}
				st, err := Run(context.Background(), cfg, Input{Files: []string{in}}, out)
				if err != nil {
					t.Fatal(err)
				}
				if st.Memory.Spill != spill {
					t.Fatalf("spill = %v, want %v", st.Memory.Spill, spill)
				}
				if st.Removed == 0 || st.Kept == st.Documents {
					t.Fatalf("spill=%v: nothing removed (%d kept of %d)", spill, st.Kept, st.Documents)
				}
				if ents, _ := os.ReadDir(out.TmpDir); len(ents) != 0 {
					t.Fatalf("spill left %d temporary files", len(ents))
				}
				b, _ := os.ReadFile(out.Clusters)
				clusters[k] = string(b)
			}
			if clusters[0] != clusters[1] {
				t.Errorf("spilled and in-memory clusters differ (%d lines)", strings.Count(clusters[0], "\n"))
			}
		})
	}
}

// simhashFor returns the simhash method with bits and --verify at 0.5.
func simhashFor(t testing.TB, bits int, verify bool) *simhashMethod {
	cfg := Options{}
	cfg.Method, cfg.Spec.SimHash.Bits, cfg.Verify, cfg.VerifyThreshold = "simhash", bits, verify, 0.5
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return m.(*simhashMethod)
}

// TestSimhashSketchCodec: sketches round-trip; bad bytes are errors.
func TestSimhashSketchCodec(t *testing.T) {
	for _, bits := range []int{64, 128} {
		for _, verify := range []bool{false, true} {
			sm := simhashFor(t, bits, verify)
			sk, _ := sm.NewSketcher()
			x, _ := sk.Sketch(&Doc{Text: []byte("one two three four five six seven")})
			b := sm.AppendSketch(nil, x)
			y, err := sm.DecodeSketch(b)
			if err != nil {
				t.Fatalf("bits %d verify %v: %v", bits, verify, err)
			}
			xs, ys := x.(*simhashSketch), y.(*simhashSketch)
			if xs.fp != ys.fp || fmt.Sprint(xs.set) != fmt.Sprint(ys.set) || (verify && len(ys.set) == 0) {
				t.Fatalf("bits %d verify %v: round trip %v -> %v", bits, verify, xs, ys)
			}
			if _, _, ok := sm.Match(x, y); !ok {
				t.Error("a sketch does not match itself")
			}
			for _, bad := range [][]byte{nil, b[:len(b)-1], append(b, 0), {2}} {
				if _, err := sm.DecodeSketch(bad); err == nil {
					t.Errorf("bits %d verify %v: DecodeSketch(%x) succeeded", bits, verify, bad)
				}
			}
		}
	}
}

// FuzzSimhashDecodeSketch: DecodeSketch never panics and what it accepts
// encodes back to the same bytes.
func FuzzSimhashDecodeSketch(f *testing.F) {
	methods := map[[2]int]*simhashMethod{}
	for _, bits := range []int{64, 128} {
		for v, verify := range []bool{false, true} {
			sm := simhashFor(f, bits, verify)
			methods[[2]int{bits, v}] = sm
			sk, _ := sm.NewSketcher()
			x, _ := sk.Sketch(&Doc{Text: []byte("one two three four five six")})
			f.Add(bits == 128, verify, sm.AppendSketch(nil, x))
		}
	}
	f.Fuzz(func(t *testing.T, wide, verify bool, b []byte) {
		bits, v := 64, 0
		if wide {
			bits = 128
		}
		if verify {
			v = 1
		}
		m := methods[[2]int{bits, v}]
		x, err := m.DecodeSketch(b)
		if err != nil {
			return
		}
		if again := m.AppendSketch(nil, x); string(again) != string(b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}

// fakeIndex finds the texts it was given (a stand-in for package store,
// which the command line's testscript dedup_against_index uses for real).
type fakeIndex map[string]string // text -> indexed id

func (f fakeIndex) NewChecker() (func(string) (string, float64, bool, error), error) {
	return func(text string) (string, float64, bool, error) {
		id, ok := f[text]
		return id, 0.9, ok, nil
	}, nil
}

func (f fakeIndex) MemoryBytes() int64 { return 0 }

// TestAgainstIndex: a document found in an index is removed with its whole
// cluster, which is named after the indexed document, for any number of
// workers; the others are untouched.
func TestAgainstIndex(t *testing.T) {
	texts := []string{
		"alpha beta gamma delta epsilon zeta eta theta",
		"one two three four five six seven eight nine",
		"one two three four five six seven eight ten", // near n1, not in the index
		"unrelated words that stay in the output alone",
	}
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "n%d")
	var want string
	for _, workers := range []int{1, 2, 4} {
		cfg := Options{}
		cfg.Method, cfg.Spec.Threshold, cfg.Spec.Shingle.N, cfg.Workers = "minhash", 0.5, 2, workers
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
		st, err := Run(context.Background(), cfg, Input{Files: []string{in}, AgainstIndexes: []Index{fakeIndex{texts[1]: "old-1"}}}, out)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := os.ReadFile(out.Clusters)
		p, _ := os.ReadFile(out.Pairs)
		got := string(c) + string(p)
		if st.IndexMatches != 1 || st.Kept != 2 || st.Removed != 2 {
			t.Fatalf("workers %d: %d index matches, kept %d, removed %d; want 1, 2, 2\n%s", workers, st.IndexMatches, st.Kept, st.Removed, got)
		}
		for _, line := range []string{`{"id":"n1","cluster":"old-1","kept":false}`, `{"id":"n2","cluster":"old-1","kept":false}`,
			`{"id":"n0","cluster":"n0","kept":true}`, `{"id1":"old-1","id2":"n1","similarity":0.9,"index":true}`} {
			if !strings.Contains(got, line+"\n") {
				t.Errorf("workers %d: no line %s in\n%s", workers, line, got)
			}
		}
		if want == "" {
			want = got
		} else if got != want {
			t.Errorf("workers %d: output differs from 1 worker's", workers)
		}
	}
	if _, err := Run(context.Background(), Options{}, Input{Files: []string{in}, Resume: true, AgainstIndexes: []Index{fakeIndex{}}}, Outputs{}); err == nil {
		t.Error("--resume with an index ran")
	}
}
