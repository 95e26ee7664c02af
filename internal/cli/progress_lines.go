package cli

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progressLineEvery is how often lineProgress writes a line; the first
// comes after one period, so a short run writes none.
var progressLineEvery = 5 * time.Second

// lineProgress is progress for a standard error that is not a terminal
// (a log file, a batch job): a line every progressLineEvery with the
// stage, documents, rate and an estimated time left, and nothing for a run
// shorter than that. Like barProgress, Stage and Advance only record
// counts; one goroutine of its own writes, and Done does not wait for a
// writer that blocks longer than progressTimeout.
type lineProgress struct {
	w io.Writer

	mu    sync.Mutex
	stage stageCount
	begun time.Time // the run's start

	done    chan struct{}
	once    sync.Once
	stopped chan struct{}
}

func newLineProgress(w io.Writer) *lineProgress {
	p := &lineProgress{w: w, begun: time.Now(), done: make(chan struct{}), stopped: make(chan struct{})}
	// The period is read here, not on the goroutine, which may first run
	// after a test has changed progressLineEvery for the next one.
	go p.write(progressLineEvery)
	return p
}

func (p *lineProgress) Stage(name string, estimated int64) {
	p.mu.Lock()
	p.stage = stageCount{name: name, est: max(estimated, 0), start: time.Now()}
	p.mu.Unlock()
}

func (p *lineProgress) Advance(docs int, _ int64) {
	p.mu.Lock()
	p.stage.n += int64(docs)
	p.mu.Unlock()
}

func (p *lineProgress) Done() {
	p.once.Do(func() { close(p.done) })
	t := time.NewTimer(progressTimeout)
	defer t.Stop()
	select {
	case <-p.stopped:
	case <-t.C: // a writer that blocks: the run matters more
	}
}

func (p *lineProgress) write(every time.Duration) {
	defer close(p.stopped)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-tick.C:
		}
		p.mu.Lock()
		s := p.stage
		p.mu.Unlock()
		if s.name == "" {
			continue
		}
		now := time.Now()
		fmt.Fprintf(p.w, "neardup: %s\n", progressLine(s.name, s.n, s.est, now.Sub(s.start), now.Sub(p.begun)))
	}
}

// progressLine is one line of lineProgress: "STAGE: N / ~EST docs (P%),
// R docs/s, about T left; E elapsed", with no rate while docsRate has
// none to give (no document yet) and no estimate of the time left while
// progressETA has none.
func progressLine(stage string, n, est int64, inStage, elapsed time.Duration) string {
	line := fmt.Sprintf("%s: %s docs", stage, groupInt(n))
	if est > 0 && n <= est {
		line = fmt.Sprintf("%s: %s / ~%s docs (%d%%)", stage, groupInt(n), groupInt(est), 100*n/est)
	} else if est > 0 {
		line += fmt.Sprintf(" (~%s estimated)", groupInt(est))
	}
	if r := docsRate(n, inStage); r != "" {
		line += ", " + r
	}
	if eta, ok := progressETA(n, est, inStage); ok {
		line += fmt.Sprintf(", about %s left", eta)
	}
	return line + fmt.Sprintf("; %s elapsed", elapsed.Round(time.Second))
}

// progressETA estimates the time left of a stage that has done n of about
// est documents in d, at its average rate so far. It gives none before the
// rate means something: before 2 seconds and 5% of the estimate (the first
// batch carries the start-up, which once gave "~13m46s left" for a 6 s
// run), nor once the count has passed the estimate.
func progressETA(n, est int64, d time.Duration) (time.Duration, bool) {
	if est <= 0 || n >= est || n <= 0 || d < 2*time.Second || n*20 < est {
		return 0, false
	}
	eta := time.Duration(float64(est-n) / float64(n) * float64(d))
	return max(eta.Round(time.Second), time.Second), true
}

// groupInt is number for an int64.
func groupInt(n int64) string { return number(int(n)) }
