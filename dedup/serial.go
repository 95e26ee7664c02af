package dedup

import (
	"runtime"
	"sync"
	"time"

	"github.com/neardup/neardup/internal/sysinfo"
)

// The serial work of a run (Stats.SerialParts): the work that only one
// goroutine can do, so that more cores do not shorten it. Each part is
// timed on its goroutine in that thread's CPU time, where the system
// gives it (the goroutine is held on its thread meanwhile), so that a
// busy machine does not inflate it with the time spent waiting for a
// core; elsewhere in wall time.

// serialSpan is one stretch of serial work on the calling goroutine.
type serialSpan struct {
	wall time.Time
	cpu  time.Duration
	ok   bool // cpu is the thread's
}

// startSerial starts a span; the caller must call stop on the same
// goroutine.
func startSerial() serialSpan {
	runtime.LockOSThread()
	cpu, ok := sysinfo.ThreadCPU()
	return serialSpan{wall: time.Now(), cpu: cpu, ok: ok}
}

// stop ends the span and returns its time.
func (s serialSpan) stop() time.Duration {
	defer runtime.UnlockOSThread()
	if s.ok {
		if c, ok := sysinfo.ThreadCPU(); ok {
			return c - s.cpu
		}
	}
	return time.Since(s.wall)
}

// serialParts adds up the serial work of a run by part, in the order the
// parts first appear; safe for concurrent use.
type serialParts struct {
	mu    sync.Mutex
	parts []SerialPart
}

// add adds d to the part named name.
func (p *serialParts) add(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for k := range p.parts {
		if p.parts[k].Name == name {
			p.parts[k].Seconds += d.Seconds()
			return
		}
	}
	p.parts = append(p.parts, SerialPart{Name: name, Seconds: d.Seconds()})
}

// report returns the parts and their sum.
func (p *serialParts) report() ([]SerialPart, float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sum float64
	for _, x := range p.parts {
		sum += x.Seconds
	}
	return append([]SerialPart(nil), p.parts...), sum
}

// A SerialPart is one part of a run's serial work (Stats.SerialParts).
type SerialPart struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}
