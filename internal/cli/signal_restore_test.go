package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// signalsChildEnv runs the test binary as a program that runs a command
// in its own process (Main) and then goes on: "pipe" writes lines to its
// standard output until a write fails, "term" sends itself SIGTERM.
const signalsChildEnv = "NEARDUP_TEST_SIGNALS_CHILD"

func init() {
	mode := os.Getenv(signalsChildEnv)
	if mode == "" {
		return
	}
	Main([]string{"--version"}, nil, io.Discard, io.Discard)
	switch mode {
	case "pipe":
		for {
			if _, err := os.Stdout.Write([]byte("line\n")); err != nil {
				os.Exit(7) // the write failed: SIGPIPE was still caught
			}
		}
	case "term":
		syscall.Kill(os.Getpid(), syscall.SIGTERM)
		time.Sleep(time.Minute)
		os.Exit(7)
	}
	os.Exit(8)
}

// TestMainGivesSignalsBack: once Main has returned, the program that ran
// it has its signals' default actions again. Main caught SIGPIPE (so that
// a closed standard output is an EPIPE it can clean up after) and never
// stopped: a program that ran a command in its own process then survived
// writes to a closed pipe. SIGTERM (Main's watch of SIGINT and SIGTERM)
// must kill it too.
func TestMainGivesSignalsBack(t *testing.T) {
	for _, c := range []struct {
		mode string
		sig  syscall.Signal
	}{{"pipe", syscall.SIGPIPE}, {"term", syscall.SIGTERM}} {
		t.Run(c.mode, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), signalsChildEnv+"="+c.mode)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			if c.mode == "pipe" {
				// The reader goes away after the first line.
				bufio.NewReader(out).ReadString('\n')
				out.Close()
			}
			err = cmd.Wait()
			var ee *exec.ExitError
			if !errors.As(err, &ee) {
				t.Fatalf("after Main, %s: %v, want killed by %v", c.mode, err, c.sig)
			}
			if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != c.sig {
				t.Errorf("after Main, %s: %v, want killed by %v", c.mode, err, c.sig)
			}
		})
	}
}

// TestSIGTERMStopsTestsChild is TestSIGTERMStopsTests's child: a test
// that runs serve in this process until a signal stops it, then goes on
// for a minute.
func TestSIGTERMStopsTestsChild(t *testing.T) {
	af := os.Getenv("NEARDUP_TEST_SIGTERM_ADDR")
	if af == "" {
		t.Skip("child process of TestSIGTERMStopsTests")
	}
	dir := createIndex(t)
	var out, errb bytes.Buffer
	Main([]string{"serve", "--index", dir, "--addr", "127.0.0.1:0", "--addr-file", af}, nil, &out, &errb)
	time.Sleep(time.Minute)
}

// TestSIGTERMStopsTests: SIGTERM sent to this test binary while a test
// runs a command in its process ends the binary, killed by SIGTERM. The
// command took the signal for its own (serve stopped, exit 0) and the
// tests went on.
func TestSIGTERMStopsTests(t *testing.T) {
	af := filepath.Join(t.TempDir(), "addr")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSIGTERMStopsTestsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NEARDUP_TEST_SIGTERM_ADDR="+af)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	for {
		if b, err := os.ReadFile(af); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("the child ended before serving: %v\n%s", err, stderr)
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	err := <-exited
	var ee *exec.ExitError
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !errors.As(err, &ee) || !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Errorf("test binary sent SIGTERM while a test ran serve: %v, want killed by SIGTERM\n%s", err, stderr)
	}
}
