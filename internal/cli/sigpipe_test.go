package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestBrokenPipeChild is TestBrokenPipe's child: neardup's Main with
// this process's standard output, a pipe whose reader is gone.
func TestBrokenPipeChild(t *testing.T) {
	args := os.Getenv("NEARDUP_TEST_PIPE_ARGS")
	if args == "" {
		t.Skip("child process of TestBrokenPipe")
	}
	os.Exit(Main(filepath.SplitList(args), os.Stdin, os.Stdout, os.Stderr))
}

// TestBrokenPipe: `neardup tune ... | head -3` ends quietly when head
// stops reading, and its temporary directory is removed (SIGPIPE killed
// it with exit 141 before, leaving /tmp/neardup-tune-*).
func TestBrokenPipe(t *testing.T) {
	dir := t.TempDir()
	docs := ""
	truth := ""
	for i := range 6 {
		docs += fmt.Sprintf("{\"id\":\"d%d\",\"text\":\"document number %d says hello to the world %d\"}\n", i, i/2, i/2)
		truth += fmt.Sprintf("{\"id\":\"d%d\",\"cluster\":\"c%d\"}\n", i, i/2)
	}
	in, tr, tmp := filepath.Join(dir, "docs.jsonl"), filepath.Join(dir, "truth.jsonl"), filepath.Join(dir, "tmp")
	for p, b := range map[string]string{in: docs, tr: truth} {
		if err := os.WriteFile(p, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // head has read its lines and gone
	args := []string{"tune", "-q", "--truth", tr, "--method", "jaccard", "--thresholds", "0.5,0.9", "--tmp-dir", tmp, in}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokenPipeChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "NEARDUP_TEST_PIPE_ARGS="+joinList(args))
	cmd.Stdout = w
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	err = cmd.Run()
	w.Close()
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() {
		t.Errorf("killed by %v, want an exit after clean-up; stderr:\n%s", ws.Signal(), stderr)
	} else if ws.ExitStatus() != ExitBrokenPipe {
		t.Errorf("exit %d (%v), want %d; stderr:\n%s", ws.ExitStatus(), err, ExitBrokenPipe, stderr)
	}
	if s := stderr.String(); s != "" {
		t.Errorf("a broken pipe is not an error to report: %q", s)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) > 0 {
		t.Errorf("%d temporary files left in --tmp-dir, e.g. %s", len(ents), ents[0].Name())
	}
}

func joinList(a []string) string { return strings.Join(a, string(filepath.ListSeparator)) }
