// Package cluster turns duplicate pairs into clusters with a union-find
// (disjoint-set forest) over dense integer document indexes, and chooses one
// document to keep in each cluster by a deterministic policy.
//
// Documents are numbered 0..n-1 in input order. The result depends only on
// the set of pairs, never on the order they were added in, so parallel
// producers give the same clusters.
//
// A UnionFind is not safe for concurrent use.
package cluster

import (
	"fmt"
)

// UnionFind is a disjoint-set forest with path halving and union by size.
type UnionFind struct {
	parent []int32
	size   []int32
}

// NewUnionFind returns n singletons. n must fit in an int32.
func NewUnionFind(n int) *UnionFind {
	u := &UnionFind{parent: make([]int32, n), size: make([]int32, n)}
	for i := range u.parent {
		u.parent[i] = int32(i)
		u.size[i] = 1
	}
	return u
}

// Len returns the number of elements.
func (u *UnionFind) Len() int { return len(u.parent) }

// Grow adds singletons until there are n elements.
func (u *UnionFind) Grow(n int) {
	for i := len(u.parent); i < n; i++ {
		u.parent = append(u.parent, int32(i))
		u.size = append(u.size, 1)
	}
}

// Find returns the representative of x's set.
func (u *UnionFind) Find(x int) int {
	p := u.parent
	for int(p[x]) != x {
		p[x] = p[p[x]]
		x = int(p[x])
	}
	return x
}

// Union merges the sets of a and b and reports whether they were distinct.
func (u *UnionFind) Union(a, b int) bool {
	ra, rb := u.Find(a), u.Find(b)
	if ra == rb {
		return false
	}
	if u.size[ra] < u.size[rb] {
		ra, rb = rb, ra
	}
	u.parent[rb] = int32(ra)
	u.size[ra] += u.size[rb]
	return true
}

// Size returns the size of x's set.
func (u *UnionFind) Size(x int) int { return int(u.size[u.Find(x)]) }

// Policy chooses the kept document of a cluster.
type Policy uint8

const (
	// First keeps the document that comes first in input order.
	First Policy = iota
	// Longest keeps the longest document (by the length the caller gives),
	// ties broken by input order.
	Longest
)

// ParsePolicy parses "first" or "longest".
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "first", "":
		return First, nil
	case "longest":
		return Longest, nil
	}
	return 0, fmt.Errorf("unknown keep policy %q (want first or longest)", s)
}

func (p Policy) String() string {
	switch p {
	case First:
		return "first"
	case Longest:
		return "longest"
	}
	return fmt.Sprintf("Policy(%d)", uint8(p))
}

// Keep returns, for each document i, the index of the kept document of its
// cluster (keep[i] == i for kept documents). length(i) is consulted only
// by Longest and may be nil for First.
func Keep(u *UnionFind, p Policy, length func(i int) int) []int32 {
	n := u.Len()
	best := make([]int32, n) // by root: best member so far
	for i := range best {
		best[i] = -1
	}
	for i := 0; i < n; i++ {
		r := u.Find(i)
		b := best[r]
		switch {
		case b < 0:
			best[r] = int32(i)
		case p == Longest && length(i) > length(int(b)):
			best[r] = int32(i)
		}
	}
	keep := make([]int32, n)
	for i := range keep {
		keep[i] = best[u.Find(i)]
	}
	return keep
}

// Mode is how duplicate pairs become clusters.
type Mode uint8

const (
	// Components takes the connected components of the pairs (single
	// linkage): two documents can share a cluster through a chain of
	// pairs although they are not similar themselves.
	Components Mode = iota
	// Leader is leader (star) clustering in keep order: a document joins
	// the most similar earlier kept document it is a duplicate of, or
	// becomes a kept document itself, so every removed document is a
	// duplicate of its cluster's kept document.
	Leader
)

// ParseMode parses "components" or "leader".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "components", "":
		return Components, nil
	case "leader":
		return Leader, nil
	}
	return 0, fmt.Errorf("unknown clustering %q (want components or leader)", s)
}

func (m Mode) String() string {
	switch m {
	case Components:
		return "components"
	case Leader:
		return "leader"
	}
	return fmt.Sprintf("Mode(%d)", uint8(m))
}
