package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/neardup/neardup/sketch"
)

// v1PostingPrefix and v1PostingKey are the posting keys of format version
// 1 ('p', u16be table, u64be key[, u64be seq]), which version 2 no longer
// writes: the tests make version 1 indexes with them.
func v1PostingPrefix(dst []byte, table int, key uint64) []byte {
	dst = append(dst, prefixPosting)
	dst = binary.BigEndian.AppendUint16(dst, uint16(table))
	return binary.BigEndian.AppendUint64(dst, key)
}

func v1PostingKey(dst []byte, table int, key, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(v1PostingPrefix(dst, table, key), seq)
}

// makeV1 creates in dir an index of format version 1 holding texts (ids
// "v0", "v1", ...), as version 1 wrote it: records, ids and 'p' postings
// (a SimHash posting's value is the fingerprint), version key 1.
func makeV1(t *testing.T, dir string, p sketch.Spec, texts []string) {
	t.Helper()
	s, err := Create(dir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	b := s.db.NewBatch()
	for i, txt := range texts {
		k := sk.Sketch(txt)
		if err := s.Add(fmt.Sprintf("v%d", i), k); err != nil {
			t.Fatal(err)
		}
		if k.Empty {
			continue
		}
		var val []byte
		if p.Method == sketch.SimHash {
			val = appendFP(nil, k.FP, s.spec.SimHash.Bits)
		}
		for tb, key := range s.appendKeys(nil, &k) {
			b.Set(v1PostingKey(nil, tb, key, uint64(i)), val, nil)
		}
	}
	b.Set(keyVersion, le32(1), nil)
	if err := b.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// countPostingKeys counts the 'p' keys of the index in dir.
func countPostingKeys(t *testing.T, s *Store) int {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixPosting}, UpperBound: []byte{prefixPosting + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := 0
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n
}

// TestMigrateV1 opens version 1 indexes: read-only they are queried as
// they are; read-write they are upgraded to version 2 (postings deleted,
// version key rewritten) and answer exactly as before.
func TestMigrateV1(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		t.Run(m.String(), func(t *testing.T) {
			dir := t.TempDir()
			texts := testCorpus(11, 150)
			texts = append(texts, texts[3]+" extra", "", texts[7])
			makeV1(t, dir, sketch.Default(m), texts)

			queries := append(testCorpus(12, 20), texts[:20]...)
			answers := func(s *Store) []string {
				sk, _ := s.NewSketcher()
				var out []string
				for _, q := range queries {
					ms, err := s.Query(nil, sk.Sketch(q), 0)
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, fmt.Sprint(ms))
				}
				return out
			}

			ro, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatalf("read-only open of version 1: %v", err)
			}
			before := answers(ro)
			if n := countPostingKeys(t, ro); n == 0 {
				t.Fatal("the version 1 index has no posting keys: the test makes no version 1 index")
			}
			ro.Close()
			if v := readVersion(t, dir); v != 1 {
				t.Fatalf("read-only open changed the version to %d", v)
			}

			s, err := Open(dir, Options{})
			if err != nil {
				t.Fatalf("read-write open of version 1: %v", err)
			}
			if n := countPostingKeys(t, s); n != 0 {
				t.Errorf("%d posting keys left after the upgrade", n)
			}
			if after := answers(s); !slices.Equal(after, before) {
				t.Errorf("answers after the upgrade differ:\n%v\nbefore:\n%v", after, before)
			}
			dups := 0
			for _, a := range before {
				if a != "[]" {
					dups++
				}
			}
			if dups < 20 {
				t.Errorf("only %d queries found duplicates: the test does not exercise the index", dups)
			}
			if s.Len() != int64(len(texts)) {
				t.Errorf("Len = %d, want %d", s.Len(), len(texts))
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if v := readVersion(t, dir); v != formatNoSets {
				t.Errorf("version after the upgrade = %d, want %d", v, formatNoSets)
			}
		})
	}
}

func readVersion(t *testing.T, dir string) uint32 {
	t.Helper()
	db, err := pebble.Open(dir, Options{ReadOnly: true}.pebble(dir, false, nil))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	_, _, v, err := readMeta(db, dir)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestOpenCorruptCounters checks that Open refuses records that disagree
// with the counters (the postings are rebuilt from the records).
func TestOpenCorruptCounters(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	for i, txt := range testCorpus(1, 5) {
		if err := s.Add(fmt.Sprint(i), sk.Sketch(txt)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// 5 records, 0 to 4: a document count or a next sequence number that
	// does not fit them.
	for _, ctr := range []counters{{docs: 4, next: 5}, {docs: 4, next: 4}, {docs: 5, next: 5}} {
		db, err := pebble.Open(dir, Options{}.pebble(dir, false, nil))
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Set(keyCounters, ctr.append(nil), pebble.Sync); err != nil {
			t.Fatal(err)
		}
		db.Close()
		s, err := Open(dir, Options{})
		if ctr.docs == 5 && ctr.next == 5 {
			if err != nil {
				t.Fatalf("counters %+v: Open = %v", ctr, err)
			}
			s.Close()
			continue
		}
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("counters %+v: Open = %v, want ErrCorrupt", ctr, err)
		}
	}
}

// TestFull checks that adds past the largest sequence number the
// in-memory postings hold are refused with ErrFull, one document at a
// time, and that the rest of a batch goes on.
func TestFull(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.MinHash))
	sk, _ := s.NewSketcher()
	s.mu.Lock()
	s.ctr.next = maxSeq
	s.applied.Store(maxSeq)
	s.mu.Unlock()
	texts := testCorpus(2, 3)
	var docs []Doc
	for i, txt := range texts {
		k := sk.Sketch(txt)
		k.Sig = slices.Clone(k.Sig)
		docs = append(docs, Doc{ID: fmt.Sprint(i), Sketch: k})
	}
	rs, err := s.AddBatch(docs)
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Added || !errors.Is(rs[1].Err, ErrFull) || !errors.Is(rs[2].Err, ErrFull) {
		t.Fatalf("AddBatch at the last sequence number = %+v, want one added then ErrFull", rs)
	}
	ms, err := s.Query(nil, docs[0].Sketch, 0)
	if err != nil || len(ms) != 1 || ms[0].ID != "0" {
		t.Fatalf("Query of the last document = %v, %v", ms, err)
	}
}

// TestConcurrentRemove runs adds, check-and-adds, removes and queries at
// once (a query may find a candidate whose record a Remove has just
// deleted), then checks that the in-memory postings agree with the stored
// documents, before and after a reopen rebuilds them.
func TestConcurrentRemove(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	texts := testCorpus(31, 400)
	sk, _ := s.NewSketcher()
	sketches := make([]sketch.Sketch, len(texts))
	for i, txt := range texts {
		k := sk.Sketch(txt)
		k.Sig = slices.Clone(k.Sig)
		sketches[i] = k
	}
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	wg.Go(func() { // adds, and removes every other document it added
		for i := range 200 {
			if err := s.Add(fmt.Sprint("a", i), sketches[i]); err != nil {
				errs <- err
				return
			}
			if i%2 == 1 {
				if err := s.Remove(fmt.Sprint("a", i-1)); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	wg.Go(func() { // check-and-adds near-duplicates and new documents
		for i := 200; i < 400; i++ {
			if _, err := s.CheckAndAdd(fmt.Sprint("c", i), sketches[i], 0); err != nil && !errors.Is(err, ErrDuplicateID) {
				errs <- err
				return
			}
		}
	})
	for range 2 {
		wg.Go(func() { // queries
			for i := range 400 {
				if _, err := s.Query(nil, sketches[(i*7)%len(sketches)], 0); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	check := func(s *Store) {
		n := 0
		err := s.Each(func(id string, k sketch.Sketch) error {
			n++
			if k.Empty {
				return nil
			}
			ms, err := s.Candidates(nil, k)
			if err != nil {
				return err
			}
			for _, m := range ms {
				if m.ID == id {
					return nil
				}
			}
			return fmt.Errorf("%s is not a candidate of itself: %v", id, ms)
		})
		if err != nil {
			t.Fatal(err)
		}
		if int64(n) != s.Len() || n < 150 {
			t.Fatalf("%d documents stored, Len %d", n, s.Len())
		}
		// Removed documents are not found.
		for i := 0; i < 200; i += 2 {
			ms, _ := s.Candidates(nil, sketches[i])
			for _, m := range ms {
				if m.ID == fmt.Sprint("a", i) {
					t.Fatalf("removed a%d is still a candidate", i)
				}
			}
		}
		if st, _ := s.Stats(); s.ids.live != int(s.Len()) || st.PostingsBytes == 0 {
			t.Fatalf("id table holds %d ids, Len %d", s.ids.live, s.Len())
		}
	}
	check(s)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	check(s)
	// The rebuilt id table knows the ids (it hashes the stored bytes).
	if err := s.Add("a1", sketches[300]); !errors.Is(err, ErrDuplicateID) {
		t.Errorf("Add of a stored id after reopen = %v, want ErrDuplicateID", err)
	}
	if err := s.Add("a0", sketches[0]); err != nil {
		t.Errorf("Add of a removed id after reopen = %v", err)
	}
}
