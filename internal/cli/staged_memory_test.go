package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/neardup/neardup/internal/executor"
	"github.com/neardup/neardup/internal/staged"
)

// TestStagedSignSpills: sign tasks that spill their keys and ids in
// several sorted runs (a --task-spill of 24 KB, which the scatter and
// join tasks take too) give dedup's outputs and counts, byte for byte; the
// duplicate ids are counted from the spilled id runs.
func TestStagedSignSpills(t *testing.T) {
	stagedEnv(t)
	dir := t.TempDir()
	gen := genFiles(t, dir, 8, 700, 400)
	checkStagedMatchesWith(t, dir, "spill", nil, []string{"--task-spill", "24KB"}, gen, 3)
	var meta struct{ Runs int }
	b, err := os.ReadFile(filepath.Join(dir, "spill-3", "work", "sign", "00000", "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil || meta.Runs < 2 {
		t.Errorf("sign task 0 wrote %d runs (%v), want several: it did not spill", meta.Runs, err)
	}
}

// TestStagedTaskMemory: a job on an evaluation set with a small
// --task-memory, its sign tasks made to spill, records every
// task's peak RSS in WORK/usage.json (each task's own VmHWM, which it
// leaves in the executor's PeakEnv file), and
// each is within the budget plus the program's fixed size: the peak RSS
// of a task that does nothing (its marker exists), which is the binary's
// pages and the runtime's start (about 80 MB for neardup, outside the
// garbage collector's limit that --task-memory sets), plus 16 MB for
// what the limit does not count (goroutine stacks, the collector's own
// overshoot). The outputs are dedup's, byte for byte.
func TestStagedTaskMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("under the race detector every task's memory is several times its own (shadow memory)")
	}
	stagedEnv(t)
	dir := t.TempDir()
	in := sharedData(t, "tang-editions")
	if in == "" {
		t.Skip("evaluation data not present")
	}
	const budget = 96 << 20
	checkStagedMatchesWith(t, dir, "tang", nil, []string{"--task-memory", fmt.Sprint(budget), "--task-spill", "256KB"}, []string{in}, 2)
	work := filepath.Join(dir, "tang-2", "work")
	var u usageFile
	b, err := os.ReadFile(filepath.Join(work, usageName))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &u); err != nil {
		t.Fatal(err)
	}
	// The program alone: a task whose marker exists loads the plan and
	// ends. Its peak is read as the executor reads a task's.
	idle := taskPeakRSS(t, work, staged.StageFinish, 0)
	limit := budget + idle + 16<<20
	if stages := planStages(t, work); len(u.Stages) != len(stages) || len(u.Tasks) != 2*len(stages)-2 {
		t.Fatalf("usage.json has %d stages and %d tasks: %s", len(u.Stages), len(u.Tasks), b)
	}
	for _, task := range u.Tasks {
		if task.PeakRSS <= 0 || task.PeakRSS > limit {
			t.Errorf("task %s %d: peak RSS %d MB, want within %d MB (--task-memory %d MB and the program's %d MB and 16 MB)", task.Stage, task.Index, task.PeakRSS>>20, limit>>20, budget>>20, idle>>20)
		}
	}
	var meta struct{ Runs int }
	if b, err := os.ReadFile(filepath.Join(work, "sign", "00000", "meta.json")); err != nil || json.Unmarshal(b, &meta) != nil || meta.Runs < 2 {
		t.Errorf("sign task 0 wrote %d runs (%v): it did not spill", meta.Runs, err)
	}
	t.Logf("program alone %d MB; largest per stage: %+v", idle>>20, u.Stages)
}

// taskPeakRSS runs task i of stage in work as the executor does (this
// test binary as the neardup command) and returns its peak RSS.
func taskPeakRSS(t *testing.T, work, stage string, i int) int64 {
	t.Helper()
	peak := filepath.Join(t.TempDir(), "peak")
	cmd := exec.Command(os.Args[0], "task", "--work", work, stage, fmt.Sprint(i))
	cmd.Env = append(os.Environ(), taskChildEnv+"=1", executor.PeakEnv+"="+peak)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("task %s %d: %v: %s", stage, i, err, out)
	}
	b, err := os.ReadFile(peak)
	if err != nil {
		t.Fatalf("task %s %d wrote no peak: %v", stage, i, err)
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// sharedData is the evaluation set name's documents
// (shared/data/NAME/docs.jsonl.gz in the nearest parent directory that
// has it), or "" when it is not there.
func sharedData(t *testing.T, name string) string {
	t.Helper()
	d, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(d, "shared", "data", name, "docs.jsonl.gz")
		if _, err := os.Stat(p); err == nil {
			return p
		}
		if filepath.Dir(d) == d {
			return ""
		}
		d = filepath.Dir(d)
	}
}
