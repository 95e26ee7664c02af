//go:build !unix

package sysinfo

import "os"

// ChildUsage returns the CPU seconds (user plus system) of a finished
// child process; its peak memory is not known here (0).
func ChildUsage(ps *os.ProcessState) (cpuSeconds float64, peakRSS int64) {
	if ps == nil {
		return 0, 0
	}
	return (ps.UserTime() + ps.SystemTime()).Seconds(), 0
}
