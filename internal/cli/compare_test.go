package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// TestGramsRehash checks the shingle text compare --explain shows against
// the shingle package: hashing each rebuilt shingle on its own gives the
// hash it stands for.
func TestGramsRehash(t *testing.T) {
	norm, err := text.New(text.DefaultOptions())
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{
		"a rose is a rose is a rose",
		"And God called the light Day, and the darkness he called Night.",
		"起初，神創造天地。 In the beginning",
		"short",
		"",
	}
	for _, unit := range []shingle.Unit{shingle.Word, shingle.Char} {
		for _, n := range []int{1, 2, 3, 5, 9} {
			sh, err := shingle.New(shingle.Options{Unit: unit, N: n})
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range texts {
				s = norm.String(s)
				gs, hs := grams(sh, s)
				if len(gs) != len(hs) {
					t.Fatalf("%v %d-grams of %q: %d texts for %d hashes", unit, n, s, len(gs), len(hs))
				}
				for i, g := range gs {
					one := sh.AppendHashes(nil, g)
					if len(one) != 1 || one[0] != hs[i] {
						t.Errorf("%v %d-gram %d of %q is %q, which hashes to %x, want [%x]", unit, n, i, s, g, one, hs[i])
					}
				}
			}
		}
	}
}

func TestShingleLists(t *testing.T) {
	sh, err := shingle.New(shingle.Options{Unit: shingle.Word, N: 1})
	if err != nil {
		t.Fatal(err)
	}
	shared, onlyA, onlyB := shingleLists(sh, "b a c a d", "a e b e")
	want := [3]string{"[b a]", "[c d]", "[e]"}
	got := [3]string{fmtList(shared), fmtList(onlyA), fmtList(onlyB)}
	if got != want {
		t.Errorf("shingleLists = %v, want %v", got, want)
	}
}

func fmtList(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}

// TestCompareSketchFlags: compare takes the sketch flag group of dedup and
// computes what dedup computes with the same flags: the fingerprint of
// package sketch for the Spec the flags make.
func TestCompareSketchFlags(t *testing.T) {
	a, b := "the cat sat on the mat and then the cat sat again", "the cat sat on a mat and then the dog sat again"
	var out, errOut bytes.Buffer
	args := []string{"compare", "--json", "--ngram", "2", "--num-perm", "64", "--minhash-family", "multiply-shift",
		"--bits", "32", "--weights", "count", "--seed", "7", a, b}
	if code := Main(args, nil, &out, &errOut); code != 0 {
		t.Fatalf("compare: exit %d: %s", code, errOut.String())
	}
	var c comparison
	if err := json.Unmarshal(out.Bytes(), &c); err != nil {
		t.Fatal(err)
	}
	spec := sketch.Spec{Method: sketch.SimHash, Shingle: shingle.Options{N: 2, Seed: 7},
		SimHash: sketch.SimHashSpec{Bits: 32, Weights: sketch.WeightCount, Seed: 7}}
	k, err := spec.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	var sk sketch.Sketch
	k.Sketch(&sk, a)
	if want := string(sk.FP.AppendHex(nil, 32)); c.SimHashA != want || c.SimHashBits != 32 {
		t.Errorf("simhash_a %s (%d bits), want %s (32 bits) as dedup computes it", c.SimHashA, c.SimHashBits, want)
	}
	if c.MinHashNumPerm != 64 || c.MinHashFamily != "multiply-shift" || c.Ngram != 2 {
		t.Errorf("minhash %d slots of %s over %d-grams, want 64 of multiply-shift over 2-grams", c.MinHashNumPerm, c.MinHashFamily, c.Ngram)
	}
	if code := Main([]string{"compare", "--weights", "tfidf", a, b}, nil, &out, &errOut); code != ExitUsage {
		t.Errorf("compare --weights tfidf: exit %d, want %d", code, ExitUsage)
	}
}

// TestCompareInvalidUTF8 gives compare a file that is not valid UTF-8: it
// compared it (the bad bytes read as U+FFFD) where dedup refuses it. It
// must refuse it as dedup does, exit 3, naming the file, the line and the
// first bad byte's place.
func TestCompareInvalidUTF8(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.txt")
	if err := os.WriteFile(bad, []byte("one line\nab\xffcd\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main([]string{"compare", "@" + bad, "hello"}, nil, &out, &errb)
	want := bad + ":2 (offset 9): invalid UTF-8 (byte 0xff at byte 3 of the line)"
	if code != ExitInvalidData || !strings.Contains(errb.String(), want) {
		t.Errorf("compare of invalid UTF-8 = exit %d:\n%s\nwant exit %d and %q", code, errb.String(), ExitInvalidData, want)
	}
	errb.Reset()
	if code := Main([]string{"dedup", bad}, nil, &out, &errb); code != ExitInvalidData || !strings.Contains(errb.String(), bad+":2 (offset 9)") || !strings.Contains(errb.String(), "invalid UTF-8 (byte 0xff at byte 3 of the line)") {
		t.Errorf("dedup of the same file = exit %d:\n%s", code, errb.String())
	}
	// A sequence cut at the end of the file, on its first line: compare
	// says what dedup says.
	cut := filepath.Join(t.TempDir(), "cut.txt")
	if err := os.WriteFile(cut, []byte("a\xe2\x82"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"compare", "@" + cut, "hello"}, {"dedup", cut}} {
		errb.Reset()
		code := Main(args, nil, &out, &errb)
		if msg := errb.String(); code != ExitInvalidData || !strings.Contains(msg, cut+":1 (offset 0)") || !strings.Contains(msg, "invalid UTF-8 (byte 0xe2 at byte 2 of the line)") {
			t.Errorf("%s = exit %d:\n%s\nwant exit %d, line 1 at offset 0, the byte 0xe2 at byte 2", args[0], code, msg, ExitInvalidData)
		}
	}
}

// TestCompareIDsWithCommas: compare --corpus --ids takes ids that hold
// commas (URLs, "Genesis 1:1, KJV"): the comma that splits --ids into two
// ids of the corpus is the one taken. --ids with more than one comma was
// refused ("want two ids separated by one comma"), so such documents could
// not be compared by id at all.
func TestCompareIDsWithCommas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	recs := `{"id":"x,1","text":"alpha beta gamma"}
{"id":"y","text":"alpha beta delta"}
{"id":"p,q","text":"one"}
{"id":"p","text":"two"}
{"id":"q,r","text":"three"}
{"id":"r","text":"four"}
`
	if err := os.WriteFile(path, []byte(recs), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ids, a, b string
		code      int
		msg       string
	}{
		{"x,1,y", "x,1", "y", 0, ""},
		{"y,x,1", "y", "x,1", 0, ""},
		{"y,p", "y", "p", 0, ""},
		{"y,q,r", "y", "q,r", 0, ""},
		{"p,q,r", "", "", 2, `in more than one way: "p" and "q,r", or "p,q" and "r"`},
		{"x,1,zz", "", "", 2, `no comma splits it into two ids of documents in`},
		{"y,zz", "", "", 2, `no document with id "zz" in`},
		{",y", "", "", 2, `want two ids separated by a comma`},
	} {
		code, out, errs := runCLI("compare", "--json", "--corpus", path, "--ids", c.ids)
		if c.code != 0 {
			if code != c.code || !strings.Contains(errs, c.msg) {
				t.Errorf("--ids %q: exit %d, %s; want exit %d and %q", c.ids, code, errs, c.code, c.msg)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, fmt.Sprintf(`"a": %q`, c.a)) || !strings.Contains(out, fmt.Sprintf(`"b": %q`, c.b)) {
			t.Errorf("--ids %q: exit %d, %s%s; want a %q and b %q", c.ids, code, out, errs, c.a, c.b)
		}
	}
}
