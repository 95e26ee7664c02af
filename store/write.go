package store

import (
	"bytes"
	"fmt"
	"math"
	"slices"

	"github.com/neardup/neardup/sketch"
)

// A Write is one atomic batch write of a Store (what AddBatch and
// CheckAndAddBatch do) given its documents a chunk at a time, so that the
// caller holds the sketches of one chunk, not of the whole batch. Add
// validates a chunk, checks it against the index when the Write checks
// (the first step of a check-and-add, see write) and encodes its records
// and keys, after which the chunk's sketches, shingle sets included, are
// no longer needed. Commit takes the writer lock and writes the documents
// of every chunk in one pebble batch: all or none of them, with the
// results one AddBatch or CheckAndAddBatch of all the chunks in order
// would give (a document is checked against those of earlier chunks too).
// Nothing is written before Commit, so a Write dropped uncommitted
// changes nothing.
//
// Until Commit a Write holds its documents' records (a record codes its
// shingle set in about 7.3 bytes a shingle, where the set takes 8) and
// band or table keys, 8 bytes each; Commit moves the records into the
// write batch one document at a time and lets each chunk's records go
// once its documents are in. Held returns what it holds. A Write is not
// safe for concurrent use.
type Write struct {
	s       *Store
	check   bool
	limit   int
	snap    uint64 // documents below it are checked by Add, the rest by Commit
	err     error  // Add's error, which Commit returns
	results []Result
	docs    []pendingDoc
	// ends are the indexes in docs where each Add's chunk ends.
	ends []int
	buf  chunkBuf
	// batchBytes bounds the size of the write batch of the documents
	// that Commit may add; held is what the chunks take.
	batchBytes, held int
	own              record // the record of the document Commit checks
}

// pendingDoc is a document of a Write: its id, its encoded record (in
// its chunk until Commit adds it to the write batch) and its band or
// table keys (none for an empty document or one with an error).
type pendingDoc struct {
	id   string
	rec  []byte
	keys []uint64
}

// chunkBuf is the scratch space in which a write codes a chunk's records
// and keys before copying them into allocations of their size.
type chunkBuf struct {
	recs []byte
	keys []uint64
}

// encodeChunk appends to dst a pendingDoc for each document of docs: its
// id, and unless results has its error, its record and keys, coded into
// buf and then copied into one allocation of records and one of keys for
// the chunk, which the pendingDocs alias. coded(i, n) is called for each
// document coded, n the length of its record. It returns dst and the bytes
// of the two allocations.
func (k *keyer) encodeChunk(dst []pendingDoc, buf *chunkBuf, docs []Doc, results []Result, coded func(i, n int)) ([]pendingDoc, int) {
	buf.recs, buf.keys = buf.recs[:0], buf.keys[:0]
	type span struct{ rec, keys int }
	ends := make([]span, len(docs))
	for i := range docs {
		if results[i].Err == nil {
			d := &docs[i]
			start := len(buf.recs)
			buf.recs = k.appendRecord(buf.recs, d.ID, &d.Sketch)
			buf.keys = k.appendKeys(buf.keys, &d.Sketch)
			if coded != nil {
				coded(i, len(buf.recs)-start)
			}
		}
		ends[i] = span{len(buf.recs), len(buf.keys)}
	}
	recs, keys := bytes.Clone(buf.recs), slices.Clone(buf.keys)
	prev := span{}
	for i := range docs {
		d := pendingDoc{id: docs[i].ID}
		if results[i].Err == nil {
			d.rec = recs[prev.rec:ends[i].rec:ends[i].rec]
			d.keys = keys[prev.keys:ends[i].keys:ends[i].keys]
		}
		dst = append(dst, d)
		prev = ends[i]
	}
	return dst, cap(recs) + 8*cap(keys)
}

// batchOpBytes bounds the bytes a pebble batch takes for a Set of a key
// and value of these lengths: a kind byte and two uvarint lengths.
func batchOpBytes(key, value int) int { return 1 + 2*5 + key + value }

// batchHeaderBytes is the size of a pebble batch's header.
const batchHeaderBytes = 12

// NewWrite returns an empty batch write: an add, or a check-and-add when
// check is set, whose results list at most limit duplicates a document
// (0: all).
func (s *Store) NewWrite(check bool, limit int) (*Write, error) {
	if s.ronly {
		return nil, s.readOnlyErr()
	}
	w := &Write{s: s, check: check, limit: limit}
	if check {
		w.snap = s.applied.Load()
	}
	return w, nil
}

// NewBatchWrite is NewWrite as a BatchWrite.
func (s *Store) NewBatchWrite(check bool, limit int) (BatchWrite, error) {
	return s.NewWrite(check, limit)
}

// Held returns the bytes of records and keys the Write holds: about what
// its memory grows by with each Add, beyond the results.
func (w *Write) Held() int { return w.held }

// Add adds a chunk of documents to the Write, after those of the chunks
// before it. The Write keeps the ids (strings, which are not copied) but
// no other memory of docs. An error is one of the index as a whole (a
// closed index, a failed read); Commit then returns it and writes
// nothing.
func (w *Write) Add(docs []Doc) error {
	if w.err != nil {
		return w.err
	}
	s := w.s
	lo := len(w.results)
	w.results = append(w.results, make([]Result, len(docs))...)
	results := w.results[lo:]
	for i := range docs {
		if err := checkID(docs[i].ID); err != nil {
			results[i].Err = err
		} else if err := s.checkSketch(&docs[i].Sketch); err != nil {
			results[i].Err = err
		}
	}
	sc, err := s.acquire()
	if err != nil {
		w.err = err
		return err
	}
	defer s.release(sc)
	if w.check {
		if err := s.queryBefore(sc, docs, results, w.snap); err != nil {
			w.err = err
			return err
		}
	}
	recKey := len(recordKey(nil, 0))
	var held int
	w.docs, held = s.encodeChunk(w.docs, &w.buf, docs, results, func(i, rec int) {
		if !w.check || len(results[i].Matches) == 0 {
			w.batchBytes += batchOpBytes(len(idKey(nil, docs[i].ID)), 8) + batchOpBytes(recKey, rec)
		}
	})
	w.held += held
	w.ends = append(w.ends, len(w.docs))
	return nil
}

// Commit writes the documents of the Write's chunks and returns one
// Result per document, in order, as AddBatch or CheckAndAddBatch does.
// The Write is spent then.
func (w *Write) Commit() ([]Result, error) {
	if w.err != nil {
		return nil, w.err
	}
	w.err = fmt.Errorf("%w: a Write is committed once", ErrParams)
	defer func() { w.docs = nil }()
	s := w.s
	results := w.results
	if w.check {
		// A write whose documents are all duplicates after the first
		// step changes nothing and takes no lock.
		done := true
		for i := range results {
			done = done && (results[i].Err != nil || len(results[i].Matches) > 0)
		}
		if done {
			for i := range results {
				if ms := results[i].Matches; w.limit > 0 && len(ms) > w.limit {
					results[i].Matches = ms[:w.limit]
				}
			}
			return results, nil
		}
	}
	sc, err := s.acquire()
	if err != nil {
		return nil, err
	}
	defer s.release(sc)

	s.mu.Lock()
	locked := true
	unlock := func() {
		if locked {
			locked = false
			s.mu.Unlock()
		}
	}
	defer unlock()

	counterBytes := batchOpBytes(len(keyCounters), len(counters{}.append(nil)))
	b := s.db.NewBatchWithSize(batchHeaderBytes + w.batchBytes + counterBytes)
	defer b.Close()
	ctr := s.ctr
	// Documents of this batch already added: by id, and by key.
	var pendingIDs map[string]int
	var pending map[pendingKey][]int
	if len(w.docs) > 1 {
		pendingIDs = make(map[string]int, len(w.docs))
		pending = make(map[pendingKey][]int)
	}
	// The sequence numbers and id hashes of the documents to apply to the
	// in-memory tables.
	var addedSeqs, addedIDs []uint64
	recent := s.applied.Load() > w.snap
	chunk, first := 0, 0
	for i := range w.docs {
		for ; w.ends[chunk] <= i; chunk++ {
			// The chunk's documents are decided and its added records
			// are in the batch: let the chunk's records go.
			for ; first < w.ends[chunk]; first++ {
				if !results[first].Added {
					w.docs[first].rec = nil
				}
			}
		}
		d := &w.docs[i]
		r := &results[i]
		if r.Err != nil {
			continue
		}
		if w.check {
			var own *sketch.Sketch // decoded on first need
			sc.keys = append(sc.keys[:0], d.keys...)
			if recent {
				s.lookup(sc, w.snap, math.MaxUint64)
				if len(sc.seqs) > 0 {
					if own, err = w.ownSketch(d); err != nil {
						return nil, err
					}
					if r.Matches, err = s.matches(r.Matches, sc, own, false, 0); err != nil {
						return nil, err
					}
				}
			}
			if r.Matches, err = w.pendingMatches(r.Matches, pending, sc, d, own); err != nil {
				return nil, err
			}
			if len(r.Matches) > 0 {
				sortMatches(r.Matches)
				if w.limit > 0 && len(r.Matches) > w.limit {
					r.Matches = r.Matches[:w.limit]
				}
				continue
			}
		}
		if _, dup := pendingIDs[d.id]; dup {
			r.Err = fmt.Errorf("%w: %q", ErrDuplicateID, d.id)
			continue
		}
		if ok, err := s.hasID(sc, d.id); err != nil {
			return nil, err
		} else if ok {
			r.Err = fmt.Errorf("%w: %q", ErrDuplicateID, d.id)
			continue
		}
		if ctr.next > maxSeq {
			r.Err = fmt.Errorf("%w: %q", ErrFull, d.id)
			continue
		}
		seq := ctr.next
		ctr.next++
		ctr.docs++
		addedSeqs = append(addedSeqs, seq)
		addedIDs = append(addedIDs, idHash(d.id))
		sc.key = idKey(sc.key[:0], d.id)
		sc.val = binaryBE(sc.val[:0], seq)
		b.Set(sc.key, sc.val, nil)
		// The record goes into the batch, and the document's record is
		// the batch's copy from now on: its chunk can go.
		sc.key = recordKey(sc.key[:0], seq)
		op := b.SetDeferred(len(sc.key), len(d.rec))
		copy(op.Key, sc.key)
		copy(op.Value, d.rec)
		if err := op.Finish(); err != nil {
			return nil, err
		}
		d.rec = op.Value
		if pending != nil {
			for t, k := range d.keys {
				pk := pendingKey{t, k}
				pending[pk] = append(pending[pk], i)
			}
			pendingIDs[d.id] = i
		}
		r.Added = true
	}
	if b.Empty() {
		return results, nil
	}
	b.Set(keyCounters, ctr.append(nil), nil)
	// The batch is visible to readers once applied; the postings follow,
	// before the lock is released.
	if err := s.commit(b); err != nil {
		return nil, err
	}
	s.insertPostings(w.docs, results, addedSeqs, addedIDs)
	s.ctr = ctr
	s.docs.Store(int64(ctr.docs))
	s.applied.Store(ctr.next)
	unlock()
	if s.wopts.Sync {
		// Acknowledge only once the write-ahead log is on disk. Later
		// batches are ordered after this one in the log, so their sync
		// implies its sync.
		if err := s.syncWait(b); err != nil {
			return nil, err
		}
	}
	return results, nil
}

// ownSketch returns the sketch of d decoded from its record (w.own), as
// the index would store and verify it: the signature, and the shingle
// set when the record keeps one.
func (w *Write) ownSketch(d *pendingDoc) (*sketch.Sketch, error) {
	if err := w.s.readRecord(&w.own, d.rec); err != nil {
		return nil, err
	}
	sk, err := recordSketch(&w.own)
	if err != nil {
		return nil, err
	}
	return &sk, nil
}

type pendingKey struct {
	table int
	key   uint64
}

// pendingMatches appends to dst the duplicates of d among the documents
// of the Write added before it (pending, by key; sc.keys are d's keys),
// decided as stored records of them would be (keyer.verify). own is d's
// sketch, or nil until it is needed.
func (w *Write) pendingMatches(dst []Match, pending map[pendingKey][]int, sc *scratch, d *pendingDoc, own *sketch.Sketch) ([]Match, error) {
	if len(pending) == 0 {
		return dst, nil
	}
	var seen map[int]bool
	for t, k := range sc.keys {
		for _, j := range pending[pendingKey{t, k}] {
			if seen[j] {
				continue
			}
			if seen == nil {
				seen = map[int]bool{}
			}
			seen[j] = true
			if own == nil {
				var err error
				if own, err = w.ownSketch(d); err != nil {
					return dst, err
				}
			}
			if err := w.s.readRecord(&sc.rec, w.docs[j].rec); err != nil {
				return dst, err
			}
			var err error
			if dst, err = w.s.verify(dst, sc, own, false); err != nil {
				return dst, err
			}
		}
	}
	return dst, nil
}

// write adds docs in one Write, after checking each for duplicates when
// check is set.
//
// The check runs in two steps. First (Write.Add), without the writer
// lock and in parallel with other operations, against the documents
// applied to the in-memory postings before the Write began (sequence
// numbers below its snap). Then (Write.Commit), under the writer lock,
// against those applied since (sequence numbers from snap on) and the
// documents of the batch itself. A writer applies its documents to the
// postings before it releases the lock, so the second step sees every
// document added before it: two near-identical documents are never both
// added. A write whose documents are all duplicates after the first step
// changes nothing and takes no lock.
func (s *Store) write(docs []Doc, check bool, limit int) ([]Result, error) {
	w, err := s.NewWrite(check, limit)
	if err != nil {
		return nil, err
	}
	if err := w.Add(docs); err != nil {
		return nil, err
	}
	return w.Commit()
}

// insertPostings adds to the in-memory tables the documents added by a
// write: seqs and idHashes, one per added document, in order. The caller
// holds s.mu.
func (s *Store) insertPostings(docs []pendingDoc, results []Result, seqs, idHashes []uint64) {
	s.postMu.Lock()
	defer s.postMu.Unlock()
	for i, seq := range seqs {
		s.ids.insert(idHashes[i], seq)
	}
	// The added documents with keys (not empty), and their sequence
	// numbers: a table at a time, for the table's cache.
	var with []int
	var withSeqs []uint64
	j := 0
	for i := range docs {
		if results[i].Added {
			if len(docs[i].keys) > 0 {
				with = append(with, i)
				withSeqs = append(withSeqs, seqs[j])
			}
			j++
		}
	}
	for t := range s.post {
		p := &s.post[t]
		for n, i := range with {
			p.insert(docs[i].keys[t], withSeqs[n])
		}
	}
}
