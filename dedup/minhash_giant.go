package dedup

import (
	"slices"
	"unsafe"

	"github.com/zeebo/xxh3"

	"github.com/neardup/neardup/lsh"
)

// A giant component (the same page under many addresses, a site's
// template with a few words changed) made the component join quadratic:
// each of its n documents shares a band with most earlier ones, so its
// query listed, sorted and looked at each of them, only to find them
// already joined (20,000 near copies of one page: 10.8 CPU-s, 40,000:
// four times that). The replayer of a component therefore summarises
// each bucket that grows to bigBucket entries: its oldest entry, and
// whether all its entries are in one component of the union-find (which
// stays true: components only merge). A query takes only the oldest
// entry of such a uniform bucket, and walks the others as before.
//
// The result is the streaming Finder's, decided from the reduced list:
// a document is compared with the candidates of each component in
// document order until one is accepted, after which the component's
// later candidates are skipped (only unions with the document being
// added merge components while it is added). A uniform bucket's oldest
// entry comes before all its others; when it is accepted, or its
// component was joined before it, the others would have been skipped,
// and when it is rejected the document is added again from the whole
// list (addFast reports it; nothing was changed). The one thing the
// skipped candidates still decided is whether an earlier document is
// identical to the new one (which then stays out of the index): dupTable
// answers it, a table of every entry by its signature's low 16 bits.
// Equal shingle sets have equal signatures and so share every band: such
// an earlier document is always a candidate. Under --estimate-only,
// where identical means equal 16-bit signatures, one whose full slots
// share no band key at all would not have been a candidate before: that
// takes 13 slots equal in their low 16 bits and different above them.
//
// The streaming Finder (-j 1) and the component join's replayer take
// this path with every join (--verify keeps the hash of each entry's
// signature for the table: 8 bytes an entry), documents entered in input
// order, without --pairs-mode all or leader clustering.

// bigBucket is the size from which a bucket is summarised.
var bigBucket = 64 // a variable for tests

// sumPrefix is how many of a bucket's oldest entries its summary keeps.
var sumPrefix = 32 // a variable for tests

// A bucketSum summarises one large bucket.
type bucketSum struct {
	prefix   []uint32 // its sumPrefix oldest entries, oldest first
	rep      uint32   // an entry in the component of every entry checked
	verified uint32   // id+1 of the newest entry checked
	uniform  bool     // every entry up to verified is in rep's component
}

// giantState is a replayer's summaries of its large buckets.
type giantState struct {
	sums    []map[uint64]*bucketSum // by band, then key
	last    []uint32                // the last entry of the prefix of each uniform bucket in the query
	dups    dupTable
	keys    []uint64 // a query's band keys, when the sketch has none
	joined  []int    // scratch of addFast: the components joined
	pending []Pair
}

// reset forgets every summary (the replayer's index was emptied).
func (g *giantState) reset() {
	g.sums = nil
	g.dups.reset()
}

// fastPath reports whether add may use the summaries.
func (f *minhashFinder) fastPath() bool {
	return f.ix != nil && f.monotone && !f.m.allPairs && !f.m.leader
}

// queryFast sets f.found as query does, the entries of uniform buckets
// but their oldest left out, and reports whether any were.
func (f *minhashFinder) queryFast(sk *minhashSketch) bool {
	g := &f.giant
	keys := sk.keys
	if keys == nil { // the streaming Finder (-j 1): the sketcher made none
		g.keys = f.m.params.AppendKeys(g.keys[:0], sk.sig)
		keys = g.keys
	}
	if g.sums == nil {
		g.sums = make([]map[uint64]*bucketSum, len(keys))
	}
	f.cands, g.last = f.cands[:0], g.last[:0]
	for band, k := range keys {
		head := f.ix.Head(band, k)
		if head == 0 {
			continue
		}
		s := g.sums[band][k]
		if s != nil && s.uniform {
			r := f.uf.Find(int(f.docOf.Get(int(s.rep))))
			for cur := head; cur != s.verified; cur = f.ix.Next(cur-1, band) {
				if f.uf.Find(int(f.docOf.Get(int(cur-1)))) != r {
					s.uniform = false
					break
				}
			}
			if s.uniform {
				s.verified = head
				f.cands = append(f.cands, s.prefix...)
				g.last = append(g.last, s.prefix[len(s.prefix)-1])
				continue
			}
		}
		start := len(f.cands)
		for cur := head; cur != 0; cur = f.ix.Next(cur-1, band) {
			f.cands = append(f.cands, cur-1)
		}
		if len(f.cands)-start < bigBucket {
			continue
		}
		if s == nil {
			if g.sums[band] == nil {
				g.sums[band] = make(map[uint64]*bucketSum)
			}
			s = &bucketSum{}
			g.sums[band][k] = s
			f.startDups()
		}
		// Summarise it now (it is uniform when all its entries are in one
		// component); its entries stay in this query's list.
		r := f.uf.Find(int(f.docOf.Get(int(f.cands[start]))))
		s.prefix = append(s.prefix[:0], f.cands[len(f.cands)-min(sumPrefix, len(f.cands)-start):]...)
		slices.Reverse(s.prefix)
		s.rep, s.verified, s.uniform = f.cands[start], head, true
		for _, e := range f.cands[start+1:] {
			if f.uf.Find(int(f.docOf.Get(int(e)))) != r {
				s.uniform = false
				break
			}
		}
	}
	f.cands = lsh.SortUnique(f.cands, 0)
	f.found = f.found[:0]
	for _, e := range f.cands {
		f.found = append(f.found, uint64(f.docOf.Get(int(e)))<<32|uint64(e))
	}
	return len(g.last) > 0
}

// addFast is add's loop over a reduced list (queryFast): it decides
// every candidate before it changes anything, and reports false, having
// changed nothing, when the whole list is needed.
func (f *minhashFinder) addFast(i int, sk *minhashSketch, emit func(Pair)) (bool, error) {
	g := &f.giant
	g.joined, g.pending = g.joined[:0], g.pending[:0]
	for _, c := range f.found {
		j, e := int(c>>32), int(uint32(c))
		r := f.uf.Find(j)
		if slices.Contains(g.joined, r) {
			continue
		}
		sim, ok, err := f.match(e, j, i, sk)
		if err != nil {
			return false, err
		}
		if !ok {
			if slices.Contains(g.last, uint32(e)) {
				return false, nil // the bucket's later entries would be compared
			}
			continue
		}
		g.joined = append(g.joined, r)
		g.pending = append(g.pending, Pair{A: j, B: i, Similarity: sim, Distance: -1})
	}
	duplicate, err := f.identicalEntry(i, sk)
	if err != nil {
		return false, err
	}
	for _, p := range g.pending {
		f.uf.Union(p.A, i)
		emit(p)
	}
	if duplicate {
		return true, nil
	}
	return true, f.insert(i, sk)
}

// identicalEntry reports whether an entry of the index is identical to
// document i (sketch sk; f.own16 set), as identical decides.
func (f *minhashFinder) identicalEntry(i int, sk *minhashSketch) (bool, error) {
	var found bool
	var err error
	f.giant.dups.each(sigHash(f.own16), func(e uint32) bool {
		if f.m.join != joinVerify && !same16(f.sigs.get(int(e)), f.own16) {
			return true
		}
		found, err = f.identical(int(e), int(f.docOf.Get(int(e))), i, sk)
		return !found && err == nil
	})
	return found, err
}

// startDups fills the table of identical signatures with every entry,
// the first time a bucket is summarised; insert adds the later ones.
func (f *minhashFinder) startDups() {
	d := &f.giant.dups
	if d.on {
		return
	}
	d.on = true
	d.hash = f.entryHash
	for e := range f.ix.Len() {
		d.add(f.entryHash(uint32(e)), uint32(e))
	}
}

// dupTable finds entries by their signature's low 16 bits: open
// addressing on a hash of the signature, each slot an entry+1 (4 bytes,
// at most half full); a probe compares the signatures.
type dupTable struct {
	on    bool
	slots []uint32
	n     int
	hash  func(e uint32) uint64 // an entry's sigHash
}

// entryHash is the sigHash of entry e's signature: from the stored
// signature, or under --verify (which stores none) from verHash.
func (f *minhashFinder) entryHash(e uint32) uint64 {
	if f.m.join == joinVerify {
		return f.verHash.Get(int(e))
	}
	return sigHash(f.sigs.get(int(e)))
}

// sigHash hashes a whole signature: near copies share most of their
// slots, so a part of it would put them all in one run of the table.
func sigHash(s []uint16) uint64 {
	return xxh3.Hash(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s)))
}

func (d *dupTable) reset() { d.on, d.slots, d.n, d.hash = false, nil, 0, nil }

// add enters entry e, whose signature's hash is h. The table keeps no
// hashes: it grows by asking for them again (d.hash).
func (d *dupTable) add(h uint64, e uint32) {
	if 2*(d.n+1) > len(d.slots) {
		d.grow()
	}
	m := uint64(len(d.slots) - 1)
	for h := h & m; ; h = (h + 1) & m {
		if d.slots[h] == 0 {
			d.slots[h] = e + 1
			d.n++
			return
		}
	}
}

func (d *dupTable) grow() {
	old := d.slots
	d.slots = make([]uint32, max(2*len(old), 1024))
	d.n = 0
	m := uint64(len(d.slots) - 1)
	for _, v := range old {
		if v == 0 {
			continue
		}
		for h := d.hash(v-1) & m; ; h = (h + 1) & m {
			if d.slots[h] == 0 {
				d.slots[h] = v
				d.n++
				break
			}
		}
	}
}

// each calls fn with each entry whose hash is want, until fn returns
// false.
func (d *dupTable) each(want uint64, fn func(e uint32) bool) {
	if len(d.slots) == 0 {
		return
	}
	m := uint64(len(d.slots) - 1)
	for h := want & m; d.slots[h] != 0; h = (h + 1) & m {
		e := d.slots[h] - 1
		if d.hash(e) == want && !fn(e) {
			return
		}
	}
}
