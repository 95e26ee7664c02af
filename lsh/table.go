package lsh

// table is one band's hash table from band key to the id+1 of the bucket's
// most recently inserted member: open addressing with linear probing over
// two parallel arrays (12 bytes a slot), at most three quarters full, with
// backward-shift deletion (no tombstones). A head of 0 marks a free slot.
// Band keys are already well-mixed hashes (bandKey), so their low bits
// index the slots directly. It replaces a Go map[uint64]uint32, which took
// 16 bytes a slot plus control bytes and cost a tenth of a 1M-document
// dedup run in lookups.
type table struct {
	keys  []uint64
	heads []uint32
	n     int
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
	t.keys, t.heads, t.n = make([]uint64, size), make([]uint32, size), 0
	for i, h := range heads {
		if h != 0 {
			t.set(keys[i], h)
		}
	}
}
