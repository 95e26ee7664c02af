package atomicfile

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/neardup/neardup/internal/testchild"
)

// TestMain lets the test binary act as the child of
// TestCreateSweepsKilledWriter: with ATOMICFILE_CHILD_PATH set it starts
// writing that output, says so, and waits to be killed before Commit.
func TestMain(m *testing.M) {
	testchild.Main(m, "ATOMICFILE_CHILD_PATH", func(path string) string {
		f, err := Create(path)
		if err != nil {
			return "error: " + err.Error()
		}
		f.Write(make([]byte, 1<<20)) // more than the buffer: on disk
		return "writing"
	})
}

// A writer killed by SIGKILL leaves its hidden temporary file; the next
// Create of the same output removes it and reports it, and leaves the
// temporary file of a writer still running alone.
func TestCreateSweepsKilledWriter(t *testing.T) {
	testchild.NeedProc(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.jsonl")
	start := func() *exec.Cmd {
		cmd, line := testchild.Start(t, "ATOMICFILE_CHILD_PATH="+path)
		if line != "writing" {
			t.Fatalf("child: %q", line)
		}
		return cmd
	}
	killed, running := start(), start()
	if err := killed.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	killed.Wait()
	temps, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.tmp-*"))
	if len(temps) != 2 {
		t.Fatalf("temporary files before the sweep: %v, want 2", temps)
	}
	f, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Abort()
	s := f.Swept()
	if s.Files != 1 || s.Bytes != 1<<20 || len(s.Names) != 1 || !strings.Contains(filepath.Base(s.Names[0]), ".tmp-"+itoa(killed.Process.Pid)+"-") {
		t.Fatalf("Swept = %d files, %d bytes, %v; want the killed writer's (pid %d, 1 MiB)", s.Files, s.Bytes, s.Names, killed.Process.Pid)
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".out.jsonl.tmp-"+itoa(running.Process.Pid)+"-*"))
	if len(left) != 1 {
		t.Errorf("the running writer's temporary file is gone: %v", left)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
