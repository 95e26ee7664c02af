package store

import (
	"runtime"
	"sync"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/sketch"
)

// The chunks of a batch sketched and written a chunk at a time (Pipeline;
// the server's requests): a chunk ends once its texts reach ChunkBytes,
// or at ChunkDocs documents. A MinHash sketch with its shingle set takes
// as much memory as its text or more (8 bytes a distinct shingle), and
// one without a set about 600 bytes (128 slots of 4 bytes), far more than
// a short text; a chunk keeps 32 cores busy (SketchBatch gives a goroutine
// minPerWorker documents or more).
const (
	ChunkBytes = 4 << 20
	ChunkDocs  = 1024
)

// ChunkEnd returns the end of the chunk of n documents that starts at lo:
// the documents from lo on whose texts (size(i) bytes each) together
// first reach ChunkBytes, at most ChunkDocs of them, or the rest.
func ChunkEnd(lo, n int, size func(i int) int) int {
	hi, b := lo, 0
	for hi < n && hi-lo < ChunkDocs && b < ChunkBytes {
		b += size(hi)
		hi++
	}
	return hi
}

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
