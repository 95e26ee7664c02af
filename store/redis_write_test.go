package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neardup/neardup/internal/redistest"
	"github.com/neardup/neardup/sketch"
)

// randomBatches makes n batches of documents drawn from docs with
// replacement (the same text again, within a batch and across batches),
// under fresh ids mostly, an id of the same batch or an earlier one at
// times, and now and then an empty document or an invalid id.
func randomBatches(rng *rand.Rand, docs []Doc, empty sketch.Sketch, n int) [][]Doc {
	var batches [][]Doc
	var ids []string
	for b := range n {
		batch := make([]Doc, 1+rng.IntN(300))
		for i := range batch {
			d := Doc{ID: fmt.Sprintf("b%d-%d", b, i), Sketch: docs[rng.IntN(len(docs))].Sketch}
			switch x := rng.IntN(100); {
			case x < 6 && len(ids) > 0:
				d.ID = ids[rng.IntN(len(ids))] // repeated id
			case x < 8:
				d.Sketch = empty
			case x < 9:
				d.ID = ""
			}
			ids = append(ids, d.ID)
			batch[i] = d
		}
		batches = append(batches, batch)
	}
	return batches
}

// chunkedWrite writes batch through ix's BatchWrite in chunks of random
// sizes.
func chunkedWrite(t *testing.T, rng *rand.Rand, ix Index, batch []Doc, check bool, limit int) []Result {
	t.Helper()
	w, err := ix.NewBatchWrite(check, limit)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < len(batch); {
		hi := min(lo+1+rng.IntN(64), len(batch))
		if err := w.Add(batch[lo:hi]); err != nil {
			t.Fatal(err)
		}
		lo = hi
	}
	if len(batch) > 0 && w.Held() == 0 {
		t.Errorf("Held = 0 after %d documents", len(batch))
	}
	rs, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(); err == nil {
		t.Errorf("a second Commit succeeded")
	}
	return rs
}

// TestRedisWriteEqualsEmbedded sends random batches (near and exact
// duplicates within and across batches, repeated ids, empty documents,
// invalid ids) as chunked check-and-add and add writes to Redis (a server,
// a cluster in the one-slot and in the spread layout) and to the embedded
// store, whose CheckAndAddBatch and AddBatch of the whole batch are the
// oracle: every result, matches included, is the same, and so is every
// document's answer to Query afterwards.
func TestRedisWriteEqualsEmbedded(t *testing.T) {
	srv, cl := redistest.Server(t), redistest.Cluster(t)
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		name := "rw-" + m.String()
		targets := map[string]string{
			"server":          srv.URL(name),
			"cluster-oneslot": cl.URL(name),
			"cluster-spread":  cl.URL(name+"-s") + "&layout=spread",
		}
		for target, url := range targets {
			t.Run(m.String()+"/"+target, func(t *testing.T) {
				p := sketch.Default(m)
				emb := mustCreate(t, p)
				red := mustCreateRedis(t, url, p)
				sk, _ := emb.NewSketcher()
				docs := sketchDocs(t, emb, testCorpus(31, 600))
				rng := rand.New(rand.NewPCG(7, uint64(m)))
				batches := randomBatches(rng, docs, sk.Sketch(""), 8)
				var dups, within, dupIDs int
				for b, batch := range batches {
					check, limit := b%4 != 3, b%3
					var want []Result
					var err error
					if check {
						want, err = emb.CheckAndAddBatch(batch, limit)
					} else {
						want, err = emb.AddBatch(batch)
					}
					if err != nil {
						t.Fatal(err)
					}
					got := chunkedWrite(t, rng, red, batch, check, limit)
					compareResults(t, want, got)
					for _, r := range want {
						dups += min(len(r.Matches), 1)
						if len(r.Matches) > 0 && strings.HasPrefix(r.Matches[0].ID, fmt.Sprintf("b%d-", b)) {
							within++
						}
						if errors.Is(r.Err, ErrDuplicateID) {
							dupIDs++
						}
					}
				}
				// The batches must exercise what they are for.
				if dups < 100 || within < 20 || dupIDs < 10 {
					t.Fatalf("%d duplicates (%d within their batch), %d repeated ids", dups, within, dupIDs)
				}
				t.Logf("%d duplicates (%d within their batch), %d repeated ids", dups, within, dupIDs)
				if emb.Len() != red.Len() {
					t.Fatalf("%d documents in Redis, %d embedded", red.Len(), emb.Len())
				}
				for _, d := range docs[:100] {
					want, err1 := emb.Query(nil, d.Sketch, 0)
					got, err2 := red.Query(nil, d.Sketch, 0)
					if err1 != nil || err2 != nil {
						t.Fatal(err1, err2)
					}
					compareResults(t, []Result{{Matches: want}}, []Result{{Matches: got}})
				}
			})
		}
	}
}
