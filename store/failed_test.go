package store

import (
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/neardup/neardup/sketch"
)

// failingFS fails every write to a write-ahead log (*.log) with ENOSPC
// once armed, as a disk that fills up behind the free-space check would.
type failingFS struct {
	vfs.FS
	armed atomic.Bool
}

type failingFile struct {
	vfs.File
	fs *failingFS
}

func (f failingFile) Write(p []byte) (int, error) {
	if f.fs.armed.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.Write(p)
}

func (f failingFile) WriteAt(p []byte, off int64) (int, error) {
	if f.fs.armed.Load() {
		return 0, syscall.ENOSPC
	}
	return f.File.WriteAt(p, off)
}

func (fs *failingFS) wrap(name string, f vfs.File, err error) (vfs.File, error) {
	if err != nil || !strings.HasSuffix(name, ".log") {
		return f, err
	}
	return failingFile{f, fs}, nil
}

func (fs *failingFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, c)
	return fs.wrap(name, f, err)
}

func (fs *failingFS) ReuseForWrite(old, name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.ReuseForWrite(old, name, c)
	return fs.wrap(name, f, err)
}

func (fs *failingFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.OpenReadWrite(name, c, opts...)
	return fs.wrap(name, f, err)
}

// TestWriteAheadLogFailure makes pebble's write-ahead log fail under a
// write, as a disk filled by another process between the free-space check
// and the write would: the write fails, the store stops writing
// (ErrFailed) instead of wedging or crashing the process, queries go on,
// and Close returns at once.
func TestWriteAheadLogFailure(t *testing.T) {
	fs := &failingFS{FS: vfs.Default}
	dir := filepath.Join(t.TempDir(), "idx")
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{MemTableSize: 1 << 20, fs: fs})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	const first = "the first document, acknowledged before the disk fails"
	if err := s.Add("a", sk.Sketch(first)); err != nil {
		t.Fatal(err)
	}
	fs.armed.Store(true)
	err = s.Add("b", sk.Sketch("the second document, written as the log fails"))
	if !errors.Is(err, ErrFailed) {
		t.Fatalf("Add as the log fails = %v, want ErrFailed", err)
	}
	// Pebble would go on writing to the failed log, and panic with its
	// mutex released at the next log rotation (what crashed serve):
	// the store must not let it.
	fs.armed.Store(false)
	for range 3 {
		if err := s.Add("c", sk.Sketch("a third document")); !errors.Is(err, ErrFailed) {
			t.Fatalf("Add after the failure = %v, want ErrFailed", err)
		}
	}
	if err := s.Remove("a"); !errors.Is(err, ErrFailed) {
		t.Errorf("Remove after the failure = %v, want ErrFailed", err)
	}
	if err := s.Health(); !errors.Is(err, ErrFailed) {
		t.Errorf("Health = %v, want ErrFailed", err)
	}
	if ms, err := s.Query(nil, sk.Sketch(first), 1); err != nil || len(ms) != 1 || ms[0].ID != "a" {
		t.Errorf("Query after the failure = %v, %v", ms, err)
	}
	if err := s.Flush(); !errors.Is(err, ErrFailed) {
		t.Errorf("Flush (a log rotation) after the failure = %v, want ErrFailed", err)
	}
	if err := s.Close(); !errors.Is(err, ErrFailed) {
		t.Errorf("Close = %v, want ErrFailed", err)
	}
}
