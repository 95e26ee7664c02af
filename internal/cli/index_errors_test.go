package cli

import (
	"errors"
	"fmt"
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
