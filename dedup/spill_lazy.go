package dedup

import (
	"fmt"
	"slices"

	"github.com/neardup/neardup/sketch"
)

// A bucket whose members' sketches alone would fill its batch (one page
// under many addresses: every band of its near copies is one bucket of
// all of them) is joined without them in memory: in a batch of its own,
// its members' sketches and sets are read when a pair needs them and
// kept in a cache bounded by the batch's share of the budget. The join
// tries its pairs class by class (groupClasses), so a giant class needs
// the sketch of each later member once and that of its first member again
// and again: the cache keeps what pairs use again (CLOCK: an entry used
// since the hand last passed stays), and the member whose turn it is is
// read with the members after it, in file order.

// lazyFrom is the size (in batch bytes) from which a bucket is joined
// lazily even when its batch could hold it; lazyBucketBytes, when not
// negative, the size from which it is, instead of lazyFrom and the
// batch's limit; and lazyCacheMin is the least cache in bytes (tests
// shrink it), lazyCacheMax the most, whatever the budget (a page's near
// copies need one entry; a bucket of many unrelated classes, which is
// slow anyway, one a class).
var (
	lazyFrom        int64 = 4 << 20
	lazyBucketBytes int64 = -1
	lazyCacheMin    int64 = 1 << 20
	lazyCacheMax    int64 = 32 << 20
)

// lazyMembers is a bucket's members, read on demand.
type lazyMembers struct {
	f       *spillFinder
	members []uint32
	cur     int32 // the member whose turn it is (group's b); -1 before
	slot    []int32
	ents    []lazyEntry
	hand    int
	used    int64 // the cache's bytes (lazyEntry.cost)
	limit   int64
	win     []byte // the sketch file from winAt, read ahead for the turns
	winAt   int64
	raw     []byte // one member's sketch, read alone
	sc      sketch.HashSorter
}

// lazyEntry is a cached member: its sketch and, once a pair has needed
// it, its set.
type lazyEntry struct {
	k      int32 // the member; -1 for a free entry
	ref    bool
	sk     DocSketch
	set    []uint64
	hasSet bool
	cost   int64
}

// start makes l the bucket members' (ascending documents), with a cache
// of at most limit bytes.
func (l *lazyMembers) start(f *spillFinder, members []uint32, limit int64) {
	l.f, l.members, l.cur = f, members, -1
	l.limit = min(max(limit, lazyCacheMin), lazyCacheMax)
	l.slot = make([]int32, len(members))
}

// active reports whether a bucket is being joined lazily (between start
// and release).
func (l *lazyMembers) active() bool { return l.f != nil }

// release lets the garbage collector have the cache.
func (l *lazyMembers) release() {
	*l = lazyMembers{}
}

// turn makes member k the one whose turn it is: it is not evicted while
// it is, and is read ahead with the members after it.
func (l *lazyMembers) turn(k int) { l.cur = int32(k) }

// sketch returns member k's sketch, leaving member pin in the cache.
func (l *lazyMembers) sketch(k, pin int) (DocSketch, error) {
	e, err := l.entry(k, pin)
	if err != nil {
		return nil, err
	}
	return e.sk, nil
}

// set returns member k's sorted, distinct set, leaving member pin in the
// cache.
func (l *lazyMembers) set(k, pin int) ([]uint64, error) {
	e, err := l.entry(k, pin)
	if err != nil {
		return nil, err
	}
	if !e.hasSet {
		set, err := l.f.sets.get(int(l.members[k]), e.set, &l.sc)
		if err != nil {
			return nil, err
		}
		e.set, e.hasSet = set, true
		c := int64(8 * len(set))
		e.cost += c
		l.used += c
	}
	return e.set, nil
}

// entry returns member k's cache entry, reading and decoding its sketch
// when it is not there: it evicts, beside neither member pin nor the
// member whose turn it is, entries not used since the hand last passed
// them until the cache has room.
func (l *lazyMembers) entry(k, pin int) (*lazyEntry, error) {
	if s := l.slot[k]; s > 0 {
		e := &l.ents[s-1]
		if int32(k) != l.cur {
			e.ref = true
		}
		return e, nil
	}
	raw, err := l.read(k)
	if err != nil {
		return nil, err
	}
	cost := 2*int64(len(raw)) + 64
	x := -1 // the entry to fill
	for l.used+cost > l.limit {
		if x = l.evict(k, pin); x < 0 {
			break // only members that stay: over the bound, briefly
		}
	}
	if x < 0 {
		x = slices.IndexFunc(l.ents, func(e lazyEntry) bool { return e.k < 0 })
	}
	if x < 0 {
		x = len(l.ents)
		l.ents = append(l.ents, lazyEntry{k: -1})
	}
	e := &l.ents[x]
	var reuse DocSketch
	if l.f.split != nil {
		reuse = e.sk
	}
	sk, err := l.f.decodeSpilled(raw, reuse, l.members[k])
	if err != nil {
		return nil, err
	}
	e.k, e.sk, e.ref, e.hasSet, e.set, e.cost = int32(k), sk, false, false, e.set[:0], cost
	l.used += cost
	l.slot[k] = int32(x) + 1
	return e, nil
}

// evict frees an entry by the clock and returns it, or -1 when none can
// be: the members k and pin and the one whose turn it is stay.
func (l *lazyMembers) evict(k, pin int) int {
	for range 2*len(l.ents) + 1 {
		if len(l.ents) == 0 {
			return -1
		}
		if l.hand >= len(l.ents) {
			l.hand = 0
		}
		x := l.hand
		e := &l.ents[x]
		l.hand++
		if e.k < 0 || e.k == int32(k) || e.k == int32(pin) || e.k == l.cur {
			continue
		}
		if e.ref {
			e.ref = false
			continue
		}
		l.slot[e.k] = 0
		l.used -= e.cost
		e.k, e.set = -1, nil // the sketch's memory is reused, not the set's
		return x
	}
	return -1
}

// read returns member k's sketch bytes: for the member whose turn it
// is, from a window read ahead over the members after it (their turns
// come in file order); for another, read alone.
func (l *lazyMembers) read(k int) ([]byte, error) {
	f := l.f
	d := l.members[k]
	off, n := f.offsets[d], int64(f.lens[d])
	if off >= l.winAt && off+n <= l.winAt+int64(len(l.win)) {
		return l.win[off-l.winAt : off-l.winAt+n], nil
	}
	if int32(k) == l.cur {
		end := off + n
		for y := k + 1; y < len(l.members); y++ {
			e := l.members[y]
			o := f.offsets[e]
			if o-end > f.gapMax || o+int64(f.lens[e])-off > f.readMax {
				break // as spillFinder.read coalesces
			}
			end = o + int64(f.lens[e])
		}
		l.win = growBytes(l.win, int(end-off))
		if _, err := f.sketchF.ReadAt(l.win, off); err != nil {
			return nil, fmt.Errorf("reading the spilled sketches of documents from %d (%d bytes at offset %d of %s): %w",
				d, len(l.win), off, f.sketchF.Name(), err)
		}
		l.winAt = off
		return l.win[:n], nil
	}
	l.raw = growBytes(l.raw, int(n))
	if _, err := f.sketchF.ReadAt(l.raw, off); err != nil {
		return nil, fmt.Errorf("reading the spilled sketch of document %d (%d bytes at offset %d of %s): %w",
			d, n, off, f.sketchF.Name(), err)
	}
	return l.raw, nil
}

// growBytes returns b resized to n bytes (its contents not kept).
func growBytes(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}
