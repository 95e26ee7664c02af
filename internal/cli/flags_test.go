package cli

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/neardup/neardup/dedup"
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
		var errOut bytes.Buffer
		if code := Main([]string{"dedup", tc.flag, tc.value, "-q", "--stats", stats, docs}, nil, &bytes.Buffer{}, &errOut); code != 0 {
			t.Fatalf("dedup %s %s: exit %d: %s", tc.flag, tc.value, code, errOut.String())
		}
		b, err := os.ReadFile(stats)
		if err != nil {
			t.Fatal(err)
		}
		var st dedup.Stats
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		if st.Spec.MinHash.Bands != tc.wantB || st.Spec.MinHash.Rows != tc.wantR {
			t.Errorf("dedup %s %s: %d x %d, want %d x %d", tc.flag, tc.value, st.Spec.MinHash.Bands, st.Spec.MinHash.Rows, tc.wantB, tc.wantR)
		}
	}
	var errOut bytes.Buffer
	if code := Main([]string{"dedup", "--bands", "200", docs}, nil, &bytes.Buffer{}, &errOut); code != ExitUsage {
		t.Errorf("--bands 200 with 128 permutations: exit %d, want %d: %s", code, ExitUsage, errOut.String())
	}
}
