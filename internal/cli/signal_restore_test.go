package cli

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
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
