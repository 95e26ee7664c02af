package tempfile

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/testchild"
)

// TestMain lets the test binary act as the child process of
// TestSweepKilledChild: with TEMPFILE_CHILD_DIR set it creates a file
// there, prints its name and waits to be killed.
func TestMain(m *testing.M) {
	testchild.Main(m, "TEMPFILE_CHILD_DIR", func(dir string) string {
		f, err := Create(dir, ".out.jsonl.tmp-", "")
		if err != nil {
			return "error: " + err.Error()
		}
		f.WriteString("partial output")
		return f.Name()
	})
}

func TestSweepKilledChild(t *testing.T) {
	testchild.NeedProc(t)
	dir := t.TempDir()
	cmd, name := testchild.Start(t, "TEMPFILE_CHILD_DIR="+dir)
	if want := fmt.Sprintf(".out.jsonl.tmp-%d-", cmd.Process.Pid); !strings.HasPrefix(filepath.Base(name), want) {
		t.Fatalf("child's file %s does not start with %s", name, want)
	}
	// Another process's file of the same pattern that is not ours, and a
	// file of an older naming: neither is touched.
	foreign := filepath.Join(dir, ".out.jsonl.tmp-123456789")
	other := filepath.Join(dir, "unrelated.txt")
	for _, p := range []string{foreign, other} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Sweep(dir, ".out.jsonl.tmp-", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 0 {
		t.Fatalf("swept %v while the owner runs", s.Names)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	s, err = Sweep(dir, ".out.jsonl.tmp-", "")
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 1 || s.Bytes != int64(len("partial output")) || len(s.Names) != 1 || s.Names[0] != name {
		t.Fatalf("after SIGKILL swept %+v, want %s (14 bytes)", s, name)
	}
	for _, p := range []string{foreign, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("%s still there: %v", name, err)
	}
}

func TestSweepReusedPid(t *testing.T) {
	testchild.NeedProc(t)
	dir := t.TempDir()
	// A live process (pid 1, or this test's parent) with another start
	// time: the pid was reused, the owner is gone.
	ppid := os.Getppid()
	st, ok := startTime(ppid)
	if !ok {
		t.Skip("no /proc entry for the parent")
	}
	gone := filepath.Join(dir, fmt.Sprintf("neardup-run-%d-%d-1.bin", ppid, st+1))
	alive := filepath.Join(dir, fmt.Sprintf("neardup-run-%d-%d-2.bin", ppid, st))
	mine, err := Create(dir, "neardup-run-", ".bin")
	if err != nil {
		t.Fatal(err)
	}
	mine.Close()
	for _, p := range []string{gone, alive} {
		if err := os.WriteFile(p, []byte("run"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Sweep(dir, "neardup-run-", ".bin")
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 1 || s.Names[0] != gone {
		t.Fatalf("swept %v, want only %s", s.Names, gone)
	}
	for _, p := range []string{alive, mine.Name()} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}
}

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name  string
		pid   int
		start uint64
		ok    bool
	}{
		{"neardup-run-12-345-678.bin", 12, 345, true},
		{"neardup-run-12-345-678.bin.x", 0, 0, false},
		{"neardup-run-12-345.bin", 0, 0, false},
		{"neardup-run-123456.bin", 0, 0, false},
		{"neardup-run-a-345-678.bin", 0, 0, false},
		{"neardup-run-0-345-678.bin", 0, 0, false},
		{"neardup-run-12-345-.bin", 0, 0, false},
		{"other-12-345-678.bin", 0, 0, false},
	} {
		pid, start, ok := parse(c.name, "neardup-run-", ".bin")
		if pid != c.pid || start != c.start || ok != c.ok {
			t.Errorf("parse(%q) = %d, %d, %v; want %d, %d, %v", c.name, pid, start, ok, c.pid, c.start, c.ok)
		}
	}
}

func TestAbandonedByAge(t *testing.T) {
	// Without /proc only age counts; with it, age never does. Exercise
	// the age rule directly through a pid that cannot exist.
	now := time.Now()
	if _, ok := startTime(os.Getpid()); ok {
		if !abandoned(1<<30, 1, now, now) {
			t.Error("a file of a pid that does not exist is not abandoned")
		}
		return
	}
	if abandoned(1<<30, 1, now, now) {
		t.Error("a fresh file is abandoned without /proc")
	}
	if !abandoned(1<<30, 1, now.Add(-MaxAge-time.Minute), now) {
		t.Error("an old file is kept without /proc")
	}
}

// TestSweepAll removes a gone owner's files of every pattern in one
// listing, and nothing else.
func TestSweepAll(t *testing.T) {
	testchild.NeedProc(t)
	dir := t.TempDir()
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal("no child process:", err)
	}
	dead := fmt.Sprintf("%d-1", cmd.Process.Pid)
	gone := []string{"a-" + dead + "-1.bin", "b-" + dead + "-2.sets"}
	kept := []string{"c-" + dead + "-3.bin", "a-" + dead + "-4.sets", "a-x.bin"}
	for _, name := range append(slices.Clone(gone), kept...) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("xy"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, err := SweepAll(dir, Pattern{"a-", ".bin"}, Pattern{"b-", ".sets"})
	if err != nil {
		t.Fatal(err)
	}
	if s.Files != 2 || s.Bytes != 4 {
		t.Errorf("swept %+v, want %v", s, gone)
	}
	for _, name := range kept {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Errorf("%s swept: %v", name, err)
		}
	}
}
