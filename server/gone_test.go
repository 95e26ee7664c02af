package server

import (
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// TestHealthFolderRemoved removes the index folder of a running server:
// /healthz answered "ok" while the documents written went nowhere. It
// must say "failed" (503) and why.
func TestHealthFolderRemoved(t *testing.T) {
	st, ts := newTest(t, sketch.MinHash, Config{})
	if code, v := do(t, ts, "GET", "/healthz", ""); code != http.StatusOK || v["status"] != "ok" {
		t.Fatalf("/healthz before = %d %v", code, v)
	}
	stats, err := st.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(stats.Dir); err != nil {
		t.Fatal(err)
	}
	code, v := do(t, ts, "GET", "/healthz", "")
	reason, _ := v["reason"].(string)
	if code != http.StatusServiceUnavailable || v["status"] != "failed" || !strings.Contains(reason, "index folder was removed") {
		t.Errorf("/healthz with the index folder removed = %d %v, want 503 failed saying the folder was removed", code, v)
	}
}
