package executor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Local runs every task as a child process of this one, at most Jobs at
// once, the task index appended to the stage's command as its last
// argument, each task's standard output and error to LogDir/STAGE-NNNNN.log.
// When ctx ends (Ctrl-C) the children are killed. After a task fails no
// other task of its stage starts; those already running finish (their
// work is kept: a rerun skips them).
type Local struct {
	Jobs   int
	LogDir string
	// Progress, when set, gets a line as each stage starts and ends (the
	// end's with the stage's largest peak RSS).
	Progress io.Writer
	// Usage, when set, is called with what each task that ran used, as it
	// ends (from several goroutines at once).
	Usage func(stage string, i int, u TaskUsage)
}

// TaskUsage is what a task's process used: its peak resident set (what
// the task wrote to the PeakEnv file; without one its ru_maxrss, which
// may be the parent's) and its CPU time (rusage).
type TaskUsage struct {
	PeakRSS   int64 // bytes
	User, Sys time.Duration
}

// PeakEnv names the file, in a task's environment, to which the task
// writes its own peak resident set (its VmHWM, in bytes, as decimal text)
// as it ends (WritePeak). The executor prefers it to the child's rusage:
// on Linux a child's ru_maxrss counts the pages of the process that
// started it as well (the parent's memory when it executed the task's
// program), so it reads no smaller than the parent's own peak.
const PeakEnv = "NEARDUP_TASK_PEAK_FILE"

// WritePeak writes this process's peak resident set to the file that
// PeakEnv names, when it names one and the system says (Linux:
// /proc/self/status).
func WritePeak() error {
	path := os.Getenv(PeakEnv)
	if path == "" {
		return nil
	}
	peak := ownPeak()
	if peak <= 0 {
		return nil
	}
	return os.WriteFile(path, []byte(strconv.FormatInt(peak, 10)), 0o644)
}

// OwnUsage is what this process has used so far, for a task to record
// itself whatever runs it: its CPU (getrusage RUSAGE_SELF; zero where
// there is none) and its peak resident set, VmHWM where the system has
// /proc (Linux), else its own ru_maxrss (which on Linux would count the
// pages of the process that started it, as a child's does: see
// PeakEnv).
func OwnUsage() TaskUsage {
	user, sys, maxrss := selfUsage()
	u := TaskUsage{PeakRSS: ownPeak(), User: user, Sys: sys}
	if u.PeakRSS <= 0 {
		u.PeakRSS = maxrss
	}
	return u
}

// ownPeak is VmHWM from /proc/self/status in bytes, 0 where there is none.
func ownPeak() int64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// usageOf reads a finished process's CPU times and peak resident set
// (nil: not known): the peak the task wrote to peakFile when it did, else
// the system's figure for the child (rusagePeak; none on Windows).
func usageOf(ps *os.ProcessState, peakFile string) *TaskUsage {
	if ps == nil {
		return nil
	}
	u := &TaskUsage{PeakRSS: rusagePeak(ps), User: ps.UserTime(), Sys: ps.SystemTime()}
	if b, err := os.ReadFile(peakFile); err == nil {
		if n, err := strconv.ParseInt(string(b), 10, 64); err == nil && n > 0 {
			u.PeakRSS = n
		}
	}
	return u
}

// LogPath is where task i of stage logs.
func (l *Local) LogPath(stage string, i int) string {
	return filepath.Join(l.LogDir, fmt.Sprintf("%s-%05d.log", stage, i))
}

func (l *Local) Run(ctx context.Context, stages []Stage) error {
	if err := os.MkdirAll(l.LogDir, 0o755); err != nil {
		return fmt.Errorf("task logs: %w", err)
	}
	for _, st := range stages {
		if err := l.runStage(ctx, st); err != nil {
			return err
		}
	}
	return nil
}

func (l *Local) runStage(ctx context.Context, st Stage) error {
	if len(st.Args) == 0 {
		return fmt.Errorf("stage %s: no command", st.Name)
	}
	var todo []int
	for i := range st.Tasks {
		if st.Done != nil {
			done, err := st.Done(ctx, i)
			if err != nil {
				return fmt.Errorf("stage %s task %d: %w", st.Name, i, err)
			}
			if done {
				continue
			}
		}
		todo = append(todo, i)
	}
	start := time.Now()
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, "stage %s: %d of %d tasks to run\n", st.Name, len(todo), st.Tasks)
	}
	jobs := max(l.Jobs, 1)
	sem := make(chan struct{}, jobs)
	var mu sync.Mutex
	var first *taskFailure
	var largest TaskUsage // the largest peak RSS, and its task
	largestAt := -1
	var wg sync.WaitGroup
	for _, i := range todo {
		mu.Lock()
		stop := first != nil
		mu.Unlock()
		if stop || ctx.Err() != nil {
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			u, err := l.runTask(ctx, st, i)
			mu.Lock()
			defer mu.Unlock()
			if u != nil && u.PeakRSS > largest.PeakRSS {
				largest, largestAt = *u, i
			}
			if err != nil && (first == nil || i < first.index) {
				first = &taskFailure{index: i, err: err}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	if first != nil {
		return first.err
	}
	if l.Progress != nil {
		fmt.Fprintf(l.Progress, "stage %s: done in %.1fs", st.Name, time.Since(start).Seconds())
		if largestAt >= 0 {
			fmt.Fprintf(l.Progress, "; largest task %d, peak RSS %d MB", largestAt, largest.PeakRSS>>20)
		}
		fmt.Fprintln(l.Progress)
	}
	return nil
}

type taskFailure struct {
	index int
	err   error
}

// runTask runs task i of st and returns what it used (nil when it did
// not start or its rusage is unknown).
func (l *Local) runTask(ctx context.Context, st Stage, i int) (*TaskUsage, error) {
	path := l.LogPath(st.Name, i)
	logf, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("stage %s task %d: log: %w", st.Name, i, err)
	}
	defer logf.Close()
	args := append(append([]string(nil), st.Args[1:]...), strconv.Itoa(i))
	cmd := exec.CommandContext(ctx, st.Args[0], args...)
	// The end of the output is kept in memory too: the log may be on
	// the disk that filled up and failed the task.
	out := &tailWriter{file: logf}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	peakFile := path + ".peak"
	os.Remove(peakFile)
	cmd.Env = append(os.Environ(), PeakEnv+"="+peakFile)
	err = cmd.Run()
	u := usageOf(cmd.ProcessState, peakFile)
	os.Remove(peakFile)
	if u != nil {
		// The log ends with what the task used (after the task's own
		// last line, which a failure reports).
		fmt.Fprintf(logf, "%s task %d used: peak RSS %d KiB, CPU %.2fs user %.2fs sys\n", st.Name, i, u.PeakRSS>>10, u.User.Seconds(), u.Sys.Seconds())
		if l.Usage != nil {
			l.Usage(st.Name, i, *u)
		}
	}
	if err == nil {
		return u, nil
	}
	if ctx.Err() != nil {
		return u, ctx.Err()
	}
	msg := err.Error()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		msg = "exit status " + strconv.Itoa(ee.ExitCode())
	}
	if out.err != nil {
		path += " (incomplete: " + out.err.Error() + ")"
	}
	return u, &TaskFailed{Stage: st.Name, Index: i, Task: st.describe(i), Log: path, Status: msg, Last: out.lastLine()}
}

// TaskFailed is the error of a task that failed.
type TaskFailed struct {
	Stage  string
	Index  int
	Task   string // what it worked on (Stage.Describe), or ""
	Log    string // where its output is
	Status string // how it ended
	Last   string // the last line of its log: its error, as a rule
}

func (e *TaskFailed) Error() string {
	s := fmt.Sprintf("stage %s, task %d failed (%s)", e.Stage, e.Index, e.Status)
	if e.Task != "" {
		s += "; " + e.Task
	}
	s += "; log: " + e.Log
	if e.Last != "" {
		s += "\n  " + e.Last
	}
	return s
}

// tailWriter writes a task's output to its log file and keeps the last
// tailSize bytes of it. A failed write to the file is remembered, not
// returned: the task goes on and its last words are still kept.
type tailWriter struct {
	file *os.File
	err  error // the first failed write to file
	mu   sync.Mutex
	tail []byte
}

const tailSize = 4096

func (w *tailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		if _, err := w.file.Write(p); err != nil {
			w.err = err
		}
	}
	w.tail = append(w.tail, p[max(len(p)-tailSize, 0):]...)
	if len(w.tail) > 2*tailSize {
		w.tail = append(w.tail[:0], w.tail[len(w.tail)-tailSize:]...)
	}
	return len(p), nil
}

// lastLine is the last non-empty line of the output (of its last 4 KiB),
// and the line before it when the last is a "hint: " line: a task's
// error, which names the file and line, is followed by the hint of the
// flag that fixes it, and the failure reports both.
func (w *tailWriter) lastLine() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := bytes.TrimRight(w.tail, "\n")
	k := bytes.LastIndexByte(b, '\n')
	if k >= 0 && bytes.HasPrefix(b[k+1:], []byte("hint: ")) {
		k = bytes.LastIndexByte(b[:k], '\n')
	}
	if k >= 0 {
		b = b[k+1:]
	}
	return strings.ReplaceAll(string(b), "\n", "\n  ")
}
