package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// Oracle: connected components by breadth-first search over the pairs.
func components(n int, pairs [][2]int) []int {
	adj := make([][]int, n)
	for _, p := range pairs {
		adj[p[0]] = append(adj[p[0]], p[1])
		adj[p[1]] = append(adj[p[1]], p[0])
	}
	comp := make([]int, n)
	for i := range comp {
		comp[i] = -1
	}
	for i := range n {
		if comp[i] >= 0 {
			continue
		}
		queue := []int{i}
		comp[i] = i // the smallest member, since i is the first unvisited
		for len(queue) > 0 {
			x := queue[0]
			queue = queue[1:]
			for _, y := range adj[x] {
				if comp[y] < 0 {
					comp[y] = i
					queue = append(queue, y)
				}
			}
		}
	}
	return comp
}

func TestKeepFirstMatchesComponents(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := 1 + r.IntN(60)
		var pairs [][2]int
		for range r.IntN(2 * n) {
			pairs = append(pairs, [2]int{r.IntN(n), r.IntN(n)})
		}
		want := components(n, pairs)
		// Any order of unions gives the same result.
		for range 3 {
			r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
			u := NewUnionFind(n)
			for _, p := range pairs {
				u.Union(p[0], p[1])
			}
			keep := Keep(u, First, nil)
			for i := range n {
				if int(keep[i]) != want[i] {
					t.Fatalf("n=%d pairs=%v: keep[%d] = %d, want %d", n, pairs, i, keep[i], want[i])
				}
			}
		}
	}
}

func TestKeepLongest(t *testing.T) {
	u := NewUnionFind(5)
	u.Union(0, 2)
	u.Union(2, 4)
	lengths := []int{3, 9, 7, 1, 7}
	keep := Keep(u, Longest, func(i int) int { return lengths[i] })
	want := []int32{2, 1, 2, 3, 2} // 2 and 4 tie at 7: the first wins
	if !slices.Equal(keep, want) {
		t.Errorf("Keep(Longest) = %v, want %v", keep, want)
	}
	if u.Size(4) != 3 || u.Size(3) != 1 {
		t.Errorf("sizes = %d, %d, want 3, 1", u.Size(4), u.Size(3))
	}
}

func TestGrow(t *testing.T) {
	u := NewUnionFind(0)
	u.Grow(3)
	u.Union(0, 2)
	u.Grow(5)
	if u.Len() != 5 || u.Find(2) != u.Find(0) || u.Find(4) != 4 {
		t.Errorf("after Grow: len %d, find(2)=%d find(0)=%d find(4)=%d", u.Len(), u.Find(2), u.Find(0), u.Find(4))
	}
}

func TestParsePolicy(t *testing.T) {
	for _, s := range []string{"first", "longest"} {
		p, err := ParsePolicy(s)
		if err != nil || p.String() != s {
			t.Errorf("ParsePolicy(%q) = %v, %v", s, p, err)
		}
	}
	if _, err := ParsePolicy("random"); err == nil {
		t.Error("ParsePolicy(random) succeeded")
	}
}
