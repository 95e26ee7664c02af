package cli

import (
	"bufio"
	"compress/gzip"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedMethodsMatchDedup: every method and mode the staged pipeline
// runs gives dedup's clusters, kept documents, pairs and counts, byte for
// byte, on a generated corpus (near copies, exact copies, empty texts, a
// repeated id) and, when the evaluation data is beside the project, on
// the first documents of bbc-news (English news) and tang-editions
// (classical Chinese poems in several editions).
func TestStagedMethodsMatchDedup(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	gen := genFiles(t, dir, 5, 600, 350)
	// tfidf weights are staged with a table learned beforehand.
	idf := filepath.Join(dir, "idf")
	if code, _, stderr := runCLI(append([]string{"dedup", "-q", "--method", "simhash", "--weights", "tfidf", "--save-idf", idf, "--clusters", os.DevNull}, gen...)...); code != 0 {
		t.Fatalf("--save-idf: exit %d: %s", code, stderr)
	}
	for _, c := range []struct {
		name  string
		flags string
		tasks []int
	}{
		{"simhash", "--method simhash", []int{1, 3, 8}},
		{"simhash-verify-longest", "--method simhash --verify --keep longest", []int{3}},
		{"simhash-128", "--method simhash --bits 128 --distance 8", []int{3}},
		{"simhash-tfidf", "--method simhash --weights tfidf --idf " + idf, []int{3}},
		{"simhash-leader-longest", "--method simhash --cluster leader --keep longest", []int{3}},
		{"simhash-all", "--method simhash --pairs-mode all", []int{3}},
		{"exact", "--method exact", []int{1, 3, 8}},
		{"exact-all-longest", "--method exact --pairs-mode all --keep longest", []int{3}},
		{"ksentence", "--method ksentence", []int{1, 3, 8}},
		{"minhash-leader", "--cluster leader", []int{3}},
		{"minhash-leader-longest", "--cluster leader --keep longest", []int{8}},
		{"minhash-all", "--pairs-mode all", []int{3}},
		{"minhash-verify", "--verify", []int{3}},
		{"minhash-estimate", "--estimate-only", []int{3}},
	} {
		checkStagedMatches(t, dir, c.name, strings.Fields(c.flags), gen, c.tasks...)
	}
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
