package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestSpillAgainstIndex: with --against a saved index, dedup --spill
// writes the in-memory run's -o, --clusters, --pairs and --stats counts
// byte for byte, at -j 1 and 3, for every method that spills, the
// cascade before minhash and simhash, --keep longest and --pairs-mode
// all: the index hits' pairs lines (and the cascade's copies' lines) at
// the in-memory run's place, not among the spill join's pairs. --stats'
// params are left out: a spilled simhash run adds its spill design.
func TestSpillAgainstIndex(t *testing.T) {
	dir := t.TempDir()
	lines := genCorpus(t, 6, 600)
	old, in := filepath.Join(dir, "old.jsonl"), filepath.Join(dir, "in.jsonl")
	writeLines(t, old, lines[:250])
	writeLines(t, in, lines[250:])
	ix := filepath.Join(dir, "ix")
	if code, _, stderr := runCLI("index", "create", "--index", ix); code != 0 {
		t.Fatal(stderr)
	}
	if code, _, stderr := runCLI("index", "add", "-q", "--skip-invalid", "--index", ix, old); code != 0 {
		t.Fatal(stderr)
	}
	outputs := func(name string, flags ...string) [4][]byte {
		t.Helper()
		run := filepath.Join(dir, name)
		if err := os.Mkdir(run, 0o755); err != nil {
			t.Fatal(err)
		}
		args := append([]string{"dedup", "-q", "--against", ix, "--clusters", run + "/cl.jsonl", "-o", run + "/out.jsonl",
			"--pairs", run + "/pairs.jsonl", "--stats", run + "/st.json", "--tmp-dir", dir}, flags...)
		if code, _, stderr := runCLI(append(args, in)...); code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		var b [4][]byte
		for k, f := range []string{"cl.jsonl", "out.jsonl", "pairs.jsonl", "st.json"} {
			var err error
			if b[k], err = os.ReadFile(filepath.Join(run, f)); err != nil {
				t.Fatal(err)
			}
		}
		var st map[string]any
		if err := json.Unmarshal(b[3], &st); err != nil {
			t.Fatal(err)
		}
		if st["memory"].(map[string]any)["spill"] != bytes.Contains([]byte(name), []byte("spill")) {
			t.Fatalf("%s: spill is %v", name, st["memory"].(map[string]any)["spill"])
		}
		for _, k := range []string{"stages", "phases", "peak_rss_bytes", "memory", "serial_seconds", "serial_parts", "workers", "params"} {
			delete(st, k)
		}
		b[3], _ = json.MarshalIndent(st, "", " ")
		return b
	}
	for k, flags := range [][]string{
		{"--method", "minhash"},
		{"--method", "simhash"},
		{"--method", "exact"},
		{"--method", "ksentence"},
		{"--method", "cascade"},
		{"--method", "cascade", "--then", "simhash"},
		{"--method", "minhash", "--keep", "longest"},
		{"--method", "simhash", "--keep", "longest"},
		{"--method", "cascade", "--keep", "longest"},
		{"--method", "minhash", "--pairs-mode", "all"},
		{"--method", "simhash", "--pairs-mode", "all"},
		{"--method", "cascade", "--pairs-mode", "all"},
	} {
		want := outputs(fmt.Sprintf("%d-memory", k), append(flags, "-j", "1")...)
		if !bytes.Contains(want[2], []byte(`"index":true`)) {
			t.Fatalf("%v: no document found in the index: the comparison shows nothing", flags)
		}
		for _, j := range []string{"1", "3"} {
			got := outputs(fmt.Sprintf("%d-spill-%s", k, j), append(flags, "--spill", "-j", j)...)
			for n, what := range []string{"clusters", "kept documents", "pairs", "stats"} {
				if !bytes.Equal(got[n], want[n]) {
					t.Errorf("%v --spill -j %s: the %s differ from the in-memory run's", flags, j, what)
				}
			}
		}
	}
}
