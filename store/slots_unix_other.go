//go:build unix && !linux

package store

// adviseHuge does nothing outside Linux.
func adviseHuge([]byte) {}
