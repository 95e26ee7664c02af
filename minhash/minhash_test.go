package minhash

import (
	"bufio"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/shingle"
)

var families = []Family{Permutation, MultiplyShift, OPH}

// TestPermutationGolden checks the reference family against an independent
// big-integer implementation (Python, in the commit that added this test):
// coefficients from SplitMix64 at DefaultSeed, ((a*(x mod p)+b) mod p) mod 2^32.
func TestPermutationGolden(t *testing.T) {
	h, err := New(Options{NumPerm: 8, Family: Permutation})
	if err != nil {
		t.Fatal(err)
	}
	hashes := []uint64{1, 2, 3, math.MaxUint64, 0x123456789abcdef0, mersenne61, mersenne61 + 5}
	got := h.Sign(nil, hashes)
	want := Signature{1230316670, 212816565, 507885120, 182883239, 139074182, 1139949548, 288255032, 366180410}
	if !slices.Equal(got, want) {
		t.Errorf("Sign = %v, want %v", got, want)
	}
}

func TestModMersenne(t *testing.T) {
	p := new(big.Int).SetUint64(mersenne61)
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		hi, lo := r.Uint64()>>6, r.Uint64() // x < 2^122
		if r.IntN(10) == 0 {
			hi, lo = 1<<58-1, math.MaxUint64 // the largest input
		}
		x := new(big.Int).Lsh(new(big.Int).SetUint64(hi), 64)
		x.Or(x, new(big.Int).SetUint64(lo))
		want := x.Mod(x, p).Uint64()
		if got := modMersenne(hi, lo); got != want {
			t.Fatalf("modMersenne(%#x, %#x) = %#x, want %#x", hi, lo, got, want)
		}
	}
}

type textPair struct {
	a, b []uint64 // sorted shingle sets
	j    float64  // exact Jaccard
}

// loadPairs reads testdata/pairs.tsv as word 5-gram shingle sets.
func loadPairs(t testing.TB) []textPair {
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: 5})
	if err != nil {
		t.Fatal(err)
	}
	var pairs []textPair
	for _, tp := range pairTexts(t) {
		a, b := strings.ToLower(tp[0]), strings.ToLower(tp[1])
		p := textPair{a: sh.AppendSet(nil, a), b: sh.AppendSet(nil, b)}
		p.j = jaccard.Set(p.a, p.b)
		pairs = append(pairs, p)
	}
	if len(pairs) != 90 {
		t.Fatalf("%d pairs, want 90", len(pairs))
	}
	return pairs
}

// pairTexts reads the text pairs of testdata/pairs.tsv.
func pairTexts(t testing.TB) [][2]string {
	f, err := os.Open("testdata/pairs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var pairs [][2]string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		a, b, ok := strings.Cut(sc.Text(), "\t")
		if !ok {
			t.Fatalf("bad line %q", sc.Text())
		}
		pairs = append(pairs, [2]string{a, b})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return pairs
}

// TestEstimatorStatistics checks, for each family, that Estimate is an
// unbiased estimator of the exact Jaccard similarity with the variance
// J(1-J)/K of K independent slots, over 90 real text pairs (KJV and Webster
// verses, J from 0 to 1) and 40 seeds each.
//
// Bias: the mean of (estimate - J) over the 3600 trials has a standard
// error of about 0.044/sqrt(3600) = 0.0007 for K = 128; the tolerance 0.004
// is more than 5 standard errors. Variance: the mean of (estimate - J)^2
// divided by the mean of J(1-J)/K must be within [0.85, 1.15] for the
// K-permutation families (its standard error is about 3% here). OPH with
// optimal densification measured 1.03 overall (short verses, N << K) and
// 0.76 on the 10-verse passages (bins sample without replacement, which
// lowers the variance when N > K); its bounds are [0.85, 1.3] overall and
// [0.5, 1.15] on the passages.
func TestEstimatorStatistics(t *testing.T) {
	pairs := loadPairs(t)
	const seeds = 25
	for _, fam := range families {
		for _, k := range []int{128} {
			var bias, sq, expect float64
			var sqLong, expLong float64
			n := 0
			for seed := uint64(1); seed <= seeds; seed++ {
				h, err := New(Options{NumPerm: k, Family: fam, Seed: seed})
				if err != nil {
					t.Fatal(err)
				}
				var sa, sb Signature
				for i, p := range pairs {
					sa = h.Sign(sa, p.a)
					sb = h.Sign(sb, p.b)
					e, err := Estimate(sa, sb)
					if err != nil {
						t.Fatal(err)
					}
					d := e - p.j
					bias += d
					sq += d * d
					v := p.j * (1 - p.j) / float64(k)
					expect += v
					if i >= 60 { // 10-verse passages: 200+ shingles
						sqLong += d * d
						expLong += v
					}
					n++
				}
			}
			bias /= float64(n)
			ratio := sq / expect
			ratioLong := sqLong / expLong
			t.Logf("%s K=%d: bias %+.5f, variance ratio %.3f (passages %.3f)", fam, k, bias, ratio, ratioLong)
			if math.Abs(bias) > 0.004 {
				t.Errorf("%s: mean error %+.5f, want |.| <= 0.004", fam, bias)
			}
			lo, hi := 0.85, 1.15
			if fam == OPH {
				lo, hi = 0.85, 1.3
				if ratioLong < 0.5 || ratioLong > 1.15 {
					t.Errorf("%s: variance ratio on passages %.3f, want in [0.5, 1.15]", fam, ratioLong)
				}
			}
			if ratio < lo || ratio > hi {
				t.Errorf("%s: variance ratio %.3f, want in [%v, %v]", fam, ratio, lo, hi)
			}
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, fam := range families {
		h, _ := New(Options{Family: fam})
		e := h.Sign(nil, nil)
		if len(e) != DefaultNumPerm || !IsEmpty(e) {
			t.Fatalf("%s: signature of the empty set %v is not Empty", fam, e[:4])
		}
		x := h.Sign(nil, []uint64{42})
		if IsEmpty(x) {
			t.Errorf("%s: signature of {42} is empty", fam)
		}
		if s, _ := Estimate(e, h.Sign(nil, nil)); s != 1 {
			t.Errorf("%s: Estimate(empty, empty) = %v, want 1", fam, s)
		}
		if s, _ := Estimate(e, x); s != 0 {
			t.Errorf("%s: Estimate(empty, {42}) = %v, want 0", fam, s)
		}
		for _, v := range x {
			if v == Empty {
				t.Fatalf("%s: a non-empty set has an Empty slot", fam)
			}
		}
	}
	if _, err := Estimate(Signature{1}, Signature{1, 2}); !errors.Is(err, ErrLength) {
		t.Errorf("Estimate of different lengths: %v, want ErrLength", err)
	}
}

func TestOptions(t *testing.T) {
	for _, o := range []Options{{NumPerm: -1}, {NumPerm: MaxNumPerm + 1}} {
		if _, err := New(o); !errors.Is(err, ErrNumPerm) {
			t.Errorf("New(%+v) = %v, want ErrNumPerm", o, err)
		}
	}
	if _, err := New(Options{Family: 9}); !errors.Is(err, ErrFamily) {
		t.Errorf("New(family 9) = %v, want ErrFamily", err)
	}
	for _, f := range families {
		g, err := ParseFamily(f.String())
		if err != nil || g != f {
			t.Errorf("ParseFamily(%q) = %v, %v", f.String(), g, err)
		}
	}
	if _, err := ParseFamily("nope"); !errors.Is(err, ErrFamily) {
		t.Errorf("ParseFamily(nope) = %v", err)
	}
	// Seeds change every slot family; same seed, same signature.
	for _, f := range families {
		h1, _ := New(Options{Family: f, Seed: 1})
		h2, _ := New(Options{Family: f, Seed: 2})
		set := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
		if slices.Equal(h1.Sign(nil, set), h2.Sign(nil, set)) {
			t.Errorf("%s: seeds 1 and 2 give the same signature", f)
		}
		h3, _ := New(Options{Family: f, Seed: 1})
		if !slices.Equal(h1.Sign(nil, set), h3.Sign(nil, set)) {
			t.Errorf("%s: seed 1 is not deterministic", f)
		}
	}
}

// TestOrderAndRepeats: a signature depends on the set only.
func TestOrderAndRepeats(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	set := make([]uint64, 300)
	for i := range set {
		set[i] = r.Uint64()
	}
	shuffled := slices.Clone(set)
	r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	shuffled = append(shuffled, set[:50]...)
	for _, f := range families {
		h, _ := New(Options{Family: f, NumPerm: 100})
		if !slices.Equal(h.Sign(nil, set), h.Sign(nil, shuffled)) {
			t.Errorf("%s: signature depends on order or repeats", f)
		}
	}
}

func TestMerge(t *testing.T) {
	pairs := loadPairs(t)
	for _, f := range []Family{Permutation, MultiplyShift} {
		h, _ := New(Options{Family: f})
		for _, p := range pairs[:20] {
			union := append(slices.Clone(p.a), p.b...)
			want := h.Sign(nil, union)
			got, err := h.Merge(nil, h.Sign(nil, p.a), h.Sign(nil, p.b))
			if err != nil || !slices.Equal(got, want) {
				t.Fatalf("%s: Merge != Sign(union) (err %v)", f, err)
			}
		}
		if _, err := h.Merge(nil, Signature{1}, h.Sign(nil, nil)); !errors.Is(err, ErrLength) {
			t.Errorf("%s: Merge of a short signature: %v", f, err)
		}
	}
	h, _ := New(Options{Family: OPH})
	if _, err := h.Merge(nil, h.Sign(nil, nil), h.Sign(nil, nil)); !errors.Is(err, ErrMerge) {
		t.Errorf("OPH Merge: %v, want ErrMerge", err)
	}
}

// TestBottom checks the bottom-s estimator: exact for sets below s, seed
// 003's definition against a brute-force MIN_s of the union, and unbiased
// on real pairs.
func TestBottom(t *testing.T) {
	if _, err := NewBottom(0, 0); err == nil {
		t.Error("NewBottom(0) succeeded")
	}
	pairs := loadPairs(t)
	b, _ := NewBottom(1000, 0)
	for _, p := range pairs {
		// s above both sizes: the estimate is the exact Jaccard.
		if got := EstimateBottom(b.Sketch(nil, p.a), b.Sketch(nil, p.b), b.S()); math.Abs(got-p.j) > 1e-12 {
			t.Fatalf("EstimateBottom with large s = %v, want exact %v", got, p.j)
		}
	}
	if got := EstimateBottom(nil, nil, 5); got != 1 {
		t.Errorf("EstimateBottom(empty, empty) = %v, want 1", got)
	}
	// Brute-force oracle of the definition for s = 16.
	const s = 16
	var bias float64
	var n int
	for seed := uint64(1); seed <= 30; seed++ {
		b, _ := NewBottom(s, seed)
		for _, p := range pairs[60:] {
			sa, sb := b.Sketch(nil, p.a), b.Sketch(nil, p.b)
			union := append(slices.Clone(sa), sb...)
			slices.Sort(union)
			union = slices.Compact(union)[:min(s, len(slices.Compact(union)))]
			both := 0
			for _, v := range union {
				_, inA := slices.BinarySearch(sa, v)
				_, inB := slices.BinarySearch(sb, v)
				if inA && inB {
					both++
				}
			}
			want := float64(both) / float64(len(union))
			got := EstimateBottom(sa, sb, s)
			if got != want {
				t.Fatalf("EstimateBottom = %v, brute force %v", got, want)
			}
			bias += got - p.j
			n++
		}
	}
	// 900 trials, standard error about sqrt(0.25/16/900) = 0.004.
	if bias /= float64(n); math.Abs(bias) > 0.02 {
		t.Errorf("bottom-16 mean error %+.4f, want |.| <= 0.02", bias)
	}
	// Cardinality: within 30% for s = 256 on a set of 10000.
	r := rand.New(rand.NewPCG(5, 6))
	set := make([]uint64, 10000)
	for i := range set {
		set[i] = r.Uint64()
	}
	b256, _ := NewBottom(256, 0)
	if c := EstimateCardinality(b256.Sketch(nil, set), 256); c < 7000 || c > 13000 {
		t.Errorf("EstimateCardinality = %v, want about 10000", c)
	}
}

// TestSignAllocs proves the signature hot path does not allocate once dst
// has capacity.
func TestSignAllocs(t *testing.T) {
	pairs := loadPairs(t)
	for _, f := range families {
		h, _ := New(Options{Family: f})
		dst := make(Signature, 0, h.NumPerm())
		if n := testing.AllocsPerRun(10, func() {
			for _, p := range pairs {
				dst = h.Sign(dst, p.a)
			}
		}); n != 0 {
			t.Errorf("%s: Sign allocates %v times per run", f, n)
		}
	}
	b, _ := NewBottom(64, 0)
	dst := make([]uint64, 0, 64)
	dst = b.Sketch(dst, pairs[89].a) // warm the scratch
	if n := testing.AllocsPerRun(100, func() { dst = b.Sketch(dst, pairs[70].a) }); n != 0 {
		t.Errorf("Bottom.Sketch allocates %v times per run", n)
	}
}

// TestSIMDMatchesPortable checks the accelerated multiply-shift path (the
// AVX-512 kernel of ms_amd64.s) against the portable one, slot
// for slot, on random sets of every small size. Without the accelerated
// path it checks nothing and says so.
func TestSIMDMatchesPortable(t *testing.T) {
	if !useSIMD {
		t.Skip("no accelerated path on this CPU or build (amd64 with AVX-512 F and DQ, without the purego tag)")
	}
	r := rand.New(rand.NewPCG(7, 8))
	for _, k := range []int{8, 64, 128, 256} {
		h, _ := New(Options{Family: MultiplyShift, NumPerm: k, Seed: uint64(k)})
		for n := 1; n <= 70; n++ {
			set := make([]uint64, n)
			for i := range set {
				set[i] = r.Uint64()
			}
			fast := make(Signature, k)
			if !h.signMultiplyShiftSIMD(fast, set) {
				t.Fatal("accelerated path declined")
			}
			slow := make(Signature, k)
			h.signMultiplyShift(slow, set)
			if !slices.Equal(fast, slow) {
				t.Fatalf("K=%d n=%d: accelerated and portable signatures differ", k, n)
			}
		}
	}
}
