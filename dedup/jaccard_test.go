package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// writeNearDupCorpus writes n documents: random word sequences, exact
// copies with other case and spacing, copies with a few words changed, and
// texts without any word (punctuation only).
func writeNearDupCorpus(t *testing.T, n int, seed uint64) (path string, texts []string) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 99))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon")
	for i := range n {
		var txt string
		switch k := r.IntN(10); {
		case i > 0 && k < 2:
			txt = strings.ToUpper(texts[r.IntN(i)]) + "  "
		case i > 0 && k < 6:
			f := strings.Fields(texts[r.IntN(i)])
			for range 1 + r.IntN(2) {
				if len(f) > 0 {
					f[r.IntN(len(f))] = words[r.IntN(len(words))]
				}
			}
			txt = strings.Join(f, " ")
		case k == 6:
			txt = []string{"!!!", "?", "-- --", "..."}[r.IntN(4)]
		default:
			f := make([]string, 6+r.IntN(20))
			for w := range f {
				f[w] = words[r.IntN(len(words))]
			}
			txt = strings.Join(f, " ")
		}
		texts = append(texts, txt)
	}
	return writeTexts(t, t.TempDir(), texts, "d%05d"), texts
}

// oraclePairs normalises and shingles texts as cfg says and compares every
// pair with jaccard.Set: the brute-force reference. Documents without a
// shingle are never duplicates.
func oraclePairs(t *testing.T, cfg Options, texts []string) map[[2]string]float64 {
	t.Helper()
	norm, err := text.New(text.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	sh, err := shingle.New(cfg.Spec.Shingle)
	if err != nil {
		t.Fatal(err)
	}
	sets := make([][]uint64, len(texts))
	for i, s := range texts {
		sets[i] = sh.AppendSet(nil, string(norm.Append(nil, s)))
	}
	want := map[[2]string]float64{}
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			if len(sets[i]) == 0 || len(sets[j]) == 0 {
				continue
			}
			if s := jaccard.Set(sets[i], sets[j]); s >= cfg.Spec.Threshold {
				want[[2]string{fmt.Sprintf("d%05d", i), fmt.Sprintf("d%05d", j)}] = s
			}
		}
	}
	return want
}

func readPairs(t *testing.T, path string) map[[2]string]float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]string]float64{}
	for l := range strings.Lines(string(b)) {
		var p struct {
			ID1, ID2   string
			Similarity float64
			Distance   *int
		}
		if err := json.Unmarshal([]byte(l), &p); err != nil {
			t.Fatalf("pairs line %q: %v", l, err)
		}
		if p.Distance != nil {
			t.Errorf("pairs line %q has a distance", l)
		}
		k := [2]string{p.ID1, p.ID2}
		if _, dup := got[k]; dup {
			t.Errorf("pair %v written twice", k)
		}
		got[k] = p.Similarity
	}
	return got
}

func TestRunJaccardMatchesBruteForce(t *testing.T) {
	for _, tc := range []struct {
		unit shingle.Unit
		n    int
		t    float64
	}{
		{shingle.Word, 1, 0.5},
		{shingle.Word, 2, 0.7},
		{shingle.Word, 3, 0.8},
		{shingle.Char, 4, 0.6},
		{shingle.Word, 2, 1},
	} {
		path, texts := writeNearDupCorpus(t, 600, uint64(tc.n)*10+uint64(tc.unit))
		cfg := Options{}
		cfg.Method, cfg.Spec.Threshold, cfg.AllPairs = "jaccard", tc.t, true
		cfg.Spec.Shingle = shingle.Options{Unit: tc.unit, N: tc.n}
		want := oraclePairs(t, cfg, texts)
		if len(want) == 0 {
			t.Fatalf("%v-%d t=%v: the corpus has no pairs; the test would prove nothing", tc.unit, tc.n, tc.t)
		}
		var ref []byte
		for _, workers := range []int{1, 2} {
			cfg.Workers = workers
			dir := t.TempDir()
			out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
			st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
			if err != nil {
				t.Fatal(err)
			}
			got := readPairs(t, out.Pairs)
			name := fmt.Sprintf("%v-%d t=%v workers=%d", tc.unit, tc.n, tc.t, workers)
			if len(got) != len(want) || st.Pairs != len(want) {
				t.Errorf("%s: %d pairs (stats %d), want %d", name, len(got), st.Pairs, len(want))
			}
			for k, s := range want {
				g, ok := got[k]
				switch {
				case !ok:
					t.Errorf("%s: missing pair %v (J=%v)", name, k, s)
				case math.Abs(g-s) > 1e-6:
					t.Errorf("%s: pair %v similarity %v, want %v", name, k, g, s)
				}
			}
			for k := range got {
				if _, ok := want[k]; !ok {
					t.Errorf("%s: extra pair %v", name, k)
				}
			}
			all, _ := os.ReadFile(out.Pairs)
			c, _ := os.ReadFile(out.Clusters)
			all = append(all, c...)
			if ref == nil {
				ref = all
			} else if !bytes.Equal(ref, all) {
				t.Errorf("%s: outputs differ from workers=1", name)
			}
		}
		// --pairs-mode spanning (the default): a spanning forest of the
		// same clusters, one pair per removed document.
		cfg.AllPairs = false
		dir := t.TempDir()
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := os.ReadFile(out.Clusters)
		if got := readPairs(t, out.Pairs); len(got) != st.Removed || st.Pairs != st.Removed || !bytes.HasSuffix(ref, c) {
			t.Errorf("%v-%d t=%v spanning: %d pairs (stats %d), want %d (one per removed document), same clusters %v",
				tc.unit, tc.n, tc.t, len(got), st.Pairs, st.Removed, bytes.HasSuffix(ref, c))
		}
	}
}

func TestJaccardSketchJSON(t *testing.T) {
	cfg := Options{}
	cfg.Method = "jaccard"
	cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 1}
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := m.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	buf := []byte("a rose is a rose")
	s, err := sk.Sketch(&Doc{Text: buf})
	if err != nil {
		t.Fatal(err)
	}
	copy(buf, "XXXXXXXXXXXXXXXX") // the sketch must not keep the text
	var hexes []string
	if err := json.Unmarshal(s.AppendJSON(nil), &hexes); err != nil {
		t.Fatalf("AppendJSON = %s: %v", s.AppendJSON(nil), err)
	}
	sh, _ := shingle.New(cfg.Spec.Shingle)
	want := sh.AppendSet(nil, "a rose is a rose")
	if len(hexes) != len(want) || len(want) != 3 {
		t.Fatalf("sketch %v, want %d hashes", hexes, len(want))
	}
	for i, h := range want {
		if w := fmt.Sprintf("%016x", h); hexes[i] != w {
			t.Errorf("hash %d = %s, want %s", i, hexes[i], w)
		}
	}
	if got := string(shingleSet(nil).AppendJSON(nil)); got != "[]" {
		t.Errorf("empty set JSON = %s, want []", got)
	}
}

func TestJaccardMethodErrors(t *testing.T) {
	cfg := Options{}
	cfg.Method = "jaccard"
	cfg.Spec.Shingle.N = shingle.MaxN + 1
	if _, err := NewMethod(cfg); err == nil {
		t.Error("NewMethod accepted an n-gram size above MaxN")
	}
	cfg = Options{}
	cfg.Method, cfg.Spec.Threshold = "jaccard", 1.5
	if _, err := NewMethod(cfg); err == nil {
		t.Error("NewMethod accepted threshold 1.5")
	}
	cfg.Spec.Threshold = 0.8
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := m.NewFinder()
	if err := f.Add(0, contentID{}, func(Pair) {}); err == nil {
		t.Error("Add accepted a sketch of another method")
	}
}
