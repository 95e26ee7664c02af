// Package heapx is a binary min-heap over a slice, ordered by a function:
// what container/heap does, without the five methods (Len, Less, Swap,
// Push, Pop) each heap type must declare for it, nor the boxing of every
// pushed and popped value in an interface.
//
// The k-way merges of sorted runs use it as container/heap is used: Top is
// the least item; after the caller advances it, FixTop restores the order,
// and Pop drops it once its run is spent. A Heap is not safe for concurrent
// use.
package heapx

// Heap is a min-heap of T by less: Top is an item no other is less than.
// Items that are equal by less come out in no particular order; give less
// a tie-break for a deterministic one.
type Heap[T any] struct {
	items []T
	less  func(a, b T) bool
}

// New returns a heap of items, ordered in O(len(items)). The heap owns
// items from then on: the caller must not use the slice again.
func New[T any](items []T, less func(a, b T) bool) *Heap[T] {
	h := &Heap[T]{items: items, less: less}
	for i := len(items)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
	return h
}

// Len returns the number of items.
func (h *Heap[T]) Len() int { return len(h.items) }

// Top returns the least item. The heap must not be empty.
func (h *Heap[T]) Top() T { return h.items[0] }

// Push adds x, in O(log n).
func (h *Heap[T]) Push(x T) {
	h.items = append(h.items, x)
	h.up(len(h.items) - 1)
}

// Pop removes and returns the least item, in O(log n). The heap must not
// be empty.
func (h *Heap[T]) Pop() T {
	n := len(h.items) - 1
	x := h.items[0]
	h.items[0] = h.items[n]
	var zero T
	h.items[n] = zero // the heap keeps no reference to what it gave back
	h.items = h.items[:n]
	if n > 0 {
		h.down(0)
	}
	return x
}

// FixTop restores the order after the least item changed (in place, when
// T is a pointer, or through SetTop), in O(log n).
func (h *Heap[T]) FixTop() { h.down(0) }

// SetTop replaces the least item with x and restores the order, in
// O(log n): Pop then Push, in one pass.
func (h *Heap[T]) SetTop(x T) {
	h.items[0] = x
	h.down(0)
}

// Items returns the items, in heap order (the least first, the rest in no
// particular order), for example to close them all. The slice is the
// heap's: valid until the next change, and not to be changed.
func (h *Heap[T]) Items() []T { return h.items }

func (h *Heap[T]) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			return
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *Heap[T]) down(i int) {
	n := len(h.items)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		c := l
		if r := l + 1; r < n && h.less(h.items[r], h.items[l]) {
			c = r
		}
		if !h.less(h.items[c], h.items[i]) {
			return
		}
		h.items[i], h.items[c] = h.items[c], h.items[i]
		i = c
	}
}
