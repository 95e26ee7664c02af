package cli

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/neardup/neardup/store"
)

// TestIndexErrMidRun: a Redis server lost in the middle of an index
// command is said as one lost at the start, whatever was being done when
// it went (no "store:" left), and an error said in words already is not
// said twice.
func TestIndexErrMidRun(t *testing.T) {
	loc := "redis://127.0.0.1:6379/0"
	err := fmt.Errorf("add: batch 3: %w", fmt.Errorf("%w: dial tcp 127.0.0.1:6379: connect: connection refused", store.ErrUnreachable))
	got := indexErr("--index", loc, err)
	want := "--index " + loc + ": the Redis server does not answer (dial tcp 127.0.0.1:6379: connect: connection refused): start it, or check the host and port of the URL"
	if got.Error() != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if !errors.Is(got, store.ErrUnreachable) {
		t.Error("the worded error lost its cause")
	}
	if again := indexErr("--index", loc, got); again != got {
		t.Errorf("said twice: %s", again)
	}
}

// TestIndexAtOpenWords: a folder that cannot be made is worded without
// the store's package prefix, and an index opened twice in one process
// says it is already open here (not "a running neardup serve").
func TestIndexAtOpenWords(t *testing.T) {
	_, err := IndexAt("/proc/nope/x", nil)
	if err == nil || strings.Contains(err.Error(), "store:") || !strings.Contains(err.Error(), "cannot be created") {
		t.Errorf("IndexAt(/proc/nope/x) = %v, want 'cannot be created' without 'store:'", err)
	}
	dir := filepath.Join(t.TempDir(), "ix")
	a, err := IndexAt(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	_, err = IndexAt(dir, nil)
	if err == nil || !strings.Contains(err.Error(), "already open") || !strings.Contains(err.Error(), "in this process") || strings.Contains(err.Error(), "serve") {
		t.Errorf("second IndexAt = %v, want 'already open ... in this process'", err)
	}
}
