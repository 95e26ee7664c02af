// Package arena holds large, long-lived arrays of plain integers outside
// the Go heap, in anonymous memory mappings (mmap with MAP_PRIVATE and
// MAP_ANON on Linux and darwin; other systems fall back to the Go heap).
//
// The garbage collector neither scans such memory nor counts it when it
// paces itself: a heap of 100 MB beside 600 MB of mapped arrays is
// collected when it reaches 200 MB, not 1.4 GB (GOGC=100 lets the heap
// grow to twice what was live). The runtime's soft memory limit
// (runtime/debug.SetMemoryLimit) does not count it either, so a caller
// that sets one subtracts what it maps (see Mapped).
//
// Memory is never copied to grow: an Array grows by fixed chunks, so its
// resident size is linear in its length (a doubling slice holds the old
// and the new copy at once). Mapped pages are zero until written, and
// untouched pages of a chunk are not resident.
//
// Lifetime is structural: the owner of an Array (or of a slice from Make)
// hands out views only for the duration of a call and releases the
// memory once, when it is done; Release drops the Array's chunks, so a
// later access is an index-out-of-range panic, never a read of unmapped
// memory. Nothing here is safe for concurrent use by writers.
//
// Only integer types are allowed: the memory must hold no Go pointers (the
// collector would not see them).
package arena

import (
	"fmt"
	"sync/atomic"
	"unsafe"
)

// Word is an element type an arena holds: plain integers, no pointers.
type Word interface {
	~uint8 | ~uint16 | ~uint32 | ~uint64 | ~int8 | ~int16 | ~int32 | ~int64
}

// mapped counts the bytes currently mapped by this package.
var mapped atomic.Int64

// Mapped returns the bytes this package has mapped and not yet released
// (0 where it falls back to the Go heap): memory the Go runtime neither
// paces its collections on nor counts in its soft limit.
func Mapped() int64 { return mapped.Load() }

// OffHeap reports whether this build maps memory outside the Go heap
// (Linux and darwin) rather than falling back to it.
const OffHeap = offHeap

// Make returns a zeroed slice of n elements, mapped outside the Go heap
// where the system allows it. The caller owns it and must give it back
// with Free (at most once, and not use it afterwards); a slice that is
// never freed stays mapped until the process exits. It panics, as make
// does, when the memory cannot be had.
func Make[T Word](n int) []T {
	if n <= 0 {
		return nil
	}
	var zero T
	size := int(unsafe.Sizeof(zero))
	if n > maxBytes/size {
		panic(fmt.Sprintf("arena: %d elements of %d bytes: too large", n, size))
	}
	b := mapBytes(n * size)
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// Free releases a slice returned by Make (the whole of it: s must have
// Make's capacity; a reslice from its start is fine). nil is a no-op.
func Free[T Word](s []T) {
	if cap(s) == 0 {
		return
	}
	var zero T
	s = s[:cap(s)]
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*int(unsafe.Sizeof(zero)))
	unmapBytes(b)
}

// maxBytes bounds one mapping (1 TiB), far above any use here.
const maxBytes = 1 << 40

// Array is a growable array of T in fixed-size chunks of 1<<shift
// elements, each its own mapping. The zero value is not usable: see
// NewArray.
type Array[T Word] struct {
	shift  uint
	mask   int
	chunks [][]T
	n      int
}

// NewArray returns an empty Array whose chunks hold 1<<shift elements
// (shift between 6 and 30).
func NewArray[T Word](shift uint) *Array[T] {
	if shift < 6 || shift > 30 {
		panic(fmt.Sprintf("arena: chunk shift %d out of [6, 30]", shift))
	}
	return &Array[T]{shift: shift, mask: 1<<shift - 1}
}

// Len returns the array's length.
func (a *Array[T]) Len() int { return a.n }

// Grow makes the array at least n elements long; new elements are zero.
func (a *Array[T]) Grow(n int) {
	for len(a.chunks)<<a.shift < n {
		a.chunks = append(a.chunks, Make[T](a.mask+1))
	}
	a.n = max(a.n, n)
}

// Get returns element i (i < Len).
func (a *Array[T]) Get(i int) T {
	if i >= a.n {
		panic(fmt.Sprintf("arena: index %d out of range [0, %d)", i, a.n))
	}
	return a.chunks[i>>a.shift][i&a.mask]
}

// Set sets element i (i < Len) to v.
func (a *Array[T]) Set(i int, v T) {
	if i >= a.n {
		panic(fmt.Sprintf("arena: index %d out of range [0, %d)", i, a.n))
	}
	a.chunks[i>>a.shift][i&a.mask] = v
}

// Release unmaps every chunk and empties the array; it may be grown
// again afterwards.
func (a *Array[T]) Release() {
	for _, c := range a.chunks {
		Free(c)
	}
	a.chunks, a.n = nil, 0
}

// Bytes returns the memory the array holds (its chunks).
func (a *Array[T]) Bytes() int64 {
	var zero T
	return int64(len(a.chunks)) << a.shift * int64(unsafe.Sizeof(zero))
}
