//go:build unix

package store

import (
	"syscall"
	"unsafe"
)

// mapMinBytes is the size from which slots are mapped outside the Go heap.
const mapMinBytes = 1 << 16

// allocSlots returns n zeroed slots and whether they were mapped outside
// the Go heap (an anonymous private mapping, for large tables: the garbage
// collector then neither scans them nor counts them when it decides how
// far the heap may grow, which would otherwise double the memory of the
// postings). Mapped slots must be released with freeSlots.
func allocSlots(n int) ([]uint64, bool) {
	if n*slotBytes < mapMinBytes {
		return make([]uint64, n), false
	}
	b, err := syscall.Mmap(-1, 0, n*slotBytes, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		return make([]uint64, n), false
	}
	adviseHuge(b)
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n), true
}

// freeSlots releases slots returned by allocSlots; nothing may use them
// afterwards.
func freeSlots(s []uint64, mapped bool) {
	if mapped && len(s) > 0 {
		_ = syscall.Munmap(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), len(s)*slotBytes))
	}
}
