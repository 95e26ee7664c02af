package store

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/neardup/neardup/sketch"
)

// records returns the flags of every record of s, by sequence number.
func recordFlags(t *testing.T, s *Store) []byte {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixRecord}, UpperBound: []byte{prefixRecord + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	var flags []byte
	for ok := it.First(); ok; ok = it.Next() {
		flags = append(flags, it.Value()[0])
	}
	return flags
}

// TestBareRecords: an index of format 5 stores an OPH document without its
// signature (the set gives it), and decides, gets, reopens and removes as
// with it; a sketch whose set does not give its signature keeps it; an
// index of format 4 goes on writing signatures until Upgrade makes it 5,
// and then holds both kinds.
func TestBareRecords(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	base := words(rng, 150)
	texts := []string{strings.Join(base, " "), strings.Join(mutate(rng, base, 1), " "), strings.Join(words(rng, 150), " ")}
	p := sketch.Default(sketch.MinHash)
	dir := t.TempDir()
	s, err := Create(dir, p, Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	sketches := make([]sketch.Sketch, len(texts))
	for i, txt := range texts {
		sketches[i] = sk.Sketch(txt)
		sketches[i].Sig = slices.Clone(sketches[i].Sig)
	}
	if r, err := s.CheckAndAdd("a", sketches[0], 0); err != nil || !r.Added {
		t.Fatalf("a: %+v %v", r, err)
	}
	// A caller's sketch whose set is another text's: stored with its
	// signature, since its set would give another.
	odd := sketch.Sketch{Sig: sketches[2].Sig, Set: sketches[0].Set}
	if err := s.Add("odd", odd); err != nil {
		t.Fatal(err)
	}
	if got := recordFlags(t, s); !slices.Equal(got, []byte{flagSet | flagBare, flagSet}) {
		t.Fatalf("record flags %v, want a bare record then one with its signature", got)
	}
	s.Close()
	if s, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	// The postings were rebuilt from the bare record's set.
	r, err := s.CheckAndAdd("b", sketches[1], 0)
	if err != nil || r.Added || len(r.Matches) != 1 || r.Matches[0].ID != "a" || !r.Matches[0].Exact {
		t.Fatalf("b: %+v %v, want a duplicate of a", r, err)
	}
	for i, id := range []string{"a", "odd"} {
		got, err := s.Get(id)
		want := []sketch.Sketch{sketches[0], odd}[i]
		if err != nil || !slices.Equal(got.Sig, want.Sig) || !slices.Equal(got.Set, want.Set) {
			t.Fatalf("Get(%s): %v, want its sketch", id, err)
		}
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if r, err := s.CheckAndAdd("b", sketches[1], 0); err != nil || !r.Added {
		t.Fatalf("b after removing a: %+v %v", r, err)
	}
	s.Close()

	// Format 4: signatures kept until Upgrade.
	dir = t.TempDir()
	if s, err = Create(dir, p, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(keyVersion, le32(formatSets), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if s, err = Open(dir, Options{NoSync: true}); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add("a", sketches[0]); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(); st.FormatVersion != formatSets || !slices.Equal(recordFlags(t, s), []byte{flagSet}) {
		t.Fatalf("format 4: format %d, record flags %v", st.FormatVersion, recordFlags(t, s))
	}
	if _, err := s.Upgrade(nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("c", sketches[2]); err != nil {
		t.Fatal(err)
	}
	if st, _ := s.Stats(); st.FormatVersion != formatBare || !slices.Equal(recordFlags(t, s), []byte{flagSet, flagSet | flagBare}) {
		t.Fatalf("upgraded: format %d, record flags %v", st.FormatVersion, recordFlags(t, s))
	}
	if r, err := s.CheckAndAdd("b", sketches[1], 0); err != nil || r.Added {
		t.Fatalf("b: %+v %v, want a duplicate of a", r, err)
	}
}
