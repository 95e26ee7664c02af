package lsh

import (
	"fmt"
	"math/bits"
	"slices"
	"sync"

	"github.com/neardup/neardup/internal/arena"
)

// AppendKeys appends the Bands band keys of sig to dst and returns it. The
// key of band i is a 64-bit hash of slots [i*Rows, (i+1)*Rows); slots past
// Bands*Rows are unused. Keys are stable across platforms and versions of
// this package. Two different bands collide with probability about 2^-64,
// which at worst adds a candidate. sig must have at least Bands*Rows slots.
func (p Params) AppendKeys(dst []uint64, sig []uint32) []uint64 {
	r := p.Rows
	for b := range p.Bands {
		dst = append(dst, bandKey(sig[b*r:(b+1)*r:(b+1)*r]))
	}
	return dst
}

// bandKey hashes a band two slots at a time with a 64x64->128 multiply and
// fold (the "mum" step of wyhash), then finalises with an xorshift-multiply.
func bandKey(s []uint32) uint64 {
	const (
		k0 = 0xa0761d6478bd642f
		k1 = 0xe7037ed1a0b428db
	)
	h := uint64(len(s)) * k1
	i := 0
	for ; i+2 <= len(s); i += 2 {
		hi, lo := bits.Mul64(h^(uint64(s[i])<<32|uint64(s[i+1])), k0)
		h = hi ^ lo
	}
	if i < len(s) {
		hi, lo := bits.Mul64(h^uint64(s[i]), k1)
		h = hi ^ lo
	}
	h ^= h >> 29
	h *= k0
	return h ^ h>>32
}

// MaxID is the largest id an Index accepts.
const MaxID = 1<<31 - 2

// Options configures an Index. The zero value keeps no signatures.
type Options struct {
	// KeepSignatures keeps a copy of every inserted signature (4K bytes a
	// document), so that QuerySimilar can estimate similarities and Remove
	// needs no signature.
	KeepSignatures bool
	// OffHeap keeps the band tables and chains (all of the index but the
	// signatures kept and a bit a document) in memory mapped outside the
	// Go heap, on Linux and darwin (package internal/arena; elsewhere it
	// changes nothing): the garbage collector then neither scans it nor
	// lets the heap grow to twice its size before collecting, and the
	// runtime's soft memory limit does not count it (MappedBytes says
	// how much it is). Close must be called to give it back.
	OffHeap bool
}

// Index is a banded LSH index of MinHash signatures keyed by uint32 ids.
//
// Each band has a hash table from band key to the most recently inserted
// id of that bucket (open addressing, 12 bytes a slot, at most three
// quarters full: see table), and the members of a bucket are chained
// through a per-(id, band) array, which grows in chunks of 4096 ids. Memory per document: 4*Bands bytes of
// chain, one table slot per band at a load between 3/8 and 3/4 (16 to 32
// bytes), and 4*NumPerm bytes with KeepSignatures. Measured by
// TestMemoryPerDoc on 100000 documents banded 9x13: 320 bytes a document
// without signatures (the tables have just doubled: 250 with Go maps),
// 951 with 128 slots kept; the bound is 340 and 1000. Ids
// index the chain array, so they should be dense (0, 1, 2, ...): the array
// grows to the largest id. With Options.OffHeap the tables and chains are
// mapped outside the Go heap and Close gives them back.
//
// An Index is not safe for concurrent use by writers; any number of
// goroutines may Query at once when none writes.
type Index struct {
	p       Params
	numPerm int
	opts    Options
	tables  []table  // band key -> id+1 of the bucket's head
	next    chain    // next(id, band) = id+1 of the next member, 0 at the end
	present []uint64 // bitset of inserted ids
	sigs    []uint32 // id*numPerm... when KeepSignatures
	n       int
	keys    []uint64 // scratch for Insert and Remove
}

// New returns an empty Index of signatures of numPerm slots banded by p.
func New(p Params, numPerm int, opts Options) (*Index, error) {
	if err := p.Validate(numPerm); err != nil {
		return nil, err
	}
	ix := &Index{p: p, numPerm: numPerm, opts: opts, tables: make([]table, p.Bands),
		next: newChain(p.Bands, opts.OffHeap)}
	for i := range ix.tables {
		ix.tables[i].offHeap = opts.OffHeap
	}
	return ix, nil
}

// Close gives back the memory of the tables and chains (with
// Options.OffHeap it is unmapped). The index must not be used afterwards:
// its methods then panic. Close is safe to call more than once.
func (ix *Index) Close() {
	for i := range ix.tables {
		ix.tables[i].release()
	}
	ix.tables = nil
	ix.next.release()
	ix.present, ix.sigs, ix.n = nil, nil, 0
}

// MappedBytes returns the memory of the index that is mapped outside the
// Go heap (Options.OffHeap; 0 without it).
func (ix *Index) MappedBytes() int64 {
	if !ix.opts.OffHeap || !arena.OffHeap {
		return 0
	}
	n := ix.next.bytes()
	for i := range ix.tables {
		n += ix.tables[i].bytes()
	}
	return n
}

// Params returns the banding.
func (ix *Index) Params() Params { return ix.p }

// Len returns the number of documents in the index.
func (ix *Index) Len() int { return ix.n }

// Has reports whether id is in the index.
func (ix *Index) Has(id uint32) bool {
	w := int(id / 64)
	return w < len(ix.present) && ix.present[w]&(1<<(id%64)) != 0
}

// Insert adds the signature sig under id. The signature must have the
// index's number of slots (ErrLength); an id already present is ErrExists.
func (ix *Index) Insert(id uint32, sig []uint32) error {
	if len(sig) != ix.numPerm {
		return fmt.Errorf("%w: %d slots, want %d", ErrLength, len(sig), ix.numPerm)
	}
	if id > MaxID {
		return fmt.Errorf("%w: %d", ErrID, id)
	}
	if ix.Has(id) {
		return fmt.Errorf("%w: %d", ErrExists, id)
	}
	if ix.tables == nil {
		panic("lsh: Insert after Close")
	}
	ix.next.grow(id)
	if w := int(id/64) + 1; w > len(ix.present) {
		ix.present = slices.Grow(ix.present, w-len(ix.present))[:w]
	}
	ix.keys = ix.p.AppendKeys(ix.keys[:0], sig)
	for band, k := range ix.keys {
		t := &ix.tables[band]
		*ix.next.at(id, band) = t.get(k)
		t.set(k, id+1)
	}
	if ix.opts.KeepSignatures {
		if need := (int(id) + 1) * ix.numPerm; need > len(ix.sigs) {
			ix.sigs = slices.Grow(ix.sigs, need-len(ix.sigs))[:need]
		}
		copy(ix.sigs[int(id)*ix.numPerm:], sig)
	}
	ix.present[id/64] |= 1 << (id % 64)
	ix.n++
	return nil
}

// InsertKeys is Insert with the signature's band keys (Params.AppendKeys)
// in place of the signature: one a band.
func (ix *Index) InsertKeys(id uint32, keys []uint64) error {
	if len(keys) != ix.p.Bands {
		return fmt.Errorf("%w: %d band keys, want %d", ErrLength, len(keys), ix.p.Bands)
	}
	if id > MaxID {
		return fmt.Errorf("%w: %d", ErrID, id)
	}
	if ix.Has(id) {
		return fmt.Errorf("%w: %d", ErrExists, id)
	}
	if ix.opts.KeepSignatures {
		return fmt.Errorf("lsh: InsertKeys with KeepSignatures")
	}
	if ix.tables == nil {
		panic("lsh: Insert after Close")
	}
	ix.next.grow(id)
	if w := int(id/64) + 1; w > len(ix.present) {
		ix.present = slices.Grow(ix.present, w-len(ix.present))[:w]
	}
	for band, k := range keys {
		t := &ix.tables[band]
		*ix.next.at(id, band) = t.get(k)
		t.set(k, id+1)
	}
	ix.present[id/64] |= 1 << (id % 64)
	ix.n++
	return nil
}

// RemoveNewest deletes id, the most recently inserted id still present,
// whose band keys are keys: it is the head of each of its buckets, so
// this takes constant time a band. Emptying an index newest first makes
// it ready for reuse without giving its memory back.
func (ix *Index) RemoveNewest(id uint32, keys []uint64) error {
	if !ix.Has(id) {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if len(keys) != ix.p.Bands {
		return fmt.Errorf("%w: %d band keys, want %d", ErrLength, len(keys), ix.p.Bands)
	}
	for band, k := range keys {
		t := &ix.tables[band]
		if t.get(k) != id+1 {
			return fmt.Errorf("%w: %d is not the newest of its bucket", ErrNotFound, id)
		}
		at := ix.next.at(id, band)
		if *at == 0 {
			t.del(k)
		} else {
			t.set(k, *at)
		}
		*at = 0
	}
	ix.present[id/64] &^= 1 << (id % 64)
	ix.n--
	return nil
}

// Head returns id+1 of the newest member of band's bucket of key k (the
// first of its chain), 0 when the bucket is empty. With Next it walks a
// bucket newest first without copying it: a Finder that summarises its
// largest buckets reads only their new members.
func (ix *Index) Head(band int, k uint64) uint32 { return ix.tables[band].get(k) }

// Next returns id+1 of the member of id's bucket in band inserted before
// id (the next in its chain), 0 at the bucket's oldest member.
func (ix *Index) Next(id uint32, band int) uint32 { return *ix.next.at(id, band) }

// QueryKeys is Query with the band keys of the signature (one a band).
func (ix *Index) QueryKeys(dst []uint32, keys []uint64) ([]uint32, error) {
	if len(keys) != ix.p.Bands {
		return dst, fmt.Errorf("%w: %d band keys, want %d", ErrLength, len(keys), ix.p.Bands)
	}
	start := len(dst)
	if ix.tables == nil {
		panic("lsh: Query after Close")
	}
	for band, k := range keys {
		for cur := ix.tables[band].get(k); cur != 0; cur = *ix.next.at(cur-1, band) {
			dst = append(dst, cur-1)
		}
	}
	return sortUnique(dst, start), nil
}

// SortUnique sorts dst[start:], removes its repeats and returns dst cut
// to them, as QueryKeys does with its candidates.
func SortUnique(dst []uint32, start int) []uint32 { return sortUnique(dst, start) }

// sortUnique sorts dst[start:], removes its repeats and returns dst cut
// to them. A long list of candidates within a narrow range of ids, as a
// giant component of templated pages gives (every document shares a band
// with most of the earlier ones, each of them in several of its buckets),
// is deduplicated through a bitmap of the range and read back in order,
// in O(n + range/64), instead of sorted in O(n log n): the sort was half
// of dedup's CPU on 8,000 near-copies of one page.
func sortUnique(dst []uint32, start int) []uint32 {
	s := dst[start:]
	if len(s) >= bitmapMin {
		lo, hi := s[0], s[0]
		for _, v := range s {
			lo, hi = min(lo, v), max(hi, v)
		}
		if words := int((hi-lo)/64) + 1; words <= len(s) {
			return dst[:start+uniqueByBitmap(s, lo, words)]
		}
	}
	slices.Sort(s)
	return dst[:start+len(slices.Compact(s))]
}

// bitmapMin is the shortest list sortUnique deduplicates by a bitmap.
const bitmapMin = 256

// bitmaps holds the bitmaps of uniqueByBitmap (*[]uint64): queries may
// run on many goroutines at once.
var bitmaps = sync.Pool{New: func() any { return new([]uint64) }}

// uniqueByBitmap writes the distinct values of s, all in [lo, lo+64*words),
// to its start in increasing order and returns how many there are.
func uniqueByBitmap(s []uint32, lo uint32, words int) int {
	bp := bitmaps.Get().(*[]uint64)
	bm := *bp
	if cap(bm) < words {
		bm = make([]uint64, words)
	} else {
		bm = bm[:words]
		clear(bm)
	}
	for _, v := range s {
		d := v - lo
		bm[d/64] |= 1 << (d % 64)
	}
	n := 0
	for w, x := range bm {
		for x != 0 {
			s[n] = lo + uint32(w*64+bits.TrailingZeros64(x))
			n++
			x &= x - 1
		}
	}
	*bp = bm
	bitmaps.Put(bp)
	return n
}

// Remove deletes id, whose signature sig must be the one inserted (nil
// when the index keeps signatures). Removal walks the id's buckets: its cost
// is the size of those buckets.
func (ix *Index) Remove(id uint32, sig []uint32) error {
	if !ix.Has(id) {
		return fmt.Errorf("%w: %d", ErrNotFound, id)
	}
	if sig == nil && ix.opts.KeepSignatures {
		sig = ix.sigs[int(id)*ix.numPerm : int(id+1)*ix.numPerm]
	}
	if len(sig) != ix.numPerm {
		return fmt.Errorf("%w: %d slots, want %d", ErrLength, len(sig), ix.numPerm)
	}
	ix.keys = ix.p.AppendKeys(ix.keys[:0], sig)
	// Check every band first so that a wrong signature leaves the index
	// unchanged.
	for band, k := range ix.keys {
		if !ix.inBucket(band, k, id) {
			return fmt.Errorf("%w: %d is not in the buckets of the given signature", ErrNotFound, id)
		}
	}
	for band, k := range ix.keys {
		t := &ix.tables[band]
		at := ix.next.at(id, band)
		if head := t.get(k); head == id+1 {
			if *at == 0 {
				t.del(k)
			} else {
				t.set(k, *at)
			}
		} else {
			for cur := head; cur != 0; {
				nx := ix.next.at(cur-1, band)
				if *nx == id+1 {
					*nx = *at
					break
				}
				cur = *nx
			}
		}
		*at = 0
	}
	ix.present[id/64] &^= 1 << (id % 64)
	ix.n--
	return nil
}

func (ix *Index) inBucket(band int, k uint64, id uint32) bool {
	for cur := ix.tables[band].get(k); cur != 0; cur = *ix.next.at(cur-1, band) {
		if cur == id+1 {
			return true
		}
	}
	return false
}

// Query appends to dst the ids of the candidates of sig (the documents
// that agree with it on at least one band), sorted and without repeats, and
// returns it. A document inserted with sig itself is among them. It does
// not allocate when dst has capacity (but for a pooled bitmap, see
// sortUnique).
func (ix *Index) Query(dst []uint32, sig []uint32) ([]uint32, error) {
	if len(sig) != ix.numPerm {
		return dst, fmt.Errorf("%w: %d slots, want %d", ErrLength, len(sig), ix.numPerm)
	}
	start := len(dst)
	if ix.tables == nil {
		panic("lsh: Query after Close")
	}
	b, r := ix.p.Bands, ix.p.Rows
	for band := range b {
		k := bandKey(sig[band*r : (band+1)*r])
		for cur := ix.tables[band].get(k); cur != 0; cur = *ix.next.at(cur-1, band) {
			dst = append(dst, cur-1)
		}
	}
	return sortUnique(dst, start), nil
}

// Candidate is a query result with its estimated Jaccard similarity (the
// fraction of equal slots).
type Candidate struct {
	ID         uint32
	Similarity float64
}

// QuerySimilar appends to dst the candidates of sig with their estimated
// similarity, in id order, keeping those whose estimate is at least
// minSim (0 keeps all). scratch is reused for the candidate ids and
// returned for the next call. It needs Options.KeepSignatures (ErrNoSigs).
func (ix *Index) QuerySimilar(dst []Candidate, sig []uint32, minSim float64, scratch []uint32) ([]Candidate, []uint32, error) {
	if !ix.opts.KeepSignatures {
		return dst, scratch, ErrNoSigs
	}
	ids, err := ix.Query(scratch[:0], sig)
	if err != nil {
		return dst, ids, err
	}
	for _, id := range ids {
		other := ix.sigs[int(id)*ix.numPerm : int(id+1)*ix.numPerm]
		eq := 0
		for i, v := range other {
			if v == sig[i] {
				eq++
			}
		}
		s := float64(eq) / float64(ix.numPerm)
		if s >= minSim {
			dst = append(dst, Candidate{id, s})
		}
	}
	return dst, ids, nil
}
