package jaccard

import (
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/neardup/neardup/shingle"
)

// The benchmarks and the test in this file read the evaluation corpora
// beside the project (../../shared/data, or $NEARDUP_DATA) and skip when
// they are absent. docs/bench/jaccard.md records their results.

// bibleSets returns the word 5-gram sets of n verses of bible-kjv-family
// (lower-cased), drawn at random with a fixed seed (the file is verse-major).
func bibleSets(tb testing.TB, n int) [][]uint64 {
	tb.Helper()
	docs := readSharedDocs(tb, "bible-kjv-family", 0)
	if docs == nil {
		tb.Skip("bible-kjv-family absent")
	}
	r := rand.New(rand.NewPCG(2026, 11))
	r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
	docs = docs[:min(n, len(docs))]
	return shingleSets(tb, docs, shingle.Options{Unit: shingle.Word, N: 5})
}

// BenchmarkJoinBible: the join on 100k verses at t = 0.8, and brute force
// on a 10k sample (brute force grows as n², the join about as n).
func BenchmarkJoinBible(b *testing.B) {
	sets := bibleSets(b, 100000)
	for _, c := range []struct {
		n int
		t float64
	}{{10000, 0.8}, {100000, 0.8}, {100000, 0.5}, {100000, 0.9}} {
		b.Run(fmt.Sprintf("join/n=%d/t=%v", c.n, c.t), func(b *testing.B) {
			benchJoin(b, sets[:c.n], c.t)
		})
	}
	b.Run("index/n=100000/t=0.8", func(b *testing.B) {
		benchIndex(b, sets, 0.8)
	})
	b.Run("brute/n=10000", func(b *testing.B) {
		b.ReportAllocs()
		var pairs int
		for b.Loop() {
			pairs = len(bruteForce(sets[:10000], 0.8))
		}
		b.ReportMetric(float64(pairs), "pairs")
	})
}

func benchJoin(b *testing.B, sets [][]uint64, t float64) {
	b.ReportAllocs()
	var st JoinStats
	cpu, n := cpuTime(), 0
	for b.Loop() {
		n++
		var err error
		st, err = JoinWithStats(sets, t, func(int, int, float64) {})
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(st.Pairs), "pairs")
	b.ReportMetric(float64(st.Candidates), "candidates")
	b.ReportMetric(float64(st.Probed), "probed")
	b.ReportMetric(float64(st.Tokens), "tokens")
	b.ReportMetric(float64(st.Distinct), "distinct")
	// CPU seconds per join (garbage collection included): on a shared
	// machine, a steadier measure than the wall time.
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(n), "cpu-s/op")
}

// benchIndex adds every set to an Index.
func benchIndex(b *testing.B, sets [][]uint64, t float64) {
	b.ReportAllocs()
	cpu, n, pairs := cpuTime(), 0, 0
	for b.Loop() {
		n++
		pairs = len(indexPairs(b, sets, t))
	}
	b.ReportMetric(float64(pairs), "pairs")
	b.ReportMetric((cpuTime()-cpu).Seconds()/float64(n), "cpu-s/op")
}

// BenchmarkJoinWiki: the join on the 11,658 long articles of wiki-slice
// (word 5-grams, about 2,700 per article), and brute force on 1,000.
func BenchmarkJoinWiki(b *testing.B) {
	docs := readSharedDocs(b, "wiki-slice", 0)
	if docs == nil {
		b.Skip("wiki-slice absent")
	}
	sets := shingleSets(b, docs, shingle.Options{Unit: shingle.Word, N: 5})
	for _, t := range []float64{0.5, 0.8} {
		b.Run(fmt.Sprintf("join/n=%d/t=%v", len(sets), t), func(b *testing.B) {
			benchJoin(b, sets, t)
		})
	}
	for _, t := range []float64{0.5, 0.8} {
		b.Run(fmt.Sprintf("index/n=%d/t=%v", len(sets), t), func(b *testing.B) {
			benchIndex(b, sets, t)
		})
	}
	b.Run("brute/n=1000/t=0.5", func(b *testing.B) {
		b.ReportAllocs()
		var pairs int
		for b.Loop() {
			pairs = len(bruteForce(sets[:1000], 0.5))
		}
		b.ReportMetric(float64(pairs), "pairs")
	})
}

// TestJoinBibleBruteForce compares the join with brute force on
// $NEARDUP_BRUTE_N verses at t = 0.8 (n²/2 pairs: 30000 takes minutes), and
// logs wall and CPU times. It runs only when NEARDUP_BRUTE_N is set.
func TestJoinBibleBruteForce(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv("NEARDUP_BRUTE_N"))
	if err != nil || n < 2 {
		t.Skip("set NEARDUP_BRUTE_N to the number of verses to run")
	}
	sets := bibleSets(t, n)
	start, cpu := time.Now(), cpuTime()
	got, st := joinPairs(t, sets, 0.8)
	tj, cj := time.Since(start), cpuTime()-cpu

	start, cpu = time.Now(), cpuTime()
	w := runtime.GOMAXPROCS(0)
	parts := make([][]pair, w)
	var wg sync.WaitGroup
	for g := range w {
		wg.Go(func() {
			for i := g; i < len(sets); i += w {
				for j := i + 1; j < len(sets); j++ {
					if s := Set(sets[i], sets[j]); s >= 0.8 {
						parts[g] = append(parts[g], pair{i, j, s})
					}
				}
			}
		})
	}
	wg.Wait()
	want := slices.Concat(parts...)
	slices.SortFunc(want, cmpPair)
	tb, cb := time.Since(start), cpuTime()-cpu
	t.Logf("n=%d t=0.8: join %v wall, %v CPU (%d pairs, %d candidates); brute force on %d goroutines %v wall, %v CPU (%d pairs)",
		len(sets), tj.Round(time.Millisecond), cj.Round(time.Millisecond), len(got), st.Candidates,
		w, tb.Round(time.Millisecond), cb.Round(time.Millisecond), len(want))
	if !slices.Equal(got, want) {
		t.Fatalf("join and brute force differ: %d and %d pairs", len(got), len(want))
	}
}
