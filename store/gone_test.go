package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/neardup/neardup/sketch"
)

// goneChildEnv makes the test binary a child of TestFolderRemovedRotation:
// it creates the index at the folder given, removes the folder and adds
// documents until pebble fails.
const goneChildEnv = "NEARDUP_STORE_GONE_CHILD"

func init() {
	dir := os.Getenv(goneChildEnv)
	if dir == "" {
		return
	}
	s, err := Create(dir, sketch.Spec{Method: sketch.MinHash}, Options{CacheSize: 4 << 20, MemTableSize: 1 << 20})
	if err != nil {
		os.Stderr.WriteString(err.Error() + "\n")
		os.Exit(3)
	}
	sk, err := s.NewSketcher()
	if err != nil {
		os.Exit(3)
	}
	texts := testCorpus(1, 5000)
	docs := make([]Doc, len(texts))
	for i, txt := range texts {
		docs[i] = Doc{ID: fmt.Sprint("t", i), Sketch: sk.Sketch(txt)}
		docs[i].Sketch.Sig = append([]uint32(nil), docs[i].Sketch.Sig...)
	}
	os.RemoveAll(dir)
	for i := 0; i < len(docs); i += 100 {
		if _, err := s.AddBatch(docs[i : i+100]); err != nil {
			os.Stderr.WriteString("AddBatch: " + err.Error() + "\n")
			os.Exit(4)
		}
	}
	os.Exit(0) // pebble never failed: the parent says so
}

// TestFolderRemovedRotation removes the index folder, then adds documents
// that fill 1 MiB memtables: pebble's log rotation cannot create its file
// in the folder gone and calls its logger's Fatalf, which ended the
// process with pebble's words ("pebble: open DIR/000004.log: no such file
// or directory", a stack). It must end with ErrGone's words, exit 1.
func TestFolderRemovedRotation(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), goneChildEnv+"="+dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("adds to a removed folder: %v, want exit 1:\n%s", err, stderr.String())
	}
	want := "store: index folder removed: " + dir + " was removed while the index was open\n"
	if got := stderr.String(); got != want {
		t.Errorf("adds to a removed folder end with\n%s\nwant\n%s", got, want)
	}
}

// TestFatalOnFatal: a fatal failure of pebble goes to Options.OnFatal,
// as ErrGone when the folder is gone and in pebble's words otherwise.
func TestFatalOnFatal(t *testing.T) {
	dir := t.TempDir()
	var got error
	l := quietLogger{dir: dir, onFatal: func(err error) { got = err }}
	if code := l.fatal("MANIFEST sync failed: %v", "EIO"); code != 1 || got == nil || got.Error() != "pebble: MANIFEST sync failed: EIO" {
		t.Errorf("fatal with the folder there = %d, %v; want 1, pebble's words", code, got)
	}
	gone := filepath.Join(dir, "gone")
	l.dir = gone
	if code := l.fatal("open %s/000004.log: no such file or directory", gone); code != 1 || !errors.Is(got, ErrGone) {
		t.Errorf("fatal with the folder removed = %d, %v; want 1, ErrGone", code, got)
	}
}

// TestErrorfFolderRemoved: with the folder removed, a background flush
// fails over and over; its errors ("background error: open
// DIR/000012.sst: no such file or directory") are not written, ErrGone
// says it. With the folder there they are.
func TestErrorfFolderRemoved(t *testing.T) {
	dir := t.TempDir()
	f, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	saved := os.Stderr
	os.Stderr = f
	gone := filepath.Join(dir, "gone")
	quietLogger{dir: gone}.Errorf("background error: open %s/000012.sst: no such file or directory", gone)
	quietLogger{dir: dir}.Errorf("background error: %s", "EIO")
	os.Stderr = saved
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), "pebble: background error: EIO\n"; got != want {
		t.Errorf("pebble's errors wrote %q, want %q", got, want)
	}
}
