package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// TestStagedIDFieldMissingWarning: an --id-field that some records lack
// is said by the staged job as dedup says it, once, even with -q: the
// count over every shard and the first FILE:LINE in input order (here in
// a later shard than the first).
func TestStagedIDFieldMissingWarning(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	var in []string
	for f := range 2 {
		var b strings.Builder
		for i := range 60 {
			text := fmt.Sprintf("file %d document %d with a few words of its own %d", f, i, i*i)
			switch {
			case f == 1 && i >= 10 && i%5 == 0:
				fmt.Fprintf(&b, "{\"text\":%q}\n", text)
			case f == 1 && i == 41:
				fmt.Fprintf(&b, "{\"doc\":\"\",\"text\":%q}\n", text)
			default:
				fmt.Fprintf(&b, "{\"doc\":\"d%d-%d\",\"text\":%q}\n", f, i, text)
			}
		}
		name := filepath.Join(dir, fmt.Sprintf("f%d.jsonl", f))
		if err := os.WriteFile(name, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		in = append(in, name)
	}
	warnings := func(stderr string) []string {
		var w []string
		for _, l := range strings.Split(stderr, "\n") {
			if strings.Contains(l, "warning") {
				w = append(w, l)
			}
		}
		return w
	}
	code, _, ref := runCLI(append([]string{"dedup", "-q", "--id-field", "doc"}, in...)...)
	want := warnings(ref)
	if code != 0 || len(want) != 1 || !strings.Contains(want[0], "11 of 120 documents had no --id-field \"doc\"") || !strings.Contains(want[0], in[1]+":11") {
		t.Fatalf("dedup: exit %d, warnings %q", code, want)
	}
	for _, tasks := range []string{"1", "3"} {
		run := filepath.Join(dir, "run"+tasks)
		args := append([]string{"dedup", "-q", "--id-field", "doc", "--executor", "local", "--tasks", tasks, "--work", run + "/work", "-o", run + "/out"}, in...)
		code, _, errs := runCLI(args...)
		if got := warnings(errs); code != 0 || !slices.Equal(got, want) {
			t.Errorf("--tasks %s: exit %d, warnings %q; want dedup's %q", tasks, code, got, want)
		}
	}
	// The default id field is not warned about.
	code, _, errs := runCLI(append([]string{"dedup", "-q", "--executor", "local", "--tasks", "2", "--work", filepath.Join(dir, "default", "work"), "-o", filepath.Join(dir, "default", "out")}, in...)...)
	if got := warnings(errs); code != 0 || len(got) != 0 {
		t.Errorf("without --id-field: exit %d, warnings %q", code, got)
	}
}
