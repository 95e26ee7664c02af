package dedup

import (
	"bytes"
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
)

// writeCorpus writes n documents of which about a third repeat an earlier
// one with other case and spacing; it returns the path and, per document,
// the index of its first copy (the oracle).
func writeCorpus(t *testing.T, n int) (string, []int) {
	t.Helper()
	r := rand.New(rand.NewPCG(7, 8))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu")
	var buf bytes.Buffer
	var texts []string
	first := make([]int, n)
	seen := map[string]int{}
	for i := range n {
		var txt string
		if i > 0 && r.IntN(3) == 0 {
			txt = texts[r.IntN(len(texts))]
		} else {
			var b strings.Builder
			for k := range 8 + r.IntN(8) {
				if k > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(words[r.IntN(len(words))])
			}
			txt = b.String()
		}
		texts = append(texts, txt)
		if j, ok := seen[txt]; ok {
			first[i] = j
		} else {
			seen[txt] = i
			first[i] = i
		}
		variant := txt
		if r.IntN(2) == 0 {
			variant = strings.ToUpper(txt) + "  "
		}
		line, _ := json.Marshal(map[string]string{"id": fmt.Sprintf("d%05d", i), "text": variant})
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(t.TempDir(), "docs.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path, first
}

func TestRunExactMatchesOracleForAnyWorkers(t *testing.T) {
	path, first := writeCorpus(t, 3000)
	var ref []byte
	for _, workers := range []int{1, 2, 4} {
		dir := t.TempDir()
		cfg := DefaultConfig()
		cfg.Method, cfg.Workers = "exact", workers
		out := Outputs{Kept: filepath.Join(dir, "kept.jsonl"), Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl")}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		clusters, _ := os.ReadFile(out.Clusters)
		lines := strings.Split(strings.TrimSpace(string(clusters)), "\n")
		if len(lines) != len(first) || st.Documents != len(first) {
			t.Fatalf("workers=%d: %d cluster lines, %d documents, want %d", workers, len(lines), st.Documents, len(first))
		}
		for i, l := range lines {
			var c struct {
				ID, Cluster string
				Kept        bool
			}
			if err := json.Unmarshal([]byte(l), &c); err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("d%05d", first[i])
			if c.Cluster != want || c.Kept != (first[i] == i) {
				t.Fatalf("workers=%d: line %d = %s, want cluster %s kept %v", workers, i, l, want, first[i] == i)
			}
		}
		var all []byte
		for _, p := range []string{out.Kept, out.Clusters, out.Pairs} {
			b, _ := os.ReadFile(p)
			all = append(all, b...)
		}
		if ref == nil {
			ref = all
		} else if !bytes.Equal(ref, all) {
			t.Fatalf("workers=%d: outputs differ from workers=1", workers)
		}
	}
}

func TestRunCancelledLeavesNoOutput(t *testing.T) {
	path, _ := writeCorpus(t, 3000)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := DefaultConfig()
	cfg.Method = "exact"
	_, err := Run(ctx, cfg, Input{Files: []string{path}}, Outputs{Kept: filepath.Join(dir, "kept.jsonl"), Clusters: filepath.Join(dir, "c.jsonl")})
	if err == nil {
		t.Fatal("cancelled run succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Fatalf("cancelled run left %d files behind: %v", len(ents), ents)
	}
}

func TestSignExact(t *testing.T) {
	path, first := writeCorpus(t, 200)
	out := filepath.Join(t.TempDir(), "sig.jsonl")
	cfg := DefaultConfig()
	cfg.Method = "exact"
	st, err := Sign(context.Background(), cfg, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(out)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 200 || st.Documents != 200 {
		t.Fatalf("%d lines, %d documents, want 200", len(lines), st.Documents)
	}
	sketch := make([]string, len(lines))
	for i, l := range lines {
		var s struct{ ID, Method, Sketch string }
		if err := json.Unmarshal([]byte(l), &s); err != nil {
			t.Fatalf("line %d: %v: %s", i, err, l)
		}
		if s.Method != "exact" || len(s.Sketch) != 32 {
			t.Fatalf("line %d = %s: want method exact and 32 hex digits", i, l)
		}
		sketch[i] = s.Sketch
		if (sketch[i] == sketch[first[i]]) != true {
			t.Fatalf("doc %d duplicates %d but their hashes differ", i, first[i])
		}
	}
}

// An unknown method wraps ErrUnknownMethod and lists every method there
// is (bloom-overlap was missing from the list).
func TestUnknownMethod(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Method = "nonsense"
	_, err := NewMethod(cfg)
	if !errors.Is(err, ErrUnknownMethod) {
		t.Fatalf("NewMethod(nonsense) = %v, want ErrUnknownMethod", err)
	}
	for _, m := range Methods() {
		if !strings.Contains(err.Error(), m) {
			t.Errorf("%q does not list %s", err, m)
		}
	}
	if !slices.Contains(Methods(), "bloom-overlap") {
		t.Errorf("Methods() = %v lacks bloom-overlap", Methods())
	}
}

// The spill path (external sort of bucket keys) gives the same clusters as
// the in-memory finder.
func TestSpillMatchesInMemory(t *testing.T) {
	path, first := writeCorpus(t, 4000)
	read := func(spill bool) []byte {
		dir := t.TempDir()
		cfg := DefaultConfig()
		cfg.Method, cfg.Spill, cfg.Memory = "exact", spill, 1<<20
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), TmpDir: t.TempDir()}
		st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
		if err != nil {
			t.Fatal(err)
		}
		if st.Memory.Spill != spill {
			t.Fatalf("spill = %v, want %v", st.Memory.Spill, spill)
		}
		if ents, _ := os.ReadDir(out.TmpDir); len(ents) != 0 {
			t.Fatalf("spill left %d temporary files", len(ents))
		}
		b, _ := os.ReadFile(out.Clusters)
		return b
	}
	mem, disk := read(false), read(true)
	if !bytes.Equal(mem, disk) {
		t.Fatal("spill and in-memory clusters differ")
	}
	if n := bytes.Count(mem, []byte(`"kept":false`)); n != countDups(first) {
		t.Fatalf("%d removed, want %d", n, countDups(first))
	}
}

func countDups(first []int) int {
	n := 0
	for i, f := range first {
		if f != i {
			n++
		}
	}
	return n
}

// cancelAfter cancels a run once n documents have been processed.
type cancelAfter struct {
	n, seen int
	cancel  context.CancelFunc
}

func (c *cancelAfter) Stage(string, int64) {}
func (c *cancelAfter) Done()               {}
func (c *cancelAfter) Advance(docs int, _ int64) {
	if c.seen += docs; c.seen >= c.n {
		c.cancel()
	}
}

// TestResumeAfterInterrupt: for every method that can checkpoint its
// sketches, a run interrupted and resumed gives what a clean run gives.
func TestResumeAfterInterrupt(t *testing.T) {
	for _, method := range []string{"exact", "minhash", "simhash", "ksentence"} {
		t.Run(method, func(t *testing.T) { testResume(t, method) })
	}
}

func testResume(t *testing.T, method string) {
	var files []string
	for range 3 {
		p, _ := writeCorpus(t, 1000)
		files = append(files, p)
	}
	cfg := DefaultConfig()
	cfg.Method = method
	runOnce := func(tmp string, resume bool, prog Progress, ctx context.Context) (*Stats, []byte, error) {
		dir := t.TempDir()
		out := Outputs{Clusters: filepath.Join(dir, "c.jsonl"), Pairs: filepath.Join(dir, "p.jsonl"), TmpDir: tmp}
		st, err := Run(ctx, cfg, Input{Files: files, Resume: resume, Progress: prog}, out)
		if err != nil {
			return nil, nil, err
		}
		c, _ := os.ReadFile(out.Clusters)
		p, _ := os.ReadFile(out.Pairs)
		return st, append(c, p...), nil
	}
	_, want, err := runOnce(t.TempDir(), false, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}

	tmp := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := runOnce(tmp, true, &cancelAfter{n: 1500, cancel: cancel}, ctx); err == nil {
		t.Fatal("interrupted run succeeded")
	}
	states, _ := filepath.Glob(filepath.Join(tmp, "neardup-state-*", "file-*.ck"))
	if len(states) == 0 {
		t.Fatal("the interrupted run left no checkpoint")
	}
	st, got, err := runOnce(tmp, true, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st.Resumed == 0 {
		t.Error("the second run resumed no file")
	}
	if !bytes.Equal(got, want) {
		t.Error("resumed run's clusters and pairs differ from a clean run's")
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "neardup-state-*")); len(left) != 0 {
		t.Errorf("state directory left after success: %v", left)
	}

	// A damaged checkpoint is ignored: the file is read again.
	ctx, cancel = context.WithCancel(context.Background())
	if _, _, err := runOnce(tmp, true, &cancelAfter{n: 1500, cancel: cancel}, ctx); err == nil {
		t.Fatal("second interrupted run succeeded")
	}
	states, _ = filepath.Glob(filepath.Join(tmp, "neardup-state-*", "file-*.ck"))
	if len(states) == 0 {
		t.Fatal("no checkpoint to damage")
	}
	b, _ := os.ReadFile(states[0])
	b[len(b)/2] ^= 0xff
	os.WriteFile(states[0], b, 0o644)
	st, got, err = runOnce(tmp, true, nil, context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("run after a damaged checkpoint differs from a clean run")
	}
	if st.Resumed != len(states)-1 {
		t.Errorf("resumed %d files, want %d (all but the damaged one)", st.Resumed, len(states)-1)
	}
}
