package jaccard

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/shingle"
)

type pair struct {
	i, j int
	sim  float64
}

func cmpPair(a, b pair) int {
	if c := cmp.Compare(a.i, b.i); c != 0 {
		return c
	}
	return cmp.Compare(a.j, b.j)
}

// bruteForce is the oracle: every pair, compared with Set.
func bruteForce(sets [][]uint64, t float64) []pair {
	var out []pair
	for i := range sets {
		for j := i + 1; j < len(sets); j++ {
			if s := Set(sets[i], sets[j]); s >= t {
				out = append(out, pair{i, j, s})
			}
		}
	}
	return out
}

func joinPairs(tb testing.TB, sets [][]uint64, t float64) ([]pair, JoinStats) {
	tb.Helper()
	var out []pair
	st, err := JoinWithStats(sets, t, func(i, j int, sim float64) {
		out = append(out, pair{i, j, sim})
	})
	if err != nil {
		tb.Fatalf("Join(t=%v): %v", t, err)
	}
	slices.SortFunc(out, cmpPair)
	return out, st
}

// oracle caches the brute-force pairs of one collection at its lowest
// threshold; higher thresholds filter them.
type oracle struct {
	sets  [][]uint64
	min   float64
	pairs []pair
}

func newOracle(sets [][]uint64, min float64) *oracle {
	return &oracle{sets, min, bruteForce(sets, min)}
}

func (o *oracle) at(t float64) []pair {
	if t < o.min {
		panic("oracle: threshold below its minimum")
	}
	var out []pair
	for _, p := range o.pairs {
		if p.sim >= t {
			out = append(out, p)
		}
	}
	return out
}

// checkJoin compares Join with the brute-force oracle.
func checkJoin(t *testing.T, name string, o *oracle, th float64) {
	t.Helper()
	sets := o.sets
	got, st := joinPairs(t, sets, th)
	want := o.at(th)
	for k := 1; k < len(got); k++ {
		if got[k].i == got[k-1].i && got[k].j == got[k-1].j {
			t.Fatalf("%s t=%v: pair (%d,%d) reported twice", name, th, got[k].i, got[k].j)
		}
	}
	if !slices.Equal(got, want) {
		gi, wi := 0, 0
		var diffs []string
		for (gi < len(got) || wi < len(want)) && len(diffs) < 5 {
			switch {
			case wi == len(want) || gi < len(got) && cmpPair(got[gi], want[wi]) < 0:
				diffs = append(diffs, fmt.Sprintf("extra %v", got[gi]))
				gi++
			case gi == len(got) || cmpPair(got[gi], want[wi]) > 0:
				w := want[wi]
				diffs = append(diffs, fmt.Sprintf("missing %v (sizes %d, %d, overlap %d)",
					w, len(sets[w.i]), len(sets[w.j]), Intersection(sets[w.i], sets[w.j])))
				wi++
			default:
				if got[gi] != want[wi] {
					diffs = append(diffs, fmt.Sprintf("got %v, want %v", got[gi], want[wi]))
				}
				gi++
				wi++
			}
		}
		t.Fatalf("%s t=%v: Join gave %d pairs, brute force %d; first differences: %s",
			name, th, len(got), len(want), strings.Join(diffs, "; "))
	}
	if st.Pairs != int64(len(want)) || st.Sets != len(sets) {
		t.Errorf("%s t=%v: stats %+v, want Pairs=%d Sets=%d", name, th, st, len(want), len(sets))
	}
}

// randomSets makes n sets of sizes 0..maxSize over a Zipf-like vocabulary,
// with exact duplicates and mutated copies of earlier sets so that every
// threshold has answers.
func randomSets(r *rand.Rand, n, maxSize, vocab int) [][]uint64 {
	zipf := rand.NewZipf(r, 1.1, 2, uint64(vocab-1))
	hash := func(v uint64) uint64 { return v*0x9e3779b97f4a7c15 + 1 } // spread over uint64
	sets := make([][]uint64, n)
	for i := range sets {
		var s []uint64
		switch k := r.IntN(10); {
		case i > 0 && k < 2: // exact duplicate
			s = slices.Clone(sets[r.IntN(i)])
		case i > 0 && k < 6: // mutated copy: drop and add a few
			src := sets[r.IntN(i)]
			for _, h := range src {
				if r.IntN(10) > 0 {
					s = append(s, h)
				}
			}
			for range r.IntN(4) {
				s = append(s, hash(zipf.Uint64()))
			}
		default:
			size := r.IntN(maxSize + 1)
			if r.IntN(4) == 0 {
				size = r.IntN(5) // many small sets, the hard cases for rounding
			}
			for range size {
				s = append(s, hash(zipf.Uint64()))
			}
		}
		slices.Sort(s)
		s = slices.Compact(s)
		if len(s) > maxSize {
			s = s[:maxSize]
		}
		sets[i] = s
	}
	return sets
}

func TestJoinRandomAgainstBruteForce(t *testing.T) {
	thresholds := []float64{0.3, 0.4, 0.5, 0.6, 2.0 / 3, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1}
	for seed := uint64(1); seed <= 8; seed++ {
		r := rand.New(rand.NewPCG(seed, 42))
		n := 50 + r.IntN(200)
		vocab := []int{50, 500, 5000}[seed%3]
		sets := randomSets(r, n, 200, vocab)
		o := newOracle(sets, 0.3)
		for _, th := range thresholds {
			checkJoin(t, fmt.Sprintf("seed %d n=%d vocab=%d", seed, n, vocab), o, th)
		}
		// And a few arbitrary thresholds, including ones that are not
		// exactly representable and ones equal to attainable ratios.
		for range 4 {
			th := 0.3 + 0.7*r.Float64()
			checkJoin(t, fmt.Sprintf("seed %d", seed), o, th)
		}
		for _, th := range []float64{3.0 / 7, 4.0 / 9, 5.0 / 6, 7.0 / 10, 1.0 / 3} {
			checkJoin(t, fmt.Sprintf("seed %d ratio", seed), o, th)
		}
	}
}

// TestJoinRatioThresholds puts the threshold exactly on ratios o/u that
// small sets attain, where an unlucky rounding of a filter would lose a
// pair.
func TestJoinRatioThresholds(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 7))
	or := newOracle(randomSets(r, 300, 12, 30), 0.3)
	seen := map[float64]bool{}
	for u := 1; u <= 24; u++ {
		for o := 1; o <= u; o++ {
			th := float64(o) / float64(u)
			if th < 0.3 || seen[th] {
				continue
			}
			seen[th] = true
			checkJoin(t, "ratio", or, th)
		}
	}
}

func TestJoinEdgeCases(t *testing.T) {
	e := []uint64{}
	tests := []struct {
		name string
		sets [][]uint64
		t    float64
		want []pair
	}{
		{"none", nil, 0.5, nil},
		{"one", [][]uint64{{1, 2}}, 0.5, nil},
		{"empties", [][]uint64{e, {1}, nil, e}, 0.9, []pair{{0, 2, 1}, {0, 3, 1}, {2, 3, 1}}},
		{"empty and non-empty", [][]uint64{{}, {5}}, 0.3, nil},
		{"identical singletons", [][]uint64{{5}, {5}, {6}}, 1, []pair{{0, 1, 1}}},
		{"t=1 needs equality", [][]uint64{{1, 2, 3}, {1, 2}, {1, 2, 3}}, 1, []pair{{0, 2, 1}}},
		{"seed 003 n=3", [][]uint64{{1, 2, 3}, {1, 2, 4, 5, 6, 7}}, 3.0 / 7, nil},
		{"exact ratio", [][]uint64{{1, 2, 3, 4}, {1, 2, 3, 5}}, 0.6, []pair{{0, 1, 0.6}}},
		{"just below", [][]uint64{{1, 2, 3, 4}, {1, 2, 3, 5}}, 0.6000001, nil},
		{"subset", [][]uint64{{1, 2, 3, 4, 5}, {2, 3, 4, 5}}, 0.8, []pair{{0, 1, 0.8}}},
		{"extreme hashes", [][]uint64{{0, math.MaxUint64}, {0, math.MaxUint64}}, 0.5, []pair{{0, 1, 1}}},
	}
	for _, tt := range tests {
		got, _ := joinPairs(t, tt.sets, tt.t)
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: Join = %v, want %v", tt.name, got, tt.want)
		}
		if bf := bruteForce(tt.sets, tt.t); !slices.Equal(bf, tt.want) {
			t.Errorf("%s: brute force = %v, want %v (bad test case)", tt.name, bf, tt.want)
		}
	}
}

func TestJoinErrors(t *testing.T) {
	called := false
	emit := func(int, int, float64) { called = true }
	for _, th := range []float64{0, -0.5, 1.0000001, math.NaN(), math.Inf(1)} {
		if err := Join([][]uint64{{1}, {1}}, th, emit); !errors.Is(err, ErrThreshold) {
			t.Errorf("Join(t=%v) error = %v, want ErrThreshold", th, err)
		}
	}
	for _, sets := range [][][]uint64{
		{{1, 2}, {3, 2}},
		{{1, 1}, {1}},
		{{}, {}, {5, 9, 7}},
	} {
		err := Join(sets, 0.5, emit)
		if !errors.Is(err, ErrUnsorted) {
			t.Errorf("Join(%v) error = %v, want ErrUnsorted", sets, err)
		}
	}
	if called {
		t.Error("emit was called on invalid input")
	}
}

func TestJoinDoesNotModifyInput(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	sets := randomSets(r, 200, 50, 300)
	orig := make([][]uint64, len(sets))
	for i, s := range sets {
		orig[i] = slices.Clone(s)
	}
	if err := Join(sets, 0.5, func(int, int, float64) {}); err != nil {
		t.Fatal(err)
	}
	for i := range sets {
		if !slices.Equal(sets[i], orig[i]) {
			t.Fatalf("set %d modified: %v, was %v", i, sets[i], orig[i])
		}
	}
}

// TestJoinDeterministic checks that two runs emit the same sequence.
func TestJoinDeterministic(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	sets := randomSets(r, 300, 80, 400)
	var a, b []pair
	if err := Join(sets, 0.6, func(i, j int, s float64) { a = append(a, pair{i, j, s}) }); err != nil {
		t.Fatal(err)
	}
	if err := Join(sets, 0.6, func(i, j int, s float64) { b = append(b, pair{i, j, s}) }); err != nil {
		t.Fatal(err)
	}
	if len(a) == 0 || !slices.Equal(a, b) {
		t.Fatalf("two runs differ or are empty: %d and %d pairs", len(a), len(b))
	}
	for _, p := range a {
		if p.i >= p.j {
			t.Fatalf("pair %v not ordered i < j", p)
		}
	}
}

// goSourceLines returns up to max lines of real text: the Go standard
// library's sources, which every machine that runs these tests has.
func goSourceLines(t testing.TB, max int) []string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		t.Skipf("go env GOROOT: %v", err)
	}
	root := strings.TrimSpace(string(out))
	var lines []string
	for _, pkg := range []string{"strings", "bytes", "sort", "bufio"} {
		files, _ := filepath.Glob(filepath.Join(root, "src", pkg, "*.go"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(b), "\n") {
				if len(lines) == max {
					return lines
				}
				lines = append(lines, l)
			}
		}
	}
	if len(lines) < 100 {
		t.Skip("Go sources not found under GOROOT")
	}
	return lines
}

func shingleSets(t testing.TB, docs []string, opts shingle.Options) [][]uint64 {
	t.Helper()
	sh, err := shingle.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	sets := make([][]uint64, len(docs))
	for i, d := range docs {
		sets[i] = sh.AppendSet(nil, d)
	}
	return sets
}

// TestJoinRealText runs the oracle on lines of real text (Go sources:
// many short and repeated lines, long tails of rare tokens).
func TestJoinRealText(t *testing.T) {
	lines := goSourceLines(t, 1200)
	for _, opts := range []shingle.Options{
		{Unit: shingle.Word, N: 1},
		{Unit: shingle.Word, N: 2},
		{Unit: shingle.Char, N: 3},
	} {
		o := newOracle(shingleSets(t, lines, opts), 0.3)
		for _, th := range []float64{0.3, 0.5, 0.8, 1} {
			checkJoin(t, fmt.Sprintf("Go source lines %v-%d", opts.Unit, opts.N), o, th)
		}
	}
}

// TestJoinSharedData runs the oracle on samples of the evaluation corpora
// when they are present beside the project.
func TestJoinSharedData(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for _, ds := range []string{"clough-plagiarism", "bible-kjv-family", "pawsx-zh"} {
		docs := readSharedDocs(t, ds, 1000)
		if docs == nil {
			continue
		}
		o := newOracle(shingleSets(t, docs, shingle.Options{Unit: shingle.Word, N: 3}), 0.3)
		for _, th := range []float64{0.3, 0.5, 0.8} {
			checkJoin(t, ds, o, th)
		}
	}
}

func readSharedDocs(t testing.TB, dataset string, max int) []string {
	t.Helper()
	path := filepath.Join(sharedData(), dataset, "docs.jsonl.gz")
	docs, err := readDocs(path, max)
	if errors.Is(err, os.ErrNotExist) {
		t.Logf("%s absent: skipped", path)
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

func sharedData() string {
	if d := os.Getenv("NEARDUP_DATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "shared", "data")
}

// FuzzJoin is a differential fuzz test: Join and Index against the
// brute-force oracle on small sets decoded from the input.
func FuzzJoin(f *testing.F) {
	f.Add(byte(128), []byte{0, 1, 0, 2, 1, 1, 1, 2, 2, 3})
	f.Add(byte(255), []byte{0, 7, 1, 7, 2, 7, 3, 7})
	f.Add(byte(80), []byte{5, 1, 5, 2, 5, 3, 6, 1, 6, 2, 9, 9})
	f.Fuzz(func(t *testing.T, tb byte, data []byte) {
		th := 0.3 + 0.7*float64(tb)/255
		// Byte pairs (set, token): up to 16 sets over 32 tokens.
		sets := make([][]uint64, 16)
		for k := 0; k+1 < len(data); k += 2 {
			s := int(data[k] % 16)
			sets[s] = append(sets[s], uint64(data[k+1]%32)*0x9e3779b97f4a7c15)
		}
		for s := range sets {
			slices.Sort(sets[s])
			sets[s] = slices.Compact(sets[s])
		}
		got, _ := joinPairs(t, sets, th)
		want := bruteForce(sets, th)
		if !slices.Equal(got, want) {
			t.Fatalf("t=%v sets=%v: Join = %v, brute force = %v", th, sets, got, want)
		}
		if got := indexPairs(t, sets, th); !slices.Equal(got, want) {
			t.Fatalf("t=%v sets=%v: Index = %v, brute force = %v", th, sets, got, want)
		}
	})
}

func BenchmarkJoin(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		r := rand.New(rand.NewPCG(1, uint64(n)))
		sets := randomSets(r, n, 200, 50*n)
		for _, th := range []float64{0.5, 0.8} {
			b.Run(fmt.Sprintf("n=%d/t=%v", n, th), func(b *testing.B) {
				b.ReportAllocs()
				var pairs int64
				for b.Loop() {
					st, err := JoinWithStats(sets, th, func(int, int, float64) {})
					if err != nil {
						b.Fatal(err)
					}
					pairs = st.Pairs
				}
				b.ReportMetric(float64(pairs), "pairs")
			})
		}
	}
}

// TestJoinAllocations checks that the number of allocations of a join does
// not grow with the input: the index and the per-set state are allocated
// once, in full.
func TestJoinAllocations(t *testing.T) {
	counts := map[int]float64{}
	for _, n := range []int{500, 5000} {
		sets := randomSets(rand.New(rand.NewPCG(4, 4)), n, 100, 20*n)
		counts[n] = testing.AllocsPerRun(3, func() {
			if err := Join(sets, 0.8, func(int, int, float64) {}); err != nil {
				t.Fatal(err)
			}
		})
	}
	if counts[5000] > 100 || counts[5000] > counts[500]+20 {
		t.Errorf("allocations: %v for 500 sets, %v for 5000; want under 100 and about constant", counts[500], counts[5000])
	}
}
