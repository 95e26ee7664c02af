package store

import (
	"encoding/json"
	"github.com/neardup/neardup/sketch"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// legacyDir holds an index made by the code before the MinHash defaults
// were shared with dedup (word 3-shingles, 16x8 bands; issue 12 item 5),
// and legacyGolden its answers to legacyQueries, recorded by that code.
// `NEARDUP_MAKE_LEGACY=1 go test -run TestLegacyIndex ./store` remakes
// both: never do that once the defaults have changed, or the fixture no
// longer proves anything.
const (
	legacyDir    = "testdata/index-v2-word3-16x8"
	legacyGolden = "testdata/index-v2-word3-16x8.golden.json"
)

// legacyQueries are the query texts: near-duplicates of the indexed texts
// at several distances, so that the banding decides which are found.
func legacyQueries() []string {
	r := rand.New(rand.NewPCG(12, 5))
	docs := testCorpus(7, 60)
	var q []string
	for i, d := range docs {
		if i%3 == 0 {
			q = append(q, strings.Join(mutate(r, strings.Fields(d), 2+i%9), " "))
		}
	}
	return q
}

// An index created before the defaults changed keeps the parameters
// stored in it: it opens with them, read-only and read-write, and answers
// every query exactly as the code that made it did.
func TestLegacyIndex(t *testing.T) {
	if os.Getenv("NEARDUP_MAKE_LEGACY") == "1" {
		makeLegacy(t)
	}
	want, err := os.ReadFile(legacyGolden)
	if err != nil {
		t.Fatal(err)
	}
	for _, ro := range []bool{true, false} {
		dir := t.TempDir()
		if err := os.CopyFS(dir, os.DirFS(legacyDir)); err != nil {
			t.Fatal(err)
		}
		s, err := Open(dir, Options{ReadOnly: ro})
		if err != nil {
			t.Fatal(err)
		}
		p := s.Spec()
		if p.Shingle.N != 3 || p.MinHash.Bands != 16 || p.MinHash.Rows != 8 || p.MinHash.NumPerm != 128 || p.Threshold != 0.8 {
			t.Errorf("read-only %v: stored parameters %+v, want word 3-grams, 16x8 of 128, 0.8", ro, p)
		}
		got := legacyAnswers(t, s)
		s.Close()
		if string(got) != string(want) {
			t.Errorf("read-only %v: answers differ from %s:\n%s", ro, legacyGolden, got)
		}
	}
}

func legacyAnswers(t *testing.T, s *Store) []byte {
	t.Helper()
	sk, err := s.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	var all [][]Match
	for _, q := range legacyQueries() {
		m, err := s.Query(nil, sk.Sketch(q), 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, m)
	}
	b, err := json.MarshalIndent(all, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

func makeLegacy(t *testing.T) {
	if err := os.RemoveAll(legacyDir); err != nil {
		t.Fatal(err)
	}
	p := sketch.Default(sketch.MinHash)
	if p.Shingle.N != 3 || p.MinHash.Bands != 16 {
		t.Fatalf("the defaults are no longer the legacy ones (%+v): the fixture must come from the old code", p)
	}
	s, err := Create(legacyDir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	for i, d := range testCorpus(7, 60) {
		if err := s.Add("d"+string(rune('A'+i/26))+string(rune('a'+i%26)), sk.Sketch(d)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	b := legacyAnswers(t, s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(legacyDir, "LOCK"))
	if err := os.WriteFile(legacyGolden, b, 0o644); err != nil {
		t.Fatal(err)
	}
}
