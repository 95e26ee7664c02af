package store

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/neardup/neardup/sketch"
)

// Op is what a Pipeline does with a batch of documents.
type Op uint8

const (
	// OpQuery finds each document's duplicates in the index (Query),
	// adding nothing.
	OpQuery Op = iota
	// OpAdd adds every document (AddBatch).
	OpAdd
	// OpCheckAndAdd adds each document that duplicates nothing in the
	// index or earlier in the batch (CheckAndAddBatch).
	OpCheckAndAdd
)

var opNames = [...]string{OpQuery: "query", OpAdd: "add", OpCheckAndAdd: "check-and-add"}

// String returns query, add or check-and-add.
func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Pipeline is the add and query pipeline of an index: it sketches a batch
// of texts on several goroutines (SketchBatch), then queries the sketches
// on as many goroutines, or adds them in one batch write, a chunk at a
// time. neardup index
// add and index query and the Python binding run their batches through
// it. A Pipeline is safe for concurrent use; its batches share its
// Sketchers.
type Pipeline struct {
	ix        Index
	workers   int
	sketchers chan *Sketcher
}

// NewPipeline returns a Pipeline over ix with workers goroutines (0:
// GOMAXPROCS), each with a Sketcher of the index (Index.NewSketcher: with
// shingle sets when the index keeps them).
func NewPipeline(ix Index, workers int) (*Pipeline, error) {
	if workers < 0 {
		return nil, fmt.Errorf("%w: %d workers", ErrParams, workers)
	}
	if workers == 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &Pipeline{ix: ix, workers: workers, sketchers: make(chan *Sketcher, workers)}
	for range workers {
		sk, err := ix.NewSketcher()
		if err != nil {
			return nil, err
		}
		p.sketchers <- sk
	}
	return p, nil
}

// Sketch sets docs[i].Sketch to the sketch of text(i) for every i, on the
// Pipeline's goroutines (SketchBatch).
func (p *Pipeline) Sketch(docs []Doc, text func(i int) string) {
	SketchBatch(docs, text, p.workers, func() *Sketcher { return <-p.sketchers }, func(sk *Sketcher) { p.sketchers <- sk })
}

// Run sketches docs (the ids are the caller's) and applies op to them,
// returning one Result per document in order: the duplicates found, at
// most limit of them (0: all; OpAdd finds none), and whether it was added.
// For OpAdd and OpCheckAndAdd a document's own error (ErrInvalidID,
// ErrIncompatible, ErrDuplicateID) is its Result.Err and the rest of the
// batch goes on; for OpQuery Result.Err is the query's error, an error of
// the index rather than of the document. The error of Run is one of the
// index as a whole (ErrDiskFull, ErrClosed, ...): nothing of the batch was
// added then.
//
// OpQuery sets docs[i].Sketch to the sketch of text(i). OpAdd and
// OpCheckAndAdd write the batch in one batch write of the index
// (Index.NewBatchWrite: atomic, with the results of AddBatch or
// CheckAndAddBatch of the whole batch), given a chunk at a time
// (ChunkEnd): each chunk is sketched into docs, added, and its sketches
// dropped (docs[i].Sketch is zero afterwards), so that a large batch
// holds the shingle sets of one chunk and the encoded records of all.
func (p *Pipeline) Run(op Op, docs []Doc, text func(i int) string, limit int) ([]Result, error) {
	switch op {
	case OpAdd, OpCheckAndAdd:
		return p.write(op == OpCheckAndAdd, docs, text, limit)
	case OpQuery:
		p.Sketch(docs, text)
		res := make([]Result, len(docs))
		per := (len(docs) + p.workers - 1) / p.workers
		var wg sync.WaitGroup
		for lo := 0; lo < len(docs); lo += per {
			wg.Go(func() {
				for i := lo; i < min(lo+per, len(docs)); i++ {
					res[i].Matches, res[i].Err = p.ix.Query(nil, docs[i].Sketch, limit)
				}
			})
		}
		wg.Wait()
		return res, nil
	}
	return nil, fmt.Errorf("%w: unknown operation %s", ErrParams, op)
}

// write is Run's OpAdd (check unset) and OpCheckAndAdd.
func (p *Pipeline) write(check bool, docs []Doc, text func(i int) string, limit int) ([]Result, error) {
	w, err := p.ix.NewBatchWrite(check, limit)
	if err != nil {
		return nil, err
	}
	for lo := 0; lo < len(docs); {
		hi := ChunkEnd(lo, len(docs), func(i int) int { return len(text(i)) })
		chunk := docs[lo:hi]
		p.Sketch(chunk, func(i int) string { return text(lo + i) })
		if err := w.Add(chunk); err != nil {
			return nil, err
		}
		for i := range chunk {
			chunk[i].Sketch = sketch.Sketch{}
		}
		lo = hi
	}
	return w.Commit()
}
