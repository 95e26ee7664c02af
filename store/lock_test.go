package store

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestOpenLockChild is the child process of TestOpenHoldsLock: it opens
// the index named by NEARDUP_LOCK_DIR (sleeping NEARDUP_LOCK_GAP between
// the rebuild and the writable open), prints the outcome, holds the index
// for NEARDUP_LOCK_HOLD and closes it.
func TestOpenLockChild(t *testing.T) {
	dir := os.Getenv("NEARDUP_LOCK_DIR")
	if dir == "" {
		t.Skip("child process of TestOpenHoldsLock")
	}
	gap, _ := time.ParseDuration(os.Getenv("NEARDUP_LOCK_GAP"))
	hold, _ := time.ParseDuration(os.Getenv("NEARDUP_LOCK_HOLD"))
	testHookRebuilt = func() { time.Sleep(gap) }
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
	s, err := Create(dir, DefaultParams(MinHash), Options{})
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
	first, out1 := start("600ms", "100ms")
	time.Sleep(300 * time.Millisecond) // the first is in its gap
	second, out2 := start("0s", "0s")
	first.Wait()
	second.Wait()
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
