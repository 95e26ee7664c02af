package sysinfo

import "syscall"

// TotalRAM returns the machine's physical memory in bytes, or 0.
func TotalRAM() int64 {
	var si syscall.Sysinfo_t
	if err := syscall.Sysinfo(&si); err != nil {
		return 0
	}
	return int64(si.Totalram) * int64(si.Unit)
}
