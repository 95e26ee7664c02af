package store

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// TestRebuildLongRecords: Open rebuilds the postings of an index of long
// documents (records of about 150 KB, their shingle sets) in chunks of
// bounded bytes, not of 4,096 records whatever their size (which held a
// copy of every record of a small index at once: 94 MB for wiki-slice's
// 5,829 articles), and the reopened index, plain or Shared, finds for
// every document what the index found before it was closed.
func TestRebuildLongRecords(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 1))
	var texts []string
	for len(texts) < 48 {
		w := make([]string, 24000)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", r.IntN(1e6))
		}
		texts = append(texts, strings.Join(w, " "), strings.Join(mutate(r, w, 40), " "))
	}
	docs := sketchDocs(t, s, texts)
	for _, d := range docs {
		if err := s.Add(d.ID, d.Sketch); err != nil {
			t.Fatal(err)
		}
	}
	found := func(s *Store) [][]string {
		var out [][]string
		for _, d := range docs {
			ms, err := s.Query(nil, d.Sketch, 0)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, matchIDs(ms))
		}
		return out
	}
	want := found(s)
	for i, ids := range want {
		if len(ids) < 2 {
			t.Fatalf("document %d found %v, want itself and its copy", i, ids)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	var chunks, records, most int
	testHookChunk = func(m, bytes int) { chunks, records, most = chunks+1, records+m, max(most, bytes) }
	defer func() { testHookChunk = nil }()
	for _, opts := range []Options{{}, {ReadOnly: true, Shared: true}} {
		chunks, records, most = 0, 0, 0
		s, err := Open(dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		st, err := s.Stats()
		if err != nil {
			t.Fatal(err)
		}
		// The largest chunk holds at most rebuildChunkBytes and the
		// record that reached it.
		longest := int(st.DiskBytes) / len(docs) * 2
		if records != len(docs) || chunks < 2 || most > rebuildChunkBytes+longest {
			t.Errorf("Open(%+v): %d records rebuilt in %d chunks, the largest of %d bytes; want %d records in chunks of at most %d + %d bytes", opts, records, chunks, most, len(docs), rebuildChunkBytes, longest)
		}
		if got := found(s); !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("Open(%+v) finds %v, the index found %v", opts, got, want)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
