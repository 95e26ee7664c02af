package cli

import (
	"testing"

	"github.com/neardup/neardup/shingle"
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
