package sysinfo

import (
	"runtime"
	"testing"
	"time"
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

// TestThreadCPU: a thread's CPU time grows with work on it and not with
// sleep.
func TestThreadCPU(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("not read on", runtime.GOOS)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	a, ok := ThreadCPU()
	if !ok {
		t.Fatal("ThreadCPU() not ok")
	}
	time.Sleep(200 * time.Millisecond)
	b, _ := ThreadCPU()
	if b-a > 50*time.Millisecond {
		t.Errorf("a 200 ms sleep used %v of the thread's CPU", b-a)
	}
	x, spin := 0, time.Now()
	for time.Since(spin) < 100*time.Millisecond {
		for i := range 100_000 {
			x ^= i * i
		}
	}
	c, _ := ThreadCPU()
	if c-b <= 0 {
		t.Errorf("100 ms of work used %v of the thread's CPU (x %d)", c-b, x)
	}
}
