package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestDedupConfigRefusesFileAndStagedFlags: the Python binding hands its
// documents as JSON Lines to one in-process run, so the flags of input
// files (--format, --exclude) and of the staged job (--executor, --work,
// --tasks, --task-memory) are refused as usage errors naming the flag;
// they were taken and ignored, and format="txt" read each JSON line as a
// text.
func TestDedupConfigRefusesFileAndStagedFlags(t *testing.T) {
	for _, a := range []string{"--format=txt", "--exclude=*.x", "--executor=local", "--work=w", "--tasks=3", "--task-memory=1GB"} {
		name, _, _ := strings.Cut(a, "=")
		_, _, err := DedupConfig([]string{a})
		if err == nil || !errors.Is(err, errUsage) || !strings.Contains(err.Error(), name+" is not an option here") {
			t.Errorf("DedupConfig(%s): %v; want a usage error %q", a, err, name+" is not an option here")
		}
	}
	if _, _, err := DedupConfig([]string{"--workers=2", "--skip-invalid"}); err != nil {
		t.Errorf("DedupConfig(--workers=2 --skip-invalid): %v", err)
	}
}
