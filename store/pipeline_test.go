package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/neardup/neardup/internal/redistest"
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

// TestPipelineLargeBatch runs batches of several chunks (ChunkEnd)
// through the Pipeline on the embedded store and on Redis, with repeats
// and repeated ids within a chunk and across chunks and batches, and wants
// the results of CheckAndAddBatch and AddBatch of each whole batch on a
// second index of the same backend, and the sketches dropped from docs.
func TestPipelineLargeBatch(t *testing.T) {
	for _, backend := range []string{"embedded", "redis"} {
		for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
			t.Run(backend+"/"+m.String(), func(t *testing.T) {
				p := sketch.Default(m)
				var a, b Index
				if backend == "embedded" {
					a, b = mustCreate(t, p), mustCreate(t, p)
				} else {
					srv := redistest.Server(t)
					a, b = mustCreateRedis(t, srv.URL("pa"), p), mustCreateRedis(t, srv.URL("pb"), p)
				}
				pl, err := NewPipeline(a, 4)
				if err != nil {
					t.Fatal(err)
				}
				sk, _ := b.NewSketcher()
				base := testCorpus(13, 1500)
				rng := rand.New(rand.NewPCG(5, uint64(m)))
				dups, dupIDs := 0, 0
				for n, op := range []Op{OpCheckAndAdd, OpAdd, OpCheckAndAdd} {
					texts := make([]string, 2*ChunkDocs+300)
					docs, whole := make([]Doc, len(texts)), make([]Doc, len(texts))
					for i := range texts {
						texts[i] = base[rng.IntN(len(base))]
						docs[i].ID = fmt.Sprintf("%d-%d", n, i)
						if rng.IntN(50) == 0 {
							docs[i].ID = fmt.Sprintf("%d-%d", rng.IntN(n+1), rng.IntN(i+1))
						}
						whole[i] = Doc{ID: docs[i].ID, Sketch: sk.Sketch(texts[i])}
						whole[i].Sketch.Sig = slices.Clone(whole[i].Sketch.Sig)
					}
					got, err := pl.Run(op, docs, func(i int) string { return texts[i] }, 2)
					if err != nil {
						t.Fatal(err)
					}
					var want []Result
					if op == OpAdd {
						want, err = b.AddBatch(whole)
					} else {
						want, err = b.CheckAndAddBatch(whole, 2)
					}
					if err != nil {
						t.Fatal(err)
					}
					compareResults(t, want, got)
					for i := range docs {
						if docs[i].Sketch.Sig != nil || docs[i].Sketch.Set != nil {
							t.Fatalf("%s: the sketch of document %d is kept", op, i)
						}
						dups += min(len(want[i].Matches), 1)
						if errors.Is(want[i].Err, ErrDuplicateID) {
							dupIDs++
						}
					}
				}
				if a.Len() != b.Len() || dups < 1000 || dupIDs < 50 {
					t.Fatalf("%d and %d documents; %d duplicates, %d repeated ids", a.Len(), b.Len(), dups, dupIDs)
				}
			})
		}
	}
}
