package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/rogpeppe/go-internal/testscript"
)

// The scripts in testdata/script run the real neardup binary end to end:
// flags, files, exit codes and output formats.
func TestMain(m *testing.M) {
	if os.Getenv(taskChildEnv) != "" { // a staged job's task (staged_test.go)
		os.Exit(taskChild())
	}
	if raceEnabled && !strings.Contains(os.Getenv("GORACE"), "atexit_sleep_ms") {
		// A binary built with -race sleeps 1 s when it exits with
		// status 0 (the race runtime's atexit_sleep_ms, default 1000),
		// and this test binary starts itself as the neardup command:
		// every script's command and every staged task, hundreds of
		// processes (internal/cli took 1,818 s under -race -tags long,
		// 2026-11-29). The children run under the detector all the
		// same; they only exit at once. testscript passes GORACE on to
		// the scripts, exec.Command to the tasks.
		os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	}
	testscript.Main(stopOnSIGTERM{m}, map[string]func(){
		"neardup":  func() { os.Exit(Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) },
		"compress": compressCmd,
		"damage":   damageCmd,
	})
}

// stopOnSIGTERM runs the tests (not the commands testscript runs as
// neardup) so that SIGTERM ends the test binary, killed by it, as go
// test's and a CI's timeouts expect. The commands the tests run in this
// process (Main) watch SIGTERM too, and took it for their own: the test
// under way got exit 130 and the next one ran, so the binary never
// stopped.
type stopOnSIGTERM struct{ m *testing.M }

func (s stopOnSIGTERM) Run() int {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintln(os.Stderr, "neardup's internal/cli tests: stopped by SIGTERM")
		dieBySignal(sig)
	}()
	return s.m.Run()
}

// damageCmd is `damage cut|flip FILE`: cut keeps the first half of the
// file, flip flips a bit of its middle byte.
func damageCmd() {
	b, err := os.ReadFile(os.Args[len(os.Args)-1])
	if err != nil || len(os.Args) != 3 || len(b) == 0 {
		fmt.Fprintln(os.Stderr, "usage: damage cut|flip FILE", err)
		os.Exit(2)
	}
	switch os.Args[1] {
	case "cut":
		b = b[:len(b)/2]
	case "flip":
		b[len(b)/2] ^= 0x10
	}
	if err := os.WriteFile(os.Args[2], b, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// compressCmd is `compress gzip|zstd IN OUT`, for scripts that pipe
// compressed data (testscript has no compressor of its own).
func compressCmd() {
	if len(os.Args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: compress gzip|zstd IN OUT")
		os.Exit(2)
	}
	in, err := os.ReadFile(os.Args[2])
	if err == nil {
		var out []byte
		switch os.Args[1] {
		case "gzip":
			f, cerr := os.Create(os.Args[3])
			if cerr != nil {
				err = cerr
				break
			}
			w := gzip.NewWriter(f)
			_, err = w.Write(in)
			err = errors.Join(err, w.Close(), f.Close())
		case "zstd":
			var w *zstd.Encoder
			if w, err = zstd.NewWriter(nil); err == nil {
				out = w.EncodeAll(in, nil)
				err = os.WriteFile(os.Args[3], out, 0o644)
			}
		default:
			err = fmt.Errorf("unknown compression %q", os.Args[1])
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", Cmds: map[string]func(*testscript.TestScript, bool, []string){
		"exitcode": cmdExitCode,
	}})
}

// cmdExitCode is the script command `exitcode N PROGRAM ARGS...`: it runs
// PROGRAM like exec and checks that it exits with code N.
func cmdExitCode(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exitcode N PROGRAM [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exitcode: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exitcode: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with %d, want %d", args[1], got, want)
	}
}
