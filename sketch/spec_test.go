package sketch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/text"
)

// TestDefaults: the zero Spec is the documented default, for every method.
func TestDefaults(t *testing.T) {
	s := Default(MinHash)
	if s.Version != Version || s.Shingle.N != 5 || s.Shingle.Unit != shingle.Word || s.Threshold != 0.8 ||
		s.MinHash.NumPerm != 128 || s.MinHash.Family != minhash.OPH || s.MinHash.Bands != 13 || s.MinHash.Rows != 7 ||
		!reflect.DeepEqual(*s.Normalize, text.DefaultOptions()) {
		t.Errorf("default minhash spec %+v", s)
	}
	h := Default(SimHash)
	if h.SimHash.Bits != 64 || h.SimHash.MaxDistance() != 3 || h.SimHash.Weights != WeightSet || h.SimHash.Blocks != 5 || h.NumKeys() != 10 {
		t.Errorf("default simhash spec %+v", h.SimHash)
	}
	k := Default(KSentence)
	if k.KSentence.K != 3 || !k.Normalize.KeepNewlines || k.Normalize.Punctuation {
		t.Errorf("default ksentence spec %+v %+v", k.KSentence, *k.Normalize)
	}
	for m := range numMethods {
		r := Default(m)
		again, err := r.Resolve()
		if err != nil || again.Check(r) != nil {
			t.Errorf("%s: resolving a resolved spec: %v", m, err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back Spec
		if err := json.Unmarshal(b, &back); err != nil {
			t.Errorf("%s: %s does not read back: %v", m, b, err)
		} else if err := back.Check(r); err != nil {
			t.Errorf("%s: round trip: %v", m, err)
		}
		if got, err := ParseMethod(m.String()); err != nil || got != m {
			t.Errorf("ParseMethod(%s) = %v, %v", m, got, err)
		}
	}
}

// TestResolveErrors: every invalid spec names what is wrong and wraps
// ErrSpec.
func TestResolveErrors(t *testing.T) {
	for _, c := range []struct {
		s    Spec
		want string
	}{
		{Spec{Threshold: 1.5}, "threshold"},
		{Spec{MinHash: MinHashSpec{NumPerm: -1}}, "permutations"},
		{Spec{MinHash: MinHashSpec{Bands: 20, Rows: 8}}, "bands"},
		{Spec{MinHash: MinHashSpec{Family: 9}}, "family"},
		{Spec{Shingle: shingle.Options{N: shingle.MaxN + 1}}, "n-gram"},
		{Spec{Method: SimHash, SimHash: SimHashSpec{Bits: 200}}, "bits"},
		{Spec{Method: SimHash, SimHash: SimHashSpec{Distance: 64}}, "distance"},
		{Spec{Method: SimHash, SimHash: SimHashSpec{Blocks: 2}}, "blocks"},
		{Spec{Method: SimHash, MinHash: MinHashSpec{NumPerm: 64}}, "MinHash parameters"},
		{Spec{Method: Exact, Threshold: 0.5}, "threshold"},
		{Spec{Method: Exact, Shingle: shingle.Options{N: 3}}, "shingle"},
		{Spec{Method: KSentence, KSentence: KSentenceSpec{K: -2}}, "sentences"},
		{Spec{Method: 42}, "unknown method"},
		{Spec{Version: -1}, "version"},
	} {
		_, err := c.s.Resolve()
		if !errors.Is(err, ErrSpec) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want ErrSpec naming %q", c.s, err, c.want)
		}
	}
	if _, err := (Spec{Version: Version + 1}).Resolve(); !errors.Is(err, ErrVersion) {
		t.Errorf("newer version: %v", err)
	}
}

// TestCheck names the first difference.
func TestCheck(t *testing.T) {
	a := Default(MinHash)
	err := a.Check(Spec{MinHash: MinHashSpec{Bands: 16, Rows: 8}})
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "minhash.bands = 13, asked for 16") {
		t.Errorf("Check: %v", err)
	}
	if err := a.Check(Spec{}); err != nil {
		t.Errorf("the zero spec is the default: %v", err)
	}
	// 64-bit seeds are named exactly, and seeds that differ only in
	// their low digits are told apart (as float64 both were 2^63).
	const s1, s2 = 1<<63 + 1, 1<<63 + 2
	b := Default(MinHash)
	b.MinHash.Seed = s1
	c := b
	c.MinHash.Seed = s2
	err = b.Check(c)
	if want := "minhash.seed = 9223372036854775809, asked for 9223372036854775810"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Check seeds %d, %d: %v, want %q", uint64(s1), uint64(s2), err, want)
	}
}

// TestUnmarshalRefuses: malformed stored specs are errors, never panics.
func TestUnmarshalRefuses(t *testing.T) {
	good, _ := json.Marshal(Default(SimHash))
	for _, bad := range []string{
		``, `{}`, `[]`, `{"method":"minhash"}`,
		strings.Replace(string(good), `"bits":64`, `"bits":0`, 1),
		strings.Replace(string(good), `"weights":"set"`, `"weights":"nope"`, 1),
		strings.Replace(string(good), `"method":"simhash"`, `"method":"minhash"`, 1),
		strings.Replace(string(good), `"version":1,`, `"version":1,"extra":2,`, 1),
		strings.Replace(string(good), `"punctuation_mode":"space"`, `"punctuation_mode":"x"`, 1),
		strings.Replace(string(good), `"html":false`, `"html":false,"html_all":false`, 1),
		string(good) + `{}`,
	} {
		var s Spec
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("%s: read without error", bad)
		}
	}
}

// TestHTMLAllJSON: html_all is written with html on only, and a Spec
// written before it (html on, no html_all) reads as the whole-page text
// that the HTML step extracted then.
func TestHTMLAllJSON(t *testing.T) {
	plain, _ := json.Marshal(Default(MinHash))
	if strings.Contains(string(plain), "html_all") {
		t.Errorf("a Spec without HTML writes html_all: %s", plain)
	}
	for _, all := range []bool{false, true} {
		n := text.DefaultOptions()
		n.HTML, n.HTMLAll = true, all
		s := Default(MinHash)
		s.Normalize = &n
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf(`"html":true,"html_all":%v`, all); !strings.Contains(string(b), want) {
			t.Errorf("HTMLAll %v: %s does not contain %s", all, b, want)
		}
		var back Spec
		if err := json.Unmarshal(b, &back); err != nil || back.Normalize.HTMLAll != all || !back.Normalize.HTML {
			t.Errorf("HTMLAll %v: read back %+v, %v", all, back.Normalize, err)
		}
		legacy := strings.Replace(string(b), fmt.Sprintf(`,"html_all":%v`, all), "", 1)
		var old Spec
		if err := json.Unmarshal([]byte(legacy), &old); err != nil || !old.Normalize.HTMLAll {
			t.Errorf("%s: read as %+v, %v, want HTMLAll true", legacy, old.Normalize, err)
		}
	}
}

// TestSimilarity against the exact Jaccard of the shingle sets: the
// MinHash estimate is within 4 standard errors on random pairs (fixed
// seed), the Jaccard method is exact, Duplicate follows the threshold.
func TestSimilarity(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon")
	doc := func(n int) string {
		var b strings.Builder
		for range n {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	spec := Spec{Shingle: shingle.Options{N: 2}}
	k, _ := spec.NewSketcherWith(SketcherOptions{Sets: true})
	jk, _ := Spec{Method: Jaccard, Shingle: shingle.Options{N: 2}}.NewSketcher()
	rs, _ := spec.Resolve()
	rj := jk.Spec()
	for range 200 {
		base := doc(60)
		other := base[:rng.IntN(len(base))] + doc(rng.IntN(30))
		var a, b, ja, jb Sketch
		k.Sketch(&a, base)
		k.Sketch(&b, other)
		jk.Sketch(&ja, base)
		jk.Sketch(&jb, other)
		exact := jaccard.Set(a.Set, b.Set)
		if got, _ := rj.Similarity(&ja, &jb); got != exact {
			t.Fatalf("jaccard %v, want %v", got, exact)
		}
		est, d := rs.Similarity(&a, &b)
		if d != -1 || est < exact-4*0.045 || est > exact+4*0.045 {
			t.Fatalf("estimate %v for J=%v", est, exact)
		}
		if rj.Duplicate(&ja, &jb) != (exact >= 0.8) {
			t.Fatalf("Duplicate at J=%v", exact)
		}
		if !slices.Equal(a.Set, ja.Set) {
			t.Fatal("the sets of minhash and jaccard sketches differ")
		}
	}
	var e Sketch
	k.Sketch(&e, "...")
	if !e.Empty || rs.Duplicate(&e, &e) {
		t.Error("an empty sketch is a duplicate of itself")
	}
}

// TestBinaryRoundTrip for every method, with and without sets.
func TestBinaryRoundTrip(t *testing.T) {
	for m := range numMethods {
		for _, sets := range []bool{false, true} {
			spec := Default(m)
			k, err := spec.NewSketcherWith(SketcherOptions{Sets: sets})
			if err != nil {
				t.Fatal(err)
			}
			for _, txt := range goldenTexts {
				var sk, back Sketch
				k.Sketch(&sk, txt)
				b := spec.AppendBinary([]byte{0xee}, &sk)
				rest, err := spec.DecodeBinary(&back, append(b[1:], 7))
				if err != nil || !slices.Equal(rest, []byte{7}) {
					t.Fatalf("%s %q: %v, rest %v", m, txt, err, rest)
				}
				if back.Empty != sk.Empty || back.FP != sk.FP || back.Hash != sk.Hash ||
					!slices.Equal(back.Sig, sk.Sig) || !slices.Equal(back.Set, sk.Set) {
					t.Fatalf("%s %q: %+v read back as %+v", m, txt, sk, back)
				}
				for cut := range len(b) - 1 {
					if _, err := spec.DecodeBinary(&back, b[1:1+cut]); err == nil && cut < len(b)-1 {
						t.Fatalf("%s %q: truncated to %d bytes decodes", m, txt, cut)
					}
				}
			}
		}
	}
}

// FuzzDecodeBinary: arbitrary bytes never panic, and what decodes
// re-encodes to the same bytes.
func FuzzDecodeBinary(f *testing.F) {
	specs := []Spec{Default(MinHash), Default(SimHash), Default(Exact), Default(Jaccard),
		Default(SimHash)}
	specs[4].SimHash.Bits = 100
	specs[4], _ = specs[4].Resolve()
	for i, s := range specs {
		k, _ := s.NewSketcherWith(SketcherOptions{Sets: true})
		var sk Sketch
		k.Sketch(&sk, goldenTexts[i%len(goldenTexts)])
		f.Add(uint8(i), s.AppendBinary(nil, &sk))
	}
	f.Fuzz(func(t *testing.T, which uint8, b []byte) {
		s := specs[int(which)%len(specs)]
		var sk Sketch
		rest, err := s.DecodeBinary(&sk, b)
		if err != nil {
			return
		}
		again := s.AppendBinary(nil, &sk)
		if string(again) != string(b[:len(b)-len(rest)]) {
			t.Fatalf("%x decodes to %+v, which encodes to %x", b, sk, again)
		}
	})
}
