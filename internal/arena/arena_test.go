package arena

import (
	"runtime"
	"testing"
)

// both runs f with mapped memory (where the system has it) and with the
// heap fallback that other systems build.
func both(t *testing.T, f func(t *testing.T)) {
	t.Run("default", f)
	t.Run("heap", func(t *testing.T) {
		old := heapFallback
		heapFallback = true
		defer func() { heapFallback = old }()
		f(t)
	})
}

func TestMakeFree(t *testing.T) {
	both(t, func(t *testing.T) {
		before := Mapped()
		s := Make[uint64](1000)
		if len(s) != 1000 || cap(s) != 1000 {
			t.Fatalf("Make(1000): len %d cap %d", len(s), cap(s))
		}
		for i, v := range s {
			if v != 0 {
				t.Fatalf("Make: element %d is %d, want 0", i, v)
			}
			s[i] = uint64(i) * 0x9e3779b97f4a7c15
		}
		for i, v := range s {
			if v != uint64(i)*0x9e3779b97f4a7c15 {
				t.Fatalf("element %d = %d after write", i, v)
			}
		}
		if got, want := Mapped()-before, int64(8000); OffHeap && !heapFallback && got != want {
			t.Errorf("Mapped grew by %d, want %d", got, want)
		} else if heapFallback && got != 0 {
			t.Errorf("Mapped grew by %d under the heap fallback, want 0", got)
		}
		Free(s[:10]) // a reslice from the start frees the whole
		if got := Mapped(); got != before {
			t.Errorf("Mapped after Free = %d, want %d", got, before)
		}
		if Make[uint32](0) != nil {
			t.Error("Make(0) != nil")
		}
		Free[uint32](nil)
	})
}

func TestArray(t *testing.T) {
	both(t, func(t *testing.T) {
		before := Mapped()
		a := NewArray[uint32](6) // chunks of 64
		const n = 1000
		ref := make([]uint32, 0, n)
		for i := range n {
			a.Grow(i + 1)
			a.Set(i, uint32(i*7+1))
			ref = append(ref, uint32(i*7+1))
		}
		if a.Len() != n {
			t.Fatalf("Len = %d, want %d", a.Len(), n)
		}
		// Fixed chunks: no more than one chunk beyond the length.
		if got, max := a.Bytes(), int64((n+63)/64*64*4); got != max {
			t.Errorf("Bytes = %d, want %d", got, max)
		}
		if OffHeap && !heapFallback {
			if got := Mapped() - before; got != a.Bytes() {
				t.Errorf("Mapped grew by %d, want the array's %d", got, a.Bytes())
			}
		}
		for i, v := range ref {
			if g := a.Get(i); g != v {
				t.Fatalf("Get(%d) = %d, want %d", i, g, v)
			}
		}
		a.Grow(10) // never shrinks
		if a.Len() != n {
			t.Errorf("Grow(10) shrank the array to %d", a.Len())
		}
		a.Release()
		if a.Len() != 0 || a.Bytes() != 0 {
			t.Errorf("after Release: Len %d, Bytes %d", a.Len(), a.Bytes())
		}
		if got := Mapped(); got != before {
			t.Errorf("Mapped after Release = %d, want %d", got, before)
		}
		// Usable again, zeroed.
		a.Grow(3)
		if a.Get(2) != 0 {
			t.Errorf("Get(2) after Release and Grow = %d, want 0", a.Get(2))
		}
		a.Release()
	})
}

func TestArrayPanics(t *testing.T) {
	a := NewArray[uint16](6)
	a.Grow(100)
	defer a.Release()
	for name, f := range map[string]func(){
		"Get past Len": func() { a.Get(100) },
		"Set past Len": func() { a.Set(100, 1) },
		"shift":        func() { NewArray[uint8](40) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
	r := NewArray[uint8](6)
	r.Grow(10)
	r.Release()
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Get after Release: no panic")
			}
		}()
		r.Get(1)
	}()
}

// TestOffHeap checks that mapped arrays are not on the Go heap: the
// collector's view of the heap does not grow with them.
func TestOffHeap(t *testing.T) {
	if !OffHeap {
		t.Skip("no mappings on this system")
	}
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap := ms.HeapAlloc
	a := NewArray[uint64](20) // 8 MiB chunks
	a.Grow(8 << 20)           // 64 MiB
	for i := 0; i < a.Len(); i += 512 {
		a.Set(i, 1)
	}
	runtime.ReadMemStats(&ms)
	if grown := int64(ms.HeapAlloc) - int64(heap); grown > 1<<20 {
		t.Errorf("the heap grew by %d bytes for a mapped array of 64 MiB", grown)
	}
	a.Release()
}

// TestRows checks that rows keep their values across chunks as Rows grows,
// mapped and on the heap, that a row is capped at its width, and what
// Bytes and Release say.
func TestRows(t *testing.T) {
	for _, onHeap := range []bool{false, true} {
		before := Mapped()
		r := NewRows[uint32](13, 6, onHeap) // 64 rows of 13 a chunk
		const n = 1000
		for i := range n {
			r.Grow(i + 1)
			row := r.Row(i)
			if len(row) != 13 || cap(row) != 13 {
				t.Fatalf("onHeap=%v: row %d has len %d cap %d, want 13", onHeap, i, len(row), cap(row))
			}
			for b := range row {
				row[b] = uint32(i*13 + b)
			}
		}
		for i := range n {
			for b, v := range r.Row(i) {
				if v != uint32(i*13+b) {
					t.Fatalf("onHeap=%v: row %d [%d] = %d, want %d", onHeap, i, b, v, i*13+b)
				}
			}
		}
		if want := int64((n+63)/64) * 64 * 13 * 4; r.Bytes() != want {
			t.Errorf("onHeap=%v: Bytes %d, want %d", onHeap, r.Bytes(), want)
		}
		if mapped := Mapped() - before; OffHeap && !onHeap && mapped != r.Bytes() || onHeap && mapped != 0 {
			t.Errorf("onHeap=%v: %d bytes mapped for %d held", onHeap, mapped, r.Bytes())
		}
		r.Release()
		if r.Bytes() != 0 || Mapped() != before {
			t.Errorf("onHeap=%v: after Release, Bytes %d, mapped %d more than before", onHeap, r.Bytes(), Mapped()-before)
		}
	}
}
