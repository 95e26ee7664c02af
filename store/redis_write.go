package store

import (
	"context"
	"fmt"
	"slices"

	"github.com/neardup/neardup/sketch"
)

// A RedisWrite is Write for a Redis index: one batch write (what AddBatch
// and CheckAndAddBatch do) given its documents a chunk at a time, so that
// the caller holds the sketches of one chunk, not of the whole batch. Add
// validates a chunk, codes each document's record and band or table keys
// (what the add script or the spread protocol sends) and, when the write
// checks, verifies the chunk's documents against those of the write's
// earlier chunks and its own, after which the chunk's sketches, shingle
// sets included, are no longer needed. Commit sends the documents of
// every chunk to Redis as AddBatch or CheckAndAddBatch of all the chunks
// in order would, with the same results and the same atomicity: in the
// one-slot layout one add script for the whole batch (then, for the
// documents that share a key with the index, their candidates' records
// and one script for those without a duplicate), in the spread layout the
// protocol of redis_spread.go. Nothing is written before Commit.
//
// Until Commit a RedisWrite holds its documents' records and keys (Held)
// and, when it checks in the one-slot layout, an index of its documents by
// key (about 64 bytes a key, not in Held: the embedded store's Write
// builds the same index in its Commit); Commit builds the script's arguments for
// every document (each key's bucket and field, about 50 bytes a key) and
// verifies the documents held by the script a chunk at a time. A
// RedisWrite is not safe for concurrent use.
type RedisWrite struct {
	r       *Redis
	check   bool
	limit   int
	err     error // Add's error, which Commit returns
	results []Result
	docs    []pendingDoc
	buf     chunkBuf
	held    int
	// preds are, per document (check), the earlier documents of the
	// write it duplicates, with the match each gives (predMatches);
	// byKey are the documents so far by key.
	preds       [][]int
	predMatches [][]Match
	byKey       map[pendingKey][]int
	dec         record // an earlier chunk's record, decoded
	own         record // the record of the document Commit verifies
}

// NewWrite returns an empty batch write: an add, or a check-and-add when
// check is set, whose results list at most limit duplicates a document
// (0: all).
func (r *Redis) NewWrite(check bool, limit int) (*RedisWrite, error) {
	if r.ronly {
		return nil, fmt.Errorf("store: %s is open read-only", r.loc)
	}
	return &RedisWrite{r: r, check: check, limit: limit}, nil
}

// NewBatchWrite is NewWrite as a BatchWrite.
func (r *Redis) NewBatchWrite(check bool, limit int) (BatchWrite, error) {
	return r.NewWrite(check, limit)
}

// Held returns the bytes of records and keys the RedisWrite holds: about
// what its memory grows by with each Add, beyond the results.
func (w *RedisWrite) Held() int { return w.held }

// Add adds a chunk of documents to the RedisWrite, after those of the
// chunks before it. It keeps the ids (strings, which are not copied) but
// no other memory of docs. An error is one of the index as a whole (a
// closed index, a record that does not decode); Commit then returns it
// and writes nothing.
func (w *RedisWrite) Add(docs []Doc) error {
	if w.err != nil {
		return w.err
	}
	r := w.r
	lo := len(w.docs)
	w.results = append(w.results, make([]Result, len(docs))...)
	results := w.results[lo:]
	r.validDocs(docs, results)
	var held int
	w.docs, held = r.encodeChunk(w.docs, &w.buf, docs, results, nil)
	w.held += held
	if !w.check || r.spread {
		// The spread protocol compares a batch's documents itself, in
		// each attempt, from their records.
		return nil
	}
	sc, err := r.acquire()
	if err != nil {
		w.err = err
		return err
	}
	defer r.release(sc)
	w.preds = append(w.preds, make([][]int, len(docs))...)
	w.predMatches = append(w.predMatches, make([][]Match, len(docs))...)
	if w.byKey == nil {
		w.byKey = map[pendingKey][]int{}
	}
	defer func() { sc.rec = record{} }() // it may alias docs
	var cand []int
	for c := range docs {
		i := lo + c
		if results[c].Err != nil {
			continue
		}
		cand = cand[:0]
		for t, k := range w.docs[i].keys {
			pk := pendingKey{t, k}
			cand = append(cand, w.byKey[pk]...)
			w.byKey[pk] = append(w.byKey[pk], i)
		}
		if len(cand) == 0 {
			continue
		}
		slices.Sort(cand)
		cand = slices.Compact(cand)
		sc.keys = append(sc.keys[:0], w.docs[i].keys...)
		for _, j := range cand {
			// A document of this chunk is compared as its record would
			// be; one of an earlier chunk by its record.
			if j >= lo {
				sc.rec = batchRecord(&docs[j-lo], r.sets.Load())
			} else {
				sc.rec = w.dec // its buffers, never docs' memory
				err := r.readRecord(&sc.rec, w.docs[j].rec)
				w.dec = sc.rec
				if err != nil {
					w.err = err
					return err
				}
			}
			n := len(w.predMatches[i])
			if w.predMatches[i], err = r.verify(w.predMatches[i], sc, &docs[c].Sketch, false); err != nil {
				w.err = err
				return err
			}
			if len(w.predMatches[i]) > n {
				w.preds[i] = append(w.preds[i], j)
			}
		}
	}
	return nil
}

// Commit writes the documents of the RedisWrite's chunks and returns one
// Result per document, in order, as AddBatch or CheckAndAddBatch does.
// The RedisWrite is spent then.
func (w *RedisWrite) Commit() ([]Result, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.err = fmt.Errorf("%w: a Write is committed once", ErrParams)
	defer func() { w.docs, w.preds, w.predMatches, w.byKey = nil, nil, nil, nil }()
	r := w.r
	var todo []int // documents still to add, in order
	for i := range w.docs {
		if w.results[i].Err == nil {
			todo = append(todo, i)
		}
	}
	if r.spread {
		return r.spreadWrite(w.docs, w.results, todo, w.check, w.limit, w.ownSketch)
	}
	return w.commit(todo)
}

// ownSketch returns the sketch of d decoded from its record (w.own), as
// the index would store and verify it.
func (w *RedisWrite) ownSketch(d *pendingDoc) (*sketch.Sketch, error) {
	if err := w.r.readRecord(&w.own, d.rec); err != nil {
		return nil, err
	}
	sk, err := recordSketch(&w.own)
	if err != nil {
		return nil, err
	}
	return &sk, nil
}

// heldChunk is how many documents held by the add script Commit verifies
// at a time (one round trip for their candidates' records each).
const heldChunk = 1024

// commit is Commit in the one-slot layout. Every document goes to the
// add script with the snapshot 0: one that shares no key with the index
// (the common case) is added in that one round trip; the others are held
// and come back with their candidates, verified here, and the documents
// without a duplicate are sent again with a higher snapshot.
func (w *RedisWrite) commit(todo []int) ([]Result, error) {
	r := w.r
	sc, err := r.acquire()
	if err != nil {
		return nil, err
	}
	defer r.release(sc)
	ctx := context.Background()
	docs, results, limit := w.docs, w.results, w.limit
	snaps := make([]uint64, len(docs))
	mode := "a"
	preds, predMatches := w.preds, w.predMatches
	if preds == nil {
		preds, predMatches = make([][]int, len(docs)), make([][]Match, len(docs))
	}
	var idDeps [][]int // the earlier documents of the batch with the same id
	if w.check {
		mode = "c"
		idDeps = sameIDs(docs, todo)
	}
	pending := make([]bool, len(docs))
	for _, i := range todo {
		pending[i] = true
	}
	// dupOf is the answer of a document one of whose earlier duplicates in
	// the batch was added: those matches.
	dupOf := func(i int) []Match {
		var ms []Match
		for k, p := range preds[i] {
			if results[p].Added {
				ms = append(ms, predMatches[i][k])
			}
		}
		return sortLimit(ms, 0, limit)
	}
	var args []any
	var field []byte
	pos := make([]int, len(docs)) // position (1-based) of a document in this run's script call
	for len(todo) > 0 {
		// A document whose earlier duplicates in the batch are all
		// answered, one of them added, is answered without Redis.
		kept := todo[:0]
		for _, i := range todo {
			added, waiting := false, false
			for _, j := range preds[i] {
				added = added || results[j].Added
				waiting = waiting || pending[j]
			}
			if added && !waiting {
				results[i].Matches = dupOf(i)
				pending[i] = false
				docs[i].rec = nil
				continue
			}
			kept = append(kept, i)
		}
		todo = kept
		if len(todo) == 0 {
			break
		}
		args = append(args[:0], mode, len(todo))
		var deps []int
		for p, i := range todo {
			pos[i] = p + 1
			d := &docs[i]
			// The pending documents i depends on: its near-duplicates
			// (their positions), then those with only its id (negated).
			dup := 0
			deps = deps[:0]
			for _, j := range preds[i] {
				if results[j].Added {
					dup = 1
				} else if pending[j] {
					deps = append(deps, pos[j])
				}
			}
			if idDeps != nil {
				for _, j := range idDeps[i] {
					if pending[j] && !slices.Contains(preds[i], j) {
						deps = append(deps, -pos[j])
					}
				}
			}
			args = append(args, snaps[i], d.id, r.idBucket(d.id), d.rec, dup, len(deps))
			for _, p := range deps {
				args = append(args, p)
			}
			args = append(args, len(d.keys))
			for t, k := range d.keys {
				field = postingField(field[:0], t, k)
				args = append(args, r.postingBucket(t, k), string(field))
			}
		}
		reply, err := r.add.Run(ctx, r.c, []string{r.metaKey()}, args...).Slice()
		clear(args) // the script's arguments go
		if err != nil {
			return nil, r.redisErr(err)
		}
		if len(reply) != 3 {
			return nil, fmt.Errorf("store: %s: add script replied %d elements", r.loc, len(reply))
		}
		answers, _ := reply[0].([]any)
		_, ok1 := reply[1].(int64)
		last, ok2 := reply[2].(int64)
		if len(answers) != len(todo) || !ok1 || !ok2 {
			return nil, fmt.Errorf("store: %s: add script replied for %d of %d documents", r.loc, len(answers), len(todo))
		}
		var held []int
		cands := make(map[int][]uint64)
		for j, v := range answers {
			i := todo[j]
			pos[i] = 0
			switch v := v.(type) {
			case int64:
				results[i].Added = true
				results[i].Matches = []Match{}
			case string:
				switch v {
				case "dupid":
					results[i].Err = fmt.Errorf("%w: %q", ErrDuplicateID, docs[i].id)
				case "dup":
					results[i].Matches = dupOf(i)
				default:
					return nil, fmt.Errorf("store: %s: add script replied %q", r.loc, v)
				}
			case []any:
				if !w.check {
					return nil, fmt.Errorf("store: %s: add script held a document without a check", r.loc)
				}
				seqs := make([]uint64, 0, len(v))
				for _, s := range v {
					n, ok := s.(int64)
					if !ok {
						return nil, fmt.Errorf("store: %s: add script replied %T for a sequence number", r.loc, s)
					}
					seqs = append(seqs, uint64(n))
				}
				slices.Sort(seqs)
				cands[i] = slices.Compact(seqs)
				held = append(held, i)
				continue
			default:
				return nil, fmt.Errorf("store: %s: add script replied %T", r.loc, v)
			}
			pending[i] = false
			docs[i].rec = nil // answered: its record goes
		}
		if len(held) == 0 {
			break
		}
		// Verify the held documents against the documents committed since
		// their snapshots, a chunk at a time, then send those without a
		// duplicate again (in the batch's order).
		todo = todo[:0]
		for lo := 0; lo < len(held); lo += heldChunk {
			part := held[lo:min(lo+heldChunk, len(held))]
			all := make([][]uint64, 0, len(part))
			for _, i := range part {
				all = append(all, cands[i])
			}
			recs, err := r.records(ctx, all...)
			if err != nil {
				return nil, err
			}
			for _, i := range part {
				own, err := w.ownSketch(&docs[i])
				if err != nil {
					return nil, err
				}
				ms, err := r.verifyAll(nil, sc, own, cands[i], recs, false, limit)
				if err != nil {
					return nil, err
				}
				if len(ms) > 0 {
					results[i].Matches = ms
					pending[i] = false
					docs[i].rec = nil
					continue
				}
				snaps[i] = uint64(last)
				todo = append(todo, i)
			}
		}
	}
	return results, nil
}
