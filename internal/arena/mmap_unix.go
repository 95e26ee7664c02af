//go:build linux || darwin

package arena

import (
	"fmt"
	"syscall"
)

const offHeap = true

// heapFallback makes mapBytes use the Go heap, for tests of the fallback.
var heapFallback = false

func mapBytes(n int) []byte {
	if heapFallback {
		return make([]byte, n)
	}
	b, err := syscall.Mmap(-1, 0, n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		panic(fmt.Sprintf("arena: mapping %d bytes: %v", n, err))
	}
	mapped.Add(int64(n))
	return b
}

func unmapBytes(b []byte) {
	if heapFallback {
		return
	}
	if err := syscall.Munmap(b); err != nil {
		// Only a slice this package did not map, or one freed twice.
		panic(fmt.Sprintf("arena: unmapping %d bytes: %v", len(b), err))
	}
	mapped.Add(-int64(len(b)))
}
