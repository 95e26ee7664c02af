package dedup

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/neardup/neardup/shingle"
)

// --pairs-mode: spanning (the default) writes one pair per removed
// document, all writes every verified pair in a fixed order (by the later
// document, then the earlier), each once; both give the same clusters, and
// the spill path gives the same pairs as the in-memory finder.
func TestPairsMode(t *testing.T) {
	path, _ := writeNearDupCorpus(t, 400, 41)
	for _, method := range []string{"exact", "ksentence", "bloom", "minhash", "simhash", "jaccard"} {
		t.Run(method, func(t *testing.T) {
			run := func(all, spill bool) (pairs, clusters []byte, st *Stats) {
				cfg := Options{}
				cfg.Method, cfg.AllPairs, cfg.Spill = method, all, spill
				cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
				cfg.Spec.Threshold, cfg.Spec.SimHash.Distance, cfg.Spec.KSentence.K = 0.6, 6, 1
				if method == "minhash" {
					cfg.Verify = true
				}
				dir := t.TempDir()
				out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"), TmpDir: t.TempDir()}
				st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
				if err != nil {
					t.Fatal(err)
				}
				if st.Memory.Spill != spill {
					t.Fatalf("spill %v not taken: the comparison would test nothing", spill)
				}
				pairs, _ = os.ReadFile(out.Pairs)
				clusters, _ = os.ReadFile(out.Clusters)
				return pairs, clusters, st
			}
			span, c1, st1 := run(false, false)
			all, c2, st2 := run(true, false)
			if !bytes.Equal(c1, c2) {
				t.Fatal("the pairs mode changed the clusters")
			}
			if st1.Pairs != st1.Removed || bytes.Count(span, []byte("\n")) != st1.Removed {
				t.Errorf("spanning: %d pairs, want one per removed document (%d)", st1.Pairs, st1.Removed)
			}
			spanSet, allSet := pairSet(t, span), pairSet(t, all)
			if len(allSet) != st2.Pairs || len(allSet) <= len(spanSet) {
				t.Errorf("all: %d pairs (stats %d), want more than the %d spanning ones", len(allSet), st2.Pairs, len(spanSet))
			}
			for k := range spanSet {
				if !allSet[k] {
					t.Errorf("spanning pair %v missing from all", k)
				}
			}
			// Fixed order: ascending by id2's position, then id1's (the ids
			// are d%05d in input order).
			var prev [2]string
			for _, l := range bytes.Split(bytes.TrimSpace(all), []byte("\n")) {
				var p struct{ ID1, ID2 string }
				json.Unmarshal(l, &p)
				cur := [2]string{p.ID2, p.ID1}
				if cur[0] < prev[0] || (cur[0] == prev[0] && cur[1] <= prev[1]) {
					t.Fatalf("all: %s out of order after %v", l, prev)
				}
				prev = cur
			}
			if method == "exact" || method == "ksentence" || method == "bloom" {
				// Cliques: every two members of a cluster.
				sizes := map[string]int{}
				for _, l := range bytes.Split(bytes.TrimSpace(c1), []byte("\n")) {
					var c struct{ Cluster string }
					json.Unmarshal(l, &c)
					sizes[c.Cluster]++
				}
				want := 0
				for _, n := range sizes {
					want += n * (n - 1) / 2
				}
				if len(allSet) != want {
					t.Errorf("all: %d pairs, want %d (every two members of each cluster)", len(allSet), want)
				}
			}
			if method == "jaccard" || method == "bloom" || method == "ksentence" {
				return // no spill path
			}
			sAll, c3, st3 := run(true, true)
			t.Logf("%d spanning, %d all pairs; spill: %d all pairs", st1.Pairs, st2.Pairs, st3.Pairs)
			if !bytes.Equal(sAll, all) || !bytes.Equal(c3, c1) {
				t.Errorf("spill: all pairs or clusters differ from the in-memory run")
			}
		})
	}
}

// pairSet reads pairs lines into a set, failing on a pair written twice.
func pairSet(t *testing.T, b []byte) map[[2]string]bool {
	t.Helper()
	set := map[[2]string]bool{}
	for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(l) == 0 {
			continue
		}
		var p struct{ ID1, ID2 string }
		if err := json.Unmarshal(l, &p); err != nil {
			t.Fatalf("pairs line %q: %v", l, err)
		}
		k := [2]string{p.ID1, p.ID2}
		if set[k] {
			t.Fatalf("pair %v written twice", k)
		}
		set[k] = true
	}
	return set
}
