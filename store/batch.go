package store

import (
	"runtime"
	"sync"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/sketch"
)

// minPerWorker is the fewest documents a goroutine of SketchBatch sketches:
// below it, starting goroutines costs more than it saves.
const minPerWorker = 32

// SketchBatch sets docs[i].Sketch to the sketch of text(i), for every i,
// on up to workers goroutines (0: GOMAXPROCS; fewer for small batches, one
// per minPerWorker documents), each with a Sketcher from get, handed back
// to put. The signatures are copied into one allocation, owned by docs
// (the shingle sets are already each document's own).
// It is the one parallel sketching of the server's requests and of the
// index commands.
func SketchBatch(docs []Doc, text func(i int) string, workers int, get func() *Sketcher, put func(*Sketcher)) {
	if len(docs) == 0 {
		return
	}
	var sigs []uint32
	k := 0
	one := func(lo, hi int) {
		sk := get()
		defer put(sk)
		for i := lo; i < hi; i++ {
			sketch := sk.Sketch(text(i))
			if sketch.Sig != nil {
				dst := sigs[i*k : (i+1)*k : (i+1)*k]
				copy(dst, sketch.Sig)
				sketch.Sig = minhash.Signature(dst)
			}
			docs[i].Sketch = sketch
		}
	}
	// The slab is sized from the first sketcher's parameters.
	first := get()
	if sp := first.Spec(); sp.Method == sketch.MinHash {
		k = sp.MinHash.NumPerm
		sigs = make([]uint32, len(docs)*k)
	}
	put(first)
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(docs)/minPerWorker)
	if workers <= 1 {
		one(0, len(docs))
		return
	}
	per := (len(docs) + workers - 1) / workers
	var wg sync.WaitGroup
	for lo := 0; lo < len(docs); lo += per {
		wg.Go(func() { one(lo, min(lo+per, len(docs))) })
	}
	wg.Wait()
}
