package objstore_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPutErrors: an error of Put's write function itself (a bad input
// record, say) comes back as it is; an error of storage names the file,
// once, even from a Put inside another Put's write function, and wraps
// its cause.
func TestPutErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := open(t, dir)
	errBad := errors.New("in.jsonl:3: invalid JSON")
	err := f.Put(ctx, "a", func(w io.Writer) error {
		w.Write([]byte("part"))
		return errBad
	})
	if err == nil || err.Error() != errBad.Error() || !errors.Is(err, errBad) {
		t.Errorf("Put whose write fails = %v, want %v as it is", err, errBad)
	}
	if ok, _ := f.Exists(ctx, "a"); ok {
		t.Errorf("a failed Put left its file")
	}
	// A file where a folder should be: storage fails.
	if err := os.WriteFile(filepath.Join(dir, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(dir, "x", "y")
	err = f.Put(ctx, "a", func(w io.Writer) error {
		return f.Put(ctx, "x/y", func(w io.Writer) error { return nil })
	})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	if !strings.HasPrefix(msg, "write "+inner+": ") || strings.Count(msg, inner) != 1 || strings.Contains(msg, filepath.Join(dir, "a")) || !strings.Contains(msg, "not a directory") {
		t.Errorf("a Put inside a Put failing on storage = %q, want the inner file named once, the outer not", msg)
	}
}
