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
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SlurmOptions configures a Slurm executor. The zero value submits to the
// cluster's default partition, runs each stage's Args as they are, and
// writes the tasks' logs under ./neardup-logs.
//
// Every sbatch flag also has an environment variable that sbatch reads
// itself (SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_QOS, SBATCH_TIMELIMIT,
// SBATCH_CONSTRAINT, ...: man sbatch, "INPUT ENVIRONMENT VARIABLES"), so a
// site's usual settings need no option here; flags given on the command
// line (ours and SbatchArgs) win over them.
type SlurmOptions struct {
	// Partition is sbatch --partition ("": the cluster's default, or
	// SBATCH_PARTITION).
	Partition string
	// SbatchArgs are more sbatch flags for every stage, such as
	// "--account=proj", "--time=2:00:00" or "--constraint=ssd". They come
	// after the executor's own flags, so "--mem=..." here overrides the
	// Stage's Memory.
	SbatchArgs []string
	// Binary, when set, replaces Args[0] of every stage: the path of the
	// neardup binary as the compute nodes see it, when it differs from the
	// submitting machine's (the caller passes os.Executable() in Args[0]).
	Binary string
	// LogDir is the folder of the tasks' logs, one file per task named
	// STAGE-JOBID_INDEX.log (sbatch --output=LogDir/STAGE-%A_%a.log, the
	// task's standard output and error together). It must be on a file
	// system the compute nodes share with the submitting machine. Default
	// "neardup-logs" in the current directory; a relative path is made
	// absolute by NewSlurm.
	LogDir string
	// JobName prefixes the jobs' names: PREFIX-STAGE (default "neardup").
	JobName string
	// MaxRunning caps the tasks of one stage running at once (the %K of
	// sbatch --array); 0 leaves it to the cluster.
	MaxRunning int
	// Poll is the interval between two squeue calls while following the
	// jobs (default 5 s; every call is one RPC to slurmctld).
	Poll time.Duration
	// Progress, when set, receives a line per job submitted (its id, its
	// tasks, where their logs go) and a line each time the count of a
	// stage's finished tasks changes.
	Progress io.Writer
}

// Slurm runs stages as Slurm job arrays: one sbatch --array per stage, each
// depending (afterok) on the one before, then follows them with squeue
// until all tasks completed or one failed. A Slurm is never changed after
// NewSlurm: Runs may use one at once.
//
// Run submits every stage at once, before the first runs, so the cluster
// starts each stage as soon as the one before it finished, whether or not
// the submitting process still follows. It asks each stage's Done before
// submitting anything (so Done must answer false, not an error, for a task
// whose stage before it has not run yet), and leaves the tasks already done out of the array (a stage
// with all its tasks done is not submitted, and the next one depends on the
// last one submitted): a rerun of a failed or interrupted job resubmits
// only what is left. Jobs depend with --kill-on-invalid-dep=yes, so when a
// task fails Slurm cancels the later stages even if nobody follows.
//
// Following needs the state of finished tasks: squeue shows them for
// MinJobAge seconds after they end (300 by default), far longer than the
// poll interval; a task gone from squeue before its end was seen is looked
// up with sacct, when the cluster keeps accounting.
//
// When a task fails, Run cancels (scancel) the jobs it submitted and
// returns a *SlurmTaskError. When ctx is cancelled (Ctrl-C), Run cancels
// them too and returns an error wrapping ctx.Err().
type Slurm struct {
	opts SlurmOptions
}

// NewSlurm returns a Slurm executor after checking its options and that
// sbatch, squeue and scancel are on PATH.
func NewSlurm(opts SlurmOptions) (*Slurm, error) {
	for _, c := range []string{"sbatch", "squeue", "scancel"} {
		if _, err := exec.LookPath(c); err != nil {
			return nil, fmt.Errorf("executor: slurm: %s not found on PATH: run on a machine that can submit Slurm jobs (a login node)", c)
		}
	}
	if opts.MaxRunning < 0 {
		return nil, fmt.Errorf("executor: slurm: MaxRunning %d is negative", opts.MaxRunning)
	}
	if opts.Poll < 0 {
		return nil, fmt.Errorf("executor: slurm: Poll %v is negative", opts.Poll)
	}
	if opts.Poll == 0 {
		opts.Poll = 5 * time.Second
	}
	if opts.JobName == "" {
		opts.JobName = "neardup"
	}
	if opts.LogDir == "" {
		opts.LogDir = "neardup-logs"
	}
	dir, err := filepath.Abs(opts.LogDir)
	if err != nil {
		return nil, fmt.Errorf("executor: slurm: log folder %s: %w", opts.LogDir, err)
	}
	opts.LogDir = dir
	opts.SbatchArgs = slices.Clone(opts.SbatchArgs)
	return &Slurm{opts: opts}, nil
}

// SlurmTaskError is the error of a Slurm task that did not complete.
type SlurmTaskError struct {
	Stage string // the stage's Name
	Index int    // the task's index in the stage
	JobID string // the array job's id
	State string // its Slurm state: FAILED, OUT_OF_MEMORY, TIMEOUT, CANCELLED, NODE_FAIL, ...
	Task  string // what it worked on (Stage.Describe), or ""
	Log   string // the path of the task's log
	Tail  string // the last lines of the log, when it could be read
}

func (e *SlurmTaskError) Error() string {
	msg := fmt.Sprintf("slurm: stage %s: task %d (Slurm job %s_%d) ended %s", e.Stage, e.Index, e.JobID, e.Index, e.State)
	if e.Task != "" {
		msg += "; " + e.Task
	}
	msg += "; its log: " + e.Log
	if e.Tail != "" {
		msg += "\n" + e.Tail
	}
	return msg
}

// slurmJob is one submitted stage.
type slurmJob struct {
	order int // the stage's position among the submitted ones
	stage Stage
	id    string
	todo  []int // the array's indexes
}

func (j *slurmJob) log(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("%s-%s_%d.log", j.stage.Name, j.id, i))
}

// stageNameRE is what a stage's name may hold: it goes into job names and
// file names.
var stageNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// Run implements Executor.
func (s *Slurm) Run(ctx context.Context, stages []Stage) error {
	for _, st := range stages {
		if !stageNameRE.MatchString(st.Name) {
			return fmt.Errorf("executor: slurm: stage name %q: want letters, digits, '_', '.', '-'", st.Name)
		}
		if st.Tasks < 0 {
			return fmt.Errorf("executor: slurm: stage %s: %d tasks", st.Name, st.Tasks)
		}
		if len(st.Args) == 0 {
			return fmt.Errorf("executor: slurm: stage %s: no command", st.Name)
		}
	}
	if err := os.MkdirAll(s.opts.LogDir, 0o755); err != nil {
		return fmt.Errorf("executor: slurm: log folder: %w", err)
	}
	var jobs []*slurmJob
	prev := ""
	for _, st := range stages {
		var todo []int
		for i := range st.Tasks {
			if st.Done != nil {
				done, err := st.Done(ctx, i)
				if err != nil {
					s.cancel(jobs)
					return fmt.Errorf("executor: slurm: stage %s: task %d: %w", st.Name, i, err)
				}
				if done {
					continue
				}
			}
			todo = append(todo, i)
		}
		if len(todo) == 0 {
			continue
		}
		j := &slurmJob{order: len(jobs), stage: st, todo: todo}
		id, err := s.submit(ctx, j, prev)
		if err != nil {
			s.cancel(jobs)
			return fmt.Errorf("executor: slurm: stage %s: %w", st.Name, err)
		}
		j.id = id
		jobs = append(jobs, j)
		prev = id
		s.progress("slurm: stage %s: job %s, %d of %d tasks (%s), logs %s\n", st.Name, id, len(todo), st.Tasks,
			slurmArray(todo), filepath.Join(s.opts.LogDir, st.Name+"-"+id+"_INDEX.log"))
	}
	if len(jobs) == 0 {
		return nil
	}
	if err := s.follow(ctx, jobs); err != nil {
		s.cancel(jobs)
		return err
	}
	return nil
}

func (s *Slurm) progress(format string, args ...any) {
	if s.opts.Progress != nil {
		fmt.Fprintf(s.opts.Progress, format, args...)
	}
}

// sbatchArgs returns the flags of sbatch for job j after the job dep ("":
// none).
func (s *Slurm) sbatchArgs(j *slurmJob, dep string) []string {
	array := slurmArray(j.todo)
	if s.opts.MaxRunning > 0 {
		array += "%" + strconv.Itoa(s.opts.MaxRunning)
	}
	args := []string{
		"--parsable",
		"--job-name=" + s.opts.JobName + "-" + j.stage.Name,
		"--array=" + array,
		"--output=" + filepath.Join(s.opts.LogDir, j.stage.Name+"-%A_%a.log"),
		"--open-mode=append",
	}
	if dep != "" {
		args = append(args, "--dependency=afterok:"+dep, "--kill-on-invalid-dep=yes")
	}
	if j.stage.Memory > 0 {
		args = append(args, "--mem="+strconv.FormatInt((j.stage.Memory+1<<20-1)>>20, 10)+"M")
	}
	if j.stage.CPUs > 0 {
		args = append(args, "--cpus-per-task="+strconv.Itoa(j.stage.CPUs))
	}
	if s.opts.Partition != "" {
		args = append(args, "--partition="+s.opts.Partition)
	}
	return append(args, s.opts.SbatchArgs...)
}

// batchScript returns the batch script of a stage: its command, each
// argument single-quoted for sh. sbatch reads it from standard input and
// keeps a copy, so it needs no file the nodes can see.
func (s *Slurm) batchScript(st Stage) string {
	args := slices.Clone(st.Args)
	if s.opts.Binary != "" {
		args[0] = s.opts.Binary
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	fmt.Fprintf(&b, "# neardup stage %s: task $SLURM_ARRAY_TASK_ID of %d\n", st.Name, st.Tasks)
	b.WriteString("exec " + shellJoin(args) + "\n")
	return b.String()
}

// slurmArray writes sorted indexes as sbatch --array wants them: ranges
// joined by commas ("0-3,5,7-9").
func slurmArray(idx []int) string {
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// slurmParseArray reads an array index or an index list as squeue's %K
// writes it ("7", "0-3,7", "4-9%2", "0-15:4"); nil when it cannot.
func slurmParseArray(spec string) []int {
	spec, _, _ = strings.Cut(strings.Trim(spec, "[]"), "%")
	var idx []int
	for r := range strings.SplitSeq(spec, ",") {
		r, stepStr, hasStep := strings.Cut(r, ":")
		lo, hi, isRange := strings.Cut(r, "-")
		if !isRange {
			hi = lo
		}
		a, err1 := strconv.Atoi(lo)
		b, err2 := strconv.Atoi(hi)
		step := 1
		var err3 error
		if hasStep {
			step, err3 = strconv.Atoi(stepStr)
		}
		if err1 != nil || err2 != nil || err3 != nil || a < 0 || b < a || step < 1 || b-a > 1<<20 {
			return nil
		}
		for i := a; i <= b; i += step {
			idx = append(idx, i)
		}
	}
	return idx
}

// jobIDRE is sbatch --parsable's answer: the job id, then ";CLUSTER" on a
// federation.
var jobIDRE = regexp.MustCompile(`^([0-9]+)(;\S+)?$`)

// submit runs sbatch for job j and returns the job's id.
func (s *Slurm) submit(ctx context.Context, j *slurmJob, dep string) (string, error) {
	args := s.sbatchArgs(j, dep)
	cmd := exec.CommandContext(ctx, "sbatch", args...)
	cmd.Stdin = strings.NewReader(s.batchScript(j.stage))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("sbatch: %w", ctx.Err())
		}
		return "", fmt.Errorf("sbatch %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	out := strings.TrimSpace(stdout.String())
	m := jobIDRE.FindStringSubmatch(out)
	if m == nil {
		return "", fmt.Errorf("sbatch %s: answered %q, want a job id", strings.Join(args, " "), out)
	}
	return m[1], nil
}

// slurmTerminal tells whether a Slurm job state is final.
func slurmTerminal(state string) bool {
	switch state {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
		"BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "REVOKED", "SPECIAL_EXIT":
		return true
	}
	return false
}

// slurmTask names one task of a submitted job.
type slurmTask struct {
	job   string
	index int
}

// maxQueryErrors is how many squeue calls in a row may fail (slurmctld
// restarting, a timeout under load) before Run gives up.
const maxQueryErrors = 10

// follow polls squeue until every task of jobs completed, one failed or
// ctx is done.
func (s *Slurm) follow(ctx context.Context, jobs []*slurmJob) error {
	left := map[slurmTask]*slurmJob{}
	for _, j := range jobs {
		for _, i := range j.todo {
			left[slurmTask{j.id, i}] = j
		}
	}
	missing := map[slurmTask]int{}  // polls in a row a task was not listed
	finished := map[*slurmJob]int{} // tasks completed, as last reported
	errs := 0
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		states, err := s.query(ctx, jobs)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("executor: slurm: interrupted, jobs %s cancelled: %w", slurmIDs(jobs), ctx.Err())
			}
			if errs++; errs >= maxQueryErrors {
				return fmt.Errorf("executor: slurm: following jobs %s: %w", slurmIDs(jobs), err)
			}
		} else {
			errs = 0
			var failed []*SlurmTaskError
			for task, j := range left {
				state, ok := states[task]
				if !ok {
					if missing[task]++; missing[task] < 3 {
						continue
					}
					if state, err = s.sacct(ctx, task); err != nil {
						return fmt.Errorf("executor: slurm: stage %s: task %d (Slurm job %s_%d) is gone from squeue before it was seen to end, and %w; its log: %s",
							j.stage.Name, task.index, task.job, task.index, err, j.log(s.opts.LogDir, task.index))
					}
				}
				delete(missing, task)
				if !slurmTerminal(state) {
					continue
				}
				if state == "COMPLETED" {
					delete(left, task)
					continue
				}
				failed = append(failed, &SlurmTaskError{Stage: j.stage.Name, Index: task.index, JobID: j.id,
					State: state, Task: j.stage.describe(task.index), Log: j.log(s.opts.LogDir, task.index)})
			}
			if len(failed) > 0 {
				// The first stage's failure is the cause: Slurm cancels
				// the stages after it.
				order := map[string]int{}
				for _, j := range jobs {
					order[j.id] = j.order
				}
				slices.SortFunc(failed, func(a, b *SlurmTaskError) int {
					if c := order[a.JobID] - order[b.JobID]; c != 0 {
						return c
					}
					return a.Index - b.Index
				})
				e := failed[0]
				e.Tail = slurmLogTail(e.Log)
				return e
			}
			if s.opts.Progress != nil {
				now := map[*slurmJob]int{}
				for _, j := range left {
					now[j]++
				}
				for _, j := range jobs {
					if n := len(j.todo) - now[j]; n != finished[j] {
						finished[j] = n
						s.progress("slurm: stage %s: %d of %d tasks completed\n", j.stage.Name, n, len(j.todo))
					}
				}
			}
			if len(left) == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("executor: slurm: interrupted, jobs %s cancelled: %w", slurmIDs(jobs), ctx.Err())
		case <-t.C:
		}
	}
}

// query returns the state of every listed task of jobs that squeue knows.
func (s *Slurm) query(ctx context.Context, jobs []*slurmJob) (map[slurmTask]string, error) {
	cmd := exec.CommandContext(ctx, "squeue", "--noheader", "--array", "--states=all",
		"--jobs="+slurmIDs(jobs), "--format=%F|%K|%T")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("squeue: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	states := map[slurmTask]string{}
	for line := range strings.Lines(stdout.String()) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) != 3 {
			continue
		}
		// squeue --array lists one task a line, but a Slurm that folds
		// pending tasks into one line ("4-9%2") is understood too.
		for _, i := range slurmParseArray(f[1]) {
			states[slurmTask{f[0], i}] = f[2]
		}
	}
	return states, nil
}

// sacct returns a task's state from Slurm's accounting.
func (s *Slurm) sacct(ctx context.Context, task slurmTask) (string, error) {
	id := task.job + "_" + strconv.Itoa(task.index)
	cmd := exec.CommandContext(ctx, "sacct", "--noheader", "--parsable2", "--allocations",
		"--jobs="+id, "--format=JobID,State")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("sacct does not know it (%v: %s): raise the cluster's MinJobAge or enable accounting",
			err, strings.TrimSpace(stderr.String()))
	}
	for line := range strings.Lines(stdout.String()) {
		f := strings.Split(strings.TrimSpace(line), "|")
		if len(f) == 2 && f[0] == id {
			// "CANCELLED by 0": the state is the first word.
			state, _, _ := strings.Cut(f[1], " ")
			return state, nil
		}
	}
	return "", errors.New("sacct does not know it: raise the cluster's MinJobAge or enable accounting")
}

// cancel scancels jobs, with a context of its own: the caller's may be
// the one that was cancelled.
func (s *Slurm) cancel(jobs []*slurmJob) {
	if len(jobs) == 0 {
		return
	}
	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	// Errors are not reported: the jobs may have ended already, and the
	// caller returns the error that made it cancel.
	exec.CommandContext(ctx, "scancel", ids...).Run()
}

func slurmIDs(jobs []*slurmJob) string {
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		ids[i] = j.id
	}
	return strings.Join(ids, ",")
}

// slurmLogTail returns the last lines of a task's log (at most 10 lines
// and 2 kB), or "" when it cannot be read.
func slurmLogTail(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	const max = 2048
	if st, err := f.Stat(); err == nil && st.Size() > max {
		f.Seek(st.Size()-max, 0)
	}
	buf := make([]byte, max)
	n, _ := f.Read(buf)
	lines := strings.Split(strings.TrimRight(string(buf[:n]), "\n"), "\n")
	if len(lines) > 10 {
		lines = lines[len(lines)-10:]
	}
	return strings.Join(lines, "\n")
}
