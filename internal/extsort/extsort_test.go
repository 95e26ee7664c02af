package extsort

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"
	"unsafe"
)

// Oracle: a map from key to sorted documents; runs of one entry block
// and of several, the buffer left at Groups sorted whole or in parts.
func TestGroupsMatchMap(t *testing.T) {
	defer func(m int) { minPart = m }(minPart)
	minPart = 100
	for _, c := range []struct {
		budget  int64
		workers int
	}{{0, 1}, {1 << 10, 3}, {9000 * entrySize, 2}, {1 << 30, 1}, {1 << 30, 3}} { // small budgets force many runs
		budget := c.budget
		dir := t.TempDir()
		s := New(dir, budget)
		s.limit = max(int(budget/entrySize), 7) // small runs for the test
		s.Workers = c.workers
		r := rand.New(rand.NewPCG(5, 6))
		want := map[uint64][]uint32{}
		n := 25000 // runs of several blocks, parts of 100 or more
		if budget < 1<<16 {
			n = 5000 // runs of 7 entries: keep their count low
		}
		for i := range n {
			k := uint64(r.IntN(700))
			if err := s.Add(Entry{Key: k, Doc: uint32(i)}); err != nil {
				t.Fatal(err)
			}
			want[k] = append(want[k], uint32(i))
		}
		if budget == 0 && s.Runs() == 0 {
			t.Fatal("no runs spilled with a tiny budget")
		}
		got := map[uint64][]uint32{}
		var last uint64
		first := true
		err := s.Groups(func(key uint64, docs []uint32) error {
			if !first && key <= last {
				t.Fatalf("keys out of order: %d after %d", key, last)
			}
			first, last = false, key
			got[key] = slices.Clone(docs)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("budget %d: %d groups, want %d", budget, len(got), len(want))
		}
		for k, w := range want {
			if !slices.Equal(got[k], w) {
				t.Fatalf("budget %d: key %d: %v, want %v", budget, k, got[k], w)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Fatalf("Close left %d run files", len(ents))
		}
	}
}

func TestTruncatedRun(t *testing.T) {
	dir := t.TempDir()
	s := New(dir, 0)
	s.limit = 4
	for i := range 10 {
		s.Add(Entry{Key: uint64(i), Doc: uint32(i)})
	}
	if err := os.Truncate(s.runs[0], 17); err != nil {
		t.Fatal(err)
	}
	err := s.Groups(func(uint64, []uint32) error { return nil })
	if err == nil {
		t.Fatal("Groups over a truncated run succeeded")
	}
	s.Close()
}

func BenchmarkSortMerge(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	keys := make([]uint64, 1<<20)
	for i := range keys {
		keys[i] = r.Uint64()
	}
	b.SetBytes(int64(len(keys) * entrySize))
	b.ReportAllocs()
	for b.Loop() {
		s := New(b.TempDir(), 4<<20) // about 3 runs
		for i, k := range keys {
			s.Add(Entry{Key: k, Doc: uint32(i)})
		}
		s.Groups(func(uint64, []uint32) error { return nil })
		s.Close()
	}
}

// TestGroupsAllocations: merging runs does not allocate per entry (the
// spill path merges about 13 entries a document under a tight memory
// limit, where every allocation costs a share of a garbage collection).
func TestGroupsAllocations(t *testing.T) {
	s := New(t.TempDir(), 0)
	defer s.Close()
	s.limit = 1000
	const n = 20000
	for i := range n {
		if err := s.Add(Entry{Key: uint64(i % 3000), Doc: uint32(i)}); err != nil {
			t.Fatal(err)
		}
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	groups := 0
	if err := s.Groups(func(uint64, []uint32) error { groups++; return nil }); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	// The readers, the heap and the docs slice: a few per run, none per entry.
	if allocs := after.Mallocs - before.Mallocs; allocs > uint64(20*s.Runs()+100) {
		t.Errorf("%d allocations merging %d entries in %d runs", allocs, n, s.Runs())
	}
	if groups != 3000 {
		t.Errorf("%d groups, want 3000", groups)
	}
}

// GroupsParts against the same oracle: every group once and whole, each
// part's keys ascending, for skewed keys, one key only (empty parts) and
// more parts than keys; an error in one part stops it and is returned.
func TestGroupsPartsMatchMap(t *testing.T) {
	defer func(m int) { minPart = m }(minPart)
	minPart = 100
	for _, c := range []struct {
		name   string
		limit  int
		parts  int
		keyOf  func(r *rand.Rand) uint64
		groups int // at least
	}{
		{"uniform, many runs", 700, 4, func(r *rand.Rand) uint64 { return r.Uint64() % 5000 }, 3000},
		{"hashes, buffer only", 1 << 20, 3, func(r *rand.Rand) uint64 { return r.Uint64() }, 20000},
		{"skewed", 900, 5, func(r *rand.Rand) uint64 { return uint64(r.ExpFloat64() * 10) }, 10},
		{"one key", 1000, 4, func(*rand.Rand) uint64 { return 7 }, 1},
		{"parts beyond keys", 300, 16, func(r *rand.Rand) uint64 { return uint64(r.IntN(3)) << 60 }, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := New(t.TempDir(), 0)
			defer s.Close()
			s.limit, s.Workers = c.limit, 2
			r := rand.New(rand.NewPCG(7, 8))
			want := map[uint64][]uint32{}
			for i := range 25000 {
				k := c.keyOf(r)
				if err := s.Add(Entry{Key: k, Doc: uint32(i)}); err != nil {
					t.Fatal(err)
				}
				want[k] = append(want[k], uint32(i))
			}
			var mu sync.Mutex
			got := map[uint64][]uint32{}
			last := make([]uint64, c.parts)
			seen := make([]bool, c.parts)
			err := s.GroupsParts(c.parts, func(p int, key uint64, docs []uint32) error {
				if seen[p] && key <= last[p] {
					return fmt.Errorf("part %d: key %d after %d", p, key, last[p])
				}
				seen[p], last[p] = true, key
				mu.Lock()
				defer mu.Unlock()
				if _, ok := got[key]; ok {
					return fmt.Errorf("key %d from two parts or twice", key)
				}
				got[key] = slices.Clone(docs)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) || len(got) < c.groups {
				t.Fatalf("%d groups, want %d", len(got), len(want))
			}
			for k, w := range want {
				if !slices.Equal(got[k], w) {
					t.Fatalf("key %d: %d docs, want %d", k, len(got[k]), len(w))
				}
			}
		})
	}
	t.Run("error", func(t *testing.T) {
		s := New(t.TempDir(), 0)
		defer s.Close()
		s.limit = 500
		for i := range 10000 {
			s.Add(Entry{Key: uint64(i * 7919 % 10007), Doc: uint32(i)})
		}
		boom := errors.New("boom")
		err := s.GroupsParts(4, func(p int, key uint64, _ []uint32) error {
			if p == 2 {
				return boom
			}
			return nil
		})
		if !errors.Is(err, boom) {
			t.Fatalf("err %v, want boom", err)
		}
	})
}

// TestBufferWithinBudget: the buffer a Sorter fills, and the one a spill
// sorts and writes, take at most half of its budget each, counted at an
// entry's size in memory (16 bytes: 12 on disk); Buffered says what is
// left at the end.
func TestBufferWithinBudget(t *testing.T) {
	const budget = 1 << 20
	s := New(t.TempDir(), budget)
	defer s.Close()
	for i := range 3*budget/16 + 1000 {
		if err := s.Add(Entry{Key: uint64(i * 7919 % 1000), Doc: uint32(i)}); err != nil {
			t.Fatal(err)
		}
		if got := int64(cap(s.buf)) * int64(unsafe.Sizeof(Entry{})); got > budget/2 {
			t.Fatalf("after %d entries: a buffer of %d bytes, over half the budget (%d)", i+1, got, budget/2)
		}
	}
	if s.Runs() == 0 {
		t.Fatal("no run written: the test would test nothing")
	}
	if got, want := s.Buffered(), int64(len(s.buf))*16; got != want {
		t.Errorf("Buffered() = %d, want %d", got, want)
	}
}
