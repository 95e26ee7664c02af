package simhash

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSeed004 checks the worked example of seed 004: weights 5, 2, 3, 1, 4
// on 6-bit hashes, sums [15,-7,-1,3,5,15] (leftmost bit first), and the
// fingerprint 100111 (the article prints "115" by mistake).
func TestSeed004(t *testing.T) {
	h, err := New(Options{Bits: 6})
	if err != nil {
		t.Fatal(err)
	}
	hashes := []uint64{0b100101, 0b101011, 0b100111, 0b101111, 0b111011}
	weights := []float64{5, 2, 3, 1, 4}
	for i := range hashes {
		h.AddHash(Fingerprint{Lo: hashes[i]}, weights[i])
	}
	sums := h.AppendSums(nil)
	slices.Reverse(sums) // bit 0 first → leftmost bit first
	if want := []float64{15, -7, -1, 3, 5, 15}; !slices.Equal(sums, want) {
		t.Errorf("sums = %v, want %v", sums, want)
	}
	if got := h.Sum(); got != (Fingerprint{Lo: 0b100111}) {
		t.Errorf("fingerprint = %06b, want 100111", got.Lo)
	}
}

// TestSeed001Distance checks seed 001: distance(1011101, 1001001) = 2.
func TestSeed001Distance(t *testing.T) {
	a, b := Fingerprint{Lo: 0b1011101}, Fingerprint{Lo: 0b1001001}
	if d := a.Distance(b); d != 2 {
		t.Errorf("Distance(1011101, 1001001) = %d, want 2", d)
	}
	x := Fingerprint{Hi: 0xff00, Lo: 1}
	y := Fingerprint{Hi: 0x0f00, Lo: 0}
	if d := x.Distance(y); d != 5 {
		t.Errorf("Distance(%v, %v) = %d, want 5", x, y, d)
	}
}

// reference is the textbook SimHash by count: for every feature and bit,
// +1 or -1, then the sign.
func reference(h *Hasher, features []uint64) Fingerprint {
	v := make([]int, h.Bits())
	for _, x := range features {
		fh := h.FeatureHash(x)
		for i := range v {
			if fh.Bit(i) == 1 {
				v[i]++
			} else {
				v[i]--
			}
		}
	}
	var fp Fingerprint
	for i, s := range v {
		if s > 0 {
			if i >= 64 {
				fp.Hi |= 1 << uint(i-64)
			} else {
				fp.Lo |= 1 << uint(i)
			}
		}
	}
	return fp
}

func randomFeatures(r *rand.Rand, n, vocab int) []uint64 {
	f := make([]uint64, n)
	for i := range f {
		f[i] = uint64(r.IntN(vocab))
	}
	return f
}

// TestCountMatchesReference checks the SWAR count path against the
// textbook loop, across the 255-feature flush boundary and for every kind
// of size.
func TestCountMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, nbits := range []int{1, 6, 63, 64, 65, 100, 128} {
		h, err := New(Options{Bits: nbits, Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{0, 1, 2, 254, 255, 256, 511, 1000, 3000} {
			f := randomFeatures(r, n, 50)
			got := h.Hash(f)
			if want := reference(h, f); got != want {
				t.Errorf("bits=%d n=%d: Hash = %x/%x, want %x/%x", nbits, n, got.Hi, got.Lo, want.Hi, want.Lo)
			}
			// The same features added one by one with weight 1.
			h.Reset()
			for _, x := range f {
				h.Add(x, 1)
			}
			if got2 := h.Sum(); got2 != got {
				t.Errorf("bits=%d n=%d: Add(x, 1) gives %x/%x, AddFeatures %x/%x", nbits, n, got2.Hi, got2.Lo, got.Hi, got.Lo)
			}
			// Mixed: half by count, half weighted.
			h.Reset()
			h.AddFeatures(f[:n/2])
			for _, x := range f[n/2:] {
				h.Add(x, 1)
			}
			if got3 := h.Sum(); got3 != got {
				t.Errorf("bits=%d n=%d: mixed paths give %x/%x, want %x/%x", nbits, n, got3.Hi, got3.Lo, got.Hi, got.Lo)
			}
		}
	}
}

// TestFeatureHashUniform checks that every bit of the feature hash is 1
// for half of the features, even for consecutive small ids (the biased
// input seed 002 warns about): 200000 features, tolerance 0.01 (about 9
// standard deviations).
func TestFeatureHashUniform(t *testing.T) {
	h, _ := New(Options{Bits: 128})
	var ones [128]int
	const n = 200000
	for x := range uint64(n) {
		fh := h.FeatureHash(x)
		for i := range 128 {
			ones[i] += int(fh.Bit(i))
		}
	}
	for i, c := range ones {
		if p := float64(c) / n; p < 0.49 || p > 0.51 {
			t.Errorf("bit %d is 1 in %.4f of feature hashes, want 0.5±0.01", i, p)
		}
	}
	// Fingerprints of random documents are balanced too. (With an odd
	// number of unit weights no bit sum can be 0; ties give 0 and bias
	// short documents with an even count.)
	r := rand.New(rand.NewPCG(3, 4))
	var fpOnes [64]int
	const docs = 20000
	h64, _ := New(Options{})
	for range docs {
		fp := h64.Hash(randomFeatures(r, 21, 1<<30))
		for i := range 64 {
			fpOnes[i] += int(fp.Bit(i))
		}
	}
	for i, c := range fpOnes {
		if p := float64(c) / docs; p < 0.47 || p > 0.53 {
			t.Errorf("fingerprint bit %d is 1 in %.4f of documents, want 0.5±0.03", i, p)
		}
	}
}

func TestTFIDF(t *testing.T) {
	var b IDFBuilder
	docs := [][]uint64{{1, 2, 3, 1}, {1, 4}, {1, 2, 5, 5, 5}}
	for _, d := range docs {
		b.AddDoc(d)
	}
	idf := b.IDF("unit=word n=1")
	if idf.Docs != 3 || idf.DF(1) != 3 || idf.DF(2) != 2 || idf.DF(5) != 1 || idf.DF(9) != 0 || idf.Len() != 5 {
		t.Fatalf("IDF docs=%d df(1,2,5,9)=%d,%d,%d,%d len=%d, want 3, 3,2,1,0, 5",
			idf.Docs, idf.DF(1), idf.DF(2), idf.DF(5), idf.DF(9), idf.Len())
	}
	if w := idf.Weight(1); w != 1 {
		t.Errorf("Weight of a feature in every document = %v, want 1", w)
	}
	if w1, w0 := idf.Weight(5), idf.Weight(9); !(w0 > w1 && w1 > idf.Weight(2)) {
		t.Errorf("weights not decreasing in df: unseen %v, df1 %v, df2 %v", w0, w1, idf.Weight(2))
	}
	h, _ := New(Options{})
	h.AddIDF(docs[2], idf)
	got := h.Sum()
	// Reference: each distinct feature once with weight tf·idf.
	h.Reset()
	h.Add(1, idf.Weight(1))
	h.Add(2, idf.Weight(2))
	h.Add(5, 3*idf.Weight(5))
	if want := h.Sum(); got != want {
		t.Errorf("AddIDF = %x, want %x", got.Lo, want.Lo)
	}
	// LearnIDF and Merge agree with AddDoc.
	learned, err := LearnIDF(func(yield func([]uint64, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}, "m")
	if err != nil || learned.Docs != 3 || learned.DF(2) != 2 {
		t.Errorf("LearnIDF: docs=%d df(2)=%d err=%v", learned.Docs, learned.DF(2), err)
	}
	var b1, b2 IDFBuilder
	b1.AddDoc(docs[0])
	b2.AddDoc(docs[1])
	b2.AddDoc(docs[2])
	b1.Merge(&b2)
	if m := b1.IDF(""); m.Docs != 3 || m.DF(1) != 3 || m.DF(5) != 1 {
		t.Errorf("merged: docs=%d df(1)=%d df(5)=%d, want 3, 3, 1", m.Docs, m.DF(1), m.DF(5))
	}
	wantErr := errors.New("boom")
	if _, err := LearnIDF(func(yield func([]uint64, error) bool) { yield(nil, wantErr) }, ""); !errors.Is(err, wantErr) {
		t.Errorf("LearnIDF error = %v, want %v", err, wantErr)
	}
}

func TestHex(t *testing.T) {
	cases := []struct {
		fp   Fingerprint
		bits int
		hex  string
	}{
		{Fingerprint{Lo: 0x0123456789abcdef}, 64, "0123456789abcdef"},
		{Fingerprint{Hi: 0xfedcba9876543210, Lo: 1}, 128, "fedcba98765432100000000000000001"},
		{Fingerprint{Lo: 0b100111}, 6, "27"},
	}
	for _, c := range cases {
		if got := string(c.fp.AppendHex(nil, c.bits)); got != c.hex {
			t.Errorf("AppendHex(%x/%x, %d) = %q, want %q", c.fp.Hi, c.fp.Lo, c.bits, got, c.hex)
		}
		fp, n, err := ParseHex(c.hex)
		if err != nil || fp != c.fp || n != 4*len(c.hex) {
			t.Errorf("ParseHex(%q) = %x/%x, %d, %v; want %x/%x, %d", c.hex, fp.Hi, fp.Lo, n, err, c.fp.Hi, c.fp.Lo, 4*len(c.hex))
		}
	}
	for _, bad := range []string{"", "xyz", "0123456789abcdef0123456789abcdef0", "12 4"} {
		if _, _, err := ParseHex(bad); err == nil {
			t.Errorf("ParseHex(%q) succeeded, want an error", bad)
		}
	}
}

func TestNewErrors(t *testing.T) {
	for _, b := range []int{-1, 129, 1000} {
		if _, err := New(Options{Bits: b}); !errors.Is(err, ErrBits) {
			t.Errorf("New(Bits: %d) error = %v, want ErrBits", b, err)
		}
	}
}

// TestHashAllocs proves the fingerprint hot paths do not allocate.
func TestHashAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	f := randomFeatures(r, 1000, 1<<20)
	var b IDFBuilder
	b.AddDoc(f[:500])
	idf := b.IDF("")
	for _, nbits := range []int{64, 128} {
		h, _ := New(Options{Bits: nbits})
		if a := testing.AllocsPerRun(100, func() { h.Hash(f) }); a != 0 {
			t.Errorf("bits=%d: Hash allocates %v times, want 0", nbits, a)
		}
		if a := testing.AllocsPerRun(100, func() { h.Reset(); h.AddIDF(f, idf); h.Sum() }); a != 0 {
			t.Errorf("bits=%d: AddIDF+Sum allocates %v times, want 0", nbits, a)
		}
		fp := h.Hash(f)
		buf := make([]byte, 0, 64)
		if a := testing.AllocsPerRun(100, func() { buf = fp.AppendHex(buf[:0], nbits) }); a != 0 {
			t.Errorf("AppendHex allocates %v times, want 0", a)
		}
	}
}

func BenchmarkHash(b *testing.B) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, nbits := range []int{64, 128} {
		for _, n := range []int{100, 1000} {
			f := randomFeatures(r, n, 1<<30)
			h, _ := New(Options{Bits: nbits})
			b.Run(benchName(nbits, n), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(8 * n))
				for b.Loop() {
					h.Hash(f)
				}
			})
		}
	}
}

func BenchmarkHashWeighted(b *testing.B) {
	r := rand.New(rand.NewPCG(9, 10))
	f := randomFeatures(r, 1000, 1<<30)
	h, _ := New(Options{})
	b.ReportAllocs()
	b.SetBytes(8 * 1000)
	for b.Loop() {
		h.Reset()
		for _, x := range f {
			h.Add(x, 1.5)
		}
		h.Sum()
	}
}

func benchName(bits, n int) string {
	return fmt.Sprintf("bits=%d/features=%d", bits, n)
}
