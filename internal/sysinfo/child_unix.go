//go:build unix

package sysinfo

import (
	"os"
	"runtime"
	"syscall"
)

// ChildUsage returns the CPU seconds (user plus system) and the peak
// resident memory in bytes of a finished child process, or zeros.
func ChildUsage(ps *os.ProcessState) (cpuSeconds float64, peakRSS int64) {
	if ps == nil {
		return 0, 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0, 0
	}
	rss := int64(ru.Maxrss)
	if runtime.GOOS != "darwin" { // darwin counts bytes, the others kilobytes
		rss *= 1024
	}
	return tv(ru.Utime) + tv(ru.Stime), rss
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
