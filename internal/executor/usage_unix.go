//go:build unix

package executor

import (
	"os"
	"runtime"
	"syscall"
)

// rusagePeak is a finished child's ru_maxrss in bytes (0 if unknown):
// Linux and most systems count it in KiB, macOS in bytes.
func rusagePeak(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return ru.Maxrss
	}
	return ru.Maxrss * 1024
}
