package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/sketch"
)

// exactJaccard is the Jaccard similarity of two sorted sets.
func exactJaccard(a, b []uint64) float64 {
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			inter++
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 1
	}
	return float64(inter) / float64(union)
}

// TestFamilyAccuracy checks the MinHash families an index can use against
// the exact Jaccard similarity of the shingle sets (the brute-force
// oracle), with the default 128 slots and 16x8 bands: the estimate's
// error, and the candidate rate per similarity bin against the S-curve
// 1 - (1 - s^8)^16. The tolerances are explicit; the seeds are fixed.
func TestFamilyAccuracy(t *testing.T) {
	for _, fam := range []struct {
		name string
		p    sketch.Spec
	}{
		{"oph-default", sketch.Default(sketch.MinHash)},
		{"permutation", sketch.Spec{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Family: minhash.Permutation}}},
	} {
		t.Run(fam.name, func(t *testing.T) {
			s := mustCreate(t, fam.p)
			if fam.name == "oph-default" && s.spec.MinHash.Family != minhash.OPH {
				t.Fatalf("default family %s, want oph", s.spec.MinHash.Family)
			}
			sk, _ := s.NewSketcher()
			setOf := func(txt string) []uint64 {
				h := sk.k.Shingles(nil, string(sk.k.Normalize(nil, txt)))
				slices.Sort(h)
				return slices.Compact(h)
			}
			r := rand.New(rand.NewPCG(21, 22))
			const pairs = 1200
			type bin struct {
				n           int
				cand, wantP float64 // observed candidates, expected
				varSum      float64
			}
			var bins [10]bin
			var absErr, bias, worst float64
			for range pairs {
				base := words(r, 150)
				other := mutate(r, base, r.IntN(45))
				a, b := strings.Join(base, " "), strings.Join(other, " ")
				j := exactJaccard(setOf(a), setOf(b))
				ka := sk.Sketch(a)
				sa := append(minhash.Signature(nil), ka.Sig...)
				kb := sk.Sketch(b)
				est, err := minhash.Estimate(sa, kb.Sig)
				if err != nil {
					t.Fatal(err)
				}
				absErr += math.Abs(est - j)
				bias += est - j
				worst = max(worst, math.Abs(est-j))
				cand := s.isCandidate(sa, kb.Sig)
				p := 1 - math.Pow(1-math.Pow(j, 8), 16)
				bn := &bins[min(int(j*10), 9)]
				bn.n++
				bn.wantP += p
				bn.varSum += p * (1 - p)
				if cand {
					bn.cand++
				}
			}
			absErr /= pairs
			bias /= pairs
			t.Logf("%s: mean |error| %.4f, bias %+.4f, worst %.3f", fam.name, absErr, bias, worst)
			// Standard error at K = 128 is at most 0.044: the mean absolute
			// error of an unbiased estimator is then at most 0.035.
			if absErr > 0.035 || math.Abs(bias) > 0.01 || worst > 0.2 {
				t.Errorf("%s: mean |error| %.4f (max 0.035), bias %+.4f (max 0.01), worst %.3f (max 0.2)", fam.name, absErr, bias, worst)
			}
			checked := 0
			for i, bn := range bins {
				if bn.n < 40 {
					continue
				}
				checked++
				obs, want := bn.cand/float64(bn.n), bn.wantP/float64(bn.n)
				tol := 3*math.Sqrt(bn.varSum)/float64(bn.n) + 0.02
				t.Logf("J in [%.1f, %.1f): %d pairs, candidates %.3f, S-curve %.3f (tolerance %.3f)", float64(i)/10, float64(i+1)/10, bn.n, obs, want, tol)
				if math.Abs(obs-want) > tol {
					t.Errorf("%s: J in [%.1f, %.1f): candidate rate %.3f, S-curve says %.3f (tolerance %.3f)", fam.name, float64(i)/10, float64(i+1)/10, obs, want, tol)
				}
			}
			if checked < 4 {
				t.Fatalf("only %d similarity bins with 40 pairs: the test does not cover the S-curve", checked)
			}
		})
	}
}

// isCandidate tells whether two signatures share a band key.
func (s *Store) isCandidate(a, b minhash.Signature) bool {
	ka, kb := s.bands.AppendKeys(nil, a), s.bands.AppendKeys(nil, b)
	for i := range ka {
		if ka[i] == kb[i] {
			return true
		}
	}
	return false
}

// TestSpecFamily checks how an index's family resolves: zero is OPH,
// a family asked for is kept; a MinHash family is not a SimHash parameter.
func TestSpecFamily(t *testing.T) {
	for _, c := range []struct {
		in   sketch.Spec
		want minhash.Family
		err  bool
	}{
		{sketch.Spec{Method: sketch.MinHash}, minhash.OPH, false},
		{sketch.Spec{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Family: minhash.Permutation}}, minhash.Permutation, false},
		{sketch.Spec{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Family: minhash.MultiplyShift}}, minhash.MultiplyShift, false},
		{sketch.Spec{Method: sketch.SimHash, MinHash: sketch.MinHashSpec{Family: minhash.Permutation}}, 0, true},
	} {
		got, err := resolveSpec(c.in)
		if (err != nil) != c.err || err == nil && got.MinHash.Family != c.want {
			t.Errorf("resolveSpec(%+v) = family %s, %v; want %s, error %v", c.in, got.MinHash.Family, err, c.want, c.err)
			continue
		}
		if err != nil {
			continue
		}
		j, _ := got.MarshalJSON()
		back, err := decodeSpec(j)
		if err != nil || back.MinHash.Family != got.MinHash.Family {
			t.Errorf("stored %s reads back as %s, %v", j, back.MinHash.Family, err)
		}
		if !strings.Contains(string(j), fmt.Sprintf("%q:%q", "family", c.want)) {
			t.Errorf("stored %s does not name family %s", j, c.want)
		}
	}
}
