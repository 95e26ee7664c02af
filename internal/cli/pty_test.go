package cli

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
)

// The tests below run the real neardup binary under a pseudo-terminal,
// where it draws progress bars: with exact, low and high document-count
// estimates, interrupted by Ctrl-C in each stage, and resized mid-run.
// Every run has a deadline, so that a hang fails the test instead of
// blocking it.

// ptyDeadline bounds one run of the binary.
const ptyDeadline = 60 * time.Second

// buildNeardup builds the binary once per test into dir, with the tag
// ptytest (progress_pace.go: NEARDUP_PTYTEST_PACE slows a stage).
func buildNeardup(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "neardup")
	cmd := exec.Command("go", "build", "-tags", "ptytest", "-o", bin, "github.com/neardup/neardup/cmd/neardup")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// ptyRun is one run of the binary on the slave side of a pseudo-terminal.
type ptyRun struct {
	t      *testing.T
	cmd    *exec.Cmd
	master *os.File

	mu      sync.Mutex
	out     bytes.Buffer
	grew    chan struct{} // signalled (without blocking) when out grows
	readEnd chan struct{} // closed when the master reads EOF or EIO
}

// startPTY starts bin with args in dir on a 40 x 120 terminal; env is
// added to the process's environment.
func startPTY(t *testing.T, bin, dir string, env []string, args ...string) *ptyRun {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: 40, Cols: 120})
	if err != nil {
		t.Fatal(err)
	}
	r := &ptyRun{t: t, cmd: cmd, master: master, grew: make(chan struct{}, 1), readEnd: make(chan struct{})}
	go func() {
		defer close(r.readEnd)
		buf := make([]byte, 4096)
		for {
			n, err := master.Read(buf)
			r.mu.Lock()
			r.out.Write(buf[:n])
			r.mu.Unlock()
			select {
			case r.grew <- struct{}{}:
			default:
			}
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		if r.cmd.ProcessState == nil {
			r.cmd.Process.Kill()
			r.cmd.Wait()
		}
		master.Close()
	})
	return r
}

// output returns what the terminal has shown so far.
func (r *ptyRun) output() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.String()
}

// waitFor waits until the terminal has shown a match of re, failing the
// test after ptyDeadline.
func (r *ptyRun) waitFor(re *regexp.Regexp) {
	r.t.Helper()
	deadline := time.After(ptyDeadline)
	for !re.MatchString(r.output()) {
		select {
		case <-r.grew:
		case <-r.readEnd:
			if !re.MatchString(r.output()) {
				r.t.Fatalf("the run ended without showing %q:\n%s", re, r.output())
			}
		case <-deadline:
			r.t.Fatalf("no %q after %v; the terminal shows:\n%s", re, ptyDeadline, r.output())
		}
	}
}

// wait waits for the process to exit and returns its exit code (128+N
// when signal N ended it), failing the test after ptyDeadline: a hang.
func (r *ptyRun) wait() int {
	r.t.Helper()
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		// Read what the process wrote last (the slave side closed).
		select {
		case <-r.readEnd:
		case <-time.After(5 * time.Second):
		}
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			r.t.Fatal(err)
		}
		ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ws.ExitStatus()
	case <-time.After(ptyDeadline):
		r.cmd.Process.Signal(syscall.SIGQUIT) // a goroutine dump in the output
		time.Sleep(time.Second)
		r.cmd.Process.Kill()
		<-done
		r.t.Fatalf("the run hung for %v; the terminal shows:\n%s", ptyDeadline, r.output())
		return -1
	}
}

// ptyCorpus writes the test inputs into dir and returns their names: the
// same documents (n of them, every tenth a duplicate of the one before)
// as JSONL with records of one length (the estimate is exact), as .txt
// whose first lines are long and the rest short (the estimate is low),
// the reverse (high), and as gzipped JSONL (the estimate comes from the
// compression ratio of the file).
func ptyCorpus(t *testing.T, dir string, n int) map[string]string {
	t.Helper()
	text := func(i int) string {
		if i%10 == 9 {
			i--
		}
		return fmt.Sprintf("document %06d says %s", i, strings.Repeat(fmt.Sprintf("word%d ", i%97), 12))
	}
	var exact, low, high bytes.Buffer
	for i := range n {
		t := text(i)
		fmt.Fprintf(&exact, "{\"id\":\"d%06d\",\"text\":%q}\n", i, t)
		pad := strings.Repeat(" pad", 200)
		if i < 300 {
			fmt.Fprintf(&low, "%s%s\n", t, pad)
			fmt.Fprintf(&high, "%s\n", t)
		} else {
			fmt.Fprintf(&low, "%s\n", t)
			fmt.Fprintf(&high, "%s%s\n", t, pad)
		}
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(exact.Bytes())
	zw.Close()
	files := map[string]string{"exact": "exact.jsonl", "low": "low.txt", "high": "high.txt", "gzip": "docs.jsonl.gz"}
	for name, b := range map[string][]byte{"exact": exact.Bytes(), "low": low.Bytes(), "high": high.Bytes(), "gzip": gz.Bytes()} {
		if err := os.WriteFile(filepath.Join(dir, files[name]), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// barDone matches a stage's completed bar showing n documents.
func barDone(stage string, n int) *regexp.Regexp {
	return regexp.MustCompile(regexp.QuoteMeta(stage) + ` +` + fmt.Sprint(n) + ` docs .*done`)
}

func TestPTY(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the binary")
	}
	bin := buildNeardup(t, t.TempDir())
	const n = 3000
	data := t.TempDir()
	files := ptyCorpus(t, data, n)

	// newIndex creates an empty index in a fresh directory.
	newIndex := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "idx")
		if out, err := exec.Command(bin, "index", "create", "--index", dir).CombinedOutput(); err != nil {
			t.Fatalf("index create: %v\n%s", err, out)
		}
		return dir
	}

	// Every command, on every estimate, ends and completes its bars at
	// the real count. The high estimates hung in mpb's Wait before.
	estimates := []string{"high"}
	if ptyAll {
		estimates = []string{"exact", "low", "high", "gzip"}
	}
	for _, est := range estimates {
		in := filepath.Join(data, files[est])
		t.Run("dedup/"+est, func(t *testing.T) {
			dir := t.TempDir()
			r := startPTY(t, bin, dir, nil, "dedup", "-o", "kept.jsonl", in)
			if code := r.wait(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, r.output())
			}
			out := r.output()
			for _, re := range []*regexp.Regexp{barDone("read, sketch, find", n), barDone("write", n), regexp.MustCompile(`: 3,000 documents from `)} {
				if !re.MatchString(out) {
					t.Errorf("no %q in:\n%s", re, out)
				}
			}
		})
		t.Run("sign/"+est, func(t *testing.T) {
			dir := t.TempDir()
			r := startPTY(t, bin, dir, nil, "sign", "-o", "sigs.jsonl", in)
			if code := r.wait(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, r.output())
			}
			if out := r.output(); !barDone("sign", n).MatchString(out) || !strings.Contains(out, "signed "+plural(n, "document")) {
				t.Errorf("no completed sign bar or summary in:\n%s", out)
			}
		})
		t.Run("index-add/"+est, func(t *testing.T) {
			idx := newIndex(t)
			r := startPTY(t, bin, t.TempDir(), nil, "index", "add", "--index", idx, in)
			if code := r.wait(); code != 0 {
				t.Fatalf("exit %d:\n%s", code, r.output())
			}
			if out := r.output(); !barDone("add", n).MatchString(out) || !strings.Contains(out, "of "+number(n)+" documents") {
				t.Errorf("no completed add bar or summary in:\n%s", out)
			}
		})
	}

	// Ctrl-C in each stage: exit 130, the bar says so, and the previous
	// output file is left as it was, with no temporary file beside it.
	in := filepath.Join(data, files["exact"])
	interrupts := []struct {
		name, stage string
		args        func(t *testing.T) []string
		output      string
		message     string // the interruption's message
	}{
		{"dedup-read", "read, sketch, find", func(*testing.T) []string { return []string{"dedup", "-o", "out.jsonl", in} }, "out.jsonl", "neardup: interrupted; no output file was replaced"},
		{"dedup-write", "write", func(*testing.T) []string { return []string{"dedup", "-o", "out.jsonl", in} }, "out.jsonl", "neardup: interrupted; no output file was replaced"},
		{"sign", "sign", func(*testing.T) []string { return []string{"sign", "-o", "out.jsonl", in} }, "out.jsonl", "neardup: interrupted; no output file was replaced"},
		{"index-add", "add", func(t *testing.T) []string {
			return []string{"index", "add", "--index", newIndex(t), "-o", "out.jsonl", in}
		}, "out.jsonl", "neardup: interrupted; the index keeps the documents of every batch written before it (no output file was replaced)"},
	}
	for _, c := range interrupts {
		if !ptyAll && c.name != "dedup-read" && c.name != "sign" {
			continue
		}
		t.Run("ctrl-c/"+c.name, func(t *testing.T) {
			dir := t.TempDir()
			old := []byte("the previous output\n")
			if err := os.WriteFile(filepath.Join(dir, c.output), old, 0o644); err != nil {
				t.Fatal(err)
			}
			r := startPTY(t, bin, dir, []string{"NEARDUP_PTYTEST_PACE=" + c.stage + "=200ms"}, c.args(t)...)
			r.waitFor(regexp.MustCompile(regexp.QuoteMeta(c.stage) + ` +\d+ / ~\d+ docs`))
			if _, err := r.master.Write([]byte{3}); err != nil { // Ctrl-C: SIGINT to the foreground group
				t.Fatal(err)
			}
			code := r.wait()
			out := r.output()
			if code != ExitInterrupted {
				t.Fatalf("exit %d, want %d:\n%s", code, ExitInterrupted, out)
			}
			if !regexp.MustCompile(regexp.QuoteMeta(c.stage) + ` .*interrupted`).MatchString(out) {
				t.Errorf("the %s bar does not say interrupted:\n%s", c.stage, out)
			}
			if !strings.Contains(out, c.message) {
				t.Errorf("no interruption message (a raw error instead?):\n%s", out)
			}
			// The terminal echoes ^C at the cursor, two columns into the
			// line below the bars. A carriage return must come between
			// the echo and the last frame (which moves the cursor up from
			// its column), or the redrawn bar keeps the echo's two
			// columns before its name.
			if i, last := strings.LastIndex(out, "^C"), strings.LastIndex(out, "\x1b[1A"); i >= 0 && last > i && !strings.Contains(out[i+2:last], "\r") {
				t.Errorf("the last frame after the echoed ^C does not start from the first column: %q", out[i:min(len(out), last+80)])
			}
			if b, err := os.ReadFile(filepath.Join(dir, c.output)); err != nil || !bytes.Equal(b, old) {
				t.Errorf("%s was replaced: %q, %v", c.output, b, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 1 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("files left in the output directory: %v", names)
			}
		})
	}

	// A second Ctrl-C ends the process at once, while the first one's
	// clean-up waits (here for the 30 s pace of the stage). On a busy
	// machine two Ctrl-Cs close together can reach the process as one
	// (a pending signal is not queued twice), so Ctrl-C is typed every
	// 300 ms until the process ends: killed by SIGINT long before the
	// clean-up could have ended (exit 130), however slowly it runs.
	t.Run("ctrl-c-twice", func(t *testing.T) {
		const pace = 30 * time.Second
		r := startPTY(t, bin, t.TempDir(), []string{"NEARDUP_PTYTEST_PACE=read, sketch, find=" + pace.String()}, "dedup", "-o", "out.jsonl", in)
		r.waitFor(regexp.MustCompile(`read, sketch, find +\d+ / ~\d+ docs`))
		start := time.Now()
		exited := make(chan struct{})
		go func() {
			tick := time.NewTicker(300 * time.Millisecond)
			defer tick.Stop()
			for {
				r.master.Write([]byte{3})
				select {
				case <-exited:
					return
				case <-tick.C:
				}
			}
		}()
		r.wait()
		close(exited)
		ws := r.cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGINT {
			t.Errorf("the process ended with %v, want killed by the second SIGINT", r.cmd.ProcessState)
		}
		if d := time.Since(start); d > pace*2/3 {
			t.Errorf("the process ended %v after the first Ctrl-C, want at the second", d)
		}
	})

	// A resize mid-run: the bars are redrawn to the new width, the run
	// ends and prints its summary. The pace keeps the stage running for
	// about a second, several frames: at 30ms (0.24 s in all) a machine
	// under load drew its bar only at the stage's end, and the wait for
	// a frame mid-run failed.
	t.Run("resize", func(t *testing.T) {
		dir := t.TempDir()
		r := startPTY(t, bin, dir, []string{"NEARDUP_PTYTEST_PACE=read, sketch, find=120ms"}, "dedup", "-o", "kept.jsonl", in)
		r.waitFor(regexp.MustCompile(`read, sketch, find +\d+ / ~\d+ docs`))
		before := len(r.output())
		// The kernel sends SIGWINCH to the foreground group; send it too,
		// as a terminal emulator may.
		if err := pty.Setsize(r.master, &pty.Winsize{Rows: 20, Cols: 70}); err != nil {
			t.Fatal(err)
		}
		r.cmd.Process.Signal(syscall.SIGWINCH)
		if code := r.wait(); code != 0 {
			t.Fatalf("exit %d:\n%s", code, r.output())
		}
		out := r.output()
		if !strings.Contains(out, "kept 2,700, removed 300") {
			t.Errorf("no summary after the resize:\n%s", out)
		}
		// Bar lines drawn after the resize fit the new width.
		bar := regexp.MustCompile(`^(read, sketch, find|write) +\d`)
		t.Logf("after the resize:\n%s", out[before:])
		for _, line := range strings.Split(out[before:], "\n") {
			if i := strings.LastIndex(line, "\x1b[J"); i >= 0 {
				line = line[i+3:]
			}
			line = strings.TrimRight(line, "\r")
			if bar.MatchString(line) && len([]rune(line)) > 70 {
				t.Errorf("a bar line wider than 70 columns after the resize: %q", line)
				break
			}
		}
	})
}
