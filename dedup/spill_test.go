package dedup

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/neardup/neardup/shingle"
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

// TestSpillAnyWorkers: a spilled run writes the same clusters, pairs and
// kept records at -j 1, 2, 3 and 8, and the clusters and kept records of
// the in-memory run, for minhash (the tiered join: sets apart) and
// simhash.
func TestSpillAnyWorkers(t *testing.T) {
	path, _ := writeNearDupCorpus(t, 600, 43)
	for _, method := range []string{"minhash", "simhash"} {
		t.Run(method, func(t *testing.T) {
			run := func(spill bool, workers int) [3][]byte {
				cfg := Options{}
				cfg.Method, cfg.Spill, cfg.Memory, cfg.Workers = method, spill, 1<<20, workers
				cfg.Spec.Shingle = shingle.Options{Unit: shingle.Word, N: 2}
				cfg.Spec.Threshold, cfg.Spec.SimHash.Distance = 0.6, 6
				dir := t.TempDir()
				out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"),
					Kept: filepath.Join(dir, "k.jsonl"), TmpDir: t.TempDir()}
				st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
				if err != nil {
					t.Fatal(err)
				}
				if st.Memory.Spill != spill || st.Removed == 0 {
					t.Fatalf("spill %v, %d removed: the comparison would test nothing", st.Memory.Spill, st.Removed)
				}
				var b [3][]byte
				for k, name := range []string{out.Clusters, out.Pairs, out.Kept} {
					if b[k], err = os.ReadFile(name); err != nil {
						t.Fatal(err)
					}
				}
				return b
			}
			mem := run(false, 1)
			one := run(true, 1)
			if !bytes.Equal(one[0], mem[0]) || !bytes.Equal(one[2], mem[2]) {
				t.Errorf("spilled -j 1: clusters or kept records differ from the in-memory run")
			}
			for _, j := range []int{2, 3, 8} {
				got := run(true, j)
				for k, what := range []string{"clusters", "pairs", "kept records"} {
					if !bytes.Equal(got[k], one[k]) {
						t.Errorf("spilled -j %d: %s differ from -j 1", j, what)
					}
				}
			}
		})
	}
}
