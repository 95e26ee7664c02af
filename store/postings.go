package store

import "github.com/neardup/neardup/internal/mix"

// postings is the in-memory posting list of one band (MinHash) or table
// (SimHash): an open-addressing multimap, with linear probing, from band or
// table keys to the sequence numbers of the documents that have them. A
// slot is 8 bytes: a 32-bit tag (a hash of the key) and the sequence number
// plus one (0: an empty slot; tombSlot: a removed posting). The home slot
// is a function of the tag alone, so that the table can grow without the
// keys; a lookup reports the documents of its key plus those of other keys
// with the same tag (about N / 2^32 per lookup for N postings): candidates
// that the verification against the stored sketch removes.
//
// The table holds at most maxLoad of its slots (postings and tombstones)
// and grows to growLoad when it gets there; an index opened with N
// documents is sized at openLoad. Both targets are shifted by skew (set by
// the Store, different for each table, within ±maxSkew) so that the tables
// of an index, which hold the same number of postings, do not all grow at
// the same insert: each growth is one table's rehash, not all of them at
// once. A postings is not safe for concurrent
// use: Store guards its tables with one lock (Store.postMu).
type postings struct {
	skew   float64
	slots  []uint64
	mapped bool // slots are outside the Go heap (allocSlots)
	live   int  // postings
	used   int  // postings and tombstones
}

const (
	// maxSeq is the largest sequence number the in-memory postings hold
	// (seq+1 must fit in 32 bits and differ from tombSlot's low half).
	maxSeq   = 1<<32 - 3
	tombSlot = 1<<32 - 1 // a removed posting: tag 0, low half all ones
	// maxLoad and growLoad are the fill factors at which a table grows and
	// to which it grows; openLoad is the one a table is sized for when
	// the index is opened.
	maxLoad  = 0.80
	growLoad = 0.55
	openLoad = 0.65
	maxSkew  = 0.05
	minSlots = 64
	// slotBytes is the size of a slot.
	slotBytes = 8
)

// keyTag is the 32-bit tag of a band or table key (SimHash table keys are
// masked fingerprints with many zero bits, hence the mixing).
func keyTag(k uint64) uint64 { return mix.Fmix64(k^0x2545f4914f6cdd1d) >> 32 }

// home is the first slot probed for tag.
func (p *postings) home(tag uint64) int { return int(tag * uint64(len(p.slots)) >> 32) }

// reserve sizes an empty table for n postings at openLoad.
func (p *postings) reserve(n int) {
	p.free()
	p.slots, p.mapped = allocSlots(max(minSlots, int(float64(n)/(openLoad+p.skew))+1))
}

// free releases the slots; the table is then empty.
func (p *postings) free() {
	freeSlots(p.slots, p.mapped)
	p.slots, p.mapped, p.live, p.used = nil, false, 0, 0
}

// skewFor is the skew of table i of n: spread evenly over [-maxSkew,
// maxSkew).
func skewFor(i, n int) float64 { return maxSkew * (2*float64(i)/float64(n) - 1) }

// lookup appends to dst the sequence numbers in [lo, hi) under key (and,
// rarely, of keys with the same tag).
func (p *postings) lookup(dst []uint64, key uint64, lo, hi uint64) []uint64 {
	n := len(p.slots)
	if n == 0 {
		return dst
	}
	tag := keyTag(key)
	for i := p.home(tag); ; {
		s := p.slots[i]
		if s == 0 {
			return dst
		}
		if s>>32 == tag && s != tombSlot {
			if seq := s&0xffffffff - 1; seq >= lo && seq < hi {
				dst = append(dst, seq)
			}
		}
		if i++; i == n {
			i = 0
		}
	}
}

// first returns the home slot of key (0 for an empty table).
func (p *postings) first(key uint64) uint64 {
	if len(p.slots) == 0 {
		return 0
	}
	return p.slots[p.home(keyTag(key))]
}

// insert adds the posting (key, seq), growing the table when needed;
// seq <= maxSeq.
func (p *postings) insert(key, seq uint64) {
	if float64(p.used+1) > maxLoad*float64(len(p.slots)) {
		p.resize(max(minSlots, int(float64(p.live+1)/(growLoad+p.skew))+1))
	}
	tag := keyTag(key)
	p.put(tag, tag<<32|(seq+1))
	p.live++
}

// put stores slot value v of tag in the first free slot of its probe
// sequence.
func (p *postings) put(tag, v uint64) {
	n := len(p.slots)
	for i := p.home(tag); ; {
		s := p.slots[i]
		if s == 0 {
			p.slots[i] = v
			p.used++
			return
		}
		if s == tombSlot {
			p.slots[i] = v
			return
		}
		if i++; i == n {
			i = 0
		}
	}
}

// remove deletes the posting (key, seq) and reports whether it was there.
func (p *postings) remove(key, seq uint64) bool {
	n := len(p.slots)
	if n == 0 {
		return false
	}
	tag := keyTag(key)
	want := tag<<32 | (seq + 1)
	for i := p.home(tag); ; {
		s := p.slots[i]
		if s == 0 {
			return false
		}
		if s == want {
			p.slots[i] = tombSlot
			p.live--
			return true
		}
		if i++; i == n {
			i = 0
		}
	}
}

// resize rehashes the postings into n slots, dropping the tombstones.
func (p *postings) resize(n int) {
	old, mapped := p.slots, p.mapped
	p.slots, p.mapped = allocSlots(n)
	p.used = 0
	for _, s := range old {
		if s != 0 && s != tombSlot {
			p.put(s>>32, s)
		}
	}
	freeSlots(old, mapped)
}

// bytes is the memory of the table's slots.
func (p *postings) bytes() int { return len(p.slots) * slotBytes }
