package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedComponentsDamage: the components task reads the bucket files
// several at once; of two damaged ones (one cut inside an edge, one with
// an edge beyond the input) it names the first in bucket order, every
// time, and writes nothing.
func TestStagedComponentsDamage(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in.jsonl")
	writeLines(t, in, genCorpus(t, 3, 400))
	work := filepath.Join(dir, "work")
	const tasks = 12
	if code, _, stderr := runCLI("dedup", "-q", "--executor", "print", "--tasks", fmt.Sprint(tasks), "--work", work, "--clusters", dir+"/cl", in); code != 0 {
		t.Fatal(stderr)
	}
	for _, stage := range []string{"sign", "bucket"} {
		for i := range tasks {
			if code, _, stderr := runCLI("task", "--work", work, stage, fmt.Sprint(i)); code != 0 {
				t.Fatal(stderr)
			}
		}
	}
	var edges []string
	for q := range tasks {
		name := filepath.Join(work, "bucket", fmt.Sprintf("%05d", q))
		if st, err := os.Stat(name); err == nil && st.Size() >= 16 {
			edges = append(edges, name)
		}
	}
	if len(edges) < 4 {
		t.Fatalf("%d bucket files with two edges or more: the test needs 4", len(edges))
	}
	first, second := edges[1], edges[len(edges)-1]
	b, _ := os.ReadFile(first)
	os.WriteFile(first, b[:len(b)-3], 0o644)
	b, _ = os.ReadFile(second)
	b[0], b[1], b[2], b[3] = 0xff, 0xff, 0xff, 0x7f
	os.WriteFile(second, b, 0o644)
	for range 5 {
		code, _, stderr := runCLI("task", "--work", work, "components")
		if code != ExitFailure || !strings.Contains(stderr, first+": damaged work file") || !strings.Contains(stderr, "not a whole number of edges") {
			t.Fatalf("exit %d, want the error of %s: %s", code, first, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(work, "components")); !os.IsNotExist(err) {
		t.Errorf("the failed components task wrote files: %v", err)
	}
	// The first file mended, the second one is named.
	b, _ = os.ReadFile(first)
	os.WriteFile(first, b[:len(b)-len(b)%8], 0o644)
	code, _, stderr := runCLI("task", "--work", work, "components")
	if code != ExitFailure || !strings.Contains(stderr, second+": damaged work file") || !strings.Contains(stderr, "beyond 400 documents") {
		t.Errorf("exit %d, want the error of %s: %s", code, second, stderr)
	}
}
