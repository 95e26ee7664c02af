package simhash

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// clustered returns n fingerprints of f bits: random centres, and copies
// of them with 0 to maxFlip random bits flipped, and some exact copies, so
// that every distance up to maxFlip occurs often.
func clustered(r *rand.Rand, n, f, maxFlip int) []Fingerprint {
	mask := maskOf(f)
	fps := make([]Fingerprint, 0, n)
	for len(fps) < n {
		var c Fingerprint
		if len(fps) == 0 || r.IntN(4) == 0 {
			c = Fingerprint{r.Uint64() & mask.Hi, r.Uint64() & mask.Lo}
		} else {
			c = fps[r.IntN(len(fps))]
			for range r.IntN(maxFlip + 1) {
				b := r.IntN(f)
				if b >= 64 {
					c.Hi ^= 1 << uint(b-64)
				} else {
					c.Lo ^= 1 << uint(b)
				}
			}
		}
		fps = append(fps, c)
	}
	return fps
}

type pair struct{ i, j, d int }

func linearPairs(fps []Fingerprint, k int) []pair {
	var out []pair
	for i := range fps {
		for j := i + 1; j < len(fps); j++ {
			if d := fps[i].Distance(fps[j]); d <= k {
				out = append(out, pair{i, j, d})
			}
		}
	}
	return out
}

func sortPairs(p []pair) {
	slices.SortFunc(p, func(a, b pair) int {
		return cmp.Or(cmp.Compare(a.i, b.i), cmp.Compare(a.j, b.j))
	})
}

func sortMatches(m []Match) {
	slices.SortFunc(m, func(a, b Match) int { return cmp.Compare(a.ID, b.ID) })
}

// configs are the designs the oracle tests cover: every k from 0 to 8 at
// 64 bits with the chosen design and with forced block counts (the
// pigeonhole k+1, and more), plus 128 and odd sizes.
func configs() []struct{ f, k, blocks int } {
	var cs []struct{ f, k, blocks int }
	for k := 0; k <= 8; k++ {
		cs = append(cs, struct{ f, k, blocks int }{64, k, 0})
		cs = append(cs, struct{ f, k, blocks int }{64, k, k + 1})
		if k >= 1 && k <= 4 {
			cs = append(cs, struct{ f, k, blocks int }{64, k, k + 3})
		}
	}
	cs = append(cs,
		struct{ f, k, blocks int }{64, 3, 6}, // 20 tables of 3 blocks
		struct{ f, k, blocks int }{128, 0, 0},
		struct{ f, k, blocks int }{128, 3, 0},
		struct{ f, k, blocks int }{128, 3, 4},
		struct{ f, k, blocks int }{128, 6, 7},  // blocks straddle bit 64
		struct{ f, k, blocks int }{128, 3, 10}, // keys over 64 bits: hashed
		struct{ f, k, blocks int }{128, 8, 0},
		struct{ f, k, blocks int }{100, 5, 0},
		struct{ f, k, blocks int }{6, 2, 3},
	)
	return cs
}

// TestAllPairsOracle checks AllPairs against a linear Hamming scan for
// every configuration.
func TestAllPairsOracle(t *testing.T) {
	for _, c := range configs() {
		t.Run(fmt.Sprintf("f=%d/k=%d/blocks=%d", c.f, c.k, c.blocks), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.f), uint64(c.k*100+c.blocks)))
			fps := clustered(r, 1200, c.f, c.k+2)
			want := linearPairs(fps, c.k)
			var got []pair
			d, err := AllPairs(fps, c.f, c.k, DesignOptions{Blocks: c.blocks}, func(i, j, dist int) {
				got = append(got, pair{i, j, dist})
			})
			if err != nil {
				t.Fatal(err)
			}
			sortPairs(got)
			if !slices.Equal(got, want) {
				t.Fatalf("%v: AllPairs found %d pairs, the linear scan %d (first difference %v)", d, len(got), len(want), firstDiff(got, want))
			}
			// The grouped output expands to the same pairs.
			first := make([]int, len(fps))
			for i := range first {
				first[i] = i
			}
			var near []pair
			_, err = AllPairsGrouped(fps, c.f, c.k, DesignOptions{Blocks: c.blocks},
				func(f, i int) {
					if f >= i || fps[f] != fps[i] || first[f] != f {
						t.Fatalf("same(%d, %d): not an earlier first copy", f, i)
					}
					first[i] = f
				},
				func(a, b, dist int) { near = append(near, pair{a, b, dist}) })
			if err != nil {
				t.Fatal(err)
			}
			members := map[int][]int{}
			for i, f := range first {
				members[f] = append(members[f], i)
			}
			var expanded []pair
			for _, p := range near {
				if first[p.i] != p.i || first[p.j] != p.j {
					t.Fatalf("near pair %v is not between first copies", p)
				}
				for _, i := range members[p.i] {
					for _, j := range members[p.j] {
						expanded = append(expanded, pair{min(i, j), max(i, j), p.d})
					}
				}
			}
			for _, m := range members {
				for a := range m {
					for b := a + 1; b < len(m); b++ {
						expanded = append(expanded, pair{m[a], m[b], 0})
					}
				}
			}
			sortPairs(expanded)
			if !slices.Equal(expanded, want) {
				t.Fatalf("AllPairsGrouped expands to %d pairs, the linear scan finds %d (%v)", len(expanded), len(want), firstDiff(expanded, want))
			}
			if len(want) < 100 {
				t.Errorf("only %d pairs within %d: the test data is too sparse to test anything", len(want), c.k)
			}
		})
	}
}

func firstDiff(a, b []pair) string {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return fmt.Sprintf("got %v, want %v", a[i], b[i])
		}
	}
	return "one is a prefix of the other"
}

// TestIndexOracle checks Query against a linear scan of what the index
// holds, through inserts, removals and re-inserts (slot reuse).
func TestIndexOracle(t *testing.T) {
	for _, c := range configs() {
		t.Run(fmt.Sprintf("f=%d/k=%d/blocks=%d", c.f, c.k, c.blocks), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.f)+1, uint64(c.k*100+c.blocks)))
			fps := clustered(r, 800, c.f, c.k+2)
			x, err := NewIndex(c.f, c.k, DesignOptions{N: len(fps), Blocks: c.blocks})
			if err != nil {
				t.Fatal(err)
			}
			live := map[int]Fingerprint{}
			check := func(stage string) {
				t.Helper()
				if x.Len() != len(live) {
					t.Fatalf("%s: Len = %d, want %d", stage, x.Len(), len(live))
				}
				found := 0
				for q := 0; q < 200; q++ {
					qfp := fps[r.IntN(len(fps))]
					var want []Match
					for id, fp := range live {
						if d := qfp.Distance(fp); d <= c.k {
							want = append(want, Match{id, d})
						}
					}
					got := x.Query(qfp, nil)
					sortMatches(got)
					sortMatches(want)
					if !slices.Equal(got, want) {
						t.Fatalf("%s: %v: Query found %v, the linear scan %v", stage, x.Design(), got, want)
					}
					found += len(want)
				}
				if len(live) > 0 && found == 0 {
					t.Errorf("%s: no query found anything: the test is vacuous", stage)
				}
			}
			for id, fp := range fps {
				if err := x.Insert(id, fp); err != nil {
					t.Fatal(err)
				}
				live[id] = fp
			}
			check("after insert")
			for id := range fps {
				if id%3 == 0 {
					if !x.Remove(id) {
						t.Fatalf("Remove(%d) = false, want true", id)
					}
					delete(live, id)
				}
			}
			if x.Remove(0) {
				t.Error("second Remove(0) = true, want false")
			}
			check("after remove")
			for id := range fps {
				if id%6 == 0 {
					nid := id + len(fps)
					if err := x.Insert(nid, fps[id]); err != nil {
						t.Fatal(err)
					}
					live[nid] = fps[id]
				}
			}
			check("after re-insert")
			if err := x.Insert(1, fps[1]); !errors.Is(err, ErrDuplicateID) {
				t.Errorf("Insert of a present id: error %v, want ErrDuplicateID", err)
			}
		})
	}
}

func TestDesign(t *testing.T) {
	d, err := ChooseDesign(1000, 64, 3, false, DesignOptions{Blocks: 4})
	if err != nil || d.Tables != 4 || d.KeyBits != 16 || d.KeyBlocks != 1 {
		t.Errorf("forced 4 blocks at f=64 k=3: %v, %v; want 4 tables of 16 bits", d, err)
	}
	d, err = ChooseDesign(1000, 64, 3, false, DesignOptions{Blocks: 6})
	if err != nil || d.Tables != 20 || d.KeyBlocks != 3 || d.KeyBits != 31 {
		t.Errorf("forced 6 blocks at f=64 k=3: %v, %v; want 20 tables of 3 blocks (31 bits: 11+10+10)", d, err)
	}
	// The cost model: more blocks as N grows, and a bounded number of
	// candidates per probe.
	for _, c := range []struct {
		n, f, k       int
		batch         bool
		maxCandidates float64
	}{
		{1000, 64, 3, false, 1},
		{1 << 20, 64, 3, false, 1},
		{1 << 20, 64, 3, true, 100},
		{1 << 30, 64, 3, false, 10},
		{1 << 20, 64, 8, false, 5000},
		{1 << 20, 64, 8, true, 5000},
		{1 << 20, 128, 3, false, 1},
		{1 << 20, 128, 8, false, 1},
	} {
		d, err := ChooseDesign(c.n, c.f, c.k, c.batch, DesignOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("N=%d batch=%v: %v", c.n, c.batch, d)
		if d.Candidates > c.maxCandidates || d.Tables > DefaultMaxTables {
			t.Errorf("N=%d f=%d k=%d: %v: want at most %v candidates and %d tables", c.n, c.f, c.k, d, c.maxCandidates, DefaultMaxTables)
		}
	}
	// A bound on the candidates: the fewest tables that meet it.
	for _, c := range []struct {
		n, k  int
		bound float64
		want  int // blocks
	}{
		{1 << 20, 3, 100, 4},  // 4 tables: 64 candidates
		{1 << 20, 3, 10, 5},   // 10 tables: 0.2
		{1 << 20, 3, 0.05, 6}, // 20 tables: 0.01
		{1 << 20, 8, 1, 11},   // not reachable within 256 tables: the fewest candidates, 165 tables
	} {
		d, err := ChooseDesign(c.n, 64, c.k, false, DesignOptions{MaxCandidates: c.bound})
		if err != nil || d.Blocks != c.want {
			t.Errorf("N=%d k=%d MaxCandidates=%v: %v, %v; want %d blocks", c.n, c.k, c.bound, d, err, c.want)
		}
	}
	for _, c := range []struct{ f, k int }{{64, 64}, {64, 100}, {64, -1}, {128, 128}} {
		if _, err := ChooseDesign(10, c.f, c.k, false, DesignOptions{}); !errors.Is(err, ErrDistance) {
			t.Errorf("ChooseDesign(f=%d, k=%d) error %v, want ErrDistance", c.f, c.k, err)
		}
		if _, err := NewIndex(c.f, c.k, DesignOptions{}); !errors.Is(err, ErrDistance) {
			t.Errorf("NewIndex(f=%d, k=%d) error %v, want ErrDistance", c.f, c.k, err)
		}
	}
	if _, err := ChooseDesign(10, 64, 3, false, DesignOptions{Blocks: 3}); err == nil {
		t.Error("3 blocks for k=3 accepted, want an error (pigeonhole needs k+1)")
	}
}

// TestBucketsDoNotCollapse builds an index at k=8 over fingerprints of
// random documents and checks that no bucket is far above what uniform
// bits predict (seed 002's warning about biased hashes).
func TestBucketsDoNotCollapse(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	const n = 20000
	h, _ := New(Options{})
	x, err := NewIndex(64, 8, DesignOptions{N: n})
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		// Small vocabulary, short documents: the hard case for balance.
		if err := x.Insert(i, h.Hash(randomFeatures(r, 31, 5000))); err != nil {
			t.Fatal(err)
		}
	}
	d := x.Design()
	if d.KeyBits < 12 {
		t.Fatalf("%v: keys of %d bits would give buckets of n/%d", d, d.KeyBits, 1<<d.KeyBits)
	}
	maxChain := 0
	for tb := range x.heads {
		for _, s := range x.heads[tb] {
			c := 0
			for ; s >= 0; s = x.next[tb][s] {
				c++
			}
			maxChain = max(maxChain, c)
		}
	}
	expect := float64(n) / float64(uint64(1)<<d.KeyBits)
	t.Logf("%v: longest bucket %d, mean for the shortest key %.2f", d, maxChain, expect)
	if float64(maxChain) > 20*expect+20 {
		t.Errorf("%v: a bucket holds %d fingerprints, uniform bits predict about %.1f", d, maxChain, expect)
	}
}

// TestQueryAllocs proves Query does not allocate once dst has room.
func TestQueryAllocs(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	fps := clustered(r, 5000, 64, 4)
	x, _ := NewIndex(64, 3, DesignOptions{N: len(fps)})
	for i, fp := range fps {
		_ = x.Insert(i, fp)
	}
	dst := make([]Match, 0, len(fps))
	if a := testing.AllocsPerRun(100, func() { dst = x.Query(fps[7], dst[:0]) }); a != 0 {
		t.Errorf("Query allocates %v times, want 0", a)
	}
}

func BenchmarkQuery(b *testing.B) {
	r := rand.New(rand.NewPCG(15, 16))
	for _, k := range []int{3, 8} {
		const n = 100000
		fps := make([]Fingerprint, n)
		for i := range fps {
			fps[i] = Fingerprint{Lo: r.Uint64()}
		}
		x, _ := NewIndex(64, k, DesignOptions{N: n})
		for i, fp := range fps {
			_ = x.Insert(i, fp)
		}
		b.Run(fmt.Sprintf("k=%d/n=%d", k, n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(8)
			var dst []Match
			i := 0
			for b.Loop() {
				dst = x.Query(fps[i%n], dst[:0])
				i++
			}
		})
	}
}

func BenchmarkAllPairs(b *testing.B) {
	r := rand.New(rand.NewPCG(17, 18))
	for _, n := range []int{10000, 100000} {
		fps := make([]Fingerprint, n)
		for i := range fps {
			fps[i] = Fingerprint{Lo: r.Uint64()}
		}
		b.Run(fmt.Sprintf("k=3/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				_, _ = AllPairs(fps, 64, 3, DesignOptions{}, func(i, j, d int) {})
			}
		})
	}
}

// TestDesignForcedBlocksBounded checks that a forced number of blocks with
// more tables than MaxTables is refused (it used to enumerate all C(40, 20)
// tables first), and that the closed-form expected candidates equal the
// sum over the enumerated tables.
func TestDesignForcedBlocksBounded(t *testing.T) {
	for _, c := range []struct{ f, k, blocks, maxTables int }{
		{64, 20, 40, 0}, {128, 30, 64, 0}, {64, 8, 13, 256}, {64, 3, 6, 19},
	} {
		_, err := ChooseDesign(1<<20, c.f, c.k, false, DesignOptions{Blocks: c.blocks, MaxTables: c.maxTables})
		if err == nil {
			t.Errorf("f=%d k=%d blocks=%d MaxTables=%d: accepted, want an error (C(%d, %d) = %d tables)",
				c.f, c.k, c.blocks, c.maxTables, c.blocks, c.k, binomial(c.blocks, c.k))
		}
	}
	if d, err := ChooseDesign(1<<20, 64, 3, false, DesignOptions{Blocks: 6, MaxTables: 20}); err != nil || d.Tables != 20 {
		t.Errorf("6 blocks, k=3, MaxTables 20: %v, %v; want 20 tables", d, err)
	}
	for _, c := range []struct{ n, f, b, k int }{
		{1 << 20, 64, 6, 3}, {1000, 64, 7, 3}, {1 << 20, 100, 7, 4}, {1 << 20, 128, 11, 8}, {1, 64, 4, 3}, {1 << 30, 64, 13, 9},
	} {
		sizes := blockSizes(c.f, c.b)
		want := 0.0
		combinations(c.b, c.b-c.k, func(m uint64) {
			kb := 0
			for x := m; x != 0; x &= x - 1 {
				kb += sizes[bits.TrailingZeros64(x)]
			}
			want += float64(max(c.n-1, 0)) / math.Exp2(float64(kb))
		})
		got := expectedCandidates(c.n, c.f, c.b, c.b-c.k)
		if math.Abs(got-want) > 1e-9*max(1, want) {
			t.Errorf("expectedCandidates(n=%d, f=%d, b=%d, k=%d) = %v, enumeration gives %v", c.n, c.f, c.b, c.k, got, want)
		}
	}
}

// TestTableMasks: the masks cover the blocks as the design says, and two
// fingerprints within the distance agree on some mask (checked on random
// pairs at every distance up to k).
func TestTableMasks(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ f, k int }{{64, 3}, {64, 6}, {128, 8}} {
		d, err := ChooseDesign(1<<20, c.f, c.k, true, DesignOptions{})
		if err != nil {
			t.Fatal(err)
		}
		masks := d.TableMasks()
		if len(masks) != d.Tables {
			t.Fatalf("%v: %d masks, want %d", d, len(masks), d.Tables)
		}
		for _, m := range masks {
			if got := bits.OnesCount64(m.Lo) + bits.OnesCount64(m.Hi); got < d.KeyBits {
				t.Fatalf("%v: a mask of %d bits, fewer than KeyBits %d", d, got, d.KeyBits)
			}
		}
		for range 2000 {
			a := Fingerprint{Lo: rng.Uint64()}
			if c.f > 64 {
				a.Hi = rng.Uint64()
			}
			b := a
			for _, bit := range rng.Perm(c.f)[:rng.IntN(c.k+1)] {
				if bit >= 64 {
					b.Hi ^= 1 << (bit - 64)
				} else {
					b.Lo ^= 1 << bit
				}
			}
			agree := false
			for _, m := range masks {
				if a.Lo&m.Lo == b.Lo&m.Lo && a.Hi&m.Hi == b.Hi&m.Hi {
					agree = true
				}
			}
			if !agree {
				t.Fatalf("%v: %x and %x at distance %d agree on no table", d, a, b, a.Distance(b))
			}
		}
	}
}

// TestPairOrder: AllPairsGrouped meets the pairs of distinct fingerprints
// in the order PairOrder gives (table, key, then the two fingerprints in
// ascending order), so the pairs of disjoint subsets, merged by it, come
// in the order of one call over the whole set, for every configuration.
func TestPairOrder(t *testing.T) {
	less := func(a, b Fingerprint) int { return cmp.Or(cmp.Compare(a.Hi, b.Hi), cmp.Compare(a.Lo, b.Lo)) }
	for _, c := range configs() {
		if c.k == 0 {
			continue // no pairs of distinct fingerprints
		}
		t.Run(fmt.Sprintf("f=%d/k=%d/blocks=%d", c.f, c.k, c.blocks), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(c.f), uint64(c.k*100+c.blocks)))
			fps := clustered(r, 1200, c.f, c.k+2)
			d, err := ChooseDesign(len(fps), c.f, c.k, true, DesignOptions{Blocks: c.blocks})
			if err != nil {
				t.Fatal(err)
			}
			order := d.PairOrder()
			type key struct {
				t    int
				k    uint64
				a, b Fingerprint
			}
			var keys []key
			_, err = AllPairsGrouped(fps, c.f, c.k, DesignOptions{Blocks: c.blocks}, func(int, int) {},
				func(a, b, _ int) {
					fa, fb := fps[a], fps[b]
					if less(fb, fa) < 0 {
						fa, fb = fb, fa
					}
					tb, k, kb := order(fa, fb)
					if kb < 64 && k>>kb != 0 {
						t.Fatalf("key %x longer than its %d bits", k, kb)
					}
					keys = append(keys, key{tb, k, fa, fb})
				})
			if err != nil {
				t.Fatal(err)
			}
			if len(keys) < 50 {
				t.Fatalf("only %d pairs of distinct fingerprints: too sparse", len(keys))
			}
			for x := 1; x < len(keys); x++ {
				p, q := keys[x-1], keys[x]
				if c := cmp.Or(cmp.Compare(p.t, q.t), cmp.Compare(p.k, q.k), less(p.a, q.a), less(p.b, q.b)); c >= 0 {
					t.Fatalf("pair %d (%+v) met after pair %d (%+v)", x, q, x-1, p)
				}
			}
		})
	}
}
