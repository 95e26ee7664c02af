package dedup

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// oldPick is pickExamples as it was before ChooseExamples (session 15):
// the reference that Run's and the staged job's choice must still give.
func oldPick(sizes map[int32]int, largest, random int) map[int32]Example {
	var roots []int32
	for k, n := range sizes {
		if n > 1 {
			roots = append(roots, k)
		}
	}
	slices.SortFunc(roots, func(a, b int32) int {
		if sizes[a] != sizes[b] {
			return sizes[b] - sizes[a]
		}
		return int(a - b)
	})
	ex := map[int32]Example{}
	n := min(max(largest, 0), len(roots))
	for _, k := range roots[:n] {
		ex[k] = Example{Kind: "largest", Size: sizes[k]}
	}
	rest := slices.Clone(roots[n:])
	slices.Sort(rest)
	rng := rand.New(rand.NewPCG(0x6e656172, 0x64757031))
	rng.Shuffle(len(rest), func(i, j int) { rest[i], rest[j] = rest[j], rest[i] })
	for _, k := range rest[:min(max(random, 0), len(rest))] {
		ex[k] = Example{Kind: "random", Size: sizes[k]}
	}
	return ex
}

// TestChooseExamples: ChooseExamples chooses what pickExamples chose
// before it, in Stats.Examples' order, on random clusterings with many
// ties of size.
func TestChooseExamples(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		sizes := map[int32]int{}
		for range rng.IntN(300) {
			sizes[int32(rng.IntN(5000))] = 1 + rng.IntN(1+rng.IntN(20))
		}
		largest, random := rng.IntN(12), rng.IntN(12)
		want := oldPick(sizes, largest, random)
		kept, n := multiSizes(sizes)
		got := ChooseExamples(kept, n, largest, random)
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d examples, want %d", trial, len(got), len(want))
		}
		for i, c := range got {
			w, ok := want[int32(kept[c.Cluster])]
			if !ok || w.Kind != c.Kind || w.Size != c.Size {
				t.Fatalf("trial %d: example %d is cluster %d (%s, %d), want %+v (chosen: %v)", trial, i, kept[c.Cluster], c.Kind, c.Size, w, ok)
			}
			if i > 0 {
				p := got[i-1]
				if p.Kind == "random" && c.Kind == "largest" || p.Kind == c.Kind && c.Kind == "largest" && (p.Size < c.Size || p.Size == c.Size && p.Cluster > c.Cluster) || p.Kind == c.Kind && c.Kind == "random" && p.Cluster > c.Cluster {
					t.Fatalf("trial %d: examples %d and %d out of Stats.Examples' order", trial, i-1, i)
				}
			}
		}
	}
}
