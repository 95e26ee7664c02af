package minhash

import "math/bits"

// EffectiveSlots returns how many independent samples a signature's
// estimate rests on: for one permutation hashing, the number of distinct
// slot values, which is the number of bins the shingles filled before
// densification copied them into the empty ones (fewer than k for a text
// with fewer distinct shingles than slots, or with a few shingles repeated
// throughout); k for the families with independent slots. It does not
// allocate for k <= 512 (dedup's spill path calls it for every
// decoded sketch, the index for every candidate it verifies).
func EffectiveSlots(f Family, sig Signature) int {
	if f != OPH || len(sig) == 0 {
		return len(sig)
	}
	// An open-addressing set of the slot values, at most half full; 0
	// marks a free cell (a slot value of 0 is counted apart). The table
	// is sized to the signature: zeroing more than it needs cost more
	// than the counting.
	size := 1 << bits.Len(uint(2*len(sig)-1))
	if size <= 256 {
		var small [256]uint32
		return countDistinct(small[:size], sig)
	}
	if size <= 1024 {
		var medium [1024]uint32
		return countDistinct(medium[:size], sig)
	}
	return countDistinct(make([]uint32, size), sig)
}

// countDistinct counts the distinct values of sig with table, a zeroed
// power-of-two table at least twice as long.
func countDistinct(table []uint32, sig Signature) int {
	size := len(table)
	n, zero := 0, 0
	for _, v := range sig {
		if v == 0 {
			zero = 1
			continue
		}
		for x := int(v*0x9e3779b1) & (size - 1); ; x = (x + 1) & (size - 1) {
			if table[x] == v {
				break
			}
			if table[x] == 0 {
				table[x] = v
				n++
				break
			}
		}
	}
	return n + zero
}

// Matches16 returns the number of slots, over the first min(len(a),
// len(b)), where the low 16 bits of a and b agree: the count that dedup's
// tiered join keeps in memory (16 bits a slot) and compares against its
// margins, and that the index's check uses to decide exactly as dedup. A
// 16-bit collision (probability 2^-16 a slot) only adds a candidate to the
// exact verification.
func Matches16(a, b Signature) int {
	n := min(len(a), len(b))
	a, b = a[:n], b[:n]
	m := 0
	for x, v := range a {
		if uint16(v) == uint16(b[x]) {
			m++
		}
	}
	return m
}
