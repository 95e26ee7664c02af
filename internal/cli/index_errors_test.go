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
	// The other store failures in mid-run: a full disk (provoked end to
	// end in TestIndexAddDiskFull) and a write failed inside the
	// database (an I/O error of the write-ahead log, which no test can
	// provoke portably), each with the flag and without "store:".
	for _, c := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("%w; the 5120 documents added before are in the index, which stays usable: free space and add the rest", fmt.Errorf("%w: 0 bytes free; the index keeps 1048576 in reserve and this write needs 2211338 more", store.ErrDiskFull)),
			"--index ix: not enough free disk space for the index: 0 bytes free; the index keeps 1048576 in reserve and this write needs 2211338 more; the 5120 documents added before are in the index, which stays usable: free space and add the rest"},
		{fmt.Errorf("add: %w", fmt.Errorf("%w: pebble: write ix/000004.log: input/output error", store.ErrFailed)),
			"--index ix: a write to the index failed (write ix/000004.log: input/output error); the documents added before it are in the index: run the command again, which reopens it, to write again"},
	} {
		got := indexErr("--index", "ix", c.err)
		if got.Error() != c.want || !errors.Is(got, c.err) {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
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
