//go:build unix

package sysinfo

import (
	"syscall"
	"time"
)

// CPUSeconds returns the process's user plus system CPU time so far, or 0.
func CPUSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
