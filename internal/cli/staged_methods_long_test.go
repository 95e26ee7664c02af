//go:build long

package cli

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedMethodsSharedData: TestStagedMethodsMatchDedup's check on
// the first documents of bbc-news (English news) and tang-editions
// (classical Chinese poems in several editions), when the evaluation data
// is beside the project.
func TestStagedMethodsSharedData(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	for _, set := range []struct {
		name, flags string
	}{
		{"bbc-news", "--method simhash"},
		{"bbc-news", "--method ksentence"},
		{"tang-editions", "--method simhash --cluster leader"},
		{"bbc-news", "--method exact --pairs-mode all"},
		{"tang-editions", "--cluster leader --keep longest"},
	} {
		in := sharedHead(t, dir, set.name, 3000)
		if in == "" {
			t.Logf("%s: evaluation data not present", set.name)
			continue
		}
		name := set.name + strings.ReplaceAll(set.flags, " ", "")
		checkStagedMatches(t, dir, name, strings.Fields(set.flags), []string{in}, 3)
	}
}

// sharedHead writes the first n documents of the evaluation set name
// (shared/data/NAME/docs.jsonl.gz in the nearest parent directory that
// has it) to a file in dir and returns its path, or "" when the set is not
// there.
func sharedHead(t *testing.T, dir, name string, n int) string {
	t.Helper()
	var path string
	for d, _ := filepath.Abs("."); path == ""; d = filepath.Dir(d) {
		p := filepath.Join(d, "shared", "data", name, "docs.jsonl.gz")
		if _, err := os.Stat(p); err == nil {
			path = p
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<26)
	var lines []string
	for len(lines) < n && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := filepath.Join(dir, name+".jsonl")
	writeLines(t, out, lines)
	return out
}
