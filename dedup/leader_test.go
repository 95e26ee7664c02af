package dedup

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/jaccard"
	"github.com/neardup/neardup/sketch"
)

// chainTexts returns chains texts, each a walk of steps texts from a
// random one of 40 words, one word replaced at each step: neighbours are
// near-duplicates, the ends of a chain are not.
func chainTexts(chains, steps int, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 9))
	var texts []string
	for range chains {
		w := make([]string, 40)
		for i := range w {
			w[i] = fmt.Sprintf("c%d", r.IntN(100000))
		}
		for range steps {
			texts = append(texts, strings.Join(w, " "))
			w[r.IntN(len(w))] = fmt.Sprintf("c%d", r.IntN(100000))
		}
	}
	return texts
}

// TestSimhashLeader: SimHash under --cluster leader, with --keep first and
// longest, with and without --verify, equals a brute-force leader
// clustering over all pairs of fingerprints (the permuted-table index is
// exact, so every document agrees): each document, in keep order, joins
// the leader before it that is nearest (or with --verify most similar in
// exact Jaccard at or above the threshold), the earliest of equals. Every
// removed document is within the distance of its kept document, and the
// run counts none below. Components mode on the same corpus counts, as a
// brute-force check over the kept documents does, the removed documents
// farther than the distance from theirs.
func TestSimhashLeader(t *testing.T) {
	texts := append(fpTexts(600, 21), chainTexts(20, 12, 5)...)
	const k = 6
	for _, verify := range []bool{false, true} {
		cfg := Options{Method: "simhash", Verify: verify}
		cfg.Spec.SimHash.Distance = k
		cfg.VerifyThreshold = 0.6
		spec, err := cfg.ResolveSpec()
		if err != nil {
			t.Fatal(err)
		}
		sk, err := spec.NewSketcherWith(sketch.SketcherOptions{Sets: true})
		if err != nil {
			t.Fatal(err)
		}
		sks := make([]sketch.Sketch, len(texts))
		for i, s := range texts {
			sk.Sketch(&sks[i], s)
			sks[i].Set = append([]uint64(nil), sks[i].Set...)
		}
		dup := func(i, j int) bool {
			if sks[i].Empty || sks[j].Empty || sks[i].FP.Distance(sks[j].FP) > k {
				return false
			}
			return !verify || jaccard.Set(sks[i].Set, sks[j].Set) >= cfg.VerifyThreshold
		}
		for _, keep := range []cluster.Policy{cluster.First, cluster.Longest} {
			what := fmt.Sprintf("verify=%v keep %s", verify, keep)
			order, rank := keepOrder(texts, keep)
			want := make([]int, len(texts))
			var leaders []int
			for _, i := range order {
				best, bestSim := i, -1.0
				for _, l := range leaders { // in keep order: the earliest of equals wins
					if !dup(l, i) {
						continue
					}
					s := 1 - float64(sks[l].FP.Distance(sks[i].FP))/float64(spec.SimHash.Bits)
					if verify {
						s = jaccard.Set(sks[l].Set, sks[i].Set)
					}
					if s > bestSim {
						best, bestSim = l, s
					}
				}
				if best == i {
					leaders = append(leaders, i)
				}
				want[i] = best
			}
			c := cfg
			c.Cluster, c.Keep = cluster.Leader, keep
			got, st := runClusters(t, c, texts)
			if st.Memory.Spill {
				t.Errorf("%s: a leader run spilled", what)
			}
			checkLeader(t, what, got, want, rank, st, dup)
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: document %d kept by %d, brute force says %d", what, i, got[i], want[i])
				}
			}

			// Components: the count of removed documents that are not
			// duplicates of their kept document.
			c.Cluster = cluster.Components
			got, st = runClusters(t, c, texts)
			below := 0
			for i, k := range got {
				if k != i && !dup(i, k) {
					below++
				}
			}
			if st.RemovedBelowThreshold == nil || *st.RemovedBelowThreshold != below {
				t.Errorf("%s: components: removed_below_threshold %v, brute force %d", what, st.RemovedBelowThreshold, below)
			}
			t.Logf("%s: components: %d removed documents not duplicates of their kept document", what, below)
			if below == 0 {
				t.Errorf("%s: components: no removed document is far from its kept one; the chains should make some", what)
			}
		}
	}
}
