package store

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/neardup/neardup/internal/smallfs"
	"github.com/neardup/neardup/sketch"
)

// TestOpenReadOnlyFolder: an index in a folder this process may not
// write (a read-only mount, or a folder and LOCK file without write
// permission) opens read-only, its lock taken shared for reading, and
// answers; a writable open says why it cannot (before, the read-only
// open failed too: "open DIR/LOCK: permission denied").
func TestOpenReadOnlyFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	if _, err := s.AddBatch([]Doc{{ID: "a", Sketch: sk.Sketch("the quick brown fox jumps over the lazy dog again")}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	smallfs.ReadOnly(t, dir)

	r, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only Open of an unwritable folder: %v", err)
	}
	if r.Len() != 1 {
		t.Errorf("Len = %d, want 1", r.Len())
	}
	if _, err := r.Get("a"); err != nil {
		t.Errorf("Get(a): %v", err)
	}
	// Two readers share the lock.
	r2, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Errorf("second read-only Open: %v", err)
	} else {
		r2.Close()
	}
	if err := r.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}

	_, err = Open(dir, Options{})
	if err == nil || !(errors.Is(err, os.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		t.Errorf("writable Open of an unwritable folder = %v, want a permission or read-only file system error", err)
	}
}
