//go:build !unix

package store

// allocSlots returns n zeroed slots on the Go heap.
func allocSlots(n int) ([]uint64, bool) { return make([]uint64, n), false }

// freeSlots does nothing: the slots are garbage collected.
func freeSlots([]uint64, bool) {}
