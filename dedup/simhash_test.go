package dedup

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// fpTexts returns n texts: random word sequences, exact copies, and copies
// with one or two words changed, so that SimHash distances from 0 up occur.
func fpTexts(n int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 7))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	var texts []string
	for i := range n {
		switch k := r.IntN(10); {
		case i > 0 && k < 2:
			texts = append(texts, texts[r.IntN(i)])
		case i > 0 && k < 5:
			f := strings.Fields(texts[r.IntN(i)])
			for range 1 + r.IntN(2) {
				f[r.IntN(len(f))] = words[r.IntN(len(words))]
			}
			texts = append(texts, strings.Join(f, " "))
		default:
			f := make([]string, 20+r.IntN(40))
			for w := range f {
				f[w] = words[r.IntN(len(words))]
			}
			texts = append(texts, strings.Join(f, " "))
		}
	}
	return texts
}

// runMethod sketches texts with m (the text is used as the normalised text)
// and feeds the sketches to its Finder, returning the sketches and pairs;
// documents dropped by a DropFinder come as pairs with A = -1.
func runMethod(t *testing.T, m Method, texts []string, keys []string) ([]DocSketch, []Pair) {
	t.Helper()
	sk, err := m.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := m.NewFinder()
	if err != nil {
		t.Fatal(err)
	}
	if c, ok := fd.(io.Closer); ok { // the minhash Finder's scratch file
		defer c.Close()
	}
	var pairs []Pair
	emit := func(p Pair) { pairs = append(pairs, p) }
	var sketches []DocSketch
	for i, s := range texts {
		d := Doc{Index: i, ID: fmt.Sprint(i), Text: []byte(s)}
		if keys != nil {
			d.Key = keys[i]
		}
		x, err := sk.Sketch(&d)
		if err != nil {
			t.Fatal(err)
		}
		clear(d.Text) // the pipeline reuses the buffer: a sketch must not keep it
		sketches = append(sketches, x)
		if df, ok := fd.(DropFinder); ok {
			err = df.AddDrop(i, x, emit, func(j int, sim float64) {
				pairs = append(pairs, Pair{A: -1, B: j, Similarity: sim, Distance: -1})
			})
		} else {
			err = fd.Add(i, x, emit)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := fd.Flush(emit); err != nil {
		t.Fatal(err)
	}
	for _, p := range pairs {
		if p.A >= p.B && p.A != -1 {
			t.Fatalf("pair %+v: A >= B", p)
		}
	}
	return sketches, pairs
}

// partition returns, for each document, the smallest index of its cluster.
func partition(n int, pairs [][2]int) []int {
	uf := cluster.NewUnionFind(n)
	for _, p := range pairs {
		uf.Union(p[0], p[1])
	}
	minOf := map[int]int{}
	for i := range n {
		r := uf.Find(i)
		if m, ok := minOf[r]; !ok || i < m {
			minOf[r] = i
		}
	}
	out := make([]int, n)
	for i := range out {
		out[i] = minOf[uf.Find(i)]
	}
	return out
}

// TestSimhashMatchesLinearScan checks the simhash method's clusters against
// a linear Hamming scan over fingerprints computed independently, for
// several bit sizes, distances and shingle settings, with and without
// --verify.
func TestSimhashMatchesLinearScan(t *testing.T) {
	for _, c := range []struct {
		bits, k int
		unit    shingle.Unit
		n       int
		verify  bool
	}{
		{64, 3, shingle.Word, 1, false},
		{64, 6, shingle.Word, 2, false},
		{64, 8, shingle.Word, 1, false},
		{128, 10, shingle.Word, 2, false},
		{64, 0, shingle.Char, 3, false},
		{64, 8, shingle.Word, 1, true},
		// Any size from 1 to 128 bits (sketch.SimHashSpec).
		{32, 3, shingle.Word, 1, false},
		{100, 8, shingle.Word, 2, false},
	} {
		name := fmt.Sprintf("bits=%d/k=%d/%v-%d/verify=%v", c.bits, c.k, c.unit, c.n, c.verify)
		texts := fpTexts(700, uint64(c.bits+c.k))
		cfg := Options{}
		cfg.Method, cfg.Spec.SimHash.Bits, cfg.Spec.SimHash.Distance, cfg.Verify, cfg.VerifyThreshold = "simhash", c.bits, hamming(c.k), c.verify, 0.7
		cfg.Spec.Shingle = shingle.Options{Unit: c.unit, N: c.n}
		m, err := NewMethod(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, pairs := runMethod(t, m, texts, nil)
		if d := m.Facts().Design; d == "" || !strings.Contains(d, fmt.Sprintf("k=%d", c.k)) {
			t.Errorf("%s: Describe after the run has design %q, want the design chosen at Flush", name, d)
		}

		// The oracle: fingerprints by the library (the default weights,
		// set: every distinct shingle once), all pairs by a scan.
		sh, _ := shingle.New(cfg.Spec.Shingle)
		h, _ := simhash.New(simhash.Options{Bits: c.bits})
		fps := make([]simhash.Fingerprint, len(texts))
		sets := make([][]uint64, len(texts))
		for i, s := range texts {
			sets[i] = sh.AppendSet(nil, s)
			fps[i] = h.Hash(sets[i])
		}
		var want [][2]int
		for i := range fps {
			for j := i + 1; j < len(fps); j++ {
				if fps[i].Distance(fps[j]) <= c.k && (!c.verify || jaccard.Set(sets[i], sets[j]) >= cfg.VerifyThreshold) {
					want = append(want, [2]int{i, j})
				}
			}
		}
		if len(want) < 50 {
			t.Fatalf("%s: only %d pairs in the oracle: the test would prove little", name, len(want))
		}
		var got [][2]int
		for _, p := range pairs {
			d := fps[p.A].Distance(fps[p.B])
			if d != p.Distance || d > c.k {
				t.Fatalf("%s: pair %+v: real distance %d", name, p, d)
			}
			if c.verify && p.Similarity < cfg.VerifyThreshold {
				t.Fatalf("%s: verified pair %+v below the threshold", name, p)
			}
			got = append(got, [2]int{p.A, p.B})
		}
		if g, w := partition(len(texts), got), partition(len(texts), want); !slices.Equal(g, w) {
			t.Errorf("%s: clusters differ from the linear scan's (%d pairs emitted, %d in the scan)", name, len(got), len(want))
		}
		if len(got) > len(texts) {
			t.Errorf("%s: %d pairs emitted for %d documents: the union-find should keep them below n", name, len(got), len(texts))
		}
	}
}

func TestSimhashSketchJSON(t *testing.T) {
	for _, bits := range []int{64, 128} {
		cfg := Options{}
		cfg.Method, cfg.Spec.SimHash.Bits = "simhash", bits
		m, err := NewMethod(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := runMethod(t, m, []string{"one two three four five six seven", "!!!"}, nil)
		var s string
		if err := json.Unmarshal(sk[0].AppendJSON(nil), &s); err != nil || len(s) != bits/4 {
			t.Fatalf("bits=%d: sketch JSON %s: %v, want %d hex digits", bits, sk[0].AppendJSON(nil), err, bits/4)
		}
		if _, n, err := simhash.ParseHex(s); err != nil || n != bits {
			t.Errorf("sketch %q does not parse back: %v", s, err)
		}
		if sk[1] != nil {
			t.Errorf("a text without words has sketch %v, want nil", sk[1])
		}
	}
}

func TestSimhashTFIDF(t *testing.T) {
	cfg := Options{}
	cfg.Method, cfg.Spec.SimHash.Weights = "simhash", sketch.WeightTFIDF
	cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 1}
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	pp, ok := m.(PrePass)
	if !ok || !pp.NeedsPrePass() {
		t.Fatal("simhash --weights tfidf does not ask for a pre-pass")
	}
	if _, err := m.NewSketcher(); err == nil {
		t.Fatal("NewSketcher succeeded before the pre-pass")
	}
	texts := fpTexts(300, 5)
	var learners []Learner
	for w := range 2 {
		l, err := pp.NewLearner()
		if err != nil {
			t.Fatal(err)
		}
		for i := w; i < len(texts); i += 2 {
			if err := l.Learn(&Doc{Index: i, Text: []byte(texts[i])}); err != nil {
				t.Fatal(err)
			}
		}
		learners = append(learners, l)
	}
	if err := pp.FinishPrePass(learners); err != nil {
		t.Fatal(err)
	}
	if pp.NeedsPrePass() {
		t.Error("NeedsPrePass still true after FinishPrePass")
	}
	if m.(interface{ IDF() *simhash.IDF }).IDF() == nil {
		t.Error("IDF() is nil after the pre-pass")
	}
	if d := m.Facts(); d.IDFDocs != int64(len(texts)) {
		t.Errorf("facts: idf_docs = %v, want %d", d.IDFDocs, len(texts))
	}
	sk, pairs := runMethod(t, m, texts, nil)
	// The oracle: the same IDF learned by the library, by hand.
	sh, _ := shingle.New(cfg.Spec.Shingle)
	var b simhash.IDFBuilder
	for _, s := range texts {
		b.AddDoc(sh.AppendHashes(nil, s))
	}
	idf := b.IDF("")
	h, _ := simhash.New(simhash.Options{})
	for i, s := range texts {
		h.Reset()
		h.AddIDF(sh.AppendHashes(nil, s), idf)
		want := string(h.Sum().AppendHex([]byte{'"'}, 64)) + `"`
		if got := string(sk[i].AppendJSON(nil)); got != want {
			t.Fatalf("doc %d: tfidf fingerprint %s, want %s", i, got, want)
		}
	}
	if len(pairs) == 0 {
		t.Error("tfidf found no pairs in a corpus with copies")
	}
	// A table learned over other shingles is refused.
	setter := m.(interface{ SetIDF(*simhash.IDF) error })
	if err := setter.SetIDF(b.IDF("unit=char ngram=3 seed=0")); err == nil {
		t.Error("SetIDF accepted a table built for other shingles")
	}
}

func TestSimhashMethodErrors(t *testing.T) {
	for _, c := range []struct {
		bits, distance int
		weights        string
	}{{129, 3, "count"}, {64, 64, "count"}, {64, 70, "count"}, {128, 128, "count"}, {64, -2, "count"}, {64, 3, "bm25"}} {
		cfg := Options{}
		cfg.Method, cfg.Spec.SimHash.Bits, cfg.Spec.SimHash.Distance = "simhash", c.bits, c.distance
		if w, err := sketch.ParseWeighting(c.weights); err == nil {
			cfg.Spec.SimHash.Weights = w
		} else {
			cfg.Spec.SimHash.Weights = 200 // not a weighting
		}
		if _, err := NewMethod(cfg); err == nil {
			t.Errorf("bits=%d distance=%d weights=%s accepted", c.bits, c.distance, c.weights)
		}
	}
}

// TestRunSimhash runs the method end to end through the pipeline: every
// document gets a cluster line, pairs carry their distance.
func TestRunSimhash(t *testing.T) {
	texts := fpTexts(400, 11)
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "d%d")
	cfg := Options{}
	cfg.Method, cfg.Spec.SimHash.Distance = "simhash", 4
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
	st, err := Run(context.Background(), cfg, Input{Files: []string{in}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Documents != len(texts) || st.Pairs == 0 || st.Kept >= len(texts) {
		t.Errorf("stats: %d documents, %d pairs, %d kept", st.Documents, st.Pairs, st.Kept)
	}
	f, _ := os.Open(out.Pairs)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var p struct {
			ID1, ID2   string
			Similarity float64
			Distance   *int
		}
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil || p.Distance == nil || *p.Distance > 4 {
			t.Fatalf("pairs line %s: %v; want a distance of at most 4", sc.Bytes(), err)
		}
	}
	c, _ := os.ReadFile(out.Clusters)
	if n := strings.Count(string(c), "\n"); n != len(texts) {
		t.Errorf("%d cluster lines, want %d", n, len(texts))
	}
}

var _ = errors.Is

// TestSimhashWeightsRepetitive: number tables that are mostly one repeated
// token and share no other shingle get near-identical fingerprints with
// count weights (the repeated shingle dominates every bit), and far apart
// ones with set or sublinear weights, which still keep a table and its
// one-number edit close.
func TestSimhashWeightsRepetitive(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	table := func() []string {
		w := make([]string, 100)
		for i := range w {
			w[i] = "0"
			if r.IntN(10) == 0 {
				w[i] = fmt.Sprint(1 + r.IntN(999))
			}
		}
		return w
	}
	a, b := table(), table()
	edit := slices.Clone(a)
	edit[50] = "7777"
	dist := func(weights string, x, y []string) int {
		cfg := Options{}
		cfg.Method, cfg.Spec.SimHash.Weights = "simhash", weighting(weights)
		m, err := NewMethod(cfg)
		if err != nil {
			t.Fatal(err)
		}
		sk, _ := m.NewSketcher()
		fx, _ := sk.Sketch(&Doc{Text: []byte(strings.Join(x, " "))})
		fy, _ := sk.Sketch(&Doc{Text: []byte(strings.Join(y, " "))})
		return fx.(*simhashSketch).fp.Distance(fy.(*simhashSketch).fp)
	}
	if d := dist("count", a, b); d > 8 {
		t.Fatalf("count weights: unrelated tables at distance %d; the fixture no longer shows the problem", d)
	}
	for _, w := range []string{"set", "sublinear"} {
		if d := dist(w, a, b); d < 12 {
			t.Errorf("%s weights: unrelated tables at distance %d, want >= 12", w, d)
		}
		if d := dist(w, a, edit); d > 12 {
			t.Errorf("%s weights: a table and its one-number edit at distance %d, want <= 12", w, d)
		}
	}
}

// TestSimhashPairsMeasure: simhash pairs lines say their similarity is
// the Hamming one ("measure":"hamming"), in memory and spilled, and not
// with --verify (then it is the exact Jaccard).
func TestSimhashPairsMeasure(t *testing.T) {
	dir := t.TempDir()
	in := writeTexts(t, dir, []string{"the cat sat on the mat today", "the cat sat on the mat today", "something else"}, "d%d")
	for _, spill := range []bool{false, true} {
		for _, verify := range []bool{false, true} {
			cfg := Options{}
			cfg.Method, cfg.Spill, cfg.Verify, cfg.VerifyThreshold = "simhash", spill, verify, 0.5
			out := Outputs{Pairs: filepath.Join(dir, "p.jsonl"), TmpDir: dir}
			if _, err := Run(context.Background(), cfg, Input{Files: []string{in}}, out); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(out.Pairs)
			if got := strings.Contains(string(b), `"measure":"hamming"`); got == verify || !strings.Contains(string(b), `"id1":"d0"`) {
				t.Errorf("spill=%v verify=%v: pairs %s", spill, verify, b)
			}
		}
	}
}

// TestSimhashLegacyIDFMeta: an IDF table saved before package sketch
// names the default shingle seed "seed=0"; it is read as the table of the
// same shingles, and one of other shingles is still refused.
func TestSimhashLegacyIDFMeta(t *testing.T) {
	dir := t.TempDir()
	var b simhash.IDFBuilder
	b.AddDoc([]uint64{1, 2, 3})
	for _, tc := range []struct {
		meta string
		ok   bool
	}{{"unit=word ngram=5 seed=0", true}, {"unit=word ngram=3 seed=0", false}} {
		path := filepath.Join(dir, "t.idf")
		if err := b.IDF(tc.meta).Save(path); err != nil {
			t.Fatal(err)
		}
		cfg := Options{Method: "simhash", IDFFile: path, Spec: sketch.Spec{SimHash: sketch.SimHashSpec{Weights: sketch.WeightTFIDF}}}
		_, err := NewMethod(cfg)
		if (err == nil) != tc.ok {
			t.Errorf("table %q: error %v, want ok=%v", tc.meta, err, tc.ok)
		}
	}
}

// TestSimhashSpillCore: the spill path's sketch is the fingerprint alone
// (8 or 16 bytes), decoded into the memory it is given, and the set comes
// apart under --verify only; matchCore agrees with Match, leaving to
// matchSets the pairs within the distance under --verify; a wrong length
// is an error.
func TestSimhashSpillCore(t *testing.T) {
	texts := fpTexts(40, 3)
	for _, tc := range []struct {
		bits, size int
		verify     bool
	}{{64, 8, false}, {64, 8, true}, {128, 16, true}} {
		t.Run(fmt.Sprintf("%d bits verify %v", tc.bits, tc.verify), func(t *testing.T) {
			cfg := Options{Method: "simhash", Verify: tc.verify}
			cfg.Spec.SimHash.Bits, cfg.Spec.SimHash.Distance = tc.bits, tc.bits/8
			cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 1}
			m, err := NewMethod(cfg)
			if err != nil {
				t.Fatal(err)
			}
			sm := m.(*simhashMethod)
			sk, _ := m.NewSketcher()
			var in, out []DocSketch
			reuse := &simhashSketch{}
			for _, text := range texts {
				x, err := sk.Sketch(&Doc{Text: []byte(text)})
				if err != nil || x == nil {
					t.Fatalf("sketch of %q: %v", text, err)
				}
				b, set := sm.appendCore(nil, x)
				if len(b) != tc.size || (len(set) > 0) != tc.verify {
					t.Fatalf("core of %d bytes, set of %d", len(b), len(set))
				}
				y, err := sm.decodeCore(b, reuse)
				if err != nil {
					t.Fatal(err)
				}
				if y != DocSketch(reuse) || reuse.fp != x.(*simhashSketch).fp {
					t.Fatalf("decoded %v into new memory or wrongly, want %v", reuse.fp, x.(*simhashSketch).fp)
				}
				in, out = append(in, x), append(out, &simhashSketch{bits: tc.bits, fp: reuse.fp})
				if _, err := sm.decodeCore(b[:len(b)-1], nil); err == nil {
					t.Error("a truncated spilled sketch was accepted")
				}
			}
			for a := range in {
				for b := range a {
					sim, dist, ok := sm.Match(in[a], in[b])
					csim, cdist, cok, sure := sm.matchCore(out[a], out[b])
					if !sure {
						if !tc.verify || dist > sm.distance {
							t.Fatalf("matchCore(%d, %d) unsure at distance %d", a, b, dist)
						}
						csim, cok = sm.matchSets(in[a].(*simhashSketch).set, in[b].(*simhashSketch).set)
					}
					if csim != sim || cdist != dist || cok != ok {
						t.Errorf("split match (%d, %d) = %v %d %v, Match %v %d %v", a, b, csim, cdist, cok, sim, dist, ok)
					}
				}
			}
		})
	}
}
