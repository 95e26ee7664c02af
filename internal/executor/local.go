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
	// Progress, when set, gets a line as each stage starts and ends.
	Progress io.Writer
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
			if err := l.runTask(ctx, st, i); err != nil {
				mu.Lock()
				if first == nil || i < first.index {
					first = &taskFailure{index: i, err: err}
				}
				mu.Unlock()
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
		fmt.Fprintf(l.Progress, "stage %s: done in %.1fs\n", st.Name, time.Since(start).Seconds())
	}
	return nil
}

type taskFailure struct {
	index int
	err   error
}

func (l *Local) runTask(ctx context.Context, st Stage, i int) error {
	path := l.LogPath(st.Name, i)
	logf, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("stage %s task %d: log: %w", st.Name, i, err)
	}
	defer logf.Close()
	args := append(append([]string(nil), st.Args[1:]...), strconv.Itoa(i))
	cmd := exec.CommandContext(ctx, st.Args[0], args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	msg := err.Error()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() >= 0 {
		msg = "exit status " + strconv.Itoa(ee.ExitCode())
	}
	return &TaskFailed{Stage: st.Name, Index: i, Log: path, Status: msg, Last: lastLine(path)}
}

// TaskFailed is the error of a task that failed.
type TaskFailed struct {
	Stage  string
	Index  int
	Log    string // where its output is
	Status string // how it ended
	Last   string // the last line of its log: its error, as a rule
}

func (e *TaskFailed) Error() string {
	s := fmt.Sprintf("stage %s, task %d failed (%s); log: %s", e.Stage, e.Index, e.Status, e.Log)
	if e.Last != "" {
		s += "\n  " + e.Last
	}
	return s
}

// lastLine is the last non-empty line of a file, at most 4 KiB of it.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return ""
	}
	off := max(st.Size()-4096, 0)
	b := make([]byte, st.Size()-off)
	if _, err := f.ReadAt(b, off); err != nil && !errors.Is(err, io.EOF) {
		return ""
	}
	b = bytes.TrimRight(b, "\n")
	if k := bytes.LastIndexByte(b, '\n'); k >= 0 {
		b = b[k+1:]
	}
	return string(b)
}
