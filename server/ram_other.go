//go:build !linux

package server

// totalRAM returns 0 (unknown) outside Linux.
func totalRAM() int64 { return 0 }
