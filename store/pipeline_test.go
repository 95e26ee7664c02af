package store

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// TestPipeline checks the pipeline against the index's own calls on one
// goroutine: check-and-add on 4 workers keeps and reports what
// CheckAndAdd document by document does on a second index, and a query
// finds what Query finds.
func TestPipeline(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		t.Run(m.String(), func(t *testing.T) {
			texts := append(testCorpus(11, 300), testCorpus(11, 100)...) // 100 exact repeats
			ids := make([]string, len(texts))
			for i := range ids {
				ids[i] = fmt.Sprintf("d%d", i)
			}
			a, b := mustCreate(t, sketch.Default(m)), mustCreate(t, sketch.Default(m))
			pl, err := NewPipeline(a, 4)
			if err != nil {
				t.Fatal(err)
			}
			docs := make([]Doc, len(texts))
			for i := range docs {
				docs[i].ID = ids[i]
			}
			got, err := pl.Run(OpCheckAndAdd, docs, func(i int) string { return texts[i] }, 3)
			if err != nil {
				t.Fatal(err)
			}
			sk, _ := b.NewSketcher()
			for i, txt := range texts {
				want, err := b.CheckAndAdd(ids[i], sk.Sketch(txt), 3)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got[i], want) {
					t.Fatalf("%s: pipeline %+v, CheckAndAdd %+v", ids[i], got[i], want)
				}
				if want.Added && i >= 300 {
					t.Fatalf("%s, a repeat of d%d, was added", ids[i], i-300)
				}
			}
			q := testCorpus(12, 50)
			qd := make([]Doc, len(q))
			res, err := pl.Run(OpQuery, qd, func(i int) string { return q[i] }, 0)
			if err != nil {
				t.Fatal(err)
			}
			for i, txt := range q {
				want, err := b.Query(nil, sk.Sketch(txt), 0)
				if err != nil || res[i].Err != nil || !reflect.DeepEqual(res[i].Matches, want) || res[i].Added {
					t.Fatalf("query %d: pipeline %+v, Query %v, %v", i, res[i], want, err)
				}
			}
		})
	}
}

func TestPipelineErrors(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.MinHash))
	if _, err := NewPipeline(s, -1); !errors.Is(err, ErrParams) {
		t.Errorf("NewPipeline(-1 workers) = %v, want ErrParams", err)
	}
	pl, err := NewPipeline(s, 0)
	if err != nil {
		t.Fatal(err)
	}
	docs := []Doc{{ID: "a"}, {ID: "a"}}
	res, err := pl.Run(OpAdd, docs, func(int) string { return "the same text twice over" }, 0)
	if err != nil || !res[0].Added || !errors.Is(res[1].Err, ErrDuplicateID) {
		t.Errorf("adding one id twice: %+v, %v", res, err)
	}
	if _, err := pl.Run(Op(9), docs, func(int) string { return "x" }, 0); !errors.Is(err, ErrParams) {
		t.Errorf("Run(op 9) = %v, want ErrParams", err)
	}
}
