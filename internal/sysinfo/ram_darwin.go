package sysinfo

import "golang.org/x/sys/unix"

// TotalRAM returns the machine's physical memory in bytes, or 0.
func TotalRAM() int64 {
	n, err := unix.SysctlUint64("hw.memsize")
	if err != nil {
		return 0
	}
	return int64(n)
}
