//go:build linux || darwin

package sysinfo

import (
	"time"

	"golang.org/x/sys/unix"
)

// ThreadCPU returns the CPU time (user plus system) the calling thread has
// used so far; ok is false where the system does not say. The caller must
// hold its goroutine on the thread (runtime.LockOSThread) between two
// readings for their difference to mean anything.
func ThreadCPU() (d time.Duration, ok bool) {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
