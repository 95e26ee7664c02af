package lsh

import (
	"math/rand/v2"
	"testing"
)

// TestTableMatchesMap: random sets, deletes and gets agree with a Go map,
// with keys crowded into few home slots (long probe runs that wrap
// around) and spread ones.
func TestTableMatchesMap(t *testing.T) {
	for x, spread := range []uint64{7, 1 << 62, 7, 1 << 62} {
		r := rand.New(rand.NewPCG(1, spread))
		tb := table{offHeap: x >= 2}
		defer tb.release()
		want := map[uint64]uint32{}
		key := func() uint64 {
			if spread < 100 { // many keys with the same low bits
				return r.Uint64N(spread)<<40 | r.Uint64N(4)
			}
			return r.Uint64()
		}
		keys := make([]uint64, 3000)
		for i := range keys {
			keys[i] = key()
		}
		for step := range 200000 {
			k := keys[r.IntN(len(keys))]
			switch r.IntN(3) {
			case 0:
				v := uint32(step + 1)
				tb.set(k, v)
				want[k] = v
			case 1:
				tb.del(k)
				delete(want, k)
			default:
				if got := tb.get(k); got != want[k] {
					t.Fatalf("spread %d step %d: get(%#x) = %d, want %d", spread, step, k, got, want[k])
				}
			}
			if tb.n != len(want) {
				t.Fatalf("spread %d step %d: %d entries, want %d", spread, step, tb.n, len(want))
			}
		}
		for _, k := range keys {
			if got := tb.get(k); got != want[k] {
				t.Fatalf("spread %d: get(%#x) = %d, want %d", spread, k, got, want[k])
			}
		}
	}
}

// BenchmarkIndexInsertQuery: insert and query 100,000 signatures banded
// 13x7 (the default at 0.8), a tenth of them near-copies of another.
func BenchmarkIndexInsertQuery(b *testing.B) {
	const n, k = 100000, 128
	r := rand.New(rand.NewPCG(3, 4))
	sigs := make([][]uint32, n)
	for i := range sigs {
		sigs[i] = make([]uint32, k)
		if i > 0 && i%10 == 0 {
			copy(sigs[i], sigs[r.IntN(i)])
			sigs[i][r.IntN(k)] = r.Uint32()
			continue
		}
		for x := range sigs[i] {
			sigs[i][x] = r.Uint32()
		}
	}
	p := Params{Bands: 13, Rows: 7}
	var cands []uint32
	b.ReportAllocs()
	for b.Loop() {
		ix, err := New(p, k, Options{})
		if err != nil {
			b.Fatal(err)
		}
		for i, s := range sigs {
			if cands, err = ix.Query(cands[:0], s); err != nil {
				b.Fatal(err)
			}
			if err := ix.Insert(uint32(i), s); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/doc")
}
