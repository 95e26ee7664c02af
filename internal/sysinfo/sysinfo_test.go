package sysinfo

import (
	"runtime"
	"testing"
)

// TestReadings: on the systems CI runs, both readings are plausible.
func TestReadings(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" && runtime.GOOS != "windows" {
		t.Skip("not read on", runtime.GOOS)
	}
	if r := TotalRAM(); r < 64<<20 || r > 1<<50 {
		t.Errorf("TotalRAM() = %d", r)
	}
	x := 0
	for i := range 20_000_000 {
		x ^= i * i
	}
	if c := CPUSeconds(); c <= 0 || c > 1e6 {
		t.Errorf("CPUSeconds() = %v (x %d)", c, x)
	}
}
