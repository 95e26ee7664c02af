package store

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/neardup/neardup/sketch"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestOpenLockChild is the child process of TestOpenHoldsLock: it opens
// the index named by NEARDUP_LOCK_DIR (waiting between the rebuild and the
// writable open, when NEARDUP_LOCK_GAP names the files of that gap), prints the outcome, holds the index
// for NEARDUP_LOCK_HOLD and closes it.
func TestOpenLockChild(t *testing.T) {
	dir := os.Getenv("NEARDUP_LOCK_DIR")
	if dir == "" {
		t.Skip("child process of TestOpenHoldsLock")
	}
	hold, _ := time.ParseDuration(os.Getenv("NEARDUP_LOCK_HOLD"))
	if gap := os.Getenv("NEARDUP_LOCK_GAP"); gap != "" {
		// In the gap: say so (the file gap.in), and stay there until
		// the parent ends it (the file gap.out) or a minute passes.
		testHookRebuilt = func() {
			os.WriteFile(gap+".in", nil, 0o644)
			for t0 := time.Now(); time.Since(t0) < time.Minute; time.Sleep(10 * time.Millisecond) {
				if _, err := os.Stat(gap + ".out"); err == nil {
					return
				}
			}
		}
	}
	s, err := Open(dir, Options{})
	switch {
	case errors.Is(err, ErrLocked):
		fmt.Println("RESULT locked")
		return
	case err != nil:
		fmt.Println("RESULT error", err)
		return
	}
	fmt.Println("RESULT opened", s.Len())
	sk, _ := s.NewSketcher()
	if err := s.Add(fmt.Sprintf("by-%d", os.Getpid()), sk.Sketch("a document added by one process")); err != nil {
		fmt.Println("RESULT add failed", err)
	}
	time.Sleep(hold)
	if err := s.Close(); err != nil {
		fmt.Println("RESULT close failed", err)
	}
}

// TestOpenHoldsLock opens one index from two processes at once: the first
// is slowed down between its read-only rebuild and its writable open,
// where Open once let go of the directory lock, and the second starts in
// that gap. The first must get the index and the second ErrLocked.
func TestOpenHoldsLock(t *testing.T) {
	dir := t.TempDir()
	s, err := Create(dir, sketch.Default(sketch.MinHash), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	start := func(gap, hold string) (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOpenLockChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), "NEARDUP_LOCK_DIR="+dir, "NEARDUP_LOCK_GAP="+gap, "NEARDUP_LOCK_HOLD="+hold)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		return cmd, &out
	}
	// The first stops in its gap until the second has tried and ended:
	// no timing decides the order, even on a busy machine.
	gap := filepath.Join(t.TempDir(), "gap")
	first, out1 := start(gap, "100ms")
	for t0 := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(gap + ".in"); err == nil {
			break
		}
		if time.Since(t0) > time.Minute {
			first.Process.Kill()
			first.Wait()
			t.Fatalf("the first process never reached its gap: %s", out1)
		}
	}
	second, out2 := start("", "0s")
	second.Wait()
	if err := os.WriteFile(gap+".out", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	result := func(out *bytes.Buffer) string {
		for _, l := range strings.Split(out.String(), "\n") {
			if r, ok := strings.CutPrefix(l, "RESULT "); ok {
				return r
			}
		}
		return "no result: " + out.String()
	}
	if r := result(out1); r != "opened 0" {
		t.Errorf("first process: %s, want it to open the index", r)
	}
	if r := result(out2); r != "locked" {
		t.Errorf("second process, opening in the first's gap: %s, want locked", r)
	}
	s, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Len() != 1 {
		t.Errorf("%d documents, want the 1 added by the first process", s.Len())
	}
}

// TestOpenShared: a read-only index opened Shared takes no lock, so two
// of them are open at once (the staged job's sign tasks), each finding
// the index's documents; without Shared the second is ErrLocked.
func TestOpenShared(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ix")
	s, err := Create(dir, sketch.Spec{Method: sketch.MinHash}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	sk, _ := s.NewSketcher()
	const doc = "the one document of the index, long enough to have shingles"
	if err := s.Add("d1", sk.Sketch(doc)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var open []*Store
	for range 2 {
		s, err := Open(dir, Options{ReadOnly: true, Shared: true})
		if err != nil {
			t.Fatalf("shared open %d: %v", len(open)+1, err)
		}
		defer s.Close()
		open = append(open, s)
	}
	for k, s := range open {
		ms, err := s.Query(nil, sk.Sketch(doc), 1)
		if err != nil || len(ms) != 1 || ms[0].ID != "d1" {
			t.Errorf("shared open %d: %v, %v", k+1, ms, err)
		}
	}
	a, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrLocked) {
		t.Errorf("a second read-only open without Shared: %v, want ErrLocked", err)
	}
}
