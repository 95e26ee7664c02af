package store

import (
	"github.com/neardup/neardup/sketch"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestPostingsOracle checks the open-addressing table against a map of
// slices through inserts, removes and growth: every lookup returns at
// least the oracle's postings, and nothing else unless a tag collides
// (checked with the tag function itself).
func TestPostingsOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, keySpace := range []uint64{50, 5000, math.MaxUint64} {
		var p postings
		defer p.free()
		if keySpace == 50 {
			p.reserve(100)
		}
		oracle := map[uint64][]uint64{}
		var seq uint64
		keyOf := func() uint64 {
			if keySpace == math.MaxUint64 {
				return r.Uint64()
			}
			return r.Uint64N(keySpace) << 20 // masked-fingerprint-like keys
		}
		var keys []uint64
		for step := range 40000 {
			switch {
			case step%5 == 4 && len(keys) > 0: // remove a random posting
				k := keys[r.IntN(len(keys))]
				if len(oracle[k]) == 0 {
					continue
				}
				i := r.IntN(len(oracle[k]))
				s := oracle[k][i]
				if !p.remove(k, s) {
					t.Fatalf("remove(%d, %d) = false, want true", k, s)
				}
				if p.remove(k, s) {
					t.Fatalf("second remove(%d, %d) = true", k, s)
				}
				oracle[k] = slices.Delete(oracle[k], i, i+1)
			default:
				k := keyOf()
				if len(keys) > 0 && r.IntN(3) == 0 {
					k = keys[r.IntN(len(keys))] // several documents per key
				}
				keys = append(keys, k)
				p.insert(k, seq)
				oracle[k] = append(oracle[k], seq)
				seq++
			}
		}
		live := 0
		for _, ss := range oracle {
			live += len(ss)
		}
		if p.live != live {
			t.Fatalf("live = %d, want %d", p.live, live)
		}
		if load := float64(p.used) / float64(len(p.slots)); load > maxLoad {
			t.Fatalf("load %.2f above %.2f", load, maxLoad)
		}
		for _, k := range append(keys[:1000], 1, 2, 3) {
			got := p.lookup(nil, k, 0, math.MaxUint64)
			slices.Sort(got)
			want := slices.Clone(oracle[k])
			slices.Sort(want)
			// Extra results are only allowed for keys with the same tag.
			var extra []uint64
			for _, s := range got {
				if _, ok := slices.BinarySearch(want, s); !ok {
					extra = append(extra, s)
				}
			}
			for _, s := range want {
				if _, ok := slices.BinarySearch(got, s); !ok {
					t.Fatalf("key space %d: lookup(%d) = %v misses %d (want %v)", keySpace, k, got, s, want)
				}
			}
			for _, s := range extra {
				found := false
				for k2, ss := range oracle {
					if k2 != k && keyTag(k2) == keyTag(k) && slices.Contains(ss, s) {
						found = true
					}
				}
				if !found {
					t.Fatalf("lookup(%d) returned %d, which no key with its tag has", k, s)
				}
			}
			// The range filter.
			if len(want) > 0 {
				lo := want[len(want)/2]
				got := p.lookup(nil, k, lo, lo+1)
				if !slices.Contains(got, lo) || len(got) > 1+len(extra) {
					t.Fatalf("lookup(%d, [%d, %d)) = %v", k, lo, lo+1, got)
				}
			}
		}
	}
}

// TestPostingsTombstonesReclaimed checks that churn (add one, remove one)
// does not grow the table without bound: tombstones are dropped by resize.
func TestPostingsTombstonesReclaimed(t *testing.T) {
	var p postings
	defer p.free()
	r := rand.New(rand.NewPCG(3, 4))
	type post struct{ k, s uint64 }
	var live []post
	for seq := range uint64(200000) {
		k := r.Uint64()
		p.insert(k, seq)
		live = append(live, post{k, seq})
		if len(live) > 1000 {
			i := r.IntN(len(live))
			if !p.remove(live[i].k, live[i].s) {
				t.Fatalf("remove %v failed", live[i])
			}
			live = slices.Delete(live, i, i+1)
		}
	}
	if p.live != len(live) || len(p.slots) > 4*len(live) {
		t.Fatalf("%d live postings in %d slots, want %d live in at most %d", p.live, len(p.slots), len(live), 4*len(live))
	}
	for _, q := range live {
		if got := p.lookup(nil, q.k, q.s, q.s+1); len(got) != 1 {
			t.Fatalf("lookup %v = %v", q, got)
		}
	}
}

func TestPostingsLookupAllocs(t *testing.T) {
	var p postings
	for i := range uint64(10000) {
		p.insert(i*7919, i)
	}
	dst := make([]uint64, 0, 16)
	allocs := testing.AllocsPerRun(100, func() { dst = p.lookup(dst[:0], 7919*5, 0, math.MaxUint64) })
	if allocs != 0 || len(dst) != 1 || dst[0] != 5 {
		t.Fatalf("lookup: %v allocations, result %v; want 0 and [5]", allocs, dst)
	}
}

// BenchmarkPostings measures a lookup of an absent key (the common case of
// a new document) and an insert, in a table of 1M postings.
func BenchmarkPostings(b *testing.B) {
	var p postings
	defer p.free()
	r := rand.New(rand.NewPCG(5, 6))
	p.reserve(1 << 20)
	for i := range uint64(1 << 20) {
		p.insert(r.Uint64(), i)
	}
	b.Run("lookup-absent", func(b *testing.B) {
		dst := make([]uint64, 0, 16)
		b.ReportAllocs()
		for b.Loop() {
			dst = p.lookup(dst[:0], r.Uint64(), 0, math.MaxUint64)
		}
	})
	b.Run("insert", func(b *testing.B) {
		seq := uint64(1 << 20)
		b.ReportAllocs()
		for b.Loop() {
			p.insert(r.Uint64(), seq)
			seq++
		}
	})
}

// BenchmarkCandidates measures the in-memory part of a query: 16 band
// lookups of a new document in tables of 1M postings each.
func BenchmarkCandidates(b *testing.B) {
	p := sketch.Default(sketch.MinHash)
	s, _ := newStore("", nil, p, counters{}, Options{})
	defer s.freeTables()
	r := rand.New(rand.NewPCG(7, 8))
	const n = 1 << 20
	for t := range s.post {
		s.post[t].reserve(n)
		for i := range uint64(n) {
			s.post[t].insert(r.Uint64(), i)
		}
	}
	sks := make([]sketch.Sketch, 1024)
	for i := range sks {
		sig := make([]uint32, p.MinHash.NumPerm)
		for j := range sig {
			sig[j] = r.Uint32()
		}
		sks[i] = sketch.Sketch{Sig: sig}
	}
	sc := &scratch{}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.candidates(sc, &sks[i%len(sks)], 0, math.MaxUint64)
		i++
	}
}

// BenchmarkGrow measures the rebuild of one table of 1M postings (what a
// write waits for, once per table, when the tables reach maxLoad).
func BenchmarkGrow(b *testing.B) {
	var p postings
	defer p.free()
	r := rand.New(rand.NewPCG(9, 10))
	for i := range uint64(1 << 20) {
		p.insert(r.Uint64(), i)
	}
	b.ReportMetric(float64(len(p.slots)), "slots")
	for b.Loop() {
		p.resize(int(float64(p.live)/growLoad) + 1)
	}
}

// TestTablesGrowApart checks that the tables of one index, which hold the
// same number of postings, grow at different inserts (one rehash at a
// time, not all of them in one write).
func TestTablesGrowApart(t *testing.T) {
	s, _ := newStore("", nil, sketch.Default(sketch.MinHash), counters{}, Options{})
	defer s.freeTables()
	const n = 20000
	for i := range s.post {
		s.post[i].reserve(n)
	}
	grewAt := map[int]int{} // insert -> tables that grew there
	r := rand.New(rand.NewPCG(11, 12))
	for seq := range uint64(2 * n) { // sized for n at openLoad: all grow once
		if seq == n {
			if len(grewAt) > 0 {
				t.Fatalf("tables grew before they were full: %v", grewAt)
			}
		}
		for i := range s.post {
			before := len(s.post[i].slots)
			s.post[i].insert(r.Uint64(), seq)
			if len(s.post[i].slots) != before {
				grewAt[int(seq)]++
			}
		}
	}
	if len(grewAt) < len(s.post)*3/4 {
		t.Fatalf("%d tables grew at only %d distinct inserts: %v", len(s.post), len(grewAt), grewAt)
	}
	for seq, k := range grewAt {
		if k > 2 {
			t.Errorf("%d tables grew at insert %d", k, seq)
		}
	}
}

// TestTagCollisionsVerified plants, for a query's band keys, postings of
// an unrelated document under the same tags (what a different key with
// the same 32-bit tag would make): Candidates and Query must not report
// it, since it shares no key and is not similar.
func TestTagCollisionsVerified(t *testing.T) {
	for _, m := range []sketch.Method{sketch.MinHash, sketch.SimHash} {
		s := mustCreate(t, sketch.Default(m))
		sk, _ := s.NewSketcher()
		texts := testCorpus(41, 2)
		q := sk.Sketch(strings.Join(words(rand.New(rand.NewPCG(42, 43)), 80), " "))
		q.Sig = slices.Clone(q.Sig)
		if err := s.Add("unrelated", sk.Sketch(texts[0])); err != nil {
			t.Fatal(err)
		}
		if err := s.Add("same", q); err != nil {
			t.Fatal(err)
		}
		unrelated := uint64(0) // its sequence number
		s.postMu.Lock()
		for tb, k := range s.appendKeys(nil, &q) {
			tag := keyTag(k)
			s.post[tb].put(tag, tag<<32|(unrelated+1))
			s.post[tb].live++
		}
		s.postMu.Unlock()
		for _, all := range []bool{false, true} {
			var ms []Match
			var err error
			if all {
				ms, err = s.Candidates(nil, q)
			} else {
				ms, err = s.Query(nil, q, 0)
			}
			if err != nil || len(ms) != 1 || ms[0].ID != "same" {
				t.Errorf("%s: all=%v: %v, %v; want only \"same\"", m, all, ms, err)
			}
		}
	}
}
