package store

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// TestWriteChunksEqualsSequential checks that a check-and-add Write given
// its documents in chunks, while another writer adds documents between
// them, decides exactly as the same documents sent one by one after that
// writer's: a document is checked against the index, the documents added
// since the Write began, and those of its own earlier chunks (near
// duplicates and repeated ids across chunks). The add Write is checked
// the same way against AddBatch.
func TestWriteChunksEqualsSequential(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		t.Run(m.String(), func(t *testing.T) {
			a, b := mustCreate(t, sketch.Default(m)), mustCreate(t, sketch.Default(m))
			sk, _ := a.NewSketcher()
			docs := sketchDocs(t, a, testCorpus(12, 400))
			docs = append(docs, docs[150], Doc{ID: "empty", Sketch: sk.Sketch("")}, Doc{ID: "", Sketch: docs[3].Sketch})
			for _, s := range []*Store{a, b} {
				if _, err := s.AddBatch(docs[:100]); err != nil {
					t.Fatal(err)
				}
			}
			// Added by another writer while the Write is under way: copies
			// of texts of the Write, under other ids.
			var between []Doc
			for _, j := range []int{120, 260, 330} {
				between = append(between, Doc{ID: fmt.Sprint("other", j), Sketch: docs[j].Sketch})
			}
			rest := docs[100:]
			w, err := b.NewWrite(true, 0)
			if err != nil {
				t.Fatal(err)
			}
			for lo, n := 0, 0; lo < len(rest); lo, n = lo+37, n+1 {
				if err := w.Add(rest[lo:min(lo+37, len(rest))]); err != nil {
					t.Fatal(err)
				}
				if n < len(between) {
					if err := b.Add(between[n].ID, between[n].Sketch); err != nil {
						t.Fatal(err)
					}
				}
			}
			if w.Held() == 0 {
				t.Errorf("Held = 0")
			}
			got, err := w.Commit()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Commit(); err == nil {
				t.Errorf("a second Commit succeeded")
			}
			if _, err := a.AddBatch(between); err != nil {
				t.Fatal(err)
			}
			dups, within := 0, 0
			for i, d := range rest {
				want, err := a.CheckAndAdd(d.ID, d.Sketch, 0)
				if (err == nil) != (got[i].Err == nil) || want.Added != got[i].Added ||
					!reflect.DeepEqual(want.Matches, got[i].Matches) {
					t.Fatalf("doc %d (%s): chunked %+v, one by one %+v (%v)", i, d.ID, got[i], want, err)
				}
				if len(want.Matches) > 0 {
					dups++
					if id := want.Matches[0].ID; id[0] == 't' && id > "t100" {
						within++
					}
				}
			}
			if dups < 30 || within < 10 || a.Len() != b.Len() {
				t.Fatalf("%d duplicates (%d within the Write), %d and %d documents", dups, within, a.Len(), b.Len())
			}

			// Add: in chunks as in one AddBatch.
			c, d := mustCreate(t, sketch.Default(m)), mustCreate(t, sketch.Default(m))
			want, err := c.AddBatch(docs)
			if err != nil {
				t.Fatal(err)
			}
			w, err = d.NewWrite(false, 0)
			if err != nil {
				t.Fatal(err)
			}
			for lo := 0; lo < len(docs); lo += 50 {
				if err := w.Add(docs[lo:min(lo+50, len(docs))]); err != nil {
					t.Fatal(err)
				}
			}
			if got, err = w.Commit(); err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) || c.Len() != d.Len() {
				t.Fatalf("chunked add %v, AddBatch %v", got, want)
			}
			for _, doc := range docs[:5] {
				if ms, err := d.Query(nil, doc.Sketch, 0); err != nil || len(ms) == 0 {
					t.Fatalf("Query(%s) after a chunked add = %v, %v", doc.ID, ms, err)
				}
			}
		})
	}
}
