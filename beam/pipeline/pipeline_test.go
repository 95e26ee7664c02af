package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/klauspost/compress/zstd"

	"github.com/neardup/neardup/cluster"
	"github.com/neardup/neardup/corpus"
	"github.com/neardup/neardup/dedup"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// genCorpus writes a corpus with exact copies (a group of 300 among them),
// near copies, chains of near copies whose ends are not similar, empty
// and punctuation-only texts, and unrelated documents, over four files
// (plain, gzip, zstd JSONL and Parquet), and returns the files.
func genCorpus(t testing.TB, dir string, n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	vocab := make([]string, 3000)
	for i := range vocab {
		b := make([]byte, 3+rng.IntN(6))
		for k := range b {
			b[k] = byte('a' + rng.IntN(26))
		}
		vocab[i] = string(b)
	}
	fresh := func() []string {
		w := make([]string, 60+rng.IntN(120))
		for i := range w {
			w[i] = vocab[rng.IntN(len(vocab))]
		}
		return w
	}
	edit := func(w []string, k int) []string {
		w = slices.Clone(w)
		for range k {
			switch i := rng.IntN(len(w)); rng.IntN(3) {
			case 0:
				w[i] = vocab[rng.IntN(len(vocab))]
			case 1:
				w = slices.Delete(w, i, i+1)
			default:
				w = slices.Insert(w, i, vocab[rng.IntN(len(vocab))])
			}
		}
		return w
	}
	var texts []string
	var pool [][]string
	for len(texts) < n {
		switch x := rng.IntN(100); {
		case x < 40 || len(pool) == 0:
			w := fresh()
			pool = append(pool, w)
			texts = append(texts, strings.Join(w, " "))
		case x < 55:
			texts = append(texts, strings.Join(pool[rng.IntN(len(pool))], " "))
		case x < 80:
			texts = append(texts, strings.Join(edit(pool[rng.IntN(len(pool))], 1+rng.IntN(6)), " "))
		case x < 83:
			w := pool[rng.IntN(len(pool))]
			for range 8 + rng.IntN(8) {
				w = edit(w, 3)
				texts = append(texts, strings.Join(w, " "))
			}
		case x < 85:
			texts = append(texts, []string{"", "...", " ! ", "a"}[rng.IntN(4)])
		default:
			w := fresh()
			texts = append(texts, strings.Join(w, " "))
		}
	}
	copies := strings.Join(pool[0], " ")
	for range 300 {
		texts = slices.Insert(texts, rng.IntN(len(texts)), copies)
	}
	rng.Shuffle(len(texts), func(i, j int) { texts[i], texts[j] = texts[j], texts[i] })
	names := []string{"a.jsonl", "b.jsonl.gz", "c.jsonl.zst", "d.parquet"}
	var files []string
	per := (len(texts) + len(names) - 1) / len(names)
	for f, name := range names {
		path := filepath.Join(dir, name)
		w, err := corpus.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		for i := f * per; i < min(len(texts), (f+1)*per); i++ {
			id := fmt.Sprintf("doc-%d", i)
			raw := fmt.Appendf(nil, `{"id":%q,"text":%q}`, id, texts[i])
			if err := w.Write(&corpus.Document{ID: id, Text: texts[i], Raw: raw}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	return files
}

// runDedup runs package dedup on files and returns its clusters and kept
// outputs.
func runDedup(t testing.TB, cfg dedup.Options, files []string, dir string) (clusters, kept []byte) {
	c, k, _ := runDedupPairs(t, cfg, files, dir)
	return c, k
}

// runDedupPairs is runDedup with the pairs output.
func runDedupPairs(t testing.TB, cfg dedup.Options, files []string, dir string) (clusters, kept, pairs []byte) {
	out := dedup.Outputs{Clusters: filepath.Join(dir, "dedup-clusters.jsonl"), Kept: filepath.Join(dir, "dedup-kept.jsonl"), Pairs: filepath.Join(dir, "dedup-pairs.jsonl")}
	if _, err := dedup.Run(context.Background(), cfg, dedup.Input{Files: files}, out); err != nil {
		t.Fatal(err)
	}
	c, err := os.ReadFile(out.Clusters)
	if err != nil {
		t.Fatal(err)
	}
	k, err := os.ReadFile(out.Kept)
	if err != nil {
		t.Fatal(err)
	}
	p, err := os.ReadFile(out.Pairs)
	if err != nil {
		t.Fatal(err)
	}
	return c, k, p
}

// readPairs concatenates the pipeline's pairs files in name order.
func readPairs(t testing.TB, dir string) []byte {
	var pairs []byte
	ps, _ := filepath.Glob(filepath.Join(dir, "pairs-*.jsonl"))
	for _, f := range ps {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pairs = append(pairs, b...)
	}
	return pairs
}

// readOutputs concatenates the pipeline's clusters files and its kept
// files (decompressed) in name order: input order.
func readOutputs(t testing.TB, dir string) (clusters, kept []byte) {
	cs, _ := filepath.Glob(filepath.Join(dir, "clusters-*.jsonl"))
	for _, f := range cs {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		clusters = append(clusters, b...)
	}
	ks, _ := filepath.Glob(filepath.Join(dir, "kept-*.jsonl.zst"))
	for _, f := range ks {
		fh, err := os.Open(f)
		if err != nil {
			t.Fatal(err)
		}
		zr, err := zstd.NewReader(fh)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(zr)
		zr.Close()
		fh.Close()
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, b...)
	}
	return clusters, kept
}

// checkPairs checks the pairs files: one line per pair counted, both ids
// in one cluster, every pair at or above the threshold when it was
// verified, and a spanning set: the pairs connect every cluster.
func checkPairs(t *testing.T, dir string, clusters []byte, st *Stats, cfg dedup.Options) {
	t.Helper()
	cl := map[string]string{}
	for _, l := range bytes.Split(bytes.TrimSpace(clusters), []byte("\n")) {
		var c struct{ ID, Cluster string }
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatal(err)
		}
		cl[c.ID] = c.Cluster
	}
	files, _ := filepath.Glob(filepath.Join(dir, "pairs-*.jsonl"))
	parent := map[string]string{}
	var find func(string) string
	find = func(x string) string {
		if p, ok := parent[x]; ok && p != x {
			r := find(p)
			parent[x] = r
			return r
		}
		return x
	}
	var n int64
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
			var p struct {
				ID1, ID2   string
				Similarity float64
			}
			if err := json.Unmarshal(l, &p); err != nil {
				t.Fatalf("%s: %v", l, err)
			}
			n++
			if cl[p.ID1] == "" || cl[p.ID1] != cl[p.ID2] {
				t.Fatalf("pair %s: its documents are in clusters %q and %q", l, cl[p.ID1], cl[p.ID2])
			}
			if cfg.Verify && p.Similarity < verifyThreshold(t, cfg) {
				t.Fatalf("pair %s: verified similarity below the threshold", l)
			}
			parent[find(p.ID1)] = find(p.ID2)
		}
	}
	if n != st.Pairs {
		t.Errorf("%d pairs lines, stats say %d", n, st.Pairs)
	}
	for id, c := range cl {
		if find(id) != find(c) {
			t.Fatalf("document %s is in cluster %s but no pairs connect them", id, c)
		}
	}
}

// firstDiff describes the first line where a and b differ.
func firstDiff(a, b []byte) string {
	la, lb := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range max(len(la), len(lb)) {
		var x, y []byte
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if !bytes.Equal(x, y) {
			return fmt.Sprintf("line %d: beam %s, dedup %s (%d and %d lines)", i+1, x, y, len(la), len(lb))
		}
	}
	return "equal"
}

func TestSameAsDedup(t *testing.T) {
	dir := t.TempDir()
	files := genCorpus(t, dir, 1500)
	// mem is the run's Options.JoinMemory. Where it is not 0 it is
	// small enough that the join of the 300 copies (the largest, about
	// 600 KB of ids and sketches) streams its sketches from a scratch
	// file, large enough that the other joins hold theirs and that it
	// needs no more than mem streamed (about 420 KB at most). Only a
	// method whose sketch is larger than its Finder's memory for a
	// document gains by streaming (minhash with its shingle sets): the
	// others' joins would need more streamed than held, and fail with
	// ErrJoinTooLarge past mem (TestJoinTooLarge, and "exact" below),
	// so they run with the default, every join held.
	type tc struct {
		name string
		set  func(*dedup.Options)
		mem  int64
	}
	const minhashMem = 450 << 10
	cases := []tc{
		{"minhash", func(c *dedup.Options) {}, minhashMem},
		{"minhash-verify", func(c *dedup.Options) { c.Verify = true }, minhashMem},
		{"minhash-estimate-only", func(c *dedup.Options) { c.EstimateOnly = true }, 0},
		{"minhash-longest", func(c *dedup.Options) { c.Keep = cluster.Longest }, minhashMem},
		{"minhash-4gram-0.6", func(c *dedup.Options) { c.Spec.Threshold = 0.6; c.Spec.Shingle.N = 4 }, minhashMem},
		{"minhash-all-pairs", func(c *dedup.Options) { c.AllPairs = true }, minhashMem},
		{"simhash", func(c *dedup.Options) { c.Method = "simhash" }, 0},
		{"simhash-verify", func(c *dedup.Options) { c.Method = "simhash"; c.Verify = true }, 0},
		{"exact", func(c *dedup.Options) { c.Method = "exact" }, 0},
		{"ksentence", func(c *dedup.Options) { c.Method = "ksentence"; c.Keep = cluster.Longest }, 0},
		// The cascade (--method cascade): each file's copies carry their
		// content id alone, so no join is large enough to stream.
		{"cascade", func(c *dedup.Options) { c.Cascade = true }, 0},
		{"cascade-longest", func(c *dedup.Options) { c.Cascade = true; c.Keep = cluster.Longest }, 0},
		{"cascade-simhash", func(c *dedup.Options) { c.Cascade = true; c.Method = "simhash" }, 0},
		{"cascade-simhash-verify", func(c *dedup.Options) { c.Cascade = true; c.Method = "simhash"; c.Verify = true }, 0},
	}
	// A join past JoinMemory even streamed fails the run with a message
	// that names the component and the flag.
	t.Run("exact-too-large", func(t *testing.T) {
		_, err := Run(context.Background(), Options{Inputs: []string{filepath.Join(dir, "*")}, Output: filepath.Join(t.TempDir(), "beam"), Config: dedup.Options{Method: "exact"}, Runner: "prism", JoinDocs: 64, JoinMemory: 8 << 10})
		if err == nil || !strings.Contains(err.Error(), "--join-memory at least") || !strings.Contains(err.Error(), "largest component") {
			t.Fatalf("error %v, want a join too large for --join-memory", err)
		}
		t.Log(err)
	})
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := dedup.Options{}
			c.set(&cfg)
			d := t.TempDir()
			wantC, wantK, wantP := runDedupPairs(t, cfg, files, d)
			out := filepath.Join(d, "beam")
			st, err := Run(context.Background(), Options{Inputs: []string{filepath.Join(dir, "*")}, Output: out, Config: cfg, Runner: "prism", Pairs: true, JoinDocs: 64, JoinMemory: c.mem})
			if err != nil {
				t.Fatal(err)
			}
			// Some joins held more than JoinMemory and streamed their
			// sketches from a scratch file, the others held them.
			if (c.mem != 0) != (st.StreamedJoins != 0) || st.StreamedJoins >= st.JoinShards || (st.StreamedDocs == 0) != (st.StreamedJoins == 0) {
				t.Errorf("%d of %d joins streamed (%d documents, %d bytes of sketches to the joins): want some, not all, where the case sets a JoinMemory", st.StreamedJoins, st.JoinShards, st.StreamedDocs, st.ShuffleBySteps["sketches_to_components"])
			}
			gotC, gotK := readOutputs(t, out)
			if !bytes.Equal(gotC, wantC) {
				t.Errorf("clusters differ: %s", firstDiff(gotC, wantC))
			}
			if !bytes.Equal(gotK, wantK) {
				t.Errorf("kept records differ: %s", firstDiff(gotK, wantK))
			}
			if gotP := readPairs(t, out); !bytes.Equal(gotP, wantP) {
				t.Errorf("pairs differ: %s", firstDiff(gotP, wantP))
			}
			if st.Documents != int64(bytes.Count(wantC, []byte("\n"))) || st.Kept+st.Removed != st.Documents {
				t.Errorf("stats: %+v", st)
			}
			// Only documents with a candidate are sketched again (the
			// corpus has documents without any), for their
			// component's join, each sending its sketch once; the
			// shuffle bytes are the sum of their steps.
			// Many joins (JoinDocs 64), whose pairs merge into dedup's
			// order.
			if st.Resketched >= st.Documents-st.Empty || st.Resketched == 0 || st.LargestJoin < st.LargestCluster || st.JoinShards < 4 {
				t.Errorf("sketched again %d of %d documents with a sketch; %d joins, largest %d, largest cluster %d", st.Resketched, st.Documents-st.Empty, st.JoinShards, st.LargestJoin, st.LargestCluster)
			}
			var sum int64
			for _, v := range st.ShuffleBySteps {
				sum += v
			}
			if sum != st.ShuffleBytes || st.ShuffleBySteps["keys"] == 0 || st.ShuffleBySteps["sketches_to_components"] == 0 {
				t.Errorf("shuffle bytes %d, by step %v", st.ShuffleBytes, st.ShuffleBySteps)
			}
			// The cascade joined the copies with their first
			// occurrence, most of them found in their own file
			// before the method sketched them; the near method's
			// documents (its join's design, for simhash) are the
			// distinct texts with a sketch.
			if cfg.Cascade != st.Cascade || cfg.Cascade && (st.ExactCopies == 0 || st.FileCopies == 0 || st.FileCopies >= st.ExactCopies || st.Texts != st.Documents-st.Empty-st.ExactCopies) {
				t.Errorf("cascade %v: %d exact copies, %d of them found in their file; %d distinct texts with a sketch, want %d", st.Cascade, st.ExactCopies, st.FileCopies, st.Texts, st.Documents-st.Empty-st.ExactCopies)
			}
			checkPairs(t, out, gotC, st, cfg)
			t.Logf("%s: %d of %d joins streamed", c.name, st.StreamedJoins, st.JoinShards)
			t.Logf("%s: %d docs, %d kept, %d clusters (largest %d), %d rounds, %d jobs, %.0f shuffle bytes/doc",
				c.name, st.Documents, st.Kept, st.Clusters, st.LargestCluster, st.Rounds, st.Jobs, st.ShufflePerDoc)
		})
	}
}

// TestStreamFormatSameAsDedup: a file whose name gives no format is read
// in Options.StreamFormat (neardup-beam --format) as `neardup dedup
// --format` reads it, and the outputs are dedup's byte for byte: zstd
// JSONL named data.zst under jsonl, and text lines named corpus.data
// beside a .jsonl.gz file, which keeps its own format, under txt.
func TestStreamFormatSameAsDedup(t *testing.T) {
	dir := t.TempDir()
	files := genCorpus(t, dir, 600)
	zst, err := os.ReadFile(files[2]) // c.jsonl.zst
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data.zst")
	if err := os.WriteFile(data, zst, 0o644); err != nil {
		t.Fatal(err)
	}
	r, err := corpus.Open(files[0], corpus.Options{}) // a.jsonl
	if err != nil {
		t.Fatal(err)
	}
	var lines []byte
	for r.Next() {
		lines = append(append(lines, r.Doc().Text...), '\n')
	}
	if err := r.Err(); err != nil {
		t.Fatal(err)
	}
	r.Close()
	text := filepath.Join(dir, "corpus.data")
	if err := os.WriteFile(text, lines, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		format string
		in     []string // in name order, as the pipeline reads them
	}{
		{corpus.StreamJSONL, []string{files[0], data}},
		{corpus.StreamText, []string{files[1], text}},
	} {
		t.Run(c.format, func(t *testing.T) {
			d := t.TempDir()
			out := dedup.Outputs{Clusters: filepath.Join(d, "dedup-clusters.jsonl"), Kept: filepath.Join(d, "dedup-kept.jsonl")}
			if _, err := dedup.Run(context.Background(), dedup.Options{}, dedup.Input{Files: c.in, Options: corpus.Options{StreamFormat: c.format}}, out); err != nil {
				t.Fatal(err)
			}
			wantC, err := os.ReadFile(out.Clusters)
			if err != nil {
				t.Fatal(err)
			}
			wantK, err := os.ReadFile(out.Kept)
			if err != nil {
				t.Fatal(err)
			}
			beamOut := filepath.Join(d, "beam")
			if _, err := Run(context.Background(), Options{Inputs: c.in, Output: beamOut, Runner: "prism", StreamFormat: c.format}); err != nil {
				t.Fatal(err)
			}
			gotC, gotK := readOutputs(t, beamOut)
			if len(wantC) == 0 || !bytes.Contains(wantC, []byte(filepath.Base(c.in[1]))) && c.format == corpus.StreamText {
				t.Fatalf("dedup found no clusters with documents of %s; the test meant some", c.in[1])
			}
			if !bytes.Equal(gotC, wantC) {
				t.Errorf("clusters differ: %s", firstDiff(gotC, wantC))
			}
			if !bytes.Equal(gotK, wantK) {
				t.Errorf("kept records differ: %s", firstDiff(gotK, wantK))
			}
		})
	}
}

// verifyThreshold is the Jaccard threshold a verified pair of cfg's run
// reaches: the Spec's, or for simhash VerifyThreshold (0: the default).
func verifyThreshold(t testing.TB, cfg dedup.Options) float64 {
	spec, err := cfg.ResolveSpec()
	if err != nil {
		t.Fatal(err)
	}
	if spec.Method == sketch.SimHash {
		if cfg.VerifyThreshold == 0 {
			return sketch.DefaultThreshold
		}
		return cfg.VerifyThreshold
	}
	return spec.Threshold
}

// TestBlankDocument: a document whose text is only blanks, kept as they
// are (--fold-whitespace=false), has no shingles and sketches to nothing
// under every method (simhash's AppendSketch panicked on the nil sketch:
// issue 26), and the run gives `neardup dedup`'s answer.
func TestBlankDocument(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "blank.jsonl")
	data := `{"id":"a","text":"the quick brown fox jumps over the lazy dog again and again"}
{"id":"b","text":"    \t   "}
{"id":"c","text":"the quick brown fox jumps over the lazy dog again and again"}
`
	if err := os.WriteFile(in, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, method := range []string{"simhash", "minhash", "exact", "ksentence"} {
		t.Run(method, func(t *testing.T) {
			norm := text.DefaultOptions()
			norm.Whitespace = false
			cfg := dedup.Options{Method: method}
			cfg.Spec.Normalize = &norm
			d := t.TempDir()
			wantC, _ := runDedup(t, cfg, []string{in}, d)
			out := filepath.Join(d, "beam")
			if _, err := Run(context.Background(), Options{Inputs: []string{in}, Output: out, Config: cfg, Runner: "prism"}); err != nil {
				t.Fatal(err)
			}
			gotC, _ := readOutputs(t, out)
			if !bytes.Equal(gotC, wantC) {
				t.Errorf("clusters differ: %s", firstDiff(gotC, wantC))
			}
		})
	}
}

// TestDuplicateIDs: stats.json counts the ids that more than one
// document has and lists the first ten in the order of their second
// document, as `neardup dedup --stats` does (dedup.Stats), over files
// read in name order: 13 ids shared, some within a file, some across
// files, some by three documents, listed in an order that is not the
// ids' own.
func TestDuplicateIDs(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	doc := func(w *strings.Builder, id string, i int) {
		fmt.Fprintf(w, "{\"id\":%q,\"text\":\"document %d with words of its own %d\"}\n", id, i, i*7)
	}
	for i := range 40 {
		doc(&a, fmt.Sprintf("u%02d", i), i)
	}
	// a.jsonl: z, y, x twice each (z three times), interleaved.
	for i, id := range []string{"z", "y", "x", "x", "y", "z", "z", "w"} {
		doc(&a, id, 100+i)
	}
	// b.jsonl: ids of a.jsonl again (u39 first, then u00...), and its own.
	for i, id := range []string{"u39", "v", "u00", "v", "u05", "w", "u10", "u11", "u12", "u13", "u14", "u15"} {
		doc(&b, id, 200+i)
	}
	files := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	if err := os.WriteFile(files[0], []byte(a.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(files[1], []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := dedup.Run(context.Background(), dedup.Options{}, dedup.Input{Files: files}, dedup.Outputs{Clusters: filepath.Join(t.TempDir(), "dedup.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	if want.DuplicateIDs != 14 || len(want.DuplicateIDsFirst) != 10 {
		t.Fatalf("dedup: %d duplicate ids %q; the test wants 14, 10 listed", want.DuplicateIDs, want.DuplicateIDsFirst)
	}
	out := filepath.Join(dir, "beam")
	st, err := Run(context.Background(), Options{Inputs: []string{filepath.Join(dir, "*.jsonl")}, Output: out, Runner: "prism"})
	if err != nil {
		t.Fatal(err)
	}
	if st.DuplicateIDs != int64(want.DuplicateIDs) || !slices.Equal(st.DuplicateIDsFirst, want.DuplicateIDsFirst) {
		t.Errorf("duplicate ids %d %q, want dedup's %d %q", st.DuplicateIDs, st.DuplicateIDsFirst, want.DuplicateIDs, want.DuplicateIDsFirst)
	}
	var js Stats
	if b, err := os.ReadFile(filepath.Join(out, "stats.json")); err != nil || json.Unmarshal(b, &js) != nil {
		t.Fatalf("stats.json: %v", err)
	}
	if js.DuplicateIDs != st.DuplicateIDs || !slices.Equal(js.DuplicateIDsFirst, st.DuplicateIDsFirst) {
		t.Errorf("stats.json: %d %q, want %d %q", js.DuplicateIDs, js.DuplicateIDsFirst, st.DuplicateIDs, st.DuplicateIDsFirst)
	}
}

// TestSkipInvalid: with SkipInvalid (--skip-invalid) the bad records are
// skipped on every read of their file, counted and the first ten listed,
// and the clusters and kept records are `neardup dedup --skip-invalid`'s
// byte for byte; without it the run fails with ErrInvalidData.
func TestSkipInvalid(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	good := func(w *strings.Builder, id, text string) { fmt.Fprintf(w, "{\"id\":%q,\"text\":%q}\n", id, text) }
	bad := []string{`{"id":"n1","text":3}`, `not json`, `{"id":"n2","body":"x"}`, "{\"id\":\"n3\",\"text\":\"a \xff b\"}"}
	long := "the quick brown fox jumps over the lazy dog and keeps running through the field until night falls"
	for i := range 6 {
		good(&a, fmt.Sprintf("a%d", i), fmt.Sprintf("%s %d", long, i%2))
		a.WriteString(bad[i%len(bad)] + "\n")
	}
	for i := range 9 {
		b.WriteString(bad[i%len(bad)] + "\n")
		good(&b, fmt.Sprintf("b%d", i), fmt.Sprintf("%s %d", long, i%3))
	}
	files := []string{filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")}
	os.WriteFile(files[0], []byte(a.String()), 0o644)
	os.WriteFile(files[1], []byte(b.String()), 0o644)
	d := t.TempDir()
	out := dedup.Outputs{Clusters: filepath.Join(d, "dedup-clusters.jsonl"), Kept: filepath.Join(d, "dedup-kept.jsonl")}
	want, err := dedup.Run(context.Background(), dedup.Options{}, dedup.Input{Files: files, SkipInvalid: true}, out)
	if err != nil {
		t.Fatal(err)
	}
	if want.Skipped != 15 || len(want.SkippedErrors) != 10 || want.Kept == want.Documents {
		t.Fatalf("dedup: %d skipped %q, %d of %d kept; the test wants 15 skipped, 10 listed and duplicates", want.Skipped, want.SkippedErrors, want.Kept, want.Documents)
	}
	wantC, _ := os.ReadFile(out.Clusters)
	wantK, _ := os.ReadFile(out.Kept)
	beamOut := filepath.Join(d, "beam")
	st, err := Run(context.Background(), Options{Inputs: []string{filepath.Join(dir, "*.jsonl")}, Output: beamOut, Runner: "prism", SkipInvalid: true})
	if err != nil {
		t.Fatal(err)
	}
	if st.Skipped != int64(want.Skipped) || !slices.Equal(st.SkippedErrors, want.SkippedErrors) || st.Documents != int64(want.Documents) {
		t.Errorf("%d documents, skipped %d %q; want dedup's %d, %d %q", st.Documents, st.Skipped, st.SkippedErrors, want.Documents, want.Skipped, want.SkippedErrors)
	}
	gotC, gotK := readOutputs(t, beamOut)
	if !bytes.Equal(gotC, wantC) {
		t.Errorf("clusters differ: %s", firstDiff(gotC, wantC))
	}
	if !bytes.Equal(gotK, wantK) {
		t.Errorf("kept records differ: %s", firstDiff(gotK, wantK))
	}
	_, err = Run(context.Background(), Options{Inputs: []string{filepath.Join(dir, "*.jsonl")}, Output: filepath.Join(d, "beam2"), Runner: "prism"})
	ide := &InvalidDataError{}
	if !errors.Is(err, ErrInvalidData) || !errors.As(err, &ide) || ide.Record != files[0]+`:2 (offset 121) id "n1": text field is not a string (field "text" holds a number) (the record has: "id", "text")` ||
		ide.Hint != "--text-field NAME reads the text from another field (--skip-invalid skips the records whose text is not a string)" {
		t.Errorf("without SkipInvalid: %q, hint %q (is ErrInvalidData: %v), want an *InvalidDataError naming %s:2 with its hint", ide.Record, ide.Hint, errors.Is(err, ErrInvalidData), files[0])
	}
}

// TestSkipInvalidAllNumber: --skip-invalid that skips every record says
// how many with thousands separators, as neardup dedup says it ("every
// record (1200)" before).
func TestSkipInvalidAllNumber(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(in, []byte(strings.Repeat("not json\n", 1200)), 0o644)
	_, err := Run(context.Background(), Options{Inputs: []string{in}, Output: filepath.Join(dir, "out"), Runner: "prism", SkipInvalid: true})
	if want := "every record (1,200) was invalid and skipped by --skip-invalid: no document was read; the first: " + in + ":1 (offset 0)"; !errors.Is(err, ErrInvalidData) || !strings.Contains(err.Error(), want) {
		t.Errorf("every record skipped: %v, want %q", err, want)
	}
}
