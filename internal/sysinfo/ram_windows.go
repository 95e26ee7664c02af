package sysinfo

import (
	"unsafe"

	"golang.org/x/sys/windows"
)

// memoryStatusEx is Win32's MEMORYSTATUSEX.
type memoryStatusEx struct {
	length, memoryLoad                                 uint32
	totalPhys, availPhys, totalPageFile, availPageFile uint64
	totalVirtual, availVirtual, availExtendedVirtual   uint64
}

var globalMemoryStatusEx = windows.NewLazySystemDLL("kernel32.dll").NewProc("GlobalMemoryStatusEx")

// TotalRAM returns the machine's physical memory in bytes, or 0.
func TotalRAM() int64 {
	m := memoryStatusEx{length: uint32(unsafe.Sizeof(memoryStatusEx{}))}
	if ok, _, _ := globalMemoryStatusEx.Call(uintptr(unsafe.Pointer(&m))); ok == 0 {
		return 0
	}
	return int64(m.totalPhys)
}
