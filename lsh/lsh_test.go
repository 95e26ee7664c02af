package lsh

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/minhash"
)

// TestSeed002 is the worked example of seed 002.
func TestSeed002(t *testing.T) {
	p := Params{Bands: 100, Rows: 3}
	if got := p.Probability(0.4); math.Abs(got-0.9986585) > 5e-8 {
		t.Errorf("P(0.4) with 100x3 = %.7f, want 0.9986585", got)
	}
	// The remark: at 0.9 with 128 permutations the area rule's
	// 5x25 catches only 31% of pairs of similarity 0.9.
	if got := (Params{5, 25}).Probability(0.9); math.Abs(got-0.311) > 0.001 {
		t.Errorf("P(0.9) with 5x25 = %.4f, want 0.311", got)
	}
	if got := (Params{9, 13}).Threshold(); math.Abs(got-math.Pow(1.0/9, 1.0/13)) > 1e-15 || got < 0.84 || got > 0.85 {
		t.Errorf("Threshold of 9x13 = %v, want (1/9)^(1/13) = 0.8447", got)
	}
	for _, s := range []float64{-1, 0, 1, 2} {
		want := 0.0
		if s >= 1 {
			want = 1
		}
		if got := p.Probability(s); got != want {
			t.Errorf("P(%v) = %v, want %v", s, got, want)
		}
	}
}

// exactFP is the false-positive area by the binomial expansion in
// 1024-bit floating point (the alternating sum cancels about 100 bits):
// ∫_0^t 1-(1-s^r)^b ds = t - Σ_k C(b,k) (-1)^k t^(rk+1)/(rk+1).
func exactFP(b, r int, t float64) float64 {
	const prec = 1024
	nf := func(x float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(x) }
	tr := nf(t)
	tpowR := nf(1)
	for range r {
		tpowR.Mul(tpowR, tr)
	}
	sum := nf(t)
	binom := nf(1)
	pow := nf(t) // t^(rk+1)
	for k := 0; k <= b; k++ {
		if k > 0 {
			binom.Mul(binom, nf(float64(b-k+1)))
			binom.Quo(binom, nf(float64(k)))
			pow.Mul(pow, tpowR)
		}
		term := nf(0).Mul(binom, pow)
		term.Quo(term, nf(float64(r*k+1)))
		if k%2 == 0 {
			sum.Sub(sum, term)
		} else {
			sum.Add(sum, term)
		}
	}
	f, _ := sum.Float64()
	return f
}

// TestAreasExact checks the quadrature against exact rational integrals.
func TestAreasExact(t *testing.T) {
	for _, p := range []Params{{5, 25}, {9, 13}, {14, 9}, {25, 5}, {100, 1}, {1, 128}, {42, 6}} {
		for _, th := range []float64{0.3, 0.5, 0.8, 0.9} {
			fp := p.FalsePositiveArea(th)
			if want := exactFP(p.Bands, p.Rows, th); math.Abs(fp-want) > 1e-12 {
				t.Errorf("%v FP(%v) = %.15g, exact %.15g", p, th, fp, want)
			}
			// FN over [t, 1] = (1 - t) - (FP(1) - FP(t)).
			fn := p.FalseNegativeArea(th)
			if want := (1 - th) - (exactFP(p.Bands, p.Rows, 1) - exactFP(p.Bands, p.Rows, th)); math.Abs(fn-want) > 1e-12 {
				t.Errorf("%v FN(%v) = %.15g, exact %.15g", p, th, fn, want)
			}
		}
	}
}

func TestOptimalWeights(t *testing.T) {
	// Weighing false negatives more lowers the effective threshold.
	base, _ := Optimal(0.8, 128, Weights{})
	fnHeavy, err := Optimal(0.8, 128, Weights{FalsePositive: 0.1, FalseNegative: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	if fnHeavy.Probability(0.8) <= base.Probability(0.8) {
		t.Errorf("fn-heavy %v has P(0.8) %.3f <= base %v's %.3f", fnHeavy, fnHeavy.Probability(0.8), base, base.Probability(0.8))
	}
	if same, _ := Optimal(0.8, 128, Weights{0.5, 0.5}); same != base {
		t.Errorf("explicit 0.5/0.5 = %v, zero Weights = %v", same, base)
	}
}

func TestBadParams(t *testing.T) {
	for _, th := range []float64{0, -0.1, 1.01, math.NaN(), math.Inf(1)} {
		if _, err := Optimal(th, 128, Weights{}); !errors.Is(err, ErrThreshold) {
			t.Errorf("Optimal(%v) = %v, want ErrThreshold", th, err)
		}
		if _, err := ForRecall(th, 128, 0.9); !errors.Is(err, ErrThreshold) {
			t.Errorf("ForRecall(%v) = %v, want ErrThreshold", th, err)
		}
	}
	if _, err := Optimal(0.5, 0, Weights{}); !errors.Is(err, ErrNumPerm) {
		t.Errorf("Optimal with 0 permutations: %v", err)
	}
	for _, w := range []Weights{{-1, 1}, {0, -1}, {math.NaN(), 1}, {math.Inf(1), 1}} {
		if _, err := Optimal(0.5, 128, w); !errors.Is(err, ErrWeights) {
			t.Errorf("Optimal with weights %v: %v, want ErrWeights", w, err)
		}
	}
	for _, r := range []float64{0, 1, -1, math.NaN()} {
		if _, err := ForRecall(0.5, 128, r); !errors.Is(err, ErrRecall) {
			t.Errorf("ForRecall recall %v: %v, want ErrRecall", r, err)
		}
	}
	for _, p := range []Params{{0, 1}, {1, 0}, {13, 10}, {129, 1}, {-1, -1}} {
		if err := p.Validate(128); !errors.Is(err, ErrParams) {
			t.Errorf("%v.Validate(128) = %v, want ErrParams", p, err)
		}
		if _, err := New(p, 128, Options{}); err == nil {
			t.Errorf("New(%v, 128) succeeded", p)
		}
	}
	if err := (Params{1, 1}).Validate(0); !errors.Is(err, ErrNumPerm) {
		t.Errorf("Validate(0) = %v, want ErrNumPerm", err)
	}
	// Threshold 1 is allowed: identical documents only.
	if p, err := Optimal(1, 128, Weights{}); err != nil || p.Validate(128) != nil {
		t.Errorf("Optimal(1) = %v, %v", p, err)
	}
}

// TestForRecall checks ForRecall against a brute-force search of every
// banding.
func TestForRecall(t *testing.T) {
	for _, k := range []int{64, 128, 200} {
		for _, th := range []float64{0.5, 0.7, 0.8, 0.9} {
			for _, rec := range []float64{0.9, 0.95, 0.99} {
				got, err := ForRecall(th, k, rec)
				if err != nil {
					t.Fatalf("ForRecall(%v, %d, %v): %v", th, k, rec, err)
				}
				best, bestFP := Params{}, math.Inf(1)
				for b := 1; b <= k; b++ {
					for r := 1; r*b <= k; r++ {
						p := Params{b, r}
						if p.Probability(th) < rec {
							continue
						}
						if fp := p.FalsePositiveArea(th); fp < bestFP || (fp == bestFP && b < best.Bands) {
							best, bestFP = p, fp
						}
					}
				}
				if got != best {
					t.Errorf("ForRecall(%v, %d, %v) = %v (P %.4f), brute force %v (P %.4f)", th, k, rec, got, got.Probability(th), best, best.Probability(th))
				}
			}
		}
	}
	got, _ := ForRecall(0.9, 128, 0.95)
	t.Logf("ForRecall(0.9, 128, 0.95) = %v, P(0.9) = %.3f, threshold %.3f", got, got.Probability(0.9), got.Threshold())
	if _, err := ForRecall(0.01, 4, 0.999999); !errors.Is(err, ErrRecall) {
		t.Errorf("unreachable recall: %v, want ErrRecall", err)
	}
}

// plantedSets returns two sets of n0 elements each with Jaccard exactly
// inter/(2*n0-inter).
func plantedSets(r *rand.Rand, n0, inter int) (a, b []uint64) {
	for i := range n0 {
		x := r.Uint64()
		a = append(a, x)
		if i < inter {
			b = append(b, x)
		}
	}
	for len(b) < n0 {
		b = append(b, r.Uint64())
	}
	return a, b
}

// TestSCurve is the statistical test of LSH recall: over pairs of planted
// similarity s signed with independent seeds, the fraction that become
// candidates in the Index matches P(s) within 4 binomial standard errors
// plus 0.01, for the K-permutation families.
func TestSCurve(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	p := Params{9, 13}
	const trials = 400
	for _, fam := range []minhash.Family{minhash.Permutation, minhash.MultiplyShift} {
		for _, inter := range []int{60, 75, 85, 95} { // s = 0.43, 0.6, 0.74, 0.9
			s := float64(inter) / float64(200-inter)
			hits := 0
			for i := range trials {
				h, _ := minhash.New(minhash.Options{Family: fam, Seed: uint64(i + 1)})
				a, b := plantedSets(r, 100, inter)
				ix, _ := New(p, 128, Options{OffHeap: i%2 == 1})
				ix.Insert(0, h.Sign(nil, a))
				c, _ := ix.Query(nil, h.Sign(nil, b))
				ix.Close()
				if len(c) == 1 {
					hits++
				}
			}
			got, want := float64(hits)/trials, p.Probability(s)
			tol := 4*math.Sqrt(want*(1-want)/trials) + 0.01
			if math.Abs(got-want) > tol {
				t.Errorf("%s s=%.3f: candidate rate %.3f, S-curve %.3f (tolerance %.3f)", fam, s, got, want, tol)
			}
		}
	}
}

// TestIndexOracle compares Query with a brute-force scan of every band of
// every document, with clusters of near-identical signatures, and checks
// Remove, on the heap and off it (Options.OffHeap).
func TestIndexOracle(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("OffHeap=%v", off), func(t *testing.T) { testIndexOracle(t, off) })
	}
}

func testIndexOracle(t *testing.T, offHeap bool) {
	r := rand.New(rand.NewPCG(1, 2))
	const k, n = 32, 600
	p := Params{8, 4}
	sigs := make([][]uint32, n)
	for i := range sigs {
		if i%3 != 0 && i > 0 {
			// Mutate an earlier signature in a few slots.
			sigs[i] = slices.Clone(sigs[r.IntN(i)])
			for range r.IntN(12) {
				sigs[i][r.IntN(k)] = r.Uint32N(4)
			}
			continue
		}
		sigs[i] = make([]uint32, k)
		for j := range sigs[i] {
			sigs[i][j] = r.Uint32N(4) // small alphabet: many accidental band matches
		}
	}
	mapped := arena.Mapped()
	ix, err := New(p, k, Options{KeepSignatures: true, OffHeap: offHeap})
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sigs {
		if err := ix.Insert(uint32(i), s); err != nil {
			t.Fatal(err)
		}
	}
	if err := ix.Insert(3, sigs[3]); !errors.Is(err, ErrExists) {
		t.Errorf("second Insert(3) = %v, want ErrExists", err)
	}
	if err := ix.Insert(MaxID+1, sigs[3]); !errors.Is(err, ErrID) {
		t.Errorf("Insert of id MaxID+1 = %v, want ErrID", err)
	}
	if err := ix.Insert(n, sigs[3][:5]); !errors.Is(err, ErrLength) {
		t.Errorf("Insert of a short signature = %v, want ErrLength", err)
	}
	removed := map[int]bool{}
	check := func() {
		t.Helper()
		var got []uint32
		var cands []Candidate
		for qi, q := range sigs {
			var want []uint32
			for i, s := range sigs {
				if removed[i] {
					continue
				}
				for b := range p.Bands {
					if slices.Equal(q[b*p.Rows:(b+1)*p.Rows], s[b*p.Rows:(b+1)*p.Rows]) {
						want = append(want, uint32(i))
						break
					}
				}
			}
			got, err = ix.Query(got[:0], q)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("Query(sig %d) = %v, brute force %v (err %v)", qi, got, want, err)
			}
			cands, _, err = ix.QuerySimilar(cands[:0], q, 0.5, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range cands {
				e, _ := minhash.Estimate(q, sigs[c.ID])
				if e != c.Similarity || e < 0.5 {
					t.Fatalf("QuerySimilar: %d has %v, estimate %v", c.ID, c.Similarity, e)
				}
			}
		}
	}
	check()
	for i := 0; i < n; i += 7 {
		var sig []uint32
		if i%2 == 0 {
			sig = sigs[i]
		}
		if err := ix.Remove(uint32(i), sig); err != nil {
			t.Fatalf("Remove(%d): %v", i, err)
		}
		removed[i] = true
	}
	if err := ix.Remove(0, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("second Remove(0) = %v, want ErrNotFound", err)
	}
	if err := ix.Remove(1, sigs[2]); !slices.Equal(sigs[1], sigs[2]) && !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove with a wrong signature = %v, want ErrNotFound", err)
	}
	if ix.Len() != n-len(removed) {
		t.Errorf("Len = %d, want %d", ix.Len(), n-len(removed))
	}
	check()
	if got := arena.Mapped() - mapped; got != ix.MappedBytes() || (got > 0) != (offHeap && arena.OffHeap) {
		t.Errorf("mapped %d bytes, MappedBytes %d (OffHeap %v)", got, ix.MappedBytes(), offHeap)
	}
	ix.Close()
	if got := arena.Mapped(); got != mapped {
		t.Errorf("mapped %d bytes after Close, want %d", got, mapped)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Query after Close did not panic")
			}
		}()
		ix.Query(nil, sigs[0])
	}()
	ix.Close() // twice is fine
	plain, _ := New(p, k, Options{OffHeap: offHeap})
	if _, _, err := plain.QuerySimilar(nil, sigs[0], 0, nil); !errors.Is(err, ErrNoSigs) {
		t.Errorf("QuerySimilar without signatures = %v, want ErrNoSigs", err)
	}
	if _, err := plain.Query(nil, sigs[0][:3]); !errors.Is(err, ErrLength) {
		t.Errorf("Query of a short signature = %v, want ErrLength", err)
	}
}

// TestMemoryPerDoc measures the heap per document of an Index of 100000
// random 128-slot signatures banded 9x13, with and without signatures kept,
// and checks it against the bounds documented on Index (340 and 1000
// bytes; the hash tables double, so the figure moves with n).
func TestMemoryPerDoc(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("allocates about 100 MB (skipped with -short and -race)")
	}
	const n = 100000
	r := rand.New(rand.NewPCG(3, 4))
	sig := make([]uint32, 128)
	for _, tc := range []struct {
		keep, off bool
		limit     float64
	}{{false, false, 340}, {true, false, 1000}, {false, true, 340}} {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		mapped := arena.Mapped()
		ix, _ := New(Params{9, 13}, 128, Options{KeepSignatures: tc.keep, OffHeap: tc.off})
		for i := range n {
			for j := range sig {
				sig[j] = r.Uint32()
			}
			ix.Insert(uint32(i), sig)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap := float64(after.HeapAlloc-before.HeapAlloc) / n
		off := float64(arena.Mapped()-mapped) / n
		per := heap + off
		t.Logf("KeepSignatures=%v OffHeap=%v: %.0f bytes per document (%.0f mapped)", tc.keep, tc.off, per, off)
		if per > tc.limit {
			t.Errorf("KeepSignatures=%v OffHeap=%v: %.0f bytes per document, documented limit %.0f", tc.keep, tc.off, per, tc.limit)
		}
		// Off the heap, the heap keeps a bit a document.
		if tc.off && arena.OffHeap && heap > 2 {
			t.Errorf("OffHeap: %.1f bytes per document on the Go heap, want at most 2", heap)
		}
		ix.Close()
	}
}

func BenchmarkInsertQuery(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	sigs := make([][]uint32, 10000)
	for i := range sigs {
		sigs[i] = make([]uint32, 128)
		for j := range sigs[i] {
			sigs[i][j] = r.Uint32()
		}
	}
	b.SetBytes(int64(len(sigs) * 128 * 4)) // signature bytes indexed and queried
	b.ReportAllocs()
	var out []uint32
	for b.Loop() {
		ix, _ := New(Params{9, 13}, 128, Options{})
		for i, s := range sigs {
			out, _ = ix.Query(out[:0], s)
			ix.Insert(uint32(i), s)
		}
	}
	b.ReportMetric(float64(len(sigs))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
}

// TestIndexByKeys: InsertKeys and QueryKeys answer as Insert and Query
// do, and an index emptied by RemoveNewest (newest first) is empty and
// answers as a new one when refilled.
func TestIndexByKeys(t *testing.T) {
	p := Params{Bands: 4, Rows: 2}
	rng := rand.New(rand.NewPCG(25, 1))
	sigs := make([][]uint32, 300)
	for i := range sigs {
		sigs[i] = make([]uint32, 8)
		for x := range sigs[i] {
			sigs[i][x] = uint32(rng.IntN(6)) // small values: many shared bands
		}
	}
	ref, err := New(p, 8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	byKeys, err := New(p, 8, Options{OffHeap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer byKeys.Close()
	for round := range 2 {
		for i, s := range sigs {
			keys := p.AppendKeys(nil, s)
			want, _ := ref.Query(nil, s)
			got, err := byKeys.QueryKeys(nil, keys)
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("round %d: QueryKeys(%d) = %v, %v; Query = %v", round, i, got, err, want)
			}
			if err := ref.Insert(uint32(i), s); err != nil {
				t.Fatal(err)
			}
			if err := byKeys.InsertKeys(uint32(i), keys); err != nil {
				t.Fatal(err)
			}
		}
		if round == 0 {
			ref, _ = New(p, 8, Options{}) // the second round compares with a new index
			if err := byKeys.RemoveNewest(0, p.AppendKeys(nil, sigs[0])); err == nil {
				t.Fatal("RemoveNewest of the oldest id succeeded")
			}
			for i := len(sigs) - 1; i >= 0; i-- {
				if err := byKeys.RemoveNewest(uint32(i), p.AppendKeys(nil, sigs[i])); err != nil {
					t.Fatal(err)
				}
			}
			if byKeys.Len() != 0 {
				t.Fatalf("Len after emptying = %d", byKeys.Len())
			}
		}
	}
}
