package sketch

import (
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"testing"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
)

// goldenTexts are sketched by TestKeysGolden. The expected values were
// computed by the index's own sketching code (store/sketch.go and the
// SimHash table keys of store/format.go) before that code was replaced
// by this package: stored indexes depend on them.
var goldenTexts = []string{
	"a rose is a rose is a rose, and a flower which is a rose",
	"The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away into the forest.",
	"床前明月光，疑是地上霜。舉頭望明月，低頭思故鄉。",
	"",
	"= = = = = = = = = = = = = = = = = =",
}

type golden struct {
	sig   uint64    // xxh3 of the signature's little-endian slots
	fp    [2]uint64 // Lo, Hi
	keys  uint64    // xxh3 of the keys, little-endian
	nkeys int
	key0  uint64
	empty bool
}

// TestKeysGolden pins signatures, fingerprints and index keys of fixed
// texts: a change here would make every stored index and saved signature
// silently wrong.
func TestKeysGolden(t *testing.T) {
	cases := []struct {
		spec Spec
		want []golden
	}{
		{Spec{}, []golden{
			{sig: 0x2a568e549f94c87b, fp: [2]uint64{0x0, 0x0}, keys: 0x1dc8517ac2489913, nkeys: 13, key0: 0x6971abec992a8cb3, empty: false},
			{sig: 0x6f319cc8fb276027, fp: [2]uint64{0x0, 0x0}, keys: 0xe124190cbc064240, nkeys: 13, key0: 0x2a3a5b1b330a8960, empty: false},
			{sig: 0x7c4c0fd9f2bb7daa, fp: [2]uint64{0x0, 0x0}, keys: 0xaacf18e137cc3606, nkeys: 13, key0: 0x274f6e9df84840a3, empty: false},
			{sig: 0xde679a2671a7d37a, fp: [2]uint64{0x0, 0x0}, keys: 0xd0f8dcb3f600ab14, nkeys: 13, key0: 0x4616270555cf9730, empty: true},
			{sig: 0xde679a2671a7d37a, fp: [2]uint64{0x0, 0x0}, keys: 0xd0f8dcb3f600ab14, nkeys: 13, key0: 0x4616270555cf9730, empty: true},
		}},
		{Spec{Shingle: shingle.Options{Unit: shingle.Char, N: 3}, Threshold: 0.5, MinHash: MinHashSpec{NumPerm: 64, Family: minhash.Permutation}}, []golden{
			{sig: 0xe7be3676af1b65de, fp: [2]uint64{0x0, 0x0}, keys: 0x9d8529eb604bb0d1, nkeys: 11, key0: 0xf0b203961e6cbf9c, empty: false},
			{sig: 0x90cdef559b4be61, fp: [2]uint64{0x0, 0x0}, keys: 0x6fd10632d4dc260d, nkeys: 11, key0: 0x9a113d3d360f251b, empty: false},
			{sig: 0xf50a4555f52bceb0, fp: [2]uint64{0x0, 0x0}, keys: 0xc3a1f7080ac0bac4, nkeys: 11, key0: 0xe36d33894f9be7f, empty: false},
			{sig: 0x2164293a60d148ac, fp: [2]uint64{0x0, 0x0}, keys: 0xe2ca8a2ccedd2368, nkeys: 11, key0: 0xef40439cc4424f02, empty: true},
			{sig: 0x30a9104808f10dd1, fp: [2]uint64{0x0, 0x0}, keys: 0x34c86353d34a6b23, nkeys: 11, key0: 0xe5aa3a1329e79e97, empty: false},
		}},
		{Spec{Method: SimHash, SimHash: SimHashSpec{Weights: WeightCount}}, []golden{
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x51acfd44420622dc, 0x0}, keys: 0x5ed185929bcc8132, nkeys: 10, key0: 0x20622dc, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0xe7b3150fd53d8ba, 0x0}, keys: 0xc4d4cd7684238669, nkeys: 10, key0: 0x153d8ba, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x4514863e7ac98699, 0x0}, keys: 0xddcb50823db97c64, nkeys: 10, key0: 0x2c98699, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x0, 0x0}, keys: 0x86da9cd1ba60ecd5, nkeys: 10, key0: 0x0, empty: true},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x0, 0x0}, keys: 0x86da9cd1ba60ecd5, nkeys: 10, key0: 0x0, empty: true},
		}},
		{Spec{Method: SimHash, SimHash: SimHashSpec{Bits: 128, Distance: 6, Weights: WeightCount}}, []golden{
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x51acfd44420622dc, 0x11a1ce5c8c45eca7}, keys: 0x5c4fabe49b30b1b0, nkeys: 7, key0: 0x1d4b2fb21a0196ca, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0xe7b3150fd53d8ba, 0xf68b47104d991622}, keys: 0x8e883126e9d09232, nkeys: 7, key0: 0x8d5173aef588b807, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x4514863e7ac98699, 0x20187888012471ac}, keys: 0xf185ffdc90af651c, nkeys: 7, key0: 0xa8151b11a9b11087, empty: false},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x0, 0x0}, keys: 0xcba6a1f3cd941766, nkeys: 7, key0: 0x6393d51c06c618dc, empty: true},
			{sig: 0x2d06800538d394c2, fp: [2]uint64{0x0, 0x0}, keys: 0xcba6a1f3cd941766, nkeys: 7, key0: 0x6393d51c06c618dc, empty: true},
		}},
	}
	for _, c := range cases {
		spec, err := c.spec.Resolve()
		if err != nil {
			t.Fatal(err)
		}
		k, err := spec.NewSketcher()
		if err != nil {
			t.Fatal(err)
		}
		var sk Sketch
		for i, txt := range goldenTexts {
			w := c.want[i]
			k.Sketch(&sk, txt)
			if sk.Empty != w.empty {
				t.Errorf("%s %q: empty %v, want %v", spec.Method, txt, sk.Empty, w.empty)
				continue
			}
			if w.empty {
				if keys := spec.AppendKeys(nil, &sk); len(keys) != 0 {
					t.Errorf("%s %q: an empty sketch has %d keys", spec.Method, txt, len(keys))
				}
				continue
			}
			var b []byte
			for _, v := range sk.Sig {
				b = binary.LittleEndian.AppendUint32(b, v)
			}
			if spec.Method == MinHash && xxh3.Hash(b) != w.sig {
				t.Errorf("%s %q: signature %v changed", spec.Method, txt, sk.Sig)
			}
			if sk.FP.Lo != w.fp[0] || sk.FP.Hi != w.fp[1] {
				t.Errorf("%s %q: fingerprint %#x %#x, want %#x %#x", spec.Method, txt, sk.FP.Lo, sk.FP.Hi, w.fp[0], w.fp[1])
			}
			keys := spec.AppendKeys(nil, &sk)
			var kb []byte
			for _, key := range keys {
				kb = binary.LittleEndian.AppendUint64(kb, key)
			}
			if len(keys) != w.nkeys || spec.NumKeys() != w.nkeys || keys[0] != w.key0 || xxh3.Hash(kb) != w.keys {
				t.Errorf("%s %q: %d keys (NumKeys %d) starting %#x, want %d starting %#x (or their hash changed)",
					spec.Method, txt, len(keys), spec.NumKeys(), keys[0], w.nkeys, w.key0)
			}
		}
	}
}

// TestHashGolden pins the content hashes of Exact and KSentence.
func TestHashGolden(t *testing.T) {
	for _, c := range []struct {
		spec Spec
		txt  string
		want string
		key  uint64
	}{
		{Spec{Method: Exact}, "Hello,   World!", "df8d09e93f874900a99b8775cc15b6c7", 0xa99b8775cc15b6c7},
		{Spec{Method: KSentence}, "One sentence here. A second, longer sentence follows it!\nShort.", "f79bacef1cf1a3647213ba5426eac5c6", 0x64a3f11cefac9bf7},
	} {
		k, err := c.spec.NewSketcher()
		if err != nil {
			t.Fatal(err)
		}
		var sk Sketch
		k.Sketch(&sk, c.txt)
		if got := hex.EncodeToString(sk.Hash[:]); got != c.want {
			t.Errorf("%s %q: hash %s, want %s", c.spec.Method, c.txt, got, c.want)
		}
		if keys := k.Spec().AppendKeys(nil, &sk); len(keys) != 1 || keys[0] != c.key {
			t.Errorf("%s %q: keys %#x, want [%#x]", c.spec.Method, c.txt, keys, c.key)
		}
	}
}

// TestLegacyParams: the parameters of a format-2 store index (no version,
// the threshold inside the MinHash section, SimHash weighed by count,
// distance 0 for exact fingerprints) read as a version-1 Spec.
func TestLegacyParams(t *testing.T) {
	legacy := `{"method":"minhash","normalize":{"nfkc":true,"case_fold":true,"whitespace":true,"keep_newlines":false,"punctuation":true,"punctuation_mode":"space","invisible":true,"html":false,"t2s":false,"stop_words":false},"shingle":{"unit":"word","n":3,"seed":7954871460759433265},"minhash":{"num_perm":128,"family":"permutation","seed":7883954017279371313,"bands":16,"rows":8,"threshold":0.8}}`
	var s Spec
	if err := json.Unmarshal([]byte(legacy), &s); err != nil {
		t.Fatal(err)
	}
	want := Spec{Version: 1, Shingle: shingle.Options{N: 3}, Threshold: 0.8, MinHash: MinHashSpec{Family: minhash.Permutation, Bands: 16, Rows: 8}}
	if err := s.Check(want); err != nil {
		t.Errorf("legacy params: %v", err)
	}
	sim := `{"method":"simhash","normalize":{"nfkc":true,"case_fold":true,"whitespace":true,"keep_newlines":false,"punctuation":true,"punctuation_mode":"space","invisible":true,"html":false,"t2s":false,"stop_words":false},"shingle":{"unit":"word","n":5,"seed":7954871460759433265},"simhash":{"bits":64,"distance":0,"seed":8316298481995311153,"blocks":5}}`
	if err := json.Unmarshal([]byte(sim), &s); err != nil {
		t.Fatal(err)
	}
	if s.SimHash.Weights != WeightCount || s.SimHash.MaxDistance() != 0 || s.SimHash.Distance != ExactDistance {
		t.Errorf("legacy simhash params read as %+v", s.SimHash)
	}
	newer := `{"version":2,"method":"exact","normalize":{}}`
	if err := json.Unmarshal([]byte(newer), &s); !errors.Is(err, ErrVersion) {
		t.Errorf("a newer version: %v, want ErrVersion", err)
	}
}
