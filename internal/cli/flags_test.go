package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBandsWithoutRows: --bands alone (or --rows alone) is a banding, the
// other taken as --num-perm divided by it, as package sketch resolves it;
// the command line used to refuse it.
func TestBandsWithoutRows(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(docs, []byte(`{"id":"a","text":"one two three four five six seven"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag, value  string
		wantB, wantR int
	}{{"--bands", "16", 16, 8}, {"--rows", "4", 32, 4}} {
		stats := filepath.Join(dir, "stats.json")
		st := dedupStats(t, stats, "dedup", tc.flag, tc.value, "-q", "--stats", stats, docs)
		if st.Spec.MinHash.Bands != tc.wantB || st.Spec.MinHash.Rows != tc.wantR {
			t.Errorf("dedup %s %s: %d x %d, want %d x %d", tc.flag, tc.value, st.Spec.MinHash.Bands, st.Spec.MinHash.Rows, tc.wantB, tc.wantR)
		}
	}
	var errOut bytes.Buffer
	if code := Main([]string{"dedup", "--bands", "200", docs}, nil, &bytes.Buffer{}, &errOut); code != ExitUsage {
		t.Errorf("--bands 200 with 128 permutations: exit %d, want %d: %s", code, ExitUsage, errOut.String())
	}
}
