package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/neardup/neardup/internal/executor"
	"github.com/neardup/neardup/internal/objstore"
	"github.com/neardup/neardup/internal/staged"
)

// usageName is the record of what each task used, in the work folder.
const usageName = "usage.json"

// taskUsage is one task's line of usage.json.
type taskUsage struct {
	Stage       string  `json:"stage"`
	Index       int     `json:"index"`
	PeakRSS     int64   `json:"peak_rss_bytes"`
	UserSeconds float64 `json:"user_seconds"`
	SysSeconds  float64 `json:"sys_seconds"`
}

// stageUsage sums a stage's tasks.
type stageUsage struct {
	Stage      string  `json:"stage"`
	Tasks      int     `json:"tasks"` // tasks recorded
	LargestRSS int64   `json:"largest_peak_rss_bytes"`
	Largest    int     `json:"largest_task"`
	CPUSeconds float64 `json:"cpu_seconds"` // user+sys of its tasks
}

// newTaskUsage is task i of stage's line, from what it used.
func newTaskUsage(stage string, i int, u executor.TaskUsage) taskUsage {
	return taskUsage{Stage: stage, Index: i, PeakRSS: u.PeakRSS, UserSeconds: u.User.Seconds(), SysSeconds: u.Sys.Seconds()}
}

// usageFile is usage.json: every task of the job that recorded what it
// used, with its peak RSS (executor.TaskUsage: the task's own VmHWM) and
// CPU (a task run again replaces its line), and per stage the largest
// peak RSS and the CPU of all its tasks. The local executor reports its
// tasks as they end; every task also records its own as it ends
// (staged.Job.Usage, usage/STAGE-NNNNN.json in the work folder), which
// is all there is under Slurm or another scheduler. --stats is not the place: its
// counts are dedup's, and finish writes it before the executor has seen
// finish end.
type usageFile struct {
	TaskMemory int64        `json:"task_memory"`
	Stages     []stageUsage `json:"stages"`
	Tasks      []taskUsage  `json:"tasks"`
}

type usageKey struct {
	stage string
	index int
}

// usageLog gathers the tasks' usage as the executor reports it.
type usageLog struct {
	mu    sync.Mutex
	tasks map[usageKey]taskUsage
}

func (u *usageLog) add(stage string, i int, tu executor.TaskUsage) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.tasks == nil {
		u.tasks = map[usageKey]taskUsage{}
	}
	u.tasks[usageKey{stage, i}] = newTaskUsage(stage, i, tu)
}

// save writes usage.json to work: the tasks the executor reported, then
// those that recorded their own in the work folder, then those of an
// earlier usage.json; with lines, a line a stage to it (its largest task
// and its CPU).
func (u *usageLog) save(ctx context.Context, work *objstore.Folder, plan *staged.Plan, lines io.Writer) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	all := map[usageKey]taskUsage{}
	own, err := work.List(ctx, staged.UsagePrefix)
	if err != nil {
		return err
	}
	for _, name := range own {
		b, err := work.ReadAll(ctx, name)
		if err != nil {
			return err
		}
		var t taskUsage
		if json.Unmarshal(b, &t) == nil && t.Stage != "" {
			all[usageKey{t.Stage, t.Index}] = t
		}
	}
	var old usageFile
	b, err := work.ReadAll(ctx, usageName)
	switch {
	case err == nil:
		if json.Unmarshal(b, &old) == nil {
			for _, t := range old.Tasks {
				k := usageKey{t.Stage, t.Index}
				if _, ok := all[k]; !ok {
					all[k] = t
				}
			}
		}
	case !errors.Is(err, objstore.ErrNotExist):
		return err
	}
	for k, t := range u.tasks {
		all[k] = t
	}
	f := usageFile{TaskMemory: plan.TaskMemory}
	for _, t := range all {
		f.Tasks = append(f.Tasks, t)
	}
	order := func(stage string) int { return slices.Index(staged.StageNames, stage) }
	slices.SortFunc(f.Tasks, func(a, b taskUsage) int {
		if c := order(a.Stage) - order(b.Stage); c != 0 {
			return c
		}
		return a.Index - b.Index
	})
	for _, t := range f.Tasks {
		if len(f.Stages) == 0 || f.Stages[len(f.Stages)-1].Stage != t.Stage {
			f.Stages = append(f.Stages, stageUsage{Stage: t.Stage, Largest: -1})
		}
		s := &f.Stages[len(f.Stages)-1]
		s.Tasks++
		s.CPUSeconds += t.UserSeconds + t.SysSeconds
		if t.PeakRSS > s.LargestRSS {
			s.LargestRSS, s.Largest = t.PeakRSS, t.Index
		}
	}
	if lines != nil {
		for _, s := range f.Stages {
			fmt.Fprintf(lines, "stage %s: largest task %d, peak RSS %d MB; CPU %.1fs in %s\n", s.Stage, s.Largest, s.LargestRSS>>20, s.CPUSeconds, plural(s.Tasks, "task"))
		}
	}
	b, err = json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	return work.PutBytes(ctx, usageName, append(b, '\n'))
}
