//go:build long

package dedup

import "testing"

// TestSpillPairsWholeSets is TestSpillPairsAreInMemoryPairs on every set of
// ../shared/data whole, the default join at -j 1, 2, 3, 8 and 16.
func TestSpillPairsWholeSets(t *testing.T) {
	for set, path := range sharedSetFiles(t) {
		t.Run(set, func(t *testing.T) { checkSpillVariants(t, path, spillVariants([]int{1, 2, 3, 8, 16})) })
	}
}
