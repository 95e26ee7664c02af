package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// summaryBody is the lines of a dedup summary from its outcome ("  kept
// N, removed M") to the line before the first that starts with one of
// ends: the outcome and the parameters.
func summaryBody(t *testing.T, stderr string, ends ...string) string {
	t.Helper()
	i := strings.Index(stderr, "\n  kept ")
	if i < 0 {
		t.Fatalf("no summary in:\n%s", stderr)
	}
	lines := strings.Split(stderr[i+1:], "\n")
	for k, l := range lines {
		for _, e := range ends {
			if strings.HasPrefix(l, e) {
				return strings.Join(lines[:k], "\n")
			}
		}
	}
	t.Fatalf("summary without its end %q:\n%s", ends, stderr)
	return ""
}

// TestStagedSummary: the staged job's summary says what dedup's says of
// the same input (kept and removed, clusters and pairs, the documents
// below the threshold, the skipped records, the parameters), then where
// its outputs went.
func TestStagedSummary(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	in := genFiles(t, dir, 7, 600, 250)
	// Two bad records, so that the skipped lines are compared too.
	bad := filepath.Join(dir, "bad.jsonl")
	os.WriteFile(bad, []byte("{\"id\":\"x1\",\"text\":\"one\"}\nnot json\n{\"id\":\"x2\"}\n"), 0o644)
	in = append(in, bad)
	for _, c := range []struct {
		name  string
		flags []string
	}{
		{"default", nil},
		{"simhash", []string{"--method", "simhash", "--verify"}},
	} {
		flags := append([]string{"-j", "2", "--skip-invalid"}, c.flags...)
		code, _, ref := runCLI(append(append([]string{"dedup"}, flags...), in...)...)
		if code != 0 {
			t.Fatalf("%s: dedup: exit %d: %s", c.name, code, ref)
		}
		want := summaryBody(t, ref, "  time ")
		if !strings.Contains(want, "skipped 2 invalid records") || !strings.Contains(want, "clusters with duplicates") {
			t.Fatalf("%s: dedup's summary lacks what the test compares:\n%s", c.name, want)
		}
		run := filepath.Join(dir, c.name)
		args := append([]string{"dedup", "--executor", "local", "--tasks", "3", "--work", run + "/work", "-o", run + "/out", "--stats", run + "/st.json"}, flags...)
		code, _, got := runCLI(append(args, in...)...)
		if code != 0 {
			t.Fatalf("%s: staged: exit %d: %s", c.name, code, got)
		}
		if body := summaryBody(t, got, "  kept documents in "); body != want {
			t.Errorf("%s: the staged summary says\n%s\nwant dedup's\n%s", c.name, body, want)
		}
		for _, line := range []string{"documents from " + in[0], ", in 3 shards\n", "  kept documents in " + run + "/out/part-*\n", "  stats in " + run + "/st.json\n"} {
			if !strings.Contains(got, line) {
				t.Errorf("%s: the staged summary lacks %q:\n%s", c.name, line, got)
			}
		}
	}
}
