//go:build !unix && !windows

package sysinfo

// CPUSeconds returns 0: this system is not asked.
func CPUSeconds() float64 { return 0 }
