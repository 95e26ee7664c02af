package dedup

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/neardup/neardup/cluster"
)

// giantCorpus is made mostly of edits of three templates, some far enough
// from their template to be rejected by its oldest copies, exact copies,
// pages made of two templates' halves (which merge their components) and
// unrelated texts.
func giantCorpus(seed uint64, n int) []string {
	rng := rand.New(rand.NewPCG(seed, 31))
	word := func() string { return fmt.Sprintf("w%d", rng.IntN(3000)) }
	text := func(n int) []string {
		w := make([]string, n)
		for x := range w {
			w[x] = word()
		}
		return w
	}
	var templates [3][]string
	for x := range templates {
		templates[x] = text(150)
	}
	edit := func(w []string, edits int) []string {
		w = append([]string(nil), w...)
		for range edits {
			w[rng.IntN(len(w))] = word()
		}
		return w
	}
	var docs [][]string
	for len(docs) < n {
		switch k := rng.IntN(20); {
		case k < 12 || len(docs) == 0:
			docs = append(docs, edit(templates[rng.IntN(3)], rng.IntN(rng.IntN(20)+1)))
		case k < 15:
			docs = append(docs, docs[rng.IntN(len(docs))])
		case k < 17:
			a, b := templates[rng.IntN(3)], templates[rng.IntN(3)]
			docs = append(docs, edit(append(append([]string(nil), a[:75]...), b[75:]...), rng.IntN(6)))
		default:
			docs = append(docs, text(20+rng.IntN(100)))
		}
	}
	return joinWords(docs)
}

// TestGiantComponentSummaries: the component join with its large buckets
// summarised (minhash_giant.go), every join, at any bucket size and prefix, writes
// the streaming Finder's clusters, pairs and kept documents byte for
// byte, on giant components with near and far edits, exact copies and
// components that merge; and that it keeps the same documents out of
// its index (exact copies of an earlier one, which change no output);
// and that the spill path, trying a large bucket's pairs class by class,
// writes them too.
func TestGiantComponentSummaries(t *testing.T) {
	dir := t.TempDir()
	path := writeTexts(t, dir, giantCorpus(1, 1500), "g%d")
	var entries atomic.Int64 // the replayers' index entries (exact copies stay out)
	run := func(t *testing.T, cfg Options, workers, big, prefix int) [3][]byte {
		t.Helper()
		forceComponents = workers > 1
		bigBucket, sumPrefix = big, prefix
		entries.Store(0)
		onComponentEnd = func(n int) { entries.Add(int64(n)) }
		defer func() { forceComponents, bigBucket, sumPrefix, onComponentEnd = false, 64, 32, nil }()
		cfg.Workers = workers
		out := t.TempDir()
		o := Outputs{Clusters: filepath.Join(out, "c"), Pairs: filepath.Join(out, "p"), Kept: filepath.Join(out, "k.jsonl"), TmpDir: out}
		if _, err := Run(context.Background(), cfg, Input{Files: []string{path}}, o); err != nil {
			t.Fatal(err)
		}
		return readOutputs(t, o)
	}
	for _, join := range []string{"tiered", "estimate", "verify"} {
		for _, keep := range []cluster.Policy{cluster.First, cluster.Longest} {
			cfg := Options{Method: "minhash", Keep: keep, EstimateOnly: join == "estimate", Verify: join == "verify"}
			t.Run(fmt.Sprintf("%s/%v", join, keep), func(t *testing.T) {
				want := run(t, cfg, 1, math.MaxInt, 32) // the streaming Finder without summaries
				if bytes.Count(want[1], []byte("\n")) < 500 {
					t.Fatalf("%d pairs: the corpus tests nothing", bytes.Count(want[1], []byte("\n")))
				}
				for _, w := range []int{1, 2, 3} {
					run(t, cfg, w, math.MaxInt, 32) // no summaries
					wantEntries := entries.Load()
					for _, s := range [][2]int{{64, 32}, {4, 1}, {2, 3}} {
						got := run(t, cfg, w, s[0], s[1])
						if n := entries.Load(); n != wantEntries {
							t.Errorf("-j %d, buckets summarised from %d entries, prefix %d: %d index entries, %d without summaries", w, s[0], s[1], n, wantEntries)
						}
						for x, name := range []string{"clusters", "pairs", "kept"} {
							if !bytes.Equal(got[x], want[x]) {
								t.Errorf("-j %d, buckets summarised from %d entries, prefix %d: %s differ from the streaming join's", w, s[0], s[1], name)
							}
						}
					}
				}
				// The spill path, its buckets' pairs tried class by class
				// (groupClasses) from 2 and 64 members, or never.
				// And with every bucket joined lazily (spill_lazy.go), its
				// members read on demand into the default cache or one of
				// a few sketches.
				for _, w := range []int{1, 3} {
					for _, from := range []int{2, 64, math.MaxInt} {
						for _, lazy := range []int64{-1, 32 << 20, 3000} {
							classesFrom = from
							lazyBucketBytes, lazyCacheMin, lazyCacheMax = -1, 1<<20, 32<<20
							if lazy > 0 {
								lazyBucketBytes, lazyCacheMin, lazyCacheMax = 0, 0, lazy
							}
							spill := cfg
							spill.Spill = true
							got := run(t, spill, w, 64, 32)
							classesFrom = 64
							lazyBucketBytes, lazyCacheMin, lazyCacheMax = -1, 1<<20, 32<<20
							for x, name := range []string{"clusters", "pairs", "kept"} {
								if !bytes.Equal(got[x], want[x]) {
									t.Errorf("spill, -j %d, classes from %d members, lazy cache %d: %s differ from the streaming join's", w, from, lazy, name)
								}
							}
						}
					}
				}
			})
		}
	}
}
