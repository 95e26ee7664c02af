package dedup

import (
	"github.com/neardup/neardup/internal/arena"
	"github.com/neardup/neardup/minhash"
	"unsafe"
)

// The minhash Finder keeps the signature of every document in its index
// to estimate the similarity of later candidates. It keeps the low 16 bits
// of each slot (b-bit minwise hashing with b = 16, Li and König 2010):
// half the memory of 32-bit slots, and the estimate gains an upward bias
// of only (1-J)/65536 per slot, the chance that two different minima agree
// in their low 16 bits. Beside the slots, a row holds the document's
// effective slots (the tiered join's keff). The rows live in fixed-size
// chunks mapped outside the Go heap (package internal/arena), so the store
// never copies itself while it grows (a doubling slice would hold both
// copies at once, 2.25 times the final size at its peak) and the garbage
// collector does not pace itself on it. Rows are numbered by the index's
// dense entry numbers, not by document: a document that never enters the
// index (an exact copy) has none.

// sigChunkDocs rows share one chunk.
const sigChunkDocs = 1 << sigChunkShift

const sigChunkShift = 14

// sigStore holds the rows: k slots and keff each (arena.Rows).
type sigStore struct {
	k    int
	rows arena.Rows[uint16]
}

func newSigStore(k int) sigStore {
	return sigStore{k: k, rows: arena.NewRows[uint16](k+1, sigChunkShift, false)}
}

// put stores row i: the signature's k slots and keff.
func (s *sigStore) put(i int, sig []uint32, keff int) {
	s.rows.Grow(i + 1)
	row := s.rows.Row(i)
	for x, v := range sig {
		row[x] = uint16(v)
	}
	row[s.k] = uint16(keff)
}

// get returns row i's slots: a view valid until release, which the caller
// uses within its call.
func (s *sigStore) get(i int) []uint16 { return s.rows.Row(i)[:s.k:s.k] }

// keff returns row i's effective slots.
func (s *sigStore) keff(i int) int { return int(s.rows.Row(i)[s.k]) }

// release unmaps the rows; the store is empty afterwards.
func (s *sigStore) release() { s.rows.Release() }

// bytes returns the memory the rows hold.
func (s *sigStore) bytes() int64 { return s.rows.Bytes() }

// matches16 counts the slots where a (stored) and the low 16 bits of b
// agree.
func matches16(a []uint16, b []uint32) int {
	n := 0
	b = b[:len(a)]
	for x, v := range a {
		if v == uint16(b[x]) {
			n++
		}
	}
	return n
}

// same16 reports whether a and b, two signatures' low 16 bits a slot,
// are equal: matches16 == k, compared as bytes (memequal, which stops at
// the first block that differs). identical asks it of every candidate
// already joined to the document, which in a giant component of templated
// pages is every earlier page: counting every slot there was a third of
// dedup's CPU on 8,000 near-copies of one page.
func same16(a, b []uint16) bool {
	return len(a) == len(b) && string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(a))), 2*len(a))) ==
		string(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), 2*len(b)))
}

// appendLow16 appends the low 16 bits of each slot of sig to dst.
func appendLow16(dst []uint16, sig []uint32) []uint16 {
	for _, v := range sig {
		dst = append(dst, uint16(v))
	}
	return dst
}

// matches16Full is minhash.Matches16: the slots where the low 16 bits of
// a and b agree, the count the tiered join's estimate rests on (the spill
// path's Match and the index's check use it so that they decide exactly as
// the in-memory Finder does).
func matches16Full(a, b []uint32) int { return minhash.Matches16(a, b) }
