// Package executor runs the stages of a staged job (neardup dedup
// --executor) on a scheduler: local child processes, Slurm job arrays, or
// nothing at all (print: the commands and a Kubernetes Indexed Job
// manifest for the user's own scheduler).
//
// A stage is an array of independent tasks, "task i of N". Every task of
// a stage runs the same command, `neardup task --work URL STAGE [INDEX]`;
// the executor supplies the index (the last argument for local processes,
// SLURM_ARRAY_TASK_ID under Slurm, JOB_COMPLETION_INDEX under a
// Kubernetes Indexed Job). A stage starts only when every task of the
// stage before it has succeeded. Tasks are idempotent and leave a
// completion marker, so an executor may run a task again after a failure,
// and a rerun of the whole job skips what is done.
package executor

import "context"

// Stage is one array of tasks.
type Stage struct {
	Name  string   // "sign", "bucket", ...: for messages, job names and logs
	Tasks int      // how many tasks, indexes 0..Tasks-1
	Args  []string // the command of every task, program first, without the index
	// Memory is the bytes a task may use (sbatch --mem, a pod's memory
	// limit); CPUs how many cores it uses. Zero means unset.
	Memory int64
	CPUs   int
	// Done reports whether task i already left its completion marker;
	// an executor skips those tasks (nil: run them all).
	Done func(ctx context.Context, i int) (bool, error)
	// Describe says what task i works on (its input shard, the work
	// folder) for the error of a task that failed without saying so
	// itself: killed, out of memory, out of time (nil: nothing).
	Describe func(i int) string
}

// describe is st.Describe(i), or "" without one.
func (st *Stage) describe(i int) string {
	if st.Describe == nil {
		return ""
	}
	return st.Describe(i)
}

// Executor runs stages in order, each after the previous one succeeded.
// Run returns when all have succeeded, or with an error naming the stage,
// the task index and where its log is, when a task failed.
type Executor interface {
	Run(ctx context.Context, stages []Stage) error
}
