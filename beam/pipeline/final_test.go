package pipeline

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
)

// TestJoinCollectStreams: a join's documents come in any order; past
// joinFn.Memory their sketches go to a scratch file, which gives them
// back in the documents' (rank) order, each once, and is removed after.
// Under the limit they stay in memory.
func TestJoinCollectStreams(t *testing.T) {
	const n = 500
	recs := make([]joinRec, n)
	for i := range recs {
		recs[i] = joinRec{Rank: int64(3 * i), Len: int64(i), ID: fmt.Sprintf("d%d", i), Sketch: bytes.Repeat([]byte{byte(i)}, 1+i%37)}
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { recs[i], recs[j] = recs[j], recs[i] })
	iter := func() func(*joinRec) bool {
		next := 0
		return func(r *joinRec) bool {
			if next == len(recs) {
				return false
			}
			*r = recs[next]
			r.Sketch = bytes.Clone(recs[next].Sketch)
			next++
			return true
		}
	}
	for _, mem := range []int64{-1, 1 << 20, 2000, 1} {
		docs, sp, err := (&joinFn{Memory: mem}).collect(iter())
		if err != nil {
			t.Fatal(err)
		}
		if streamed := sp != nil; streamed != (mem == 2000 || mem == 1) {
			t.Fatalf("memory %d: streamed %v", mem, streamed)
		}
		if len(docs) != n {
			t.Fatalf("memory %d: %d documents, want %d", mem, len(docs), n)
		}
		for i, d := range docs {
			want := bytes.Repeat([]byte{byte(i)}, 1+i%37)
			got := d.Sketch
			if sp != nil {
				if got != nil {
					t.Fatalf("memory %d: document %d holds its sketch", mem, i)
				}
				if got, err = sp.next(); err != nil {
					t.Fatal(err)
				}
			}
			if d.Doc != int64(3*i) || d.ID != fmt.Sprintf("d%d", i) || d.Len != i || !bytes.Equal(got, want) {
				t.Fatalf("memory %d: document %d is %+v, sketch %v", mem, i, d, got)
			}
		}
		if sp == nil {
			continue
		}
		if _, err := sp.next(); err == nil {
			t.Errorf("memory %d: a sketch past the last", mem)
		}
		name := sp.f.Name()
		sp.remove()
		if _, err := os.Stat(name); !os.IsNotExist(err) {
			t.Errorf("memory %d: scratch file %s left: %v", mem, name, err)
		}
	}
}
