package pipeline

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// components runs the components jobs on edges and returns, for every
// node that has an edge, the center of its star.
func components(t *testing.T, edges [][2]int64) (map[int64]int64, *run) {
	t.Helper()
	dir := t.TempDir()
	r := &run{opts: Options{Runner: "prism", RoundsPerJob: 8, MaxRounds: 200}, tmp: dir}
	if err := os.MkdirAll(filepath.Join(dir, "in"), 0o755); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range edges {
		fmt.Fprintf(&b, "%d %d\n", min(e[0], e[1]), max(e[0], e[1]))
	}
	if err := os.WriteFile(filepath.Join(dir, "in", "part-0"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := r.components(context.Background(), filepath.Join(dir, "in"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(out + "/part-*")
	center := map[int64]int64{}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		for sc.Scan() {
			var a, b int64
			if _, err := fmt.Sscanf(sc.Text(), "%d %d", &a, &b); err != nil {
				t.Fatal(err)
			}
			if c, ok := center[b]; ok {
				t.Fatalf("node %d has two centers, %d and %d", b, c, a)
			}
			center[b] = a
		}
		fh.Close()
	}
	return center, r
}

// wantComponents is the reference: union-find, lowest node of each
// component.
func wantComponents(edges [][2]int64) map[int64]int64 {
	parent := map[int64]int64{}
	var find func(x int64) int64
	find = func(x int64) int64 {
		p, ok := parent[x]
		if !ok || p == x {
			parent[x] = x
			return x
		}
		r := find(p)
		parent[x] = r
		return r
	}
	for _, e := range edges {
		a, b := find(e[0]), find(e[1])
		if a != b {
			parent[max(a, b)] = min(a, b)
		}
	}
	want := map[int64]int64{}
	for x := range parent {
		if r := find(x); r != x {
			want[x] = r
		}
	}
	return want
}

func checkComponents(t *testing.T, name string, edges [][2]int64) {
	got, r := components(t, edges)
	want := wantComponents(edges)
	if len(got) != len(want) {
		t.Errorf("%s: %d nodes with a center, want %d", name, len(got), len(want))
	}
	for x, c := range want {
		if got[x] != c {
			t.Fatalf("%s: node %d: center %d, want %d", name, x, got[x], c)
		}
	}
	t.Logf("%s: %d edges, %d rounds, %d jobs, %.1f s", name, len(edges), r.stats.Rounds, r.stats.Jobs, sumSeconds(r.stats.Stages))
}

func sumSeconds(st []Stage) float64 {
	var s float64
	for _, x := range st {
		s += x.Seconds
	}
	return s
}

// long runs the full-size tests (BEAM_LONG=1 scripts/check-beam): Prism
// is slow (the 50,000-node giant component took 262 s on two cores at
// load 13), so the 100,000-document chain is not in the default run.
var long = os.Getenv("BEAM_LONG") == "1"

// TestComponentsChain: a chain of 100,000 documents (5,000 without
// BEAM_LONG=1) in input order, and the same chain with its nodes in random
// order.
func TestComponentsChain(t *testing.T) {
	n := 5_000
	if long {
		n = 100_000
	}
	chain := make([][2]int64, n-1)
	for i := range chain {
		chain[i] = [2]int64{int64(i), int64(i + 1)}
	}
	checkComponents(t, "chain", chain)
	perm := rand.New(rand.NewPCG(3, 4)).Perm(n)
	shuffled := make([][2]int64, n-1)
	for i := range shuffled {
		shuffled[i] = [2]int64{int64(perm[i]), int64(perm[i+1])}
	}
	checkComponents(t, "shuffled chain", shuffled)
}

// TestComponentsGiant: one giant component (a random tree and extra
// edges over 50,000 nodes, 5,000 without BEAM_LONG=1, ranks of several
// files) beside small ones and a star.
func TestComponentsGiant(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	n := 5_000
	if long {
		n = 50_000
	}
	node := func(i int) int64 { return rankOf(int64(i%7), int64(i)) }
	var edges [][2]int64
	for i := 1; i < n; i++ {
		edges = append(edges, [2]int64{node(i), node(rng.IntN(i))})
	}
	for range n / 2 {
		edges = append(edges, [2]int64{node(rng.IntN(n)), node(rng.IntN(n))})
	}
	for i := n; i < n+3000; i += 3 { // small components
		edges = append(edges, [2]int64{node(i), node(i + 1)}, [2]int64{node(i + 1), node(i + 2)})
	}
	for i := n + 3001; i < n+5000; i++ { // a star around its largest node
		edges = append(edges, [2]int64{node(i), node(n + 5000)})
	}
	edges = slices.DeleteFunc(edges, func(e [2]int64) bool { return e[0] == e[1] })
	checkComponents(t, "giant", edges)
}
