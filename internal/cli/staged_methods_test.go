package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStagedMethodsMatchDedup: every method and mode the staged pipeline
// runs gives dedup's clusters, kept documents, pairs and counts, byte for
// byte, on a generated corpus (near copies, exact copies, empty texts, a
// repeated id). TestStagedMethodsSharedData (tag long) adds the
// evaluation sets.
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
		{"minhash-leader-longest", "--cluster leader --keep longest", []int{3}},
		{"minhash-all", "--pairs-mode all", []int{3}},
		{"minhash-verify", "--verify", []int{3}},
		{"minhash-estimate", "--estimate-only", []int{3}},
		{"cascade", "--method cascade", []int{1, 3, 8}},
		{"cascade-longest", "--method cascade --keep longest", []int{3}},
		{"cascade-simhash", "--method cascade --then simhash", []int{1, 3, 8}},
		{"cascade-all", "--method cascade --pairs-mode all", []int{3}},
	} {
		checkStagedMatches(t, dir, c.name, strings.Fields(c.flags), gen, c.tasks...)
	}
}
