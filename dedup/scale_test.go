package dedup

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
)

// scaleCorpus makes a corpus with every shape the component join must get
// right: exact copies, near copies (a few words changed), chains of near
// copies, templated pages (a long shared boilerplate and a few words of
// their own: one giant component), short and empty texts.
func scaleCorpus(seed uint64) []string {
	rng := rand.New(rand.NewPCG(seed, 25))
	word := func() string { return fmt.Sprintf("w%d", rng.IntN(800)) }
	text := func(n int) []string {
		w := make([]string, n)
		for x := range w {
			w[x] = word()
		}
		return w
	}
	edit := func(w []string, edits int) []string {
		w = append([]string(nil), w...)
		for range edits {
			if len(w) == 0 {
				break
			}
			switch x := rng.IntN(len(w)); rng.IntN(3) {
			case 0:
				w[x] = word()
			case 1:
				w = append(w[:x], w[x+1:]...)
			default:
				w = append(w[:x], append([]string{word()}, w[x:]...)...)
			}
		}
		return w
	}
	template := text(150)
	var docs [][]string
	for len(docs) < 700 {
		switch k := rng.IntN(10); {
		case k < 3 || len(docs) == 0:
			docs = append(docs, text(40+rng.IntN(120)))
		case k < 5:
			docs = append(docs, docs[rng.IntN(len(docs))]) // an exact copy
		case k < 7:
			docs = append(docs, edit(docs[rng.IntN(len(docs))], 1+rng.IntN(6)))
		case k < 9:
			docs = append(docs, append(append([]string(nil), template...), text(2+rng.IntN(10))...))
		default:
			docs = append(docs, text(rng.IntN(4))) // short or empty
		}
	}
	return joinWords(docs)
}

// TestComponentJoinIsTheStreamingJoin checks that the component join
// (minhash on all cores) writes the streaming Finder's clusters, pairs and
// kept documents byte for byte, for any number of workers, every join,
// both keep policies, with an old corpus, and with components past the
// replayer's reuse limit; and that the kept documents written from the
// first pass's copy (keptCopy) are those read again from the input.
func TestComponentJoinIsTheStreamingJoin(t *testing.T) {
	dir := t.TempDir()
	path := writeTexts(t, dir, scaleCorpus(1), "d%d")
	old := filepath.Join(dir, "old.jsonl")
	if err := os.WriteFile(old, []byte(`{"id":"o1","text":"`+scaleCorpus(1)[3]+`"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type config struct {
		name    string
		cfg     Options
		against bool
	}
	var configs []config
	for _, join := range []string{"tiered", "verify", "estimate"} {
		for _, keep := range []cluster.Policy{cluster.First, cluster.Longest} {
			cfg := Options{Method: "minhash", Keep: keep, Verify: join == "verify", EstimateOnly: join == "estimate"}
			configs = append(configs, config{name: fmt.Sprintf("%s/%v", join, keep), cfg: cfg})
		}
	}
	configs = append(configs, config{name: "against", cfg: Options{Method: "minhash"}, against: true})
	char := Options{Method: "minhash"}
	char.Spec.Shingle.N = 5
	configs = append(configs, config{name: "threshold0.5", cfg: func() Options { c := char; c.Spec.Threshold = 0.5; return c }()})
	// The reference run asks for an example cluster, so it writes the
	// kept documents by reading the input again (not from keptCopy).
	run := func(t *testing.T, c config, workers int, force bool) [3][]byte {
		t.Helper()
		forceComponents = force
		defer func() { forceComponents = false }()
		cfg := c.cfg
		cfg.Workers = workers
		out := t.TempDir()
		o := Outputs{Clusters: filepath.Join(out, "c"), Pairs: filepath.Join(out, "p"), Kept: filepath.Join(out, "k.jsonl"), TmpDir: out}
		in := Input{Files: []string{path}}
		if !force {
			in.Examples = 1
		}
		if c.against {
			in.Against = []string{old}
		}
		if _, err := Run(context.Background(), cfg, in, o); err != nil {
			t.Fatal(err)
		}
		return readOutputs(t, o)
	}
	for _, c := range configs {
		t.Run(c.name, func(t *testing.T) {
			want := run(t, c, 1, false) // the streaming Finder
			if len(want[1]) == 0 {
				t.Fatal("no pairs: the corpus tests nothing")
			}
			for _, w := range []int{1, 2, 3, 8, 16} {
				for _, reuse := range []int{4096, 3} {
					replayReuseMax = reuse
					got := run(t, c, w, true)
					replayReuseMax = 4096
					for x, name := range []string{"clusters", "pairs", "kept"} {
						if !bytes.Equal(got[x], want[x]) {
							t.Errorf("-j %d (reuse limit %d): %s differ from the streaming join's", w, reuse, name)
						}
					}
				}
			}
		})
	}
}

// TestCUF: the lock-free union-find, joined from several goroutines,
// gives the sets of cluster.UnionFind with each set's smallest member as
// its root.
func TestCUF(t *testing.T) {
	const n = 5000
	rng := rand.New(rand.NewPCG(7, 7))
	edges := make([][2]int32, 4000)
	for x := range edges {
		edges[x] = [2]int32{int32(rng.IntN(n)), int32(rng.IntN(n))}
	}
	ref := cluster.NewUnionFind(n)
	for _, e := range edges {
		ref.Union(int(e[0]), int(e[1]))
	}
	u := newCUF(n)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for x := w; x < len(edges); x += 4 {
				u.union(edges[x][0], edges[x][1])
			}
		}()
	}
	wg.Wait()
	least := map[int]int32{}
	for i := n - 1; i >= 0; i-- {
		least[ref.Find(i)] = int32(i)
	}
	for i := range n {
		if got, want := u.find(int32(i)), least[ref.Find(i)]; got != want {
			t.Fatalf("find(%d) = %d, want %d (the smallest member of its set)", i, got, want)
		}
	}
}

// TestKeptCopyFallsBack: a text file among the inputs (whose records are
// not JSONL lines at hand) makes the write stage read the inputs again;
// the kept documents are those of one worker either way.
func TestKeptCopyFallsBack(t *testing.T) {
	dir := t.TempDir()
	texts := scaleCorpus(2)[:200]
	jsonl := writeTexts(t, dir, texts, "j%d")
	txt := filepath.Join(dir, "more.txt")
	var b strings.Builder
	for _, s := range texts[:100] {
		if s != "" {
			b.WriteString(s + "\n")
		}
	}
	if err := os.WriteFile(txt, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, files := range [][]string{{jsonl, txt}, {txt, jsonl}, {jsonl}} {
		var want []byte
		for _, w := range []int{1, 2, 4} {
			out := filepath.Join(t.TempDir(), "k.jsonl")
			if _, err := Run(context.Background(), Options{Method: "minhash", Workers: w}, Input{Files: files}, Outputs{Kept: out, TmpDir: t.TempDir()}); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if w == 1 {
				want = got
			} else if !bytes.Equal(got, want) {
				t.Errorf("%v -j %d: kept documents differ from -j 1's", files, w)
			}
		}
	}
}

// indexSketcher records each document's Doc.Index by id.
type indexSketcher struct {
	mu  *sync.Mutex
	got map[string]int
}

func (s indexSketcher) Sketch(d *Doc) (DocSketch, error) {
	s.mu.Lock()
	s.got[d.ID] = d.Index
	s.mu.Unlock()
	return nil, nil
}

// TestDocIndexAnyWorkers: the workers split a JSONL file's blocks of lines
// and learn the position of each block's first record from the blocks
// before (seqChain); Doc.Index, the record's position among the records
// read (blank lines and records too long not counted, invalid ones
// counted), and the line numbers are what one reader alone gives, for any
// number of workers and across blocks and the reader's buffer.
func TestDocIndexAnyWorkers(t *testing.T) {
	var b strings.Builder
	want := map[string]int{}
	n, skipped := 0, 0
	for i := range 6000 {
		switch {
		case i%97 == 5:
			b.WriteString("\n  \r\n") // blank lines
		case i%211 == 7:
			fmt.Fprintf(&b, "{\"id\":\"long%d\",\"text\":\"%s\"}\n", i, strings.Repeat("x", 900)) // too long
			skipped++
		case i%53 == 3:
			b.WriteString("{\"id\":\"bad\",text}\r\n") // invalid, counted
			n++
			skipped++
		default:
			fmt.Fprintf(&b, "{\"id\":\"d%d\",\"text\":\"%s word %d\"}\r\n", i, strings.Repeat("y", i%300), i)
			want[fmt.Sprintf("d%d", i)] = n
			n++
		}
	}
	b.WriteString(`{"id":"end","text":"no newline"}`)
	want["end"] = n
	path := filepath.Join(t.TempDir(), "in.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 2, 3, 8} {
		r, err := newRun(Options{Workers: workers}, Input{Files: []string{path}, SkipInvalid: true, Options: corpus.Options{MaxDocBytes: 800}}, Outputs{})
		if err != nil {
			t.Fatal(err)
		}
		r.sequence = r.in.Files
		r.fileSkipped, r.fileBytes, r.fileDamaged = make([]int, 1), make([]int64, 1), make([]bool, 1)
		var mu sync.Mutex
		got := map[string]int{}
		sketchers := make([]DocSketcher, workers)
		for w := range sketchers {
			sketchers[w] = indexSketcher{mu: &mu, got: got}
		}
		docs := 0
		if err := r.eachDoc(context.Background(), sketchers, func(i int, d *rawDoc, _ DocSketch) error {
			docs++
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if docs != len(want) || !maps.Equal(got, want) {
			t.Fatalf("workers %d: %d documents, Doc.Index differs from one reader's: got %d ids, want %d", workers, docs, len(got), len(want))
		}
		if r.stats.Skipped != skipped {
			t.Fatalf("workers %d: %d skipped, want %d (%q)", workers, r.stats.Skipped, skipped, r.stats.SkippedErrors)
		}
		if e := r.stats.SkippedErrors[0]; !strings.Contains(e, "in.jsonl:4 ") {
			t.Fatalf("workers %d: first skipped record reported as %q, want line 4", workers, e)
		}
	}
}
