package dedup

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/simhash"
	"github.com/neardup/neardup/sketch"
)

// spillSketches sketches texts with the method of cfg and adds them to a
// new spillFinder (a 1 MiB budget, its files under a test directory).
func spillSketches(t *testing.T, cfg Options, texts []string) *spillFinder {
	t.Helper()
	m, err := NewMethod(cfg)
	if err != nil {
		t.Fatal(err)
	}
	keyed := capabilitiesOf(m).keyed
	if keyed == nil {
		t.Fatalf("%s cannot spill", cfg.Method)
	}
	f, err := newSpillFinder(keyed, t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	sk, err := m.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		s, err := sk.Sketch(&Doc{Text: []byte(text)})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Add(i, s, nil); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestSpillBatchedReads: the spill join gives the same pairs, in the same
// order, whether each member's sketch is read alone and each group is a
// batch of its own (as one pread a member did) or the groups are batched
// and their members read in file order, neighbours coalesced, and on one
// worker or several (many small batches in flight), for a split method
// (minhash, tiered join) and a plain one (simhash).
func TestSpillBatchedReads(t *testing.T) {
	texts := append(mhCorpus(t), nearCorpus(20, 6, 0.8, 4)...)
	simhash := Options{Method: "simhash"}
	simhash.Spec.SimHash.Distance = 6
	for name, cfg := range map[string]Options{"minhash": mhConfig(false, 0.8), "simhash": simhash} {
		t.Run(name, func(t *testing.T) {
			var runs [][]Pair
			for _, c := range []struct {
				batch, readMax, gapMax int64
				workers                int
			}{
				{1, 1, 0, 1},                   // one read a member, one group a batch
				{1 << 30, 1 << 20, 8 << 10, 1}, // one batch, the default reads
				{3000, 600, 100, 1},            // many batches, short reads and gaps
				{1 << 30, 1 << 30, 1 << 30, 1}, // the whole file in one read
				{3000, 600, 100, 2},            // many batches on the workers
				{12000, 1 << 20, 8 << 10, 3},
				{30000, 1 << 20, 8 << 10, 8},
			} {
				f := spillSketches(t, cfg, texts)
				f.batchBytes, f.readMax, f.gapMax = c.batch, c.readMax, c.gapMax
				f.setWorkers(c.workers)
				var pairs []Pair
				if err := f.Flush(func(p Pair) { pairs = append(pairs, p) }); err != nil {
					t.Fatal(err)
				}
				if len(pairs) < 50 {
					t.Fatalf("%+v: only %d pairs", c, len(pairs))
				}
				runs = append(runs, pairs)
			}
			for k := 1; k < len(runs); k++ {
				if !slices.Equal(runs[0], runs[k]) {
					t.Errorf("reads %d: %d pairs, want the %d of one read a member, in the same order", k, len(runs[k]), len(runs[0]))
				}
			}
		})
	}
}

// TestSpillBatchCountsItsMemory: a batch of the spill join counts, in
// its bytes, the memory its members take once read (their sketches and
// their places in docs, order and at), for simhash --verify, whose
// sketches in the file are the 8-byte fingerprints alone, and minhash.
func TestSpillBatchCountsItsMemory(t *testing.T) {
	texts := append(mhCorpus(t), nearCorpus(20, 6, 0.8, 4)...)
	verify := Options{Method: "simhash", Verify: true}
	verify.Spec.SimHash.Distance = 6
	for name, cfg := range map[string]Options{"simhash verify": verify, "minhash": mhConfig(false, 0.8)} {
		t.Run(name, func(t *testing.T) {
			f := spillSketches(t, cfg, texts)
			if err := f.sketchW.Close(); err != nil { // as Flush does first
				t.Fatal(err)
			}
			b, batches := &spillBatch{}, 0
			err := f.batches(3000, func() *spillBatch { return b }, func(b *spillBatch) error {
				if err := f.read(b); err != nil {
					return err
				}
				held := 4*len(b.docs) + 8*len(b.order) + 8*len(b.at) + len(b.arena) + 8*len(b.ends) + 8*len(b.keys)
				if int64(held) > b.bytes {
					t.Errorf("a batch of %d members in %d buckets holds %d bytes, counts %d", len(b.docs), len(b.ends), held, b.bytes)
				}
				batches++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if batches < 2 {
				t.Fatalf("%d batches: the test would test little", batches)
			}
		})
	}
}

// TestSpillUnreadableSketchFile: a sketch file cut short, or closed, is an
// error naming the document and the file, never a panic or a silent loss.
func TestSpillUnreadableSketchFile(t *testing.T) {
	texts := mhCorpus(t)
	for _, c := range []struct {
		name  string
		spoil func(*spillFinder) error
	}{
		{"truncated", func(f *spillFinder) error { return f.sketchF.Truncate(f.size / 2) }},
		{"closed", func(f *spillFinder) error { return f.sketchF.Close() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := spillSketches(t, mhConfig(false, 0.8), texts)
			if err := f.sketchW.Close(); err != nil {
				t.Fatal(err)
			}
			if err := c.spoil(f); err != nil {
				t.Fatal(err)
			}
			err := f.Flush(func(Pair) {})
			if err == nil || !strings.Contains(err.Error(), "reading the spilled sketch of document") ||
				!strings.Contains(err.Error(), sketchPrefix) {
				t.Fatalf("Flush = %v, want a read error naming the document and the file", err)
			}
			if _, serr := os.Stat(f.sketchF.Name()); !os.IsNotExist(serr) {
				t.Errorf("the sketch file is left behind after the error (%v)", serr)
			}
		})
	}
}

// runOutputs runs cfg over files and returns the clusters, pairs and kept
// records it wrote; spill is whether the run must have spilled.
func runOutputs(t *testing.T, cfg Options, spill bool, files ...string) [4][]byte {
	t.Helper()
	return runInput(t, cfg, spill, Input{Files: files})
}

// runInput is runOutputs with any input.
func runInput(t *testing.T, cfg Options, spill bool, in Input) [4][]byte {
	t.Helper()
	dir := t.TempDir()
	out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"),
		Kept: filepath.Join(dir, "k.jsonl"), TmpDir: t.TempDir()}
	st, err := Run(context.Background(), cfg, in, out)
	if err != nil {
		t.Fatal(err)
	}
	if st.Memory.Spill != spill {
		t.Fatalf("spill %v, want %v", st.Memory.Spill, spill)
	}
	var b [4][]byte
	for k, name := range []string{out.Clusters, out.Pairs, out.Kept} {
		if b[k], err = os.ReadFile(name); err != nil {
			t.Fatal(err)
		}
	}
	b[3] = statsCounts(t, st)
	return b
}

// outputNames names runOutputs' files and the counts of --stats.
var outputNames = [4]string{"clusters", "pairs", "kept records", "stats counts"}

// statsCounts is the JSON of a run's --stats counts: those that do not
// depend on how the run went (spilled or not, its -j, its times).
func statsCounts(t *testing.T, st *Stats) []byte {
	t.Helper()
	b, err := json.Marshal(struct {
		Documents, Kept, Removed, Clusters, LargestCluster, Pairs, Dropped int
		RemovedBelowThreshold                                              *int
		IndexMatches, Skipped, Empty                                       int
		ClusterSizes                                                       []SizeCount
		Similarity                                                         [20]int
		Distance                                                           []int
	}{st.Documents, st.Kept, st.Removed, st.Clusters, st.LargestCluster, st.Pairs, st.Dropped,
		st.RemovedBelowThreshold, st.IndexMatches, st.Skipped, st.Empty, st.ClusterSizes,
		st.Similarity, st.Distance})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSpillAnyWorkers: a spilled run writes the same clusters, pairs and
// kept records at -j 1, 2, 3 and 8, and those of the in-memory run, for
// minhash (the tiered join: sets apart) and simhash, with and without
// --verify (its spanning pairs in AllPairsGrouped's order:
// spill_forest.go).
func TestSpillAnyWorkers(t *testing.T) {
	path, _ := writeNearDupCorpus(t, 600, 43)
	for _, v := range []struct {
		name, method string
		verify       bool
	}{{"minhash", "minhash", false}, {"simhash", "simhash", false}, {"simhash verify", "simhash", true}} {
		t.Run(v.name, func(t *testing.T) {
			run := func(spill bool, workers int) [4][]byte {
				cfg := Options{Verify: v.verify}
				cfg.Method, cfg.Spill, cfg.Memory, cfg.Workers = v.method, spill, 1<<20, workers
				cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
				cfg.Spec.Threshold, cfg.Spec.SimHash.Distance = 0.6, 6
				b := runOutputs(t, cfg, spill, path)
				if len(b[1]) == 0 {
					t.Fatal("no pairs: the comparison would test nothing")
				}
				return b
			}
			mem := run(false, 1)
			one := run(true, 1)
			for k, what := range outputNames {
				if !bytes.Equal(one[k], mem[k]) {
					t.Errorf("spilled -j 1: %s differ from the in-memory run's", what)
				}
			}
			for _, j := range []int{2, 3, 8} {
				got := run(true, j)
				for k, what := range outputNames {
					if !bytes.Equal(got[k], one[k]) {
						t.Errorf("spilled -j %d: %s differ from -j 1", j, what)
					}
				}
			}
		})
	}
}

// TestSpillSimhashVerifyCopies: simhash --verify checks a copy of a
// fingerprint against the earliest document having it, as the in-memory
// Finder does, and no other pair of its copies. Each text here is one
// word repeated, which decides its fingerprint under count weights, and a
// tail of other words, which decides its set: copies of a fingerprint
// whose sets differ, some alike among themselves but not like the
// earliest. The spilled runs at -j 1 and 3 write the in-memory run's
// clusters, pairs and kept records (the spill join that verified every
// pair of a bucket joined the copies alike among themselves).
func TestSpillSimhashVerifyCopies(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 25))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma")
	var texts []string
	for range 300 {
		w := words[rng.IntN(4)]
		tail := words[4+rng.IntN(len(words)-8):][:4]
		texts = append(texts, strings.Repeat(w+" ", 40)+strings.Join(tail, " "))
	}
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	cfg := Options{Method: "simhash", Verify: true, Workers: 1}
	cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 1}
	cfg.Spec.SimHash.Weights, cfg.Spec.Threshold = sketch.WeightCount, 0.5
	if mem := runOutputs(t, cfg, false, path); len(mem[1]) == 0 {
		t.Fatal("no pairs: the comparison would test nothing")
	}
	checkSpillVariants(t, path, []spillVariant{{"simhash verify", cfg, []int{1, 3}}})
}

// TestSpillSimhashBucketForest: a simhash bucket of near copies (every
// two of its distinct fingerprints within the distance) keeps a forest of
// their pairs, not every matching pair (quadratic in the copies: 200,000
// near copies of a page took 4.3 GB), and the outputs are the in-memory
// run's.
func TestSpillSimhashBucketForest(t *testing.T) {
	path := writeTexts(t, t.TempDir(), nearCopyTexts(rand.New(rand.NewPCG(19, 3)), 400, 1), "d%d")
	var largest, over int
	groupOrderedDone = func(reps, kept, _, _ int) {
		largest = max(largest, reps)
		if kept > max(reps-1, 0) {
			over++
		}
	}
	defer func() { groupOrderedDone = nil }()
	cfg := Options{Method: "simhash", Workers: 1}
	want := runOutputs(t, cfg, false, path)
	cfg.Spill, cfg.Memory = true, 1<<20
	got := runOutputs(t, cfg, true, path)
	for k, what := range outputNames {
		if !bytes.Equal(got[k], want[k]) {
			t.Errorf("spilled: %s differ from the in-memory run's", what)
		}
	}
	if largest < 100 {
		t.Fatalf("the largest bucket has %d distinct fingerprints: the test needs a large one", largest)
	}
	if over > 0 {
		t.Errorf("%d buckets kept more pairs than their distinct fingerprints less one", over)
	}
}

// nearCopyTexts returns copies near copies of one page of 300 words
// (w0..w4999), each with 1 to most of its words replaced by a word of its
// own.
func nearCopyTexts(rng *rand.Rand, copies, most int) []string {
	page := make([]string, 300)
	for k := range page {
		page[k] = fmt.Sprintf("w%d", rng.IntN(5000))
	}
	var texts []string
	for range copies {
		c := slices.Clone(page)
		n := 1
		if most > 1 {
			n += rng.IntN(most)
		}
		for range n {
			c[rng.IntN(len(c))] = fmt.Sprintf("u%d", rng.IntN(1<<30))
		}
		texts = append(texts, strings.Join(c, " "))
	}
	return texts
}

// sharedSetFiles returns the docs.jsonl.gz of every set of ../shared/data
// (found from the working directory up) by set; it skips the test when
// there is none.
func sharedSetFiles(t *testing.T) map[string]string {
	t.Helper()
	var root string
	for d, _ := filepath.Abs("."); ; d = filepath.Dir(d) {
		if st, err := os.Stat(filepath.Join(d, "shared", "data")); err == nil && st.IsDir() {
			root = filepath.Join(d, "shared", "data")
			break
		}
		if filepath.Dir(d) == d {
			t.Skip("no shared/data folder above the working directory")
		}
	}
	files, err := filepath.Glob(filepath.Join(root, "*", "docs.jsonl.gz"))
	if err != nil || len(files) == 0 {
		t.Skipf("no data set in %s (%v)", root, err)
	}
	sets := map[string]string{}
	for _, name := range files {
		sets[filepath.Base(filepath.Dir(name))] = name
	}
	return sets
}

// sharedSets writes the first n documents of every set of ../shared/data,
// at most about size bytes of each, to dir and returns their paths by
// set (see sharedSetFiles).
func sharedSets(t *testing.T, dir string, n, size int) map[string]string {
	t.Helper()
	sets := sharedSetFiles(t)
	for set, name := range sets {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var head bytes.Buffer
		sc := bufio.NewScanner(zr)
		sc.Buffer(nil, 1<<26)
		for k := 0; k < n && head.Len() < size && sc.Scan(); k++ {
			head.Write(sc.Bytes())
			head.WriteByte('\n')
		}
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		f.Close()
		sets[set] = filepath.Join(dir, set+".jsonl")
		if err := os.WriteFile(sets[set], head.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return sets
}

// spillVariant is a configuration whose spilled runs at each of workers
// must write the in-memory run's outputs.
type spillVariant struct {
	name    string
	cfg     Options
	workers []int
}

// spillVariants: minhash's three joins, exact, ksentence, simhash of 64
// and 128 bits with and without --verify, and --pairs-mode all, with the
// -j of the spilled runs (several for the default join).
func spillVariants(workers []int) []spillVariant {
	return []spillVariant{
		{"tiered", Options{Method: "minhash"}, workers},
		{"estimate", Options{Method: "minhash", EstimateOnly: true}, []int{2}},
		{"verify", Options{Method: "minhash", Verify: true}, []int{2}},
		{"exact", Options{Method: "exact"}, []int{3}},
		{"ksentence", Options{Method: "ksentence"}, []int{2}},
		{"minhash all", Options{Method: "minhash", AllPairs: true}, []int{2}},
		{"simhash all", Options{Method: "simhash", AllPairs: true}, []int{3}},
		{"simhash all verify", Options{Method: "simhash", AllPairs: true, Verify: true}, []int{2}},
		{"simhash", Options{Method: "simhash"}, []int{1, 3}},
		{"simhash 128 bits", simhashVariant(128, 12, false), []int{2}},
		{"simhash verify", Options{Method: "simhash", Verify: true}, []int{1, 3}},
		{"simhash verify 128 bits", simhashVariant(128, 12, true), []int{2}},
	}
}

// simhashVariant is simhash of bits bits at distance d, with --verify
// when verify is true.
func simhashVariant(bits, d int, verify bool) Options {
	o := Options{Method: "simhash", Verify: verify}
	o.Spec.SimHash.Bits, o.Spec.SimHash.Distance = bits, d
	return o
}

// checkSpillVariants compares each variant's spilled runs over path with
// its in-memory run at -j 1, with batches of a few buckets (a 1 MiB
// budget) and the pairs kept replaced by their forest again and again,
// and, where buckets can be joined lazily, with every one so.
func checkSpillVariants(t *testing.T, path string, variants []spillVariant) {
	t.Helper()
	defer func(m int) { spillEdgesMin = m }(spillEdgesMin)
	spillEdgesMin = 16
	for _, v := range variants {
		cfg := v.cfg
		cfg.Workers = 1
		want := runOutputs(t, cfg, false, path)
		cfg.Spill, cfg.Memory = true, 1<<20
		for _, j := range v.workers {
			cfg.Workers = j
			got := runOutputs(t, cfg, true, path)
			for k, what := range outputNames {
				if !bytes.Equal(got[k], want[k]) {
					t.Errorf("%s spilled -j %d: %s differ from the in-memory run's", v.name, j, what)
				}
			}
		}
		if cfg.AllPairs || cfg.Method == "simhash" {
			continue // never joined lazily
		}
		// Every bucket joined lazily (spill_lazy.go), its members read on
		// demand into a cache of a few sketches.
		func() {
			defer func(b, lo, hi int64) { lazyBucketBytes, lazyCacheMin, lazyCacheMax = b, lo, hi }(lazyBucketBytes, lazyCacheMin, lazyCacheMax)
			lazyBucketBytes, lazyCacheMin, lazyCacheMax = 0, 0, 3000
			cfg.Workers = v.workers[len(v.workers)-1]
			got := runOutputs(t, cfg, true, path)
			for k, what := range outputNames {
				if !bytes.Equal(got[k], want[k]) {
					t.Errorf("%s spilled -j %d, buckets joined lazily: %s differ from the in-memory run's", v.name, cfg.Workers, what)
				}
			}
		}()
	}
}

// TestSpillPairsAreInMemoryPairs: on the head of every set of
// ../shared/data and on the component join's corpus of every shape
// (scaleCorpus: copies, chains, one giant component of templated pages),
// a spilled run writes the clusters, spanning pairs and kept records of
// the in-memory run at -j 1 (the streaming Finder; simhash's batch
// Finder), for minhash's three joins, exact, ksentence and simhash (64
// and 128 bits, with and without --verify), at several -j, and under
// --pairs-mode all, for minhash and simhash, every pair (spillVariants).
// The whole sets: TestSpillPairsWholeSets (-tags long).
func TestSpillPairsAreInMemoryPairs(t *testing.T) {
	sets := sharedSets(t, t.TempDir(), 800, 1<<20)
	sets["scale-corpus"] = writeTexts(t, t.TempDir(), scaleCorpus(3), "d%d")
	for set, path := range sets {
		t.Run(set, func(t *testing.T) { checkSpillVariants(t, path, spillVariants([]int{1, 3, 8})) })
	}
}

// TestSpillPairsWithIndex: with a saved index of old documents, the
// spill path writes the pairs file of the in-memory run at -j 1, in its
// order, for every method the spill path joins: minhash, exact and
// ksentence report their pairs as each document is read in memory, so
// each index hit's line (and a cascade's copy's) waits for the spill
// join's pairs and comes after those of its document; simhash reports
// its pairs at Flush in memory, so the hits' lines come first, spilled
// too (they came among the pairs, by document); a cascade before
// simhash writes its copies' and the hits' lines as read, then the
// pairs. Both --pairs-mode, --keep longest, -j 1 and 3 (its pairs made on
// the workers: pairsLater).
func TestSpillPairsWithIndex(t *testing.T) {
	texts := scaleCorpus(4)
	ix := fakeIndex{}
	for k := 5; k < len(texts); k += 23 {
		ix[texts[k]] = fmt.Sprintf("old-%d", k)
	}
	ix[texts[40]], ix[texts[41]] = "old-40", "old-41"
	in := Input{Files: []string{writeTexts(t, t.TempDir(), texts, "d%d")}, AgainstIndexes: []Index{ix}}
	for _, v := range []struct {
		name string
		cfg  Options
	}{
		{"minhash", Options{Method: "minhash"}},
		{"minhash all", Options{Method: "minhash", AllPairs: true}},
		{"minhash longest", Options{Method: "minhash", Keep: cluster.Longest}},
		{"simhash", Options{Method: "simhash"}},
		{"simhash all", Options{Method: "simhash", AllPairs: true}},
		{"simhash longest", Options{Method: "simhash", Keep: cluster.Longest}},
		{"exact", Options{Method: "exact"}},
		{"exact all", Options{Method: "exact", AllPairs: true}},
		{"ksentence", Options{Method: "ksentence"}},
		{"cascade", Options{Method: "minhash", Cascade: true}},
		{"cascade all", Options{Method: "minhash", Cascade: true, AllPairs: true}},
		{"cascade longest", Options{Method: "minhash", Cascade: true, Keep: cluster.Longest}},
		{"cascade simhash", Options{Method: "simhash", Cascade: true}},
		{"cascade simhash all", Options{Method: "simhash", Cascade: true, AllPairs: true}},
	} {
		cfg := v.cfg
		cfg.Workers = 1
		want := runInput(t, cfg, false, in)
		if !bytes.Contains(want[1], []byte(`"index":true`)) {
			t.Fatalf("%s: no index hit: the comparison would test nothing", v.name)
		}
		cfg.Spill, cfg.Memory = true, 1<<20
		for _, j := range []int{1, 3} {
			cfg.Workers = j
			got := runInput(t, cfg, true, in)
			for k, what := range outputNames {
				if !bytes.Equal(got[k], want[k]) {
					t.Errorf("%s, spilled -j %d: %s differ from the in-memory run's", v.name, j, what)
				}
			}
		}
	}
}

// TestSpillLazyCacheBound: a bucket joined lazily keeps at most its
// cache's bytes of sketches and sets, beside the members a pair holds
// (the two of the pair and the one whose turn it is), whatever the order
// of the reads; every member read is the one asked for, and the entries
// that pairs use again stay while others come and go.
func TestSpillLazyCacheBound(t *testing.T) {
	texts := nearCorpus(1, 300, 0.8, 9)
	f := spillSketches(t, mhConfig(false, 0.8), texts)
	if err := f.sketchW.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.sets.flushAll(); err != nil {
		t.Fatal(err)
	}
	if f.setsW != nil {
		if err := f.setsW.Close(); err != nil {
			t.Fatal(err)
		}
	}
	members := make([]uint32, len(texts))
	for k := range members {
		members[k] = uint32(k)
	}
	const limit = 6000 // about ten sketches, or fewer with their sets
	var l lazyMembers
	defer func(lo int64) { lazyCacheMin = lo }(lazyCacheMin)
	lazyCacheMin = 0
	l.start(f, members, limit)
	want := f.newJoiner()
	b := &spillBatch{docs: members, ends: []int{len(members)}}
	if err := f.read(b); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	held := func(ks ...int) int64 {
		var n int64
		for _, k := range ks {
			if s := l.slot[k]; s > 0 {
				n += l.ents[s-1].cost
			}
		}
		return n
	}
	for bi := 1; bi < len(members); bi++ {
		l.turn(bi)
		for _, ai := range []int{0, rng.IntN(bi), bi - 1, 0} {
			sa, err := l.sketch(ai, bi)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := l.sketch(bi, ai)
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(3) == 0 {
				if _, err := l.set(ai, bi); err != nil {
					t.Fatal(err)
				}
			}
			for k, s := range map[int]DocSketch{ai: sa, bi: sb} {
				w, err := want.decode(b, k, nil)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(s.(*minhashSketch).sig, w.(*minhashSketch).sig) {
					t.Fatalf("member %d: the cache gave another sketch", k)
				}
			}
			if l.used > limit+held(ai, bi) {
				t.Fatalf("turn %d: the cache holds %d bytes, more than its %d and the pair's %d", bi, l.used, limit, held(ai, bi))
			}
		}
		if l.slot[0] == 0 {
			t.Fatalf("turn %d: member 0, used by every turn, was evicted", bi)
		}
	}
	if len(l.ents) > 20 {
		t.Errorf("%d entries for a cache of about ten", len(l.ents))
	}
}

// TestGroupSetsLetGo: the sets a bucket's join read are kept for the
// next bucket to reuse their memory only up to groupSetsKeep bytes; past
// it, reset lets them go.
func TestGroupSetsLetGo(t *testing.T) {
	texts := nearCorpus(1, 40, 0.8, 5)
	f := spillSketches(t, mhConfig(false, 0.8), texts)
	if err := f.sets.flushAll(); err != nil {
		t.Fatal(err)
	}
	if f.setsW != nil {
		if err := f.setsW.Close(); err != nil {
			t.Fatal(err)
		}
	}
	g := groupSets{f: f}
	kept := func() (n int) {
		for _, s := range g.sets {
			n += 8 * cap(s)
		}
		return n
	}
	g.reset(len(texts))
	for k := range texts {
		if _, err := g.get(k, uint32(k)); err != nil {
			t.Fatal(err)
		}
	}
	small := kept()
	if small == 0 || int64(small) > groupSetsKeep {
		t.Fatalf("%d bytes of sets: the test needs some, under %d", small, groupSetsKeep)
	}
	if g.held != int64(small) {
		t.Errorf("%d bytes of sets counted, %d read", g.held, small)
	}
	if g.reset(len(texts)); kept() != small {
		t.Errorf("%d bytes kept after reset, want the %d read", kept(), small)
	}
	g.held = groupSetsKeep + 1 // as if the bucket had read more
	if g.reset(len(texts)); kept() != 0 {
		t.Errorf("%d bytes kept after a bucket past %d bytes of sets", kept(), groupSetsKeep)
	}
}

// TestSpillSimhashKeysForEstimate: a simhash spill is keyed by the
// tables of the design its batch Finder chooses for the plan's estimate
// of the documents, with at most the Spec's tables (the Spec's design, for a million, when there is none), and
// whatever the estimate, far too low or far too high, and on one worker
// or several, its pairs are the in-memory Finder's, in its order, with
// and without --verify, at 64 and 128 bits; a run records the design in
// its facts.
func TestSpillSimhashKeysForEstimate(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 5))
	var texts []string
	for range 3 {
		page := make([]string, 200)
		for k := range page {
			page[k] = fmt.Sprintf("w%d", rng.IntN(5000))
		}
		for range 150 {
			c := slices.Clone(page)
			for range 1 + rng.IntN(4) {
				c[rng.IntN(len(c))] = fmt.Sprintf("u%d", rng.IntN(1<<30))
			}
			texts = append(texts, strings.Join(c, " "))
		}
	}
	for _, v := range []struct {
		name string
		cfg  Options
	}{
		{"simhash", Options{Method: "simhash"}},
		{"simhash verify", Options{Method: "simhash", Verify: true}},
		{"simhash 128 bits", simhashVariant(128, 8, false)},
	} {
		m, err := NewMethod(v.cfg)
		if err != nil {
			t.Fatal(err)
		}
		sm := m.(*simhashMethod)
		sk, err := m.NewSketcher()
		if err != nil {
			t.Fatal(err)
		}
		var sketches []DocSketch
		for _, text := range texts {
			s, err := sk.Sketch(&Doc{Text: []byte(text)})
			if err != nil {
				t.Fatal(err)
			}
			sketches = append(sketches, s)
		}
		finder, err := m.NewFinder()
		if err != nil {
			t.Fatal(err)
		}
		var want []Pair
		for i, s := range sketches {
			if err := finder.Add(i, s, nil); err != nil {
				t.Fatal(err)
			}
		}
		if err := finder.Flush(func(p Pair) { want = append(want, p) }); err != nil {
			t.Fatal(err)
		}
		if len(want) < 100 {
			t.Fatalf("%s: %d pairs in memory: the comparison would test little", v.name, len(want))
		}
		tables := map[int]bool{}
		for _, n := range []int64{0, 1, int64(len(texts)), 1 << 20, 1 << 40} {
			for _, workers := range []int{1, 3} {
				f, err := newSpillFinder(sm, t.TempDir(), 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				f.setWorkers(workers)
				if err := f.expect(n); err != nil {
					t.Fatal(err)
				}
				d := sm.spec.SimHash
				if n > 0 {
					chosen, err := simhash.ChooseDesign(int(min(n, 1<<31-1)), sm.bits, sm.distance, true,
						simhash.DesignOptions{MaxTables: sketch.MaxTables})
					if err != nil {
						t.Fatal(err)
					}
					if sm.spillDesign == nil || *sm.spillDesign != chosen {
						t.Errorf("%s, estimate %d: the spill's design is %v, want %v", v.name, n, sm.spillDesign, chosen)
					}
					d.Blocks = chosen.Blocks
				}
				spec := sm.spec
				spec.SimHash = d
				for i, s := range sketches {
					got := f.appendKeys(nil, s)
					if exp := spec.AppendKeys(nil, &sketch.Sketch{FP: s.(*simhashSketch).fp}); !slices.Equal(got, exp) {
						t.Fatalf("%s, estimate %d: document %d's spill keys %x, want the tables of %d blocks: %x", v.name, n, i, got, d.Blocks, exp)
					}
				}
				tables[len(f.appendKeys(nil, sketches[0]))] = true
				for i, s := range sketches {
					if err := f.Add(i, s, nil); err != nil {
						t.Fatal(err)
					}
				}
				var got []Pair
				if err := f.Flush(func(p Pair) { got = append(got, p) }); err != nil {
					t.Fatal(err)
				}
				f.Close()
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s, estimate %d, %d workers: %d spilled pairs differ from the %d in memory", v.name, n, workers, len(got), len(want))
				}
			}
		}
		if len(tables) < 2 {
			t.Errorf("%s: every estimate gave %v tables: the test needs designs that differ", v.name, tables)
		}
	}

	// A run records its spill's design, chosen for the plan's estimate.
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	out := Outputs{Clusters: filepath.Join(t.TempDir(), "c.jsonl"), TmpDir: t.TempDir()}
	st, err := Run(context.Background(), Options{Method: "simhash", Spill: true, Memory: 1 << 20, Workers: 2}, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	d, err := simhash.ChooseDesign(int(st.Memory.EstimatedDocs), 64, sketch.DefaultDistance, true,
		simhash.DesignOptions{MaxTables: sketch.MaxTables})
	if err != nil {
		t.Fatal(err)
	}
	if st.Memory.EstimatedDocs <= 0 || st.Params.SpillDesign != d.String() {
		t.Errorf("a run estimated %d documents, spill design %q, want %q", st.Memory.EstimatedDocs, st.Params.SpillDesign, d.String())
	}
	// And the design that ordered its pairs, as the in-memory run does
	// (it said the Spec's design for a million documents).
	mem, err := Run(context.Background(), Options{Method: "simhash", Workers: 2}, Input{Files: []string{path}}, Outputs{TmpDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if st.Params.Design == "" || st.Params.Design != mem.Params.Design || st.Params.DesignFor1MDocs != "" {
		t.Errorf("spilled run: design %q (for 1M: %q); in memory %q", st.Params.Design, st.Params.DesignFor1MDocs, mem.Params.Design)
	}
}

// TestSpillSimhashVerifyChecks: simhash --verify on the spill path
// checks the sets of a bucket's pair only when the bucket's lighter pairs
// that passed have not joined its documents (reduceOrdered), as the
// in-memory Finder checks a pair only when the pairs before it have not;
// the outputs stay the in-memory run's at -j 1, 2 and 8, with the default
// pairs mode and --pairs-mode all, at a threshold that most pairs pass,
// one that some fail and one that many fail, and with a bucket's pairs
// taken in many rounds
// (groupOrderedMin shrunk). Near copies of one page, 1-4 words replaced:
// a few buckets a table hold them, and their pairs within the distance
// are quadratic in their members. Where most pairs pass, the checks must
// stay below a tenth of those pairs and twice the buckets' members (a
// forest's worth, and the pairs that fail); where many fail, the
// in-memory Finder checks most pairs too.
func TestSpillSimhashVerifyChecks(t *testing.T) {
	path := writeTexts(t, t.TempDir(), nearCopyTexts(rand.New(rand.NewPCG(21, 28)), 500, 4), "d%d")
	defer func(m int) { groupOrderedMin = m }(groupOrderedMin)
	for _, v := range []struct {
		name      string
		threshold float64
		all       bool
		roundMin  int
		bound     bool // most pairs pass: the checks are a forest's worth
	}{{"most pass", 0.9, false, 1 << 14, true}, {"most pass, rounds", 0.9, false, 64, true},
		{"some fail", 0.95, false, 1 << 14, false}, {"some fail, rounds", 0.95, false, 64, false},
		{"many fail", 0.97, false, 1 << 14, false}, {"pairs-mode all", 0.95, true, 1 << 14, false}} {
		t.Run(v.name, func(t *testing.T) {
			groupOrderedMin = v.roundMin
			var members, pending, checked int
			var mu sync.Mutex // the spill's workers join buckets at once
			groupOrderedDone = func(m, _, p, c int) {
				mu.Lock()
				members, pending, checked = members+m, pending+p, checked+c
				mu.Unlock()
			}
			defer func() { groupOrderedDone = nil }()
			cfg := Options{Method: "simhash", Verify: true, AllPairs: v.all, Workers: 1}
			cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
			cfg.VerifyThreshold, cfg.Spec.SimHash.Distance = v.threshold, 6
			want := runOutputs(t, cfg, false, path)
			if len(want[1]) == 0 {
				t.Fatal("no pairs: the comparison would test nothing")
			}
			cfg.Spill, cfg.Memory = true, 1<<20
			for _, j := range []int{1, 2, 8} {
				cfg.Workers = j
				members, pending, checked = 0, 0, 0
				got := runOutputs(t, cfg, true, path)
				for k, what := range outputNames {
					if !bytes.Equal(got[k], want[k]) {
						t.Errorf("spilled -j %d: %s differ from the in-memory run's", j, what)
					}
				}
				if j != 1 || !v.bound {
					continue // the bound is for one worker's buckets
				}
				t.Logf("buckets' members %d, pairs within the distance %d, checked %d; %d pairs lines", members, pending, checked, bytes.Count(want[1], []byte("\n")))
				if pending < 5*members {
					t.Fatalf("%d pairs within the distance for %d members: the test needs more", pending, members)
				}
				if checked > pending/10 || checked > 2*members {
					t.Errorf("checked the sets of %d pairs of %d within the distance (buckets' members %d)", checked, pending, members)
				}
			}
		})
	}
}
