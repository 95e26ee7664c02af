package sysinfo

import "golang.org/x/sys/windows"

// CPUSeconds returns the process's user plus system CPU time so far, or 0.
func CPUSeconds() float64 {
	var c, e, k, u windows.Filetime
	if err := windows.GetProcessTimes(windows.CurrentProcess(), &c, &e, &k, &u); err != nil {
		return 0
	}
	// Filetimes count 100 ns intervals.
	ticks := func(f windows.Filetime) float64 { return float64(uint64(f.HighDateTime)<<32 | uint64(f.LowDateTime)) }
	return (ticks(k) + ticks(u)) / 1e7
}
