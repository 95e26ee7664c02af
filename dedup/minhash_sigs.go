package dedup

import ()

// The minhash Finder keeps every indexed document's signature to estimate
// the similarity of later candidates. It keeps the low 16 bits of each slot
// (b-bit minwise hashing with b = 16, Li and König 2010): half the memory
// of 32-bit slots, and the estimate gains an upward bias of only
// (1-J)/65536 per slot, the chance that two different minima agree in
// their low 16 bits. The slots live in fixed-size chunks, so the store
// never copies itself while it grows (a doubling slice would hold both
// copies at once, 2.25 times the final size at its peak).

// sigChunkDocs documents share one chunk.
const sigChunkDocs = 1 << 14

type sigStore struct {
	k      int
	chunks [][]uint16
}

// put stores document i's signature of k slots.
func (s *sigStore) put(i int, sig []uint32) {
	c := i / sigChunkDocs
	for len(s.chunks) <= c {
		s.chunks = append(s.chunks, make([]uint16, sigChunkDocs*s.k))
	}
	dst := s.chunks[c][(i%sigChunkDocs)*s.k:][:s.k]
	for x, v := range sig {
		dst[x] = uint16(v)
	}
}

// get returns document i's stored slots.
func (s *sigStore) get(i int) []uint16 {
	return s.chunks[i/sigChunkDocs][(i%sigChunkDocs)*s.k:][:s.k]
}

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

// matches16Full counts the slots where the low 16 bits of a and b agree:
// the spill path's Match uses it so that it decides exactly as the
// in-memory Finder does.
func matches16Full(a, b []uint32) int {
	n := 0
	b = b[:len(a)]
	for x, v := range a {
		if uint16(v) == uint16(b[x]) {
			n++
		}
	}
	return n
}
