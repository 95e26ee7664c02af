//go:build !linux && !darwin && !windows

package sysinfo

// TotalRAM returns 0: this system is not asked.
func TotalRAM() int64 { return 0 }
