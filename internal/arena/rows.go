package arena

import (
	"fmt"
	"unsafe"
)

// Rows is a growable table of rows of Width elements of T, in chunks of
// 1<<shift rows (a row never spans two chunks), each chunk mapped outside
// the Go heap (Make) or, with onHeap, an ordinary Go slice: the same
// layout for callers that keep both modes. Like Array it never copies
// itself to grow, and its views are valid until Release. The zero value
// is not usable: see NewRows.
type Rows[T Word] struct {
	width  int
	shift  uint
	onHeap bool
	chunks [][]T
}

// NewRows returns an empty Rows of rows of width elements, 1<<shift rows a
// chunk (shift at most 30), on the Go heap when onHeap.
func NewRows[T Word](width int, shift uint, onHeap bool) Rows[T] {
	if width < 1 || shift > 30 {
		panic(fmt.Sprintf("arena: rows of width %d in chunks of 1<<%d", width, shift))
	}
	return Rows[T]{width: width, shift: shift, onHeap: onHeap}
}

// Grow makes room for rows [0, n); new rows are zero.
func (r *Rows[T]) Grow(n int) {
	for len(r.chunks)<<r.shift < n {
		size := r.width << r.shift
		if r.onHeap {
			r.chunks = append(r.chunks, make([]T, size))
		} else {
			r.chunks = append(r.chunks, Make[T](size))
		}
	}
}

// Row returns row i (below what Grow made room for), capped at its width.
func (r *Rows[T]) Row(i int) []T {
	o := (i & (1<<r.shift - 1)) * r.width
	return r.chunks[i>>r.shift][o : o+r.width : o+r.width]
}

// Release gives every chunk back (unmapped unless onHeap); Grow may be
// called again afterwards.
func (r *Rows[T]) Release() {
	if !r.onHeap {
		for _, c := range r.chunks {
			Free(c)
		}
	}
	r.chunks = nil
}

// Bytes returns the memory the chunks hold.
func (r *Rows[T]) Bytes() int64 {
	var zero T
	return int64(len(r.chunks)) * int64(r.width) << r.shift * int64(unsafe.Sizeof(zero))
}
