package lsh

import "github.com/neardup/neardup/internal/arena"

// table is one band's hash table from band key to the id+1 of the bucket's
// most recently inserted member: open addressing with linear probing over
// two parallel arrays (12 bytes a slot), at most three quarters full, with
// backward-shift deletion (no tombstones). A head of 0 marks a free slot.
// Band keys are already well-mixed hashes (bandKey), so their low bits
// index the slots directly. It replaces a Go map[uint64]uint32, which took
// 16 bytes a slot plus control bytes and cost a tenth of a 1M-document
// dedup run in lookups.
//
// With offHeap its arrays are mapped outside the Go heap (package
// internal/arena) and an outgrown pair is unmapped at once; release
// unmaps the current one.
type table struct {
	keys    []uint64
	heads   []uint32
	n       int
	offHeap bool
}

// get returns the head of key k's bucket, 0 when there is none.
func (t *table) get(k uint64) uint32 {
	if t.n == 0 {
		return 0
	}
	mask := uint64(len(t.heads) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		h := t.heads[i]
		if h == 0 {
			return 0
		}
		if t.keys[i] == k {
			return h
		}
	}
}

// set makes head (not 0) the head of key k's bucket.
func (t *table) set(k uint64, head uint32) {
	if 4*(t.n+1) > 3*len(t.heads) {
		t.grow()
	}
	mask := uint64(len(t.heads) - 1)
	for i := k & mask; ; i = (i + 1) & mask {
		if t.heads[i] == 0 {
			t.keys[i], t.heads[i] = k, head
			t.n++
			return
		}
		if t.keys[i] == k {
			t.heads[i] = head
			return
		}
	}
}

// del removes key k, shifting back the entries of its probe run that
// would otherwise be cut off from their home slot.
func (t *table) del(k uint64) {
	if t.n == 0 {
		return
	}
	mask := uint64(len(t.heads) - 1)
	i := k & mask
	for ; ; i = (i + 1) & mask {
		if t.heads[i] == 0 {
			return
		}
		if t.keys[i] == k {
			break
		}
	}
	t.heads[i] = 0
	t.n--
	for j := (i + 1) & mask; t.heads[j] != 0; j = (j + 1) & mask {
		home := t.keys[j] & mask
		// The entry at j may move to the hole at i when its home is not
		// in the cyclic interval (i, j].
		if (j-home)&mask >= (j-i)&mask {
			t.keys[i], t.heads[i] = t.keys[j], t.heads[j]
			t.heads[j] = 0
			i = j
		}
	}
}

func (t *table) grow() {
	size := max(2*len(t.heads), 16)
	keys, heads := t.keys, t.heads
	if t.offHeap {
		t.keys, t.heads = arena.Make[uint64](size), arena.Make[uint32](size)
	} else {
		t.keys, t.heads = make([]uint64, size), make([]uint32, size)
	}
	t.n = 0
	for i, h := range heads {
		if h != 0 {
			t.set(keys[i], h)
		}
	}
	if t.offHeap {
		arena.Free(keys)
		arena.Free(heads)
	}
}

// release empties the table and gives its memory back (unmapped when
// offHeap).
func (t *table) release() {
	if t.offHeap {
		arena.Free(t.keys)
		arena.Free(t.heads)
	}
	t.keys, t.heads, t.n = nil, nil, 0
}

// bytes returns the memory the table holds.
func (t *table) bytes() int64 { return 12 * int64(len(t.heads)) }

// chain is the per-(id, band) array of bucket chains: next(id, band) is
// the id+1 of the next member of id's bucket in that band, 0 at the end.
// A row per id, 1<<chainShift ids a chunk (arena.Rows: never copied to
// grow; mapped outside the Go heap with offHeap).
type chain struct{ rows arena.Rows[uint32] }

// chainShift: 1<<chainShift ids share a chunk (208 KiB at 13 bands).
const chainShift = 12

func newChain(bands int, offHeap bool) chain {
	return chain{arena.NewRows[uint32](bands, chainShift, !offHeap)}
}

// at returns the cell of (id, band); id must be below the grown length.
func (c *chain) at(id uint32, band int) *uint32 { return &c.rows.Row(int(id))[band] }

// grow makes room for ids up to id.
func (c *chain) grow(id uint32) { c.rows.Grow(int(id) + 1) }

// release gives the chunks back (unmapped when offHeap).
func (c *chain) release() { c.rows.Release() }

// bytes returns the memory the chain holds.
func (c *chain) bytes() int64 { return c.rows.Bytes() }
