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

// TestFatalFolderReplaced: a folder removed and made again (rm -rf and
// mkdir by someone else) is not the index's: pebble's fatal failure
// there is ErrGone, and its errors are not written, as with the folder
// removed. The existence check took the new folder for the index's and
// gave pebble's words.
func TestFatalFolderReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "LOCK"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := quietLogger{dir: dir, at: newFolderID(dir)}
	if l.gone() {
		t.Fatal("the folder opened is taken for gone")
	}
	replaceFolder(t, dir)
	var got error
	l.onFatal = func(err error) { got = err }
	if code := l.fatal("open %s/000004.log: no such file or directory", dir); code != 1 || !errors.Is(got, ErrGone) {
		t.Errorf("fatal with the folder replaced = %d, %v; want 1, ErrGone", code, got)
	}
	if !l.gone() {
		t.Error("the folder replaced is not taken for gone: pebble's errors are written")
	}
}

// replaceFolder removes dir and makes an empty folder of the same name.
func replaceFolder(t *testing.T, dir string) {
	t.Helper()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestStoreFolderReplaced: an index whose folder is removed and made
// again while it is open is gone (Health, Close), as one whose folder is
// removed: Health said nil and Close flushed into the new folder, which
// holds none of the index, and returned nil.
func TestStoreFolderReplaced(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	s, err := Create(dir, sketch.Spec{Method: sketch.MinHash}, Options{CacheSize: 4 << 20})
	if err != nil {
		t.Fatal(err)
	}
	sk, err := s.NewSketcher()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Add("a", sk.Sketch("a document written before the folder is replaced")); err != nil {
		t.Fatal(err)
	}
	replaceFolder(t, dir)
	if err := s.Health(); !errors.Is(err, ErrGone) {
		t.Errorf("Health with the folder replaced = %v, want ErrGone", err)
	}
	if err := s.Close(); !errors.Is(err, ErrGone) {
		t.Errorf("Close with the folder replaced = %v, want ErrGone", err)
	}
}
