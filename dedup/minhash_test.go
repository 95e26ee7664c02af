package dedup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/lsh"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
)

// mhCorpus returns a small real corpus: the 180 KJV and Webster texts of
// minhash/testdata/pairs.tsv (public domain) and, for each, mutants with
// 1 to 6 words replaced, so that exact Jaccard similarities spread over
// [0.3, 1] around the thresholds.
func mhCorpus(t testing.TB) []string {
	f, err := os.Open("../minhash/testdata/pairs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var base []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		a, b, _ := strings.Cut(strings.ToLower(sc.Text()), "\t")
		base = append(base, a, b)
	}
	r := rand.New(rand.NewPCG(21, 22))
	var texts []string
	for _, s := range base {
		texts = append(texts, s)
		words := strings.Fields(s)
		for range 2 {
			w := slices.Clone(words)
			for range 1 + r.IntN(6) {
				w[r.IntN(len(w))] = fmt.Sprintf("w%d", r.IntN(1000))
			}
			texts = append(texts, strings.Join(w, " "))
		}
	}
	return texts
}

func mhConfig(verify bool, threshold float64) Options {
	cfg := Options{}
	cfg.Method, cfg.Verify, cfg.Spec.Threshold = "minhash", verify, threshold
	return cfg
}

// bruteForce returns every pair's exact Jaccard similarity over word
// 5-gram sets (the oracle).
func bruteForce(t testing.TB, texts []string) (sets [][]uint64, sim func(a, b int) float64) {
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		sets = append(sets, sh.AppendSet(nil, s))
	}
	return sets, func(a, b int) float64 { return jaccard.Set(sets[a], sets[b]) }
}

// TestMinhashOracle runs the method with --verify on a small real corpus
// and checks it against brute-force all-pairs exact Jaccard: every pair
// reported is at or above the threshold with its exact similarity, and the
// share of true pairs (J >= t) found in one cluster is at least the
// S-curve's prediction minus 0.02 (union-find only adds to the candidates'
// recall). It also checks candidate-level recall against the S-curve over
// 8 seeds: the observed number of true pairs that share a band is within
// 4 standard deviations (plus 2% for the dependence between pairs of one
// document) of the sum of P(J) over them.
func TestMinhashOracle(t *testing.T) {
	texts := mhCorpus(t)
	sets, sim := bruteForce(t, texts)
	for _, th := range []float64{0.5, 0.8} {
		var truth [][2]int
		predicted := 0.0
		m, err := NewMethod(mhConfig(true, th))
		if err != nil {
			t.Fatal(err)
		}
		params := m.(*minhashMethod).params
		for a := range texts {
			for b := a + 1; b < len(texts); b++ {
				if s := sim(a, b); s >= th {
					truth = append(truth, [2]int{a, b})
					predicted += params.Probability(s)
				}
			}
		}
		predicted /= float64(len(truth))
		_, pairs := runMethod(t, m, texts, nil)
		var got [][2]int
		for _, p := range pairs {
			if want := sim(p.A, p.B); p.Similarity != want || want < th {
				t.Fatalf("t=%v: pair (%d, %d) similarity %v, exact %v", th, p.A, p.B, p.Similarity, want)
			}
			got = append(got, [2]int{p.A, p.B})
		}
		part := partition(len(texts), got)
		found := 0
		for _, p := range truth {
			if part[p[0]] == part[p[1]] {
				found++
			}
		}
		recall := float64(found) / float64(len(truth))
		t.Logf("t=%v %v: %d true pairs, cluster recall %.4f, S-curve predicts %.4f for candidates", th, params, len(truth), recall, predicted)
		if recall < predicted-0.02 {
			t.Errorf("t=%v: cluster recall %.4f below the S-curve's %.4f - 0.02", th, recall, predicted)
		}

		// Candidate-level recall against the S-curve, over several seeds.
		var hits, expect, variance float64
		for seed := uint64(1); seed <= 8; seed++ {
			h, _ := minhash.New(minhash.Options{Family: minhash.OPH, Seed: seed})
			sigs := make([]minhash.Signature, len(sets))
			ix, _ := lsh.New(params, 128, lsh.Options{})
			for i, s := range sets {
				sigs[i] = h.Sign(nil, s)
				ix.Insert(uint32(i), sigs[i])
			}
			var cands []uint32
			for _, p := range truth {
				cands, _ = ix.Query(cands[:0], sigs[p[1]])
				if _, ok := slices.BinarySearch(cands, uint32(p[0])); ok {
					hits++
				}
				q := params.Probability(sim(p[0], p[1]))
				expect += q
				variance += q * (1 - q)
			}
		}
		n := float64(8 * len(truth))
		tol := 4*math.Sqrt(variance) + 0.02*n
		t.Logf("t=%v: candidates %.0f of %.0f true pairs, S-curve expects %.1f (tolerance %.1f)", th, hits, n, expect, tol)
		if math.Abs(hits-expect) > tol {
			t.Errorf("t=%v: %.0f candidates, S-curve expects %.1f ± %.1f", th, hits, expect, tol)
		}
	}
}

// TestMinhashEstimateOnly: with --estimate-only every reported pair has a
// signature estimate at or above the threshold, and most reported pairs
// are true pairs.
func TestMinhashEstimateOnly(t *testing.T) {
	texts := mhCorpus(t)
	_, sim := bruteForce(t, texts)
	cfg := mhConfig(false, 0.8)
	cfg.EstimateOnly = true
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	sketches, pairs := runMethod(t, m, texts, nil)
	truePairs := 0
	for _, p := range pairs {
		e, _ := minhash.Estimate(sketches[p.A].(*minhashSketch).sig, sketches[p.B].(*minhashSketch).sig)
		if p.Similarity != e || e < 0.8 {
			t.Fatalf("pair %+v: estimate %v", p, e)
		}
		if sim(p.A, p.B) >= 0.7 {
			truePairs++
		}
	}
	if len(pairs) == 0 || float64(truePairs) < 0.95*float64(len(pairs)) {
		t.Errorf("%d of %d pairs have exact Jaccard >= 0.7, want 95%%", truePairs, len(pairs))
	}
}

// TestMinhashIdenticalDocuments: thousands of identical documents give one
// pair each (a star, not n²/2 pairs) and one index entry.
func TestMinhashIdenticalDocuments(t *testing.T) {
	for _, verify := range []bool{false, true} {
		const n = 5000
		texts := make([]string, n)
		for i := range texts {
			texts[i] = "and the lord spake unto moses saying"
		}
		texts = append(texts, "something else entirely different from the rest here")
		m, _ := NewMethod(mhConfig(verify, 0.8))
		fd, _ := m.NewFinder()
		defer fd.(io.Closer).Close()
		sk, _ := m.NewSketcher()
		var pairs []Pair
		for i, s := range texts {
			x, err := sk.Sketch(&Doc{Index: i, Text: []byte(s)})
			if err != nil {
				t.Fatal(err)
			}
			if err := fd.Add(i, x, func(p Pair) { pairs = append(pairs, p) }); err != nil {
				t.Fatal(err)
			}
		}
		if len(pairs) != n-1 {
			t.Errorf("verify=%v: %d pairs, want %d", verify, len(pairs), n-1)
		}
		f := fd.(*minhashFinder)
		if got := f.ix.Len(); got != 2 {
			t.Errorf("verify=%v: index holds %d documents, want 2", verify, got)
		}
		// The two entries' documents, in order.
		if f.docOf.Len() != 2 || f.docOf.Get(0) != 0 || f.docOf.Get(1) != n {
			t.Errorf("verify=%v: entries map to documents %d, %d (of %d), want 0, %d", verify, f.docOf.Get(0), f.docOf.Get(1), f.docOf.Len(), n)
		}
		// Signatures only for the entries: one chunk, not one for each
		// 16,384 documents added.
		if want := int64(0); verify && f.sigs.bytes() != want {
			t.Errorf("verify=%v: %d bytes of signatures, want none", verify, f.sigs.bytes())
		} else if !verify && f.sigs.bytes() != sigChunkDocs*int64(f.k+1)*2 {
			t.Errorf("verify=%v: %d bytes of signatures, want one chunk", verify, f.sigs.bytes())
		}
		if err := fd.Flush(func(Pair) {}); err != nil {
			t.Fatal(err)
		}
		if f.MappedBytes() != 0 || f.ix != nil {
			t.Errorf("verify=%v: after Flush, %d bytes still mapped", verify, f.MappedBytes())
		}
	}
}

// TestMinhashFinderMapped: the Finder's index, entry map and signatures
// are mapped outside the Go heap (where the system allows), counted by
// MappedBytes, and unmapped by Flush or Close.
func TestMinhashFinderMapped(t *testing.T) {
	for _, end := range []string{"Flush", "Close"} {
		base := arena.Mapped()
		m, _ := NewMethod(mhConfig(false, 0.8))
		fd, _ := m.NewFinder()
		sk, _ := m.NewSketcher()
		r := rand.New(rand.NewPCG(1, 2))
		for i := range 2000 {
			var b strings.Builder
			for range 30 {
				fmt.Fprintf(&b, "w%d ", r.IntN(5000))
			}
			x, _ := sk.Sketch(&Doc{Index: i, Text: []byte(b.String())})
			if err := fd.Add(i, x, func(Pair) {}); err != nil {
				t.Fatal(err)
			}
		}
		f := fd.(*minhashFinder)
		got := arena.Mapped() - base
		if arena.OffHeap && (got == 0 || got != f.MappedBytes()) {
			t.Errorf("%s: %d bytes mapped, MappedBytes %d", end, got, f.MappedBytes())
		}
		if end == "Flush" {
			if err := fd.Flush(func(Pair) {}); err != nil {
				t.Fatal(err)
			}
		}
		if err := fd.(io.Closer).Close(); err != nil {
			t.Fatal(err)
		}
		if got := arena.Mapped(); got != base {
			t.Errorf("%s: %d bytes mapped at the end, want %d", end, got, base)
		}
	}
}

// TestMinhashEmptyAndNoShingles: documents without shingles are never
// paired, and nil sketches (empty text) are skipped.
func TestMinhashEmptyAndNoShingles(t *testing.T) {
	for _, verify := range []bool{false, true} {
		m, _ := NewMethod(mhConfig(verify, 0.5))
		fd, _ := m.NewFinder()
		defer fd.(io.Closer).Close()
		sk, _ := m.NewSketcher()
		var pairs []Pair
		emit := func(p Pair) { pairs = append(pairs, p) }
		for i, s := range []string{"!!!", "...", "", "a b c d e f", "a b c d e f"} {
			x, _ := sk.Sketch(&Doc{Index: i, Text: []byte(s)})
			if i == 2 {
				x = nil // the pipeline's empty text
			}
			if err := fd.Add(i, x, emit); err != nil {
				t.Fatal(err)
			}
		}
		if len(pairs) != 1 || pairs[0].A != 3 || pairs[0].B != 4 || pairs[0].Similarity != 1 {
			t.Errorf("verify=%v: pairs %+v, want only (3, 4) at 1", verify, pairs)
		}
	}
}

func TestMinhashMethodErrors(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*Options)
		want string
	}{
		{func(c *Options) { c.Spec.Threshold = -0.1 }, "threshold"},
		{func(c *Options) { c.Spec.Threshold = 1.5 }, "threshold"},
		{func(c *Options) { c.Spec.MinHash.NumPerm = -5 }, "permutations"},
		{func(c *Options) { c.Spec.MinHash.Bands, c.Spec.MinHash.Rows = 20, 10 }, "20 bands x 10 rows"},
		{func(c *Options) { c.Spec.MinHash.Bands = 200 }, "200 bands"},
		{func(c *Options) { c.Spec.MinHash.Rows = 129 }, "129 rows"},
		{func(c *Options) { c.Spec.MinHash.Bands = -1 }, "bands"},
	} {
		cfg := mhConfig(false, 0.8)
		tc.mod(&cfg)
		_, err := NewMethod(cfg)
		// The library speaks of its own fields, not of flags.
		var oe *OptionError
		if err == nil || !strings.Contains(err.Error(), tc.want) || !errors.As(err, &oe) || oe.Field != "Spec" || !errors.Is(err, sketch.ErrSpec) {
			t.Errorf("config %+v: error %v, want an OptionError on Spec naming %q", cfg, err, tc.want)
		}
	}
	cfg := mhConfig(false, 0.8)
	cfg.Spec.MinHash.Bands = 16
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d := m.Facts(); d.Bands != 16 || d.Rows != 8 {
		t.Errorf("--bands 16 alone: %v x %v, want 16 x 8", d.Bands, d.Rows)
	}
	m, _ = NewMethod(mhConfig(false, 0.8))
	if d := m.Facts(); d.Bands != 13 || d.Rows != 7 {
		t.Errorf("default banding at 0.8: %v x %v, want 13 x 7", d.Bands, d.Rows)
	}
}

func TestMinhashSketchCodecAndJSON(t *testing.T) {
	for _, verify := range []bool{false, true} {
		m, _ := NewMethod(mhConfig(verify, 0.8))
		mm := m.(*minhashMethod)
		sk, _ := m.NewSketcher()
		for _, s := range []string{"", "!!", "one two three four five six seven"} {
			x, _ := sk.Sketch(&Doc{Text: []byte(s)})
			b := mm.AppendSketch(nil, x)
			y, err := mm.DecodeSketch(b)
			if err != nil {
				t.Fatalf("DecodeSketch(AppendSketch(%q)): %v", s, err)
			}
			xs, ys := x.(*minhashSketch), y.(*minhashSketch)
			if !slices.Equal(xs.sig, ys.sig) || !slices.Equal(xs.set.get(nil), ys.set.get(nil)) {
				t.Fatalf("round trip of %q differs", s)
			}
			var v struct {
				Family  string
				NumPerm int `json:"num_perm"`
				Seed    string
				Slots   []uint32
			}
			if err := json.Unmarshal(x.AppendJSON(nil), &v); err != nil {
				t.Fatalf("AppendJSON = %s: %v", x.AppendJSON(nil), err)
			}
			if v.Family != minhash.OPH.String() || v.NumPerm != 128 || v.Seed != fmt.Sprintf("%#x", minhash.DefaultSeed) || !slices.Equal(v.Slots, []uint32(xs.sig)) {
				t.Errorf("AppendJSON = %s", x.AppendJSON(nil))
			}
		}
		for _, bad := range [][]byte{nil, {2}, {0, 0}, {1, 1, 2, 3}} {
			if _, err := mm.DecodeSketch(bad); err == nil {
				t.Errorf("DecodeSketch(%v) succeeded", bad)
			}
		}
	}
}

// FuzzMinhashDecodeSketch: DecodeSketch never panics and what it accepts
// encodes back to the same bytes.
func FuzzMinhashDecodeSketch(f *testing.F) {
	for _, verify := range []bool{false, true} {
		m, _ := NewMethod(mhConfig(verify, 0.8))
		sk, _ := m.NewSketcher()
		x, _ := sk.Sketch(&Doc{Text: []byte("one two three four five six")})
		f.Add(verify, m.(*minhashMethod).AppendSketch(nil, x))
	}
	mv, _ := NewMethod(mhConfig(true, 0.8))
	mn, _ := NewMethod(mhConfig(false, 0.8))
	f.Fuzz(func(t *testing.T, verify bool, b []byte) {
		m := mn.(*minhashMethod)
		if verify {
			m = mv.(*minhashMethod)
		}
		x, err := m.DecodeSketch(b)
		if err != nil {
			return
		}
		if again := m.AppendSketch(nil, x); string(again) != string(b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}

// TestRunMinhash runs the whole pipeline, in memory and spilled, with
// --verify and with the default tiered join: the same clusters, and every
// pair at or above the threshold.
func TestRunMinhash(t *testing.T) {
	for _, verify := range []bool{true, false} {
		testRunMinhash(t, verify, false)
	}
	testRunMinhash(t, false, true)
}

func testRunMinhash(t *testing.T, verify, estimateOnly bool) {
	texts := append(mhCorpus(t), nearCorpus(20, 6, 0.8, 4)...)
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "d%d")
	var clusters, pairs []string
	for _, run := range []struct {
		spill   bool
		workers int
	}{{false, 1}, {false, 3}, {true, 2}} {
		cfg := mhConfig(verify, 0.8)
		cfg.EstimateOnly = estimateOnly
		cfg.Spill, cfg.Memory, cfg.Workers = run.spill, 1<<20, run.workers
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"), TmpDir: t.TempDir()}
		st, err := Run(context.Background(), cfg, Input{Files: []string{in}}, out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Documents != len(texts) || st.Pairs == 0 {
			t.Fatalf("stats: %d documents, %d pairs", st.Documents, st.Pairs)
		}
		p, _ := os.ReadFile(out.Pairs)
		for _, line := range strings.Split(strings.TrimSpace(string(p)), "\n") {
			var v struct{ Similarity float64 }
			if err := json.Unmarshal([]byte(line), &v); err != nil || v.Similarity < 0.8 {
				t.Fatalf("%+v: pair line %s (err %v)", run, line, err)
			}
		}
		c, _ := os.ReadFile(out.Clusters)
		clusters, pairs = append(clusters, string(c)), append(pairs, string(p))
	}
	if clusters[0] != clusters[1] || pairs[0] != pairs[1] {
		t.Errorf("verify=%v: 1 and 3 workers give different clusters or pairs", verify)
	}
	if clusters[0] != clusters[2] {
		t.Errorf("verify=%v: spilled and in-memory clusters differ", verify)
	}
}

// TestEffectiveSlots: the distinct slot values of a one permutation
// signature, counted by the hash set, equal a sort-and-count; a text of
// few distinct shingles has few; independent families have k.
func TestEffectiveSlots(t *testing.T) {
	h, _ := minhash.New(minhash.Options{Family: minhash.OPH})
	sh, _ := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	for _, text := range []string{"a", "a b c", strings.Repeat("x y ", 500), strings.Repeat("w ", 10) + mhCorpus(t)[0]} {
		sig := h.Sign(nil, sh.AppendSet(nil, text))
		n := effectiveSlots(minhash.OPH, sig)
		sorted := slices.Clone([]uint32(sig))
		slices.Sort(sorted)
		if want := len(slices.Compact(sorted)); n != want {
			t.Errorf("%.20q: %d effective slots, want %d", text, n, want)
		}
		if distinct := len(sh.AppendSet(nil, text)); n > distinct {
			t.Errorf("%.20q: %d effective slots from %d shingles", text, n, distinct)
		}
	}
	if n := effectiveSlots(minhash.OPH, minhash.Signature{0, 0, 5, 5, 7}); n != 3 {
		t.Errorf("slots {0,0,5,5,7}: %d distinct, want 3", n)
	}
	if n := effectiveSlots(minhash.MultiplyShift, minhash.Signature{1, 1, 1}); n != 3 {
		t.Errorf("multiply-shift: %d effective slots, want 3", n)
	}
	sig := make(minhash.Signature, 128)
	for i := range sig {
		sig[i] = uint32(i * 7919)
	}
	if a := testing.AllocsPerRun(100, func() { effectiveSlots(minhash.OPH, sig) }); a != 0 {
		t.Errorf("effectiveSlots allocates %v times a call", a)
	}
}
