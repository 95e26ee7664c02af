// Package testchild starts the running test binary again as a child
// process, for tests that need a real process to kill (kill -9 and the
// files it leaves behind).
//
// The test binary's TestMain recognises the child by an environment
// variable that the test sets, does its part, prints one line and waits to
// be killed.
package testchild

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Start runs the test binary with env added to its environment and no
// tests selected, waits for the first line it prints on standard output
// and returns the process with that line (without the newline). The child
// is killed when the test ends. A line starting with "error:" fails the
// test.
func Start(t testing.TB, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.HasPrefix(line, "error:") {
		t.Fatalf("child process: %q %v", line, err)
	}
	return cmd, strings.TrimSuffix(line, "\n")
}

// Main is the body of a TestMain for a test binary whose tests use Start:
// when the environment variable env is set, the process is a child: it
// calls child with the variable's value, prints the line child returns
// (a line starting with "error:" reports a failure) and waits to be
// killed. Otherwise it runs the tests.
func Main(m *testing.M, env string, child func(value string) string) {
	if v := os.Getenv(env); v != "" {
		os.Stdout.WriteString(child(v) + "\n")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// NeedProc skips the test on systems without /proc, where a dead owner
// cannot be told from a live one.
func NeedProc(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("owner liveness needs /proc")
	}
}
