//go:build !(linux || darwin)

package arena

// On other systems the arrays live on the Go heap: the same behaviour,
// paced by the collector.

const offHeap = false

var heapFallback = true

func mapBytes(n int) []byte { return make([]byte, n) }

func unmapBytes([]byte) {}
