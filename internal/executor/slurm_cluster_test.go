package executor

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/neardup/neardup/internal/slurmtest"
)

// TestSlurmCluster runs stages of sh -c commands on a real Slurm cluster
// of two nodes (internal/slurmtest): the order of the stages, a failing
// task's error and log, a rerun that resubmits only the tasks not done,
// and cancelling.
func TestSlurmCluster(t *testing.T) {
	c := slurmtest.Start(t)
	start := time.Now()

	// Each task appends "STAGE INDEX NODE" to runs and leaves a marker
	// file STAGE-INDEX; a task of "two" checks that every marker of "one"
	// is there first, and task 1 of "two" fails (exit 7) until the file
	// "fixed" exists.
	work := t.TempDir()
	task := func(stage, body string) []string {
		return []string{"sh", "-c", `cd "$1" && echo "` + stage + ` $SLURM_ARRAY_TASK_ID $SLURMD_NODENAME" >> runs && ` +
			body + ` && touch ` + stage + `-$SLURM_ARRAY_TASK_ID`, "sh", work}
	}
	done := func(stage string) func(context.Context, int) (bool, error) {
		return func(_ context.Context, i int) (bool, error) {
			_, err := os.Stat(filepath.Join(work, stage+"-"+strconv.Itoa(i)))
			return err == nil, nil
		}
	}
	stages := []Stage{
		{Name: "one", Tasks: 3, Args: task("one", "sleep 0.5"), Done: done("one"), Memory: 64 << 20, CPUs: 1},
		{Name: "two", Tasks: 3, Args: task("two", `test -f one-0 && test -f one-1 && test -f one-2 && `+
			`{ [ "$SLURM_ARRAY_TASK_ID" != 1 ] || [ -f fixed ] || { echo "task 1 is broken" >&2; exit 7; }; }`), Done: done("two")},
	}
	logs := filepath.Join(t.TempDir(), "logs")
	s, err := NewSlurm(SlurmOptions{LogDir: logs, Poll: 200 * time.Millisecond, JobName: "t", Progress: testWriter{t}})
	if err != nil {
		t.Fatal(err)
	}
	runs := func() map[string]int {
		b, _ := os.ReadFile(filepath.Join(work, "runs"))
		n := map[string]int{}
		for line := range strings.Lines(string(b)) {
			f := strings.Fields(line)
			if len(f) != 3 || (f[2] != "n1" && f[2] != "n2") {
				t.Errorf("runs line %q: want STAGE INDEX n1|n2", line)
				continue
			}
			n[f[0]+"-"+f[1]]++
		}
		return n
	}

	err = s.Run(context.Background(), stages)
	var te *SlurmTaskError
	if !errors.As(err, &te) {
		t.Fatalf("Run = %v, want the failure of two's task 1\n%s", err, c.Logs())
	}
	if te.Stage != "two" || te.Index != 1 || te.State != "FAILED" || !strings.Contains(te.Tail, "task 1 is broken") {
		t.Errorf("error %+v, want stage two, task 1, FAILED, its log ending in \"task 1 is broken\"", *te)
	}
	if want := filepath.Join(logs, "two-"+te.JobID+"_1.log"); te.Log != want {
		t.Errorf("log %s, want %s", te.Log, want)
	}
	// Tasks 0 and 2 of "two" ran once or, on a loaded machine, were still
	// pending when task 1 failed and Run cancelled the job; one that
	// started as the cancel came may have written its line and not its
	// marker, and then runs again in the rerun.
	got := runs()
	for k, n := range map[string]int{"one-0": 1, "one-1": 1, "one-2": 1, "two-1": 1} {
		if got[k] != n {
			t.Errorf("first run: %s ran %d times, want %d (all: %v)", k, got[k], n, got)
		}
	}
	for _, k := range []string{"two-0", "two-2"} {
		if got[k] > 1 {
			t.Errorf("first run: %s ran %d times, want at most once (all: %v)", k, got[k], got)
		}
	}
	t.Logf("first run (fails) after %v", time.Since(start).Round(time.Millisecond))

	// The rerun submits what is not done: task 1 of "two" (and any task
	// of "two" the failure cancelled).
	if err := os.WriteFile(filepath.Join(work, "fixed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), stages); err != nil {
		t.Fatalf("rerun: %v\n%s", err, c.Logs())
	}
	got = runs()
	for k, n := range map[string]int{"one-0": 1, "one-1": 1, "one-2": 1, "two-1": 2} {
		if got[k] != n {
			t.Errorf("after the rerun: %s ran %d times, want %d (all: %v)", k, got[k], n, got)
		}
	}
	for _, k := range []string{"two-0", "two-2"} {
		if _, err := os.Stat(filepath.Join(work, k)); err != nil || got[k] < 1 || got[k] > 2 {
			t.Errorf("after the rerun: %s ran %d times (marker: %v), want once or twice and done", k, got[k], err)
		}
	}
	t.Logf("rerun after %v", time.Since(start).Round(time.Millisecond))

	// kill -9 of a running task (its batch script's process) once the
	// other task of its stage completed: the run fails naming it; the
	// rerun runs it alone and completes.
	pidFile := filepath.Join(work, "pid-killme-0")
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(filepath.Join(work, "killme-1")); err != nil {
				continue
			}
			if b, err := os.ReadFile(pidFile); err == nil && strings.HasSuffix(string(b), "\n") {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					syscall.Kill(pid, syscall.SIGKILL)
				}
				return
			}
		}
	}()
	killme := []Stage{{Name: "killme", Tasks: 2, Done: done("killme"),
		Args: task("killme", `echo $$ > pid-killme-$SLURM_ARRAY_TASK_ID && { [ "$SLURM_ARRAY_TASK_ID" = 1 ] || [ -f killed ] || sleep 30; }`)}}
	err = s.Run(context.Background(), killme)
	if !errors.As(err, &te) || te.Stage != "killme" || te.Index != 0 || te.State != "FAILED" {
		t.Fatalf("Run with task 0 killed = %v, want a SlurmTaskError of killme's task 0, FAILED\n%s", err, c.Logs())
	}
	if err := os.WriteFile(filepath.Join(work, "killed"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(context.Background(), killme); err != nil {
		t.Fatalf("rerun after the kill: %v\n%s", err, c.Logs())
	}
	if got := runs(); got["killme-0"] != 2 || got["killme-1"] != 1 {
		t.Errorf("killme ran %d and %d times, want 2 and 1", got["killme-0"], got["killme-1"])
	}
	t.Logf("killed and rerun after %v", time.Since(start).Round(time.Millisecond))

	// Cancelling: the running task and the stage after it are cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if runs()["sleep-0"] > 0 {
				break
			}
		}
		cancel()
	}()
	slow := []Stage{
		{Name: "sleep", Tasks: 1, Args: task("sleep", "sleep 60")},
		{Name: "after", Tasks: 1, Args: task("after", "true")},
	}
	err = s.Run(ctx, slow)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Run = %v, want context.Canceled", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		out, err := exec.Command("squeue", "--noheader", "--array", "--states=all", "--name=t-sleep,t-after", "--format=%T").Output()
		if err != nil {
			t.Fatalf("squeue: %v", err)
		}
		states := strings.Fields(string(out))
		slices.Sort(states)
		if slices.Equal(states, []string{"CANCELLED", "CANCELLED"}) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after cancelling: states %v, want both CANCELLED", states)
		}
	}
	if n := runs()["after-0"]; n != 0 {
		t.Errorf("the stage after a cancelled one ran %d times", n)
	}
	t.Logf("cancelled after %v", time.Since(start).Round(time.Millisecond))
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
