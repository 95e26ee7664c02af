package heapx

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

func less(a, b int) bool { return a < b }

// TestHeapSorts: New then Pop to the end gives the items sorted, for
// every length up to 64 and items with many ties.
func TestHeapSorts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for n := range 65 {
		items := make([]int, n)
		for i := range items {
			items[i] = rng.IntN(n/2 + 1)
		}
		want := slices.Sorted(slices.Values(items))
		h := New(slices.Clone(items), less)
		var got []int
		for h.Len() > 0 {
			got = append(got, h.Pop())
		}
		if !slices.Equal(got, want) {
			t.Fatalf("n=%d: popped %v, want %v", n, got, want)
		}
	}
}

// TestHeapMerge: a k-way merge of sorted runs through Top, FixTop and Pop
// (the way the staged tasks merge) against sorting everything, runs of
// pointers advanced in place, with a tie-break on the run.
func TestHeapMerge(t *testing.T) {
	type run struct {
		vals []int
		id   int
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 50 {
		var runs []*run
		var want [][2]int
		for id := range rng.IntN(8) + 1 {
			r := &run{id: id}
			for range rng.IntN(20) {
				r.vals = append(r.vals, rng.IntN(30))
			}
			slices.Sort(r.vals)
			for _, v := range r.vals {
				want = append(want, [2]int{v, id})
			}
			if len(r.vals) > 0 {
				runs = append(runs, r)
			}
		}
		slices.SortFunc(want, func(a, b [2]int) int {
			return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
		})
		h := New(runs, func(a, b *run) bool {
			return a.vals[0] < b.vals[0] || a.vals[0] == b.vals[0] && a.id < b.id
		})
		var got [][2]int
		for h.Len() > 0 {
			r := h.Top()
			got = append(got, [2]int{r.vals[0], r.id})
			if r.vals = r.vals[1:]; len(r.vals) > 0 {
				h.FixTop()
			} else {
				h.Pop()
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d: merged %v, want %v", trial, got, want)
		}
	}
}

// TestHeapPushSetTop: random Push, Pop and SetTop against a sorted slice.
func TestHeapPushSetTop(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	h := New[int](nil, less)
	var ref []int // sorted
	for step := range 5000 {
		switch op := rng.IntN(3); {
		case op == 0 || len(ref) == 0:
			x := rng.IntN(100)
			h.Push(x)
			i, _ := slices.BinarySearch(ref, x)
			ref = slices.Insert(ref, i, x)
		case op == 1:
			if got := h.Pop(); got != ref[0] {
				t.Fatalf("step %d: Pop = %d, want %d", step, got, ref[0])
			}
			ref = ref[1:]
		default:
			x := rng.IntN(100)
			h.SetTop(x)
			ref = ref[1:]
			i, _ := slices.BinarySearch(ref, x)
			ref = slices.Insert(ref, i, x)
		}
		if h.Len() != len(ref) {
			t.Fatalf("step %d: Len = %d, want %d", step, h.Len(), len(ref))
		}
		if len(ref) > 0 && h.Top() != ref[0] {
			t.Fatalf("step %d: Top = %d, want %d", step, h.Top(), ref[0])
		}
	}
	if got := slices.Sorted(slices.Values(h.Items())); !slices.Equal(got, ref) {
		t.Fatalf("Items = %v, want %v", got, ref)
	}
}

// TestPopReleases: a popped pointer is not kept in the slice's spare room.
func TestPopReleases(t *testing.T) {
	a, b := new(int), new(int)
	*b = 1
	h := New([]*int{a, b}, func(x, y *int) bool { return *x < *y })
	h.Pop()
	if spare := h.items[:2][1]; spare != nil {
		t.Fatal("Pop left the popped item's pointer behind the heap's end")
	}
}

// TestPushAllocs: once the slice has room, Push and Pop do not allocate.
func TestPushAllocs(t *testing.T) {
	h := New(make([]int, 0, 64), less)
	if n := testing.AllocsPerRun(100, func() {
		for i := range 32 {
			h.Push(31 - i)
		}
		for h.Len() > 0 {
			h.Pop()
		}
	}); n != 0 {
		t.Errorf("%v allocations a run, want 0", n)
	}
}

func BenchmarkMerge(b *testing.B) {
	const k = 64
	vals := make([]uint64, k)
	runs := make([]*uint64, k)
	for i := range vals {
		vals[i] = uint64(i)
		runs[i] = &vals[i]
	}
	h := New(runs, func(x, y *uint64) bool { return *x < *y })
	b.ReportAllocs()
	for b.Loop() {
		p := h.Top()
		*p += k
		h.FixTop()
	}
}
