//go:build unix

package executor

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// rusagePeak is a finished child's ru_maxrss in bytes (0 if unknown):
// Linux and most systems count it in KiB, macOS in bytes.
func rusagePeak(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return maxrssBytes(ru)
}

func maxrssBytes(ru *syscall.Rusage) int64 {
	if runtime.GOOS == "darwin" {
		return ru.Maxrss
	}
	return ru.Maxrss * 1024
}

// selfUsage is this process's CPU times and ru_maxrss in bytes
// (getrusage RUSAGE_SELF; zeros if it fails).
func selfUsage() (user, sys time.Duration, maxrss int64) {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0, 0, 0
	}
	return time.Duration(ru.Utime.Nano()), time.Duration(ru.Stime.Nano()), maxrssBytes(&ru)
}
