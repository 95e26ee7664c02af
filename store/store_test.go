package store

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

func mustCreate(t testing.TB, p sketch.Spec) *Store {
	t.Helper()
	s, err := Create(t.TempDir(), p, Options{CacheSize: 4 << 20, MemTableSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// words makes a random text of n words from a small vocabulary.
func words(r *rand.Rand, n int) []string {
	w := make([]string, n)
	for i := range w {
		w[i] = fmt.Sprintf("w%d", r.IntN(5000))
	}
	return w
}

// mutate replaces k random words.
func mutate(r *rand.Rand, w []string, k int) []string {
	w = slices.Clone(w)
	for range k {
		w[r.IntN(len(w))] = fmt.Sprintf("x%d", r.IntN(1e9))
	}
	return w
}

// corpus makes n texts in families of near-duplicates.
func testCorpus(seed uint64, n int) []string {
	r := rand.New(rand.NewPCG(seed, 1))
	var docs []string
	for len(docs) < n {
		base := words(r, 40+r.IntN(80))
		docs = append(docs, strings.Join(base, " "))
		for v := r.IntN(4); v > 0 && len(docs) < n; v-- {
			docs = append(docs, strings.Join(mutate(r, base, r.IntN(6)), " "))
		}
	}
	return docs
}

// sketchDocs sketches texts with s's sketcher into documents with ids
// "t0", "t1", ...
func sketchDocs(t testing.TB, s *Store, texts []string) []Doc {
	t.Helper()
	sk, err := s.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	docs := make([]Doc, len(texts))
	for i, txt := range texts {
		k := sk.Sketch(txt)
		k.Sig = slices.Clone(k.Sig)
		docs[i] = Doc{ID: fmt.Sprint("t", i), Sketch: k}
	}
	return docs
}

func matchIDs(ms []Match) []string {
	ids := make([]string, len(ms))
	for i, m := range ms {
		ids[i] = m.ID
	}
	slices.Sort(ids)
	return ids
}

// TestMinHashOracle checks Candidates against a brute-force scan for
// shared band keys over the stored signatures, and Query against the
// threshold applied to the exact fraction of equal slots.
func TestMinHashOracle(t *testing.T) {
	for _, p := range []sketch.Spec{
		sketch.Default(sketch.MinHash),
		{Method: sketch.MinHash, Threshold: 0.5, MinHash: sketch.MinHashSpec{NumPerm: 64, Bands: 16, Rows: 4, Family: minhash.MultiplyShift}},
		{Method: sketch.MinHash, Threshold: 0.7, MinHash: sketch.MinHashSpec{NumPerm: 32, Bands: 16, Rows: 2}},
	} {
		t.Run(fmt.Sprintf("%dx%d", p.MinHash.Bands, p.MinHash.Rows), func(t *testing.T) {
			s := mustCreate(t, p)
			sk, _ := s.NewSketcher()
			docs := testCorpus(7, 400)
			sigs := map[string]minhash.Signature{}
			var batch []Doc
			for i, d := range docs {
				id := fmt.Sprintf("d%03d", i)
				k := sk.Sketch(d)
				sigs[id] = slices.Clone(k.Sig)
				batch = append(batch, Doc{ID: id, Sketch: sketch.Sketch{Sig: sigs[id]}})
			}
			// Half one by one, half in a batch.
			for _, d := range batch[:200] {
				if err := s.Add(d.ID, d.Sketch); err != nil {
					t.Fatal(err)
				}
			}
			rs, err := s.AddBatch(batch[200:])
			if err != nil {
				t.Fatal(err)
			}
			for i, r := range rs {
				if !r.Added || r.Err != nil {
					t.Fatalf("AddBatch[%d] = %+v", i, r)
				}
			}
			// The postings' memory: 8-byte slots at 55% to 80% load per band,
			// and one table more for the ids.
			st, err := s.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if lo, hi := 8/maxLoad*float64(s.spec.MinHash.Bands+1), (8/(growLoad-maxSkew)+1)*float64(s.spec.MinHash.Bands+1); st.PostingsBytesPerDoc < lo || st.PostingsBytesPerDoc > hi {
				t.Errorf("%.1f bytes of postings per document, want %.1f to %.1f", st.PostingsBytesPerDoc, lo, hi)
			}
			bp := s.bands
			queries := append(testCorpus(8, 50), docs[:50]...)
			var total int
			for _, q := range queries {
				qs := sk.Sketch(q)
				qk := bp.AppendKeys(nil, qs.Sig)
				var wantCand, wantDup []string
				for id, sig := range sigs {
					keys := bp.AppendKeys(nil, sig)
					shared := false
					for b := range keys {
						shared = shared || keys[b] == qk[b]
					}
					if !shared {
						continue
					}
					wantCand = append(wantCand, id)
					e, _ := minhash.Estimate(qs.Sig, sig)
					if e >= s.spec.Threshold {
						wantDup = append(wantDup, id)
					}
				}
				slices.Sort(wantCand)
				slices.Sort(wantDup)
				cand, err := s.Candidates(nil, qs)
				if err != nil {
					t.Fatal(err)
				}
				if got := matchIDs(cand); !slices.Equal(got, wantCand) {
					t.Fatalf("Candidates = %v, want %v", got, wantCand)
				}
				dup, err := s.Query(nil, qs, 0)
				if err != nil {
					t.Fatal(err)
				}
				if got := matchIDs(dup); !slices.Equal(got, wantDup) {
					t.Fatalf("Query = %v, want %v", got, wantDup)
				}
				for i, m := range dup {
					e, _ := minhash.Estimate(qs.Sig, sigs[m.ID])
					if m.Similarity != e || m.Distance != -1 {
						t.Fatalf("match %+v, want similarity %v", m, e)
					}
					if i > 0 && dup[i-1].Similarity < m.Similarity {
						t.Fatalf("matches not best first: %+v", dup)
					}
				}
				total += len(dup)
			}
			if total < 50 {
				t.Fatalf("only %d duplicates found: the test corpus does not exercise the index", total)
			}
		})
	}
}

// TestSimHashOracle checks Query against a linear Hamming scan.
func TestSimHashOracle(t *testing.T) {
	for _, tc := range []struct{ bits, dist, blocks int }{
		{64, 3, 0}, {64, 3, 4}, {64, 5, 0}, {128, 6, 0}, {64, 0, 0}, {32, 2, 0}, {100, 4, 7},
	} {
		t.Run(fmt.Sprintf("f%dk%db%d", tc.bits, tc.dist, tc.blocks), func(t *testing.T) {
			d := tc.dist
			if d == 0 {
				d = sketch.ExactDistance
			}
			p := sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: tc.bits, Distance: d, Blocks: tc.blocks}}
			s := mustCreate(t, p)
			r := rand.New(rand.NewPCG(uint64(tc.bits), uint64(tc.dist)))
			lo, hi := sketch.FingerprintMask(tc.bits)
			randFP := func() simhash.Fingerprint { return simhash.Fingerprint{Lo: r.Uint64() & lo, Hi: r.Uint64() & hi} }
			flip := func(fp simhash.Fingerprint, k int) simhash.Fingerprint {
				for range k {
					b := r.IntN(tc.bits)
					if b < 64 {
						fp.Lo ^= 1 << b
					} else {
						fp.Hi ^= 1 << (b - 64)
					}
				}
				return fp
			}
			fps := map[string]simhash.Fingerprint{}
			var bases []simhash.Fingerprint
			var docs []Doc
			for i := range 600 {
				var fp simhash.Fingerprint
				if i%3 == 0 || len(bases) == 0 {
					fp = randFP()
					bases = append(bases, fp)
				} else {
					fp = flip(bases[r.IntN(len(bases))], r.IntN(tc.dist+3))
				}
				id := fmt.Sprintf("f%04d", i)
				fps[id] = fp
				docs = append(docs, Doc{ID: id, Sketch: sketch.Sketch{FP: fp}})
			}
			if _, err := s.AddBatch(docs); err != nil {
				t.Fatal(err)
			}
			var total int
			for i := range 300 {
				q := randFP()
				if i%2 == 0 {
					q = flip(bases[r.IntN(len(bases))], r.IntN(tc.dist+3))
				}
				var want []string
				for id, fp := range fps {
					if q.Distance(fp) <= tc.dist {
						want = append(want, id)
					}
				}
				slices.Sort(want)
				got, err := s.Query(nil, sketch.Sketch{FP: q}, 0)
				if err != nil {
					t.Fatal(err)
				}
				if ids := matchIDs(got); !slices.Equal(ids, want) {
					t.Fatalf("Query(%x) = %v, want %v", q, ids, want)
				}
				for j, m := range got {
					if d := q.Distance(fps[m.ID]); m.Distance != d || m.Similarity != 1-float64(d)/float64(tc.bits) {
						t.Fatalf("match %+v, want distance %d", m, d)
					}
					if j > 0 && got[j-1].Distance > m.Distance {
						t.Fatalf("matches not best first: %+v", got)
					}
				}
				total += len(got)
			}
			if total < 100 {
				t.Fatalf("only %d matches: the test does not exercise the index", total)
			}
		})
	}
}

func TestReopen(t *testing.T) {
	dir := t.TempDir()
	p := sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 128, Distance: 5}}
	s, err := Create(dir, p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	a := sk.Sketch("the quick brown fox jumps over the lazy dog again and again")
	if err := s.Add("a", a); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("empty", sk.Sketch("  ,, ")); err != nil {
		t.Fatal(err)
	}
	want := s.Spec()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("second Close = %v, want ErrClosed", err)
	}
	if _, err := s.Query(nil, a, 0); !errors.Is(err, ErrClosed) {
		t.Errorf("Query after Close = %v, want ErrClosed", err)
	}
	if _, err := Create(dir, p, Options{}); !errors.Is(err, ErrExists) {
		t.Errorf("Create over an index = %v, want ErrExists", err)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := want.Check(s.Spec()); err != nil {
		t.Errorf("params after reopen: %v", err)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2", s.Len())
	}
	ms, err := s.Query(nil, a, 0)
	if err != nil || len(ms) != 1 || ms[0].ID != "a" || ms[0].Distance != 0 {
		t.Errorf("Query after reopen = %v, %v", ms, err)
	}
	e, err := s.Get("empty")
	if err != nil || !e.Empty {
		t.Errorf("Get(empty) = %+v, %v", e, err)
	}
	// Empty documents never match, not even each other.
	if ms, _ := s.Query(nil, sk.Sketch(""), 0); len(ms) != 0 {
		t.Errorf("empty query found %v", ms)
	}
	if err := s.Remove("empty"); err != nil {
		t.Errorf("Remove(empty) = %v", err)
	}
	st, err := s.Stats()
	// A SimHash index keeps no sets: format 3.
	if err != nil || st.Docs != 1 || st.Tables != s.Spec().NumKeys() || st.FormatVersion != formatNoSets || st.Sets {
		t.Errorf("Stats = %+v, %v", st, err)
	}
}

// An empty document's sketch has no signature or fingerprint (package
// sketch's rule): the Sketcher gives none, Get and Each return none, and
// its record keeps a zero sketch, the bytes the store always wrote for one
// (whatever an Empty sketch given by a caller holds).
func TestEmptySketch(t *testing.T) {
	mh := sketch.Default(sketch.MinHash)
	sh := sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 128, Distance: 5}}
	for _, sp := range []sketch.Spec{mh, sh} {
		t.Run(sp.Method.String(), func(t *testing.T) {
			s := mustCreate(t, sp)
			defer s.Close()
			k, err := s.NewSketcher()
			if err != nil {
				t.Fatal(err)
			}
			made := k.Sketch(" ,, ")
			if !made.Empty || made.Sig != nil || made.FP != (simhash.Fingerprint{}) || made.Set != nil {
				t.Fatalf("Sketcher's empty sketch = %+v", made)
			}
			n := s.Spec().MinHash.NumPerm
			given := sketch.Sketch{Empty: true, FP: simhash.Fingerprint{Lo: 1}}
			if sp.Method == sketch.MinHash {
				given = sketch.Sketch{Empty: true, Sig: make(minhash.Signature, n)}
				given.Sig[0] = 7
			}
			a := k.Sketch("the quick brown fox jumps over the lazy dog again and again")
			for id, sk := range map[string]sketch.Sketch{"made": made, "given": given, "a": a} {
				if err := s.Add(id, sk); err != nil {
					t.Fatalf("Add(%s) = %v", id, err)
				}
			}
			size := 16
			if sp.Method == sketch.MinHash {
				size = 4 * n
			}
			for _, id := range []string{"made", "given"} {
				v, ok, err := getValue(s.db, idKey(nil, id))
				if err != nil || !ok {
					t.Fatalf("id %s: %v %v", id, ok, err)
				}
				rec, ok, err := getValue(s.db, recordKey(nil, beUint64(v)))
				if err != nil || !ok {
					t.Fatalf("record of %s: %v %v", id, ok, err)
				}
				want := append([]byte{flagEmpty, byte(len(id))}, id...)
				want = append(want, make([]byte, size)...)
				if !slices.Equal(rec, want) {
					t.Errorf("record of %s = %x, want %x", id, rec, want)
				}
				got, err := s.Get(id)
				if err != nil || !got.Empty || got.Sig != nil || got.FP != (simhash.Fingerprint{}) {
					t.Errorf("Get(%s) = %+v, %v", id, got, err)
				}
				if ms, err := s.Query(nil, got, 0); err != nil || len(ms) != 0 {
					t.Errorf("Query(%s) = %v, %v", id, ms, err)
				}
			}
			err = s.Each(func(id string, sk sketch.Sketch) error {
				if empty := id != "a"; sk.Empty != empty || empty && (sk.Sig != nil || sk.FP != simhash.Fingerprint{}) {
					t.Errorf("Each: %s = %+v", id, sk)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := Open(t.TempDir(), Options{}); !errors.Is(err, ErrNotIndex) {
		t.Errorf("Open(empty dir) = %v, want ErrNotIndex", err)
	}
	// A pebble database that is not an index.
	dir := t.TempDir()
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		t.Fatal(err)
	}
	db.Set([]byte("k"), []byte("v"), pebble.Sync)
	db.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrNotIndex) {
		t.Errorf("Open(other db) = %v, want ErrNotIndex", err)
	}
	// A newer version is refused and left alone.
	dir = t.TempDir()
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err = pebble.Open(dir, &pebble.Options{Logger: quietLogger{}, Comparer: comparer})
	if err != nil {
		t.Fatal(err)
	}
	db.Set(keyVersion, le32(FormatVersion+1), pebble.Sync)
	db.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrVersion) {
		t.Errorf("Open(newer) = %v, want ErrVersion", err)
	}
	// Corrupt parameters.
	db, _ = pebble.Open(dir, &pebble.Options{Logger: quietLogger{}, Comparer: comparer})
	db.Set(keyVersion, le32(FormatVersion), pebble.Sync)
	db.Set(keyParams, []byte(`{"method":"minhash"}`), pebble.Sync)
	db.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Errorf("Open(corrupt params) = %v, want ErrCorrupt", err)
	}
	// An index another opener holds (a running server): ErrLocked, for a
	// read-only open too.
	dir = t.TempDir()
	s, err = Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, ro := range []bool{false, true} {
		if o, err := Open(dir, Options{ReadOnly: ro}); !errors.Is(err, ErrLocked) {
			if o != nil {
				o.Close()
			}
			t.Errorf("Open(held index, read-only %v) = %v, want ErrLocked", ro, err)
		}
	}
}

func TestIncompatible(t *testing.T) {
	mh := mustCreate(t, sketch.Default(sketch.MinHash))
	sh := mustCreate(t, sketch.Default(sketch.SimHash))
	shSk, _ := sh.NewSketcher()
	mhSk, _ := mh.NewSketcher()
	txt := "one two three four five six"
	if _, err := mh.Query(nil, shSk.Sketch(txt), 0); !errors.Is(err, ErrIncompatible) {
		t.Errorf("simhash sketch on minhash index: %v", err)
	}
	if err := sh.Add("x", mhSk.Sketch(txt)); !errors.Is(err, ErrIncompatible) {
		t.Errorf("minhash sketch on simhash index: %v", err)
	}
	if _, err := mh.Query(nil, sketch.Sketch{Sig: make(minhash.Signature, 64)}, 0); !errors.Is(err, ErrIncompatible) {
		t.Errorf("64-slot signature on 128-slot index: %v", err)
	}
	if err := sh.Add("x", sketch.Sketch{FP: simhash.Fingerprint{Hi: 1}}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("128-bit fingerprint on 64-bit index: %v", err)
	}
	p256 := mh.Spec()
	p256.MinHash.NumPerm = 256
	err := CheckSpec(mh.Spec(), p256)
	if !errors.Is(err, ErrIncompatible) || !strings.Contains(err.Error(), "num_perm") {
		t.Errorf("Check(256 perms) = %v", err)
	}
	if err := CheckSpec(mh.Spec(), sketch.Spec{Method: sketch.SimHash}); !errors.Is(err, ErrIncompatible) {
		t.Errorf("Check(simhash) = %v", err)
	}
	q := sketch.Default(sketch.MinHash)
	q.MinHash.Seed = 0 // resolved to the same default
	if err := CheckSpec(mh.Spec(), q); err != nil {
		t.Errorf("Check(defaults) = %v", err)
	}
}

func TestParamsErrors(t *testing.T) {
	// The zero Spec is valid: MinHash with the defaults.
	if _, err := resolveSpec(sketch.Spec{}); err != nil {
		t.Errorf("the zero Spec: %v", err)
	}
	for _, p := range []sketch.Spec{
		{Method: 9},
		{Method: sketch.Exact},
		{Method: sketch.MinHash, MinHash: sketch.MinHashSpec{Bands: 20, Rows: 8}},
		{Method: sketch.MinHash, Threshold: 1.5},
		{Method: sketch.MinHash, SimHash: sketch.SimHashSpec{Bits: 64}},
		{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 129}},
		{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Distance: 64}},
		{Method: sketch.SimHash, Threshold: 0.5},
		{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Blocks: 3, Distance: 3}},
		{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 64, Distance: 20, Blocks: 40}},
		{Method: sketch.MinHash, Shingle: shingleOpts(100)},
	} {
		if _, err := Create(t.TempDir(), p, Options{}); !errors.Is(err, ErrParams) {
			t.Errorf("Create(%+v) = %v, want ErrParams", p, err)
		}
	}
}

// TestBandingRule: Create refuses a MinHash banding given by hand that
// makes fewer than MinBandingRecall of the pairs at the threshold
// candidates (16x8 at 0.5: 0.06), before it writes anything, and accepts
// the default banding, a good one by hand, and the resolved Spec of an
// existing index (what index copy creates).
func TestBandingRule(t *testing.T) {
	low := sketch.Spec{Threshold: 0.5, MinHash: sketch.MinHashSpec{Bands: 16, Rows: 8}}
	dir := filepath.Join(t.TempDir(), "ix")
	_, err := Create(dir, low, Options{})
	if !errors.Is(err, ErrParams) || !errors.Is(err, ErrBanding) || !strings.Contains(err.Error(), "23x3") {
		t.Errorf("Create(16x8 at 0.5) = %v, want ErrParams and ErrBanding naming 23x3", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the refused index's directory: %v, want none", err)
	}
	for _, sp := range []sketch.Spec{
		{Threshold: 0.5},
		{Threshold: 0.5, MinHash: sketch.MinHashSpec{Bands: 32, Rows: 4}},
		mustCreate(t, sketch.Spec{Threshold: 0.5}).Spec(),
		{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Blocks: 4}},
	} {
		if s, err := Create(t.TempDir(), sp, Options{}); err != nil {
			t.Errorf("Create(%+v) = %v", sp, err)
		} else {
			s.Close()
		}
	}
}

func TestIDsAndRemove(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.MinHash))
	sk, _ := s.NewSketcher()
	a := sk.Sketch("alpha beta gamma delta epsilon zeta eta theta")
	for _, id := range []string{"", strings.Repeat("x", MaxIDBytes+1), "bad\xff"} {
		if err := s.Add(id, a); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Add(%q) = %v, want ErrInvalidID", id, err)
		}
	}
	if err := s.Add("a", a); err != nil {
		t.Fatal(err)
	}
	if err := s.Add("a", sk.Sketch("something else entirely")); !errors.Is(err, ErrDuplicateID) {
		t.Errorf("Add(a) again = %v, want ErrDuplicateID", err)
	}
	if err := s.Remove("nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove(nope) = %v", err)
	}
	if err := s.Remove("a"); err != nil {
		t.Fatal(err)
	}
	if ms, _ := s.Candidates(nil, a); len(ms) != 0 {
		t.Errorf("after Remove, candidates %v", ms)
	}
	if _, err := s.Get("a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove = %v", err)
	}
	// No posting is left behind.
	it, _ := s.db.NewIter(nil)
	for ok := it.First(); ok; ok = it.Next() {
		if k := it.Key(); k[0] != prefixMeta {
			t.Errorf("key %q left after Remove", k)
		}
	}
	it.Close()
	if s.Len() != 0 {
		t.Errorf("Len = %d", s.Len())
	}
	// The id may be used again.
	if err := s.Add("a", a); err != nil {
		t.Errorf("Add after Remove = %v", err)
	}
}

func TestCheckAndAdd(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.MinHash))
	sk, _ := s.NewSketcher()
	base := strings.Join(words(rand.New(rand.NewPCG(1, 2)), 100), " ")
	r, err := s.CheckAndAdd("orig", sk.Sketch(base), 0)
	if err != nil || !r.Added || len(r.Matches) != 0 {
		t.Fatalf("first CheckAndAdd = %+v, %v", r, err)
	}
	r, err = s.CheckAndAdd("copy", sk.Sketch(base+" extra"), 0)
	if err != nil || r.Added || len(r.Matches) != 1 || r.Matches[0].ID != "orig" || r.Matches[0].Similarity < 0.8 {
		t.Fatalf("near-duplicate CheckAndAdd = %+v, %v", r, err)
	}
	if _, err := s.Get("copy"); !errors.Is(err, ErrNotFound) {
		t.Errorf("duplicate was added")
	}
	// Batch: duplicates within the batch are found, and repeated ids refused.
	other := strings.Join(words(rand.New(rand.NewPCG(3, 4)), 100), " ")
	k1 := sk.Sketch(other)
	d1 := Doc{ID: "b1", Sketch: sketch.Sketch{Sig: slices.Clone(k1.Sig)}}
	k2 := sk.Sketch(other + " tail")
	d2 := Doc{ID: "b2", Sketch: sketch.Sketch{Sig: slices.Clone(k2.Sig)}}
	k3 := sk.Sketch(base)
	d3 := Doc{ID: "b3", Sketch: sketch.Sketch{Sig: slices.Clone(k3.Sig)}}
	d4 := Doc{ID: "b1", Sketch: sketch.Sketch{Sig: slices.Clone(sk.Sketch("completely unrelated words here now").Sig)}}
	rs, err := s.CheckAndAddBatch([]Doc{d1, d2, d3, d4, {ID: "", Sketch: d1.Sketch}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !rs[0].Added || rs[1].Added || len(rs[1].Matches) != 1 || rs[1].Matches[0].ID != "b1" ||
		rs[2].Added || rs[2].Matches[0].ID != "orig" || !errors.Is(rs[3].Err, ErrDuplicateID) || !errors.Is(rs[4].Err, ErrInvalidID) {
		t.Errorf("CheckAndAddBatch = %+v", rs)
	}
	if s.Len() != 2 {
		t.Errorf("Len = %d, want 2", s.Len())
	}
}

// TestConcurrentCheckAndAdd sends near-identical documents from many
// goroutines at once. No two documents added may be duplicates of each
// other; with identical texts exactly one is added.
func TestConcurrentCheckAndAdd(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		for _, identical := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/identical=%v", m, identical), func(t *testing.T) {
				s := mustCreate(t, sketch.Default(m))
				r := rand.New(rand.NewPCG(5, 6))
				const rounds, workers = 8, 16
				for round := range rounds {
					base := strings.Join(words(r, 200), " ")
					texts := make([]string, workers)
					for i := range texts {
						texts[i] = base
						if !identical {
							texts[i] += fmt.Sprintf(" variant%d", i)
						}
					}
					var mu sync.Mutex
					var added []sketch.Sketch
					var wg sync.WaitGroup
					start := make(chan struct{})
					for i := range workers {
						wg.Go(func() {
							sk, _ := s.NewSketcher()
							k := sk.Sketch(texts[i])
							k.Sig = slices.Clone(k.Sig)
							<-start
							res, err := s.CheckAndAdd(fmt.Sprintf("r%d-%d", round, i), k, 0)
							if err != nil {
								t.Error(err)
							}
							if res.Added {
								mu.Lock()
								added = append(added, k)
								mu.Unlock()
							} else if len(res.Matches) == 0 {
								t.Error("neither added nor a duplicate")
							}
						})
					}
					close(start)
					wg.Wait()
					if len(added) == 0 || identical && len(added) != 1 {
						t.Fatalf("round %d: %d of %d documents added", round, len(added), workers)
					}
					for i := range added {
						for j := range i {
							if s.isDuplicate(&added[i], &added[j]) {
								t.Fatalf("round %d: two duplicates were both added", round)
							}
						}
					}
				}
			})
		}
	}
}

// isDuplicate is the duplicate rule applied to two sketches directly.
func (s *Store) isDuplicate(a, b *sketch.Sketch) bool {
	if s.spec.Method == sketch.SimHash {
		return a.FP.Distance(b.FP) <= s.spec.SimHash.MaxDistance()
	}
	e, _ := minhash.Estimate(a.Sig, b.Sig)
	if e < s.spec.Threshold {
		return false
	}
	ka, kb := s.bands.AppendKeys(nil, a.Sig), s.bands.AppendKeys(nil, b.Sig)
	for i := range ka {
		if ka[i] == kb[i] {
			return true
		}
	}
	return false
}

func TestEach(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.SimHash))
	for i := range 10 {
		if err := s.Add(fmt.Sprint(i), sketch.Sketch{FP: simhash.Fingerprint{Lo: uint64(i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var ids []string
	stop := errors.New("stop")
	err := s.Each(func(id string, sk sketch.Sketch) error {
		if sk.FP.Lo != uint64(len(ids)) {
			t.Errorf("Each: %s has %v", id, sk.FP)
		}
		ids = append(ids, id)
		if len(ids) == 5 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || len(ids) != 5 {
		t.Errorf("Each = %v after %v", err, ids)
	}
}

func TestCompact(t *testing.T) {
	s := mustCreate(t, sketch.Default(sketch.MinHash))
	sk, _ := s.NewSketcher()
	for i := range 200 {
		if err := s.Add(fmt.Sprint(i), sk.Sketch(fmt.Sprintf("document number %d with some words", i))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 100 {
		if err := s.Remove(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	st, _ := s.Stats()
	if st.Docs != 100 || st.DiskBytes == 0 {
		t.Errorf("Stats after compaction = %+v", st)
	}
	ms, err := s.Query(nil, sk.Sketch("document number 150 with some words"), 0)
	if err != nil || len(ms) == 0 || ms[0].ID != "150" {
		t.Errorf("Query after compaction = %v, %v", ms, err)
	}
}

func TestReadOnly(t *testing.T) {
	dir := t.TempDir()
	s, _ := Create(dir, sketch.Default(sketch.SimHash), Options{})
	s.Add("a", sketch.Sketch{FP: simhash.Fingerprint{Lo: 42}})
	s.Close()
	s, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Add("b", sketch.Sketch{FP: simhash.Fingerprint{Lo: 1}}); err == nil {
		t.Error("Add on a read-only index succeeded")
	}
	if ms, _ := s.Query(nil, sketch.Sketch{FP: simhash.Fingerprint{Lo: 43}}, 0); len(ms) != 1 {
		t.Errorf("Query = %v", ms)
	}
}

func shingleOpts(n int) shingle.Options { return shingle.Options{N: n} }

// TestComparer checks the key comparer's prefix rules with pebble's own
// checker.
func TestComparer(t *testing.T) {
	var prefixes, suffixes [][]byte
	for _, k := range []uint64{0, 1, 1 << 63, ^uint64(0)} {
		prefixes = append(prefixes, v1PostingPrefix(nil, 3, k))
		suffixes = append(suffixes, binaryBE(nil, k))
	}
	prefixes = append(prefixes, recordKey(nil, 5), idKey(nil, "x"), keyVersion)
	if err := pebble.CheckComparer(comparer, prefixes, suffixes[:0]); err != nil {
		t.Error(err)
	}
	for _, k := range [][]byte{v1PostingKey(nil, 2, 77, 9), recordKey(nil, 1), keyCounters} {
		want := len(k)
		if k[0] == prefixPosting {
			want = 11
		}
		if got := comparer.Split(k); got != want {
			t.Errorf("Split(%x) = %d, want %d", k, got, want)
		}
	}
}

// TestCheckAndAddBatchEqualsSequential checks that a large batch (checked
// against the index by several goroutines) decides exactly as the same
// documents sent one by one.
func TestCheckAndAddBatchEqualsSequential(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		t.Run(m.String(), func(t *testing.T) {
			a, b := mustCreate(t, sketch.Default(m)), mustCreate(t, sketch.Default(m))
			docs := sketchDocs(t, a, testCorpus(11, 300))
			docs = append(docs, docs[5]) // a repeated id
			for _, s := range []*Store{a, b} {
				if _, err := s.AddBatch(docs[:100]); err != nil {
					t.Fatal(err)
				}
			}
			rest := docs[100:]
			got, err := b.CheckAndAddBatch(rest, 0)
			if err != nil {
				t.Fatal(err)
			}
			dups := 0
			for i, d := range rest {
				want, err := a.CheckAndAdd(d.ID, d.Sketch, 0)
				if (err == nil) != (got[i].Err == nil) || want.Added != got[i].Added ||
					!slices.Equal(matchIDs(want.Matches), matchIDs(got[i].Matches)) {
					t.Fatalf("doc %d (%s): batch %+v, one by one %+v (%v)", i, d.ID, got[i], want, err)
				}
				if len(want.Matches) > 0 {
					dups++
				}
			}
			if dups < 20 || a.Len() != b.Len() {
				t.Fatalf("%d duplicates, %d and %d documents", dups, a.Len(), b.Len())
			}
		})
	}
}

// TestStatsDiskBytesFolder checks that Stats' DiskBytes is the index
// folder's bytes: it was pebble's usage figure, which counts the files a
// compaction made obsolete until their deletion in the background.
func TestStatsDiskBytesFolder(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sk, _ := s.NewSketcher()
	for i := range 2000 {
		if err := s.Add(fmt.Sprint(i), sk.Sketch(fmt.Sprintf("document number %d with some words of its own, %d", i, i*7919))); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 1500 {
		if err := s.Remove(fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	// pebble removes the files a compaction made obsolete in the
	// background: on a loaded machine the folder can hold one a moment
	// longer (8,192 bytes more, once). The two must agree once it settles.
	var st Stats
	var n int64
	for try := 0; ; try++ {
		if st, err = s.Stats(); err != nil {
			t.Fatal(err)
		}
		if n, err = FolderBytes(dir); err != nil {
			t.Fatal(err)
		}
		if st.DiskBytes == uint64(n) || try == 100 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st.DiskBytes != uint64(n) {
		t.Errorf("Stats' DiskBytes %d, the folder's files %d bytes (2 s after the compaction)", st.DiskBytes, n)
	}
}
