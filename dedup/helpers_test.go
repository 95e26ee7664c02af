package dedup

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// writeTexts writes texts as a JSONL corpus docs.jsonl in dir, document i
// with the id fmt.Sprintf(idFormat, i), and returns its path.
func writeTexts(t testing.TB, dir string, texts []string, idFormat string) string {
	t.Helper()
	var buf bytes.Buffer
	for i, s := range texts {
		line, err := json.Marshal(map[string]string{"id": fmt.Sprintf(idFormat, i), "text": s})
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(line)
		buf.WriteByte('\n')
	}
	path := filepath.Join(dir, "docs.jsonl")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
