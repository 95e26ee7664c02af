package dedup

import (
	"fmt"
	"slices"
	"testing"
)

// TestDuplicateIDs against a brute-force count.
func TestDuplicateIDs(t *testing.T) {
	for _, c := range []struct {
		ids   []string
		n     int
		first []string
	}{
		{nil, 0, nil},
		{[]string{"a"}, 0, nil},
		{[]string{"a", "b", "c"}, 0, nil},
		{[]string{"a", "b", "a"}, 1, []string{"a"}},
		{[]string{"b", "a", "b", "a", "a", "c"}, 2, []string{"b", "a"}},
	} {
		n, first := duplicateIDs(c.ids)
		if n != c.n || !slices.Equal(first, c.first) {
			t.Errorf("duplicateIDs(%q) = %d, %q, want %d, %q", c.ids, n, first, c.n, c.first)
		}
	}
	var ids []string
	for i := range 100 {
		ids = append(ids, fmt.Sprint(i%40))
	}
	if n, first := duplicateIDs(ids); n != 40 || len(first) != maxDuplicateIDsListed || first[0] != "0" {
		t.Errorf("40 ids used more than once: %d, %q", n, first)
	}
}
