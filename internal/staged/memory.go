package staged

import (
	"bytes"
	"os"
	"strconv"
)

// memoryLimit is the garbage collector's limit of a task with budget
// bytes: the budget less what the process holds when the task starts
// (the program's mapped pages, about 70 MB, which the runtime's limit
// does not count), so that the task's resident memory stays within the
// budget; at least half the budget.
func memoryLimit(budget int64) int64 {
	return max(budget-residentBytes(), budget/2)
}

// residentBytes is the process's resident memory, from /proc/self/statm
// (0 where there is none).
func residentBytes() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(string(f[1]), 10, 64)
	if err != nil {
		return 0
	}
	return pages * int64(os.Getpagesize())
}

// limit is the task's memory limit (memoryLimit of the budget), or the
// budget when RunTask did not set it.
func (j *Job) limit() int64 {
	if j.memLimit > 0 {
		return j.memLimit
	}
	return j.Plan.TaskMemory
}
