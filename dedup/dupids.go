package dedup

import (
	"slices"

	"github.com/zeebo/xxh3"
)

// maxDuplicateIDsListed caps Stats.DuplicateIDsFirst.
const maxDuplicateIDsListed = 10

// duplicateIDs returns how many ids occur more than once in ids (each such
// id counted once) and the first few of them in input order. It takes 8
// bytes an id while it runs (a sorted array of their hashes) and compares
// the strings only where hashes are equal.
func duplicateIDs(ids []string) (n int, first []string) {
	if len(ids) < 2 {
		return 0, nil
	}
	hs := make([]uint64, len(ids))
	for i, id := range ids {
		hs[i] = xxh3.HashString(id)
	}
	slices.Sort(hs)
	var collide map[uint64]bool
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			if collide == nil {
				collide = map[uint64]bool{}
			}
			collide[hs[i]] = true
		}
	}
	if collide == nil {
		return 0, nil
	}
	seen := map[string]int{} // only ids whose hash collides: few
	for _, id := range ids {
		if !collide[xxh3.HashString(id)] {
			continue
		}
		seen[id]++
		if seen[id] == 2 {
			n++
			if len(first) < maxDuplicateIDsListed {
				first = append(first, id)
			}
		}
	}
	return n, first
}
