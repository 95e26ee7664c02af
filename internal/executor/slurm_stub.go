package executor

import "errors"

// SlurmOptions configures the Slurm executor.
//
// This file is a placeholder on the staged2 branch: the Slurm executor
// (slurm.go, with its own NewSlurm and SlurmOptions) replaces it at merge.
type SlurmOptions struct {
	// Extra are more sbatch arguments (--partition=..., --account=...).
	Extra []string
	// LogDir is where the tasks' logs go.
	LogDir string
}

// NewSlurm returns the Slurm executor.
func NewSlurm(opts SlurmOptions) (Executor, error) {
	return nil, errors.New("--executor slurm: not built yet in this neardup (the Slurm executor is on its way); use --executor local or print")
}
