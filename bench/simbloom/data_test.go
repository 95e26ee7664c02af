package simbloom

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// dataDir is the evaluation bundle: $NEARDUP_DATA, or shared/data beside
// the project root.
func dataDir() string {
	if d := os.Getenv("NEARDUP_DATA"); d != "" {
		return d
	}
	return filepath.Join("..", "..", "..", "shared", "data")
}

// loadTexts returns the text of the first limit documents (all when limit
// is 0) of a dataset, or skips the test or benchmark when it is absent.
func loadTexts(tb testing.TB, dataset string, limit int) []string {
	tb.Helper()
	path := filepath.Join(dataDir(), dataset, "docs.jsonl.gz")
	f, err := os.Open(path)
	if err != nil {
		tb.Skipf("evaluation data not found (%v); set NEARDUP_DATA", err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 64<<20)
	var texts []string
	for sc.Scan() && (limit == 0 || len(texts) < limit) {
		var d struct{ Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			tb.Fatalf("%s: %v", path, err)
		}
		texts = append(texts, d.Text)
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return texts
}
