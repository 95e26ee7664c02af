package cli

import (
	"fmt"
	"strings"
	"testing"

	"github.com/neardup/neardup/dedup"
)

// TestErrorNumbers: counts in errors have thousands separators, as the
// summaries and hints write them (--skip-invalid said "every record
// (2225)", --tasks "at most 100000").
func TestErrorNumbers(t *testing.T) {
	if err, want := allSkipped(0, 2225, []string{"a.jsonl:1"}), "every record (2,225) was invalid and skipped by --skip-invalid"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("all skipped: %v, want %q", err, want)
	}
	if code, _, errs := runCLI("dedup", "--executor", "local", "--work", t.TempDir(), "--tasks", "100001", "x.jsonl"); code != ExitUsage || !strings.Contains(errs, "--tasks 100001: at most 100,000") {
		t.Errorf("--tasks 100001: exit %d:\n%s", code, errs)
	}
	// A plan of 12,000 files; the command names the first 10,500.
	var shards [][]dedup.DocRange
	var files []string
	for i := range 12000 {
		f := fmt.Sprintf("in/%05d.jsonl", i)
		shards = append(shards, []dedup.DocRange{{File: f, Hi: 1}})
		if i < 10500 {
			files = append(files, f)
		}
	}
	if got, want := filesDifference(shards, files), "12,000 input files in the plan, 10,500 in this command"; got != want {
		t.Errorf("files difference: %q, want %q", got, want)
	}
}
