package cli

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vbauerster/mpb/v8/decor"
)

// TestProgressETA: no estimate of the time left before the rate means
// something (the 6 s run that said "~13m46s left" after its first
// document), nor past the estimate; then the average rate's.
func TestProgressETA(t *testing.T) {
	for _, c := range []struct {
		n, est int64
		d      time.Duration
		want   time.Duration // 0: none
	}{
		{1, 2992, 300 * time.Millisecond, 0}, // the first document
		{1000, 3000, time.Second, 0},         // a third done, but in 1 s
		{100, 3000, 10 * time.Second, 0},     // 3%: too early
		{150, 3000, 3 * time.Second, 57 * time.Second},
		{1500, 3000, 3 * time.Second, 3 * time.Second},
		{3000, 3000, 6 * time.Second, 0}, // at the estimate
		{3024, 2992, 6 * time.Second, 0}, // past it
		{10, 0, 6 * time.Second, 0},      // no estimate
	} {
		got, ok := progressETA(c.n, c.est, c.d)
		if ok != (c.want > 0) || got != c.want {
			t.Errorf("progressETA(%d, %d, %v) = %v, %v; want %v", c.n, c.est, c.d, got, ok, c.want)
		}
	}
}

// TestCountDecor: the total shown is the stage's estimate, not the bar's
// total, which runs ahead of a count that passed the estimate.
func TestCountDecor(t *testing.T) {
	for _, c := range []struct {
		s    decor.Statistics
		est  int64
		want string
	}{
		{decor.Statistics{Current: 1, Total: 2992}, 2992, "1 / ~2992 docs"},
		{decor.Statistics{Current: 3024, Total: 3326}, 2992, "3024 docs (~2992 estimated)"},
		{decor.Statistics{Current: 3024, Total: 3024, Completed: true}, 2992, "3024 docs"},
		{decor.Statistics{Current: 5}, 0, "5 docs"},
	} {
		if got := countDecor(c.s, c.est); got != c.want {
			t.Errorf("countDecor(%+v, %d) = %q, want %q", c.s, c.est, got, c.want)
		}
	}
}

// TestLineProgress: where standard error is not a terminal, a line comes
// every progressLineEvery with the stage, counts, rate and time elapsed;
// a run shorter than that writes nothing.
func TestLineProgress(t *testing.T) {
	defer func(d time.Duration) { progressLineEvery = d }(progressLineEvery)
	progressLineEvery = time.Hour // a run shorter than the period, however slow this machine
	var quick lockedBuffer
	p := newLineProgress(&quick)
	p.Stage("read, sketch, find", 100)
	p.Advance(100, 0)
	p.Done()
	if quick.String() != "" {
		t.Errorf("a short run wrote progress: %q", quick.String())
	}

	progressLineEvery = 20 * time.Millisecond
	var out lockedBuffer
	p = newLineProgress(&out)
	p.Stage("read, sketch, find", 3000)
	p.Advance(1500, 0)
	re := regexp.MustCompile(`(?m)^neardup: read, sketch, find: 1,500 / ~3,000 docs \(50%\), [\d,]+ docs/s; \d+s elapsed$`)
	within(t, time.Minute, "the first progress line", func() {
		for !re.MatchString(out.String()) {
			time.Sleep(10 * time.Millisecond)
		}
	})
	p.Stage("write", 0)
	p.Advance(7, 0)
	within(t, time.Minute, "the write stage's line", func() {
		for !strings.Contains(out.String(), "neardup: write: 7 docs, ") {
			time.Sleep(10 * time.Millisecond)
		}
	})
	within(t, time.Minute, "Done", p.Done)
	within(t, time.Minute, "the writing goroutine's end", func() { <-p.stopped })
	n := len(out.String())
	time.Sleep(5 * progressLineEvery)
	if len(out.String()) != n {
		t.Errorf("lines after Done: %q", out.String()[n:])
	}
}

// TestProgressLine: the ETA appears once it means something.
func TestProgressLine(t *testing.T) {
	got := progressLine("sign", 150, 3000, 3*time.Second, 4*time.Second)
	if want := "sign: 150 / ~3,000 docs (5%), 50 docs/s, about 57s left; 4s elapsed"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
	got = progressLine("sign", 3024, 2992, 6*time.Second, 6*time.Second)
	if want := "sign: 3,024 docs (~2,992 estimated), 504 docs/s; 6s elapsed"; got != want {
		t.Errorf("progressLine = %q, want %q", got, want)
	}
}
