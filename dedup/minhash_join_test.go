package dedup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/cluster"
)

// nearCorpus returns families of word sequences whose word 5-gram Jaccard
// similarity to their family's base spreads over [t-0.1, 1], most just
// below t: where the signature estimate alone chains unrelated documents.
func nearCorpus(families, variants int, t float64, seed uint64) []string {
	r := rand.New(rand.NewPCG(seed, 3))
	word := func() string { return fmt.Sprintf("w%d", r.IntN(50000)) }
	const n = 120
	var texts []string
	for range families {
		base := make([]string, n)
		for i := range base {
			base[i] = word()
		}
		texts = append(texts, strings.Join(base, " "))
		for range variants {
			j := t - 0.1*r.Float64()
			if r.IntN(3) == 0 {
				j = t + (1-t)*r.Float64()
			}
			total := float64(n - 4)
			m := max(1, min(n-1, int(total-2*total*j/(1+j))-4))
			start := r.IntN(n - m + 1)
			doc := append([]string(nil), base...)
			for i := start; i < start+m; i++ {
				doc[i] = word()
			}
			texts = append(texts, strings.Join(doc, " "))
		}
	}
	return texts
}

// runClusters runs the pipeline on texts with cfg and returns, per
// document, the index of its kept document, and the stats.
func runClusters(t *testing.T, cfg Options, texts []string) ([]int, *Stats) {
	t.Helper()
	dir := t.TempDir()
	in := writeTexts(t, dir, texts, "%d")
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: dir}
	st, err := Run(context.Background(), cfg, Input{Files: []string{in}}, out)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out.Clusters)
	if err != nil {
		t.Fatal(err)
	}
	keep := make([]int, 0, len(texts))
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var v struct{ Cluster string }
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatal(err)
		}
		var k int
		fmt.Sscan(v.Cluster, &k)
		keep = append(keep, k)
	}
	return keep, st
}

// pairScore returns the pairwise precision and recall of the partition
// got (document -> cluster label) against want.
func pairScore(got, want []int) (p, r float64) {
	var both, inGot, inWant int
	for a := range got {
		for b := a + 1; b < len(got); b++ {
			g, w := got[a] == got[b], want[a] == want[b]
			if g {
				inGot++
			}
			if w {
				inWant++
			}
			if g && w {
				both++
			}
		}
	}
	p, r = 1, 1
	if inGot > 0 {
		p = float64(both) / float64(inGot)
	}
	if inWant > 0 {
		r = float64(both) / float64(inWant)
	}
	return p, r
}

// exactComponents is the brute-force reference: the connected components
// of all pairs with exact Jaccard >= t, labelled by their first member.
func exactComponents(n int, sim func(a, b int) float64, t float64) []int {
	var pairs [][2]int
	for a := range n {
		for b := a + 1; b < n; b++ {
			if sim(a, b) >= t {
				pairs = append(pairs, [2]int{a, b})
			}
		}
	}
	return partition(n, pairs)
}

// TestMinhashTieredPrecision: on a corpus where most near pairs sit just
// below the threshold, the default (tiered) join's clusters match the
// exact join's components (brute force) with pairwise precision >= 0.99
// and recall within 0.01 of --verify's, where deciding by the estimate alone chains false
// pairs (its precision is measured and must be worse: the test would not
// see a regression to the old join otherwise). The count of removed
// documents below the threshold to their kept document matches brute
// force.
func TestMinhashTieredPrecision(t *testing.T) {
	const th = 0.8
	texts := nearCorpus(60, 8, th, 1)
	_, sim := bruteForce(t, texts)
	want := exactComponents(len(texts), sim, th)

	cfg := mhConfig(false, th)
	got, st := runClusters(t, cfg, texts)
	p, r := pairScore(got, want)
	t.Logf("tiered: precision %.4f recall %.4f, %d removed below the threshold", p, r, *st.RemovedBelowThreshold)
	// Recall is bounded by the banding (candidates); the join itself must
	// lose no more than 0.01 against verifying every candidate.
	vcfg := mhConfig(true, th)
	ver, _ := runClusters(t, vcfg, texts)
	_, rv := pairScore(ver, want)
	if p < 0.99 || r < 0.97 || r < rv-0.01 {
		t.Errorf("tiered join: pairwise precision %.4f recall %.4f against the exact join (--verify: recall %.4f), want >= 0.99 and >= 0.97", p, r, rv)
	}
	cfg.EstimateOnly = true
	old, _ := runClusters(t, cfg, texts)
	po, ro := pairScore(old, want)
	t.Logf("estimate only: precision %.4f recall %.4f", po, ro)
	if po >= p {
		t.Errorf("estimate-only precision %.4f not below the tiered join's %.4f: the corpus does not test the join", po, p)
	}

	// The count of removed documents below the threshold to their kept
	// document, against brute force.
	below := 0
	for i, k := range got {
		if k != i && sim(i, k) < th {
			below++
		}
	}
	if st.RemovedBelowThreshold == nil || *st.RemovedBelowThreshold != below {
		t.Errorf("removed_below_threshold %v, brute force counts %d", st.RemovedBelowThreshold, below)
	}
}

// TestMinhashTieredDecide: the tiered decision accepts far above the
// threshold without the sets, rejects far below, and computes the exact
// Jaccard in between; fewer effective slots widen the margins.
func TestMinhashTieredDecide(t *testing.T) {
	m, err := NewMethod(mhConfig(false, 0.8))
	if err != nil {
		t.Fatal(err)
	}
	mm := m.(*minhashMethod)
	a := &lazySet{h: []uint64{5, 1, 2, 3, 4, 1}} // {1..5}
	b := &lazySet{h: []uint64{1, 2, 3, 4, 6}}    // J = 4/6
	for _, tc := range []struct {
		n, keff int
		sim     float64
		ok      bool
	}{
		{128, 128, 1, true},            // far above: the estimate
		{60, 128, 60.0 / 128, false},   // far below: the estimate
		{102, 128, 4.0 / 6, false},     // 0.797: exact
		{122, 128, 122.0 / 128, false}, // 0.953 is under hi = 0.959 at 128 slots: exact
		{127, 10, 4.0 / 6, false},      // 10 effective slots: exact
	} {
		sim, ok := mm.decide(tc.n, tc.keff, a, b, nil)
		if tc.n == 122 {
			tc.sim = 4.0 / 6
		}
		if sim != tc.sim || ok != tc.ok {
			t.Errorf("decide(n=%d, keff=%d) = %v, %v; want %v, %v", tc.n, tc.keff, sim, ok, tc.sim, tc.ok)
		}
	}
}

// TestMinhashLeader: under --cluster leader, with --keep first and
// longest, every removed document has an exact Jaccard similarity >= the
// threshold to its kept document, which comes before it in keep order; the
// clusters agree with a brute-force leader clustering (all pairs, exact
// Jaccard, in keep order: a document joins the most similar leader before
// it at or above the threshold) on at least 97% of the documents (LSH
// misses a few candidates); and the run counts no document below the
// threshold. Spilling is not offered.
func TestMinhashLeader(t *testing.T) {
	texts := append(nearCorpus(40, 8, 0.8, 2), mhCorpus(t)...)
	_, sim := bruteForce(t, texts)
	for _, keep := range []cluster.Policy{cluster.First, cluster.Longest} {
		order, rank := keepOrder(texts, keep)
		for _, th := range []float64{0.5, 0.8} {
			for _, verify := range []bool{false, true} {
				cfg := mhConfig(verify, th)
				cfg.Cluster, cfg.Keep = cluster.Leader, keep
				cfg.Spill = true // ignored: a leader run stays in memory
				got, st := runClusters(t, cfg, texts)
				if st.Memory.Spill {
					t.Errorf("t=%v: a leader run spilled", th)
				}
				// Brute-force leader clustering in keep order.
				want := make([]int, len(texts))
				var leaders []int // in keep order
				for _, i := range order {
					best, bestSim := i, -1.0
					for _, l := range leaders {
						if s := sim(l, i); s >= th && s > bestSim {
							best, bestSim = l, s
						}
					}
					if best == i {
						leaders = append(leaders, i)
					}
					want[i] = best
				}
				checkLeader(t, fmt.Sprintf("keep %s t=%v verify=%v", keep, th, verify), got, want, rank, st,
					func(i, k int) bool { return sim(i, k) >= th })
			}
		}
	}
}

// keepOrder returns the documents in keep order (input order, or under
// Longest the longest text first, then input order) and each document's
// place in it.
func keepOrder(texts []string, keep cluster.Policy) (order, rank []int) {
	order = make([]int, len(texts))
	for i := range order {
		order[i] = i
	}
	if keep == cluster.Longest {
		slices.SortStableFunc(order, func(a, b int) int { return len(texts[b]) - len(texts[a]) })
	}
	rank = make([]int, len(texts))
	for r, i := range order {
		rank[i] = r
	}
	return order, rank
}

// checkLeader checks a leader clustering got (document -> kept document)
// against the brute-force one want: every removed document is a duplicate
// (dup) of its kept document, which comes before it in keep order (rank),
// at least 97% of the documents agree with brute force (an LSH method
// misses a few candidates), something is removed, and the run counts no
// removed document below the threshold.
func checkLeader(t *testing.T, what string, got, want, rank []int, st *Stats, dup func(i, k int) bool) {
	t.Helper()
	same, removed := 0, 0
	for i, k := range got {
		if rank[k] > rank[i] {
			t.Fatalf("%s: document %d kept by %d, which comes later in keep order", what, i, k)
		}
		if k != i {
			removed++
			if !dup(i, k) {
				t.Fatalf("%s: document %d removed but not a duplicate of its kept document %d", what, i, k)
			}
		}
		if k == want[i] {
			same++
		}
	}
	agree := float64(same) / float64(len(got))
	t.Logf("%s: %d removed, %.4f agree with brute force", what, removed, agree)
	if agree < 0.97 || removed == 0 {
		t.Errorf("%s: %.4f of the documents as brute-force leader clustering (%d removed), want >= 0.97", what, agree, removed)
	}
	if st.RemovedBelowThreshold == nil || *st.RemovedBelowThreshold != 0 {
		t.Errorf("%s: removed_below_threshold %v, want 0", what, st.RemovedBelowThreshold)
	}
}

func TestMinhashLeaderErrors(t *testing.T) {
	cfg := mhConfig(false, 0.8)
	cfg.Cluster, cfg.EstimateOnly = cluster.Leader, true
	if _, err := NewMethod(cfg); err == nil || !errors.Is(err, ErrConflict) || !strings.Contains(err.Error(), "Cluster with EstimateOnly") {
		t.Errorf("leader with estimate only: %v", err)
	}
	cfg = mhConfig(true, 0.8)
	cfg.EstimateOnly = true
	if _, err := NewMethod(cfg); err == nil {
		t.Error("--verify with --estimate-only accepted")
	}
	cfg = Options{}
	for _, method := range []string{"jaccard", "bloom", "bloom-overlap"} {
		cfg.Method, cfg.Cluster = method, cluster.Leader
		if _, err := Run(context.Background(), cfg, Input{Files: []string{"x"}}, Outputs{}); err == nil || !strings.Contains(err.Error(), "leader") {
			t.Errorf("%s with leader: %v", method, err)
		}
	}
}

// TestMinhashLeaderLongestCache: under --keep longest, leader clustering
// reads both sets of a pair back from the scratch file at Flush; a pair
// whose documents share a slot of the set cache (indexes 1,024 apart) is
// still compared set against set. The set read second once overwrote the
// first in the shared slot, so a pair just below the threshold compared a
// set with itself and joined.
func TestMinhashLeaderLongestCache(t *testing.T) {
	const th, pairs = 0.8, 40
	r := rand.New(rand.NewPCG(9, 9))
	word := func() string { return fmt.Sprintf("longword%05d", r.IntN(100000)) }
	texts := make([]string, setCacheSlots+pairs)
	for x := range texts { // short fillers, alone
		texts[x] = fmt.Sprintf("f%d a%d b%d c%d d%d e%d", x, x, x, x, x, x)
	}
	for x := range pairs {
		base := make([]string, 200)
		for w := range base {
			base[w] = word()
		}
		// Replace a span of short words: J about 0.72-0.78 to the base,
		// and a shorter text, so the base leads in keep order.
		v := slices.Clone(base)
		m := 19 + r.IntN(7)
		start := 5 + r.IntN(len(base)-m-10)
		for w := start; w < start+m; w++ {
			v[w] = fmt.Sprintf("s%d", r.IntN(1000))
		}
		texts[x], texts[setCacheSlots+x] = strings.Join(base, " "), strings.Join(v, " ")
	}
	_, sim := bruteForce(t, texts)
	for x := range pairs {
		if s := sim(x, setCacheSlots+x); s >= th || s < th-0.07 {
			t.Fatalf("pair %d: J %.3f, want just below %v", x, s, th)
		}
	}
	cfg := mhConfig(false, th)
	cfg.Cluster, cfg.Keep = cluster.Leader, cluster.Longest
	got, st := runClusters(t, cfg, texts)
	for i, k := range got {
		if k != i && sim(i, k) < th {
			t.Errorf("document %d removed for %d at J %.3f < %v", i, k, sim(i, k), th)
		}
	}
	if st.RemovedBelowThreshold == nil || *st.RemovedBelowThreshold != 0 {
		t.Error("removed documents below the threshold were counted")
	}
}
