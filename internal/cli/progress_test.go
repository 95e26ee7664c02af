package cli

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/vbauerster/mpb/v8"
)

// lockedBuffer is a bytes.Buffer safe for the bar library's goroutine.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// blockedWriter never returns from Write until release is closed: a
// terminal that does not read.
type blockedWriter struct{ release chan struct{} }

func (w blockedWriter) Write(p []byte) (int, error) {
	<-w.release
	return len(p), nil
}

// within fails the test when f does not return within d.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { f(); close(done) }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// Stages whose estimate is high, low, exact or unknown: every bar ends at
// the real count and Done returns (it waited forever in mpb's Wait when an
// estimate was high).
func TestProgressEstimates(t *testing.T) {
	var out lockedBuffer
	b := newBarProgress(context.Background(), &out, mpb.WithAutoRefresh(), mpb.WithWidth(120))
	for _, s := range []struct {
		name   string
		est, n int64
	}{{"high", 1000, 300}, {"low", 100, 700}, {"exact", 512, 512}, {"unknown", 0, 40}} {
		b.Stage(s.name, s.est)
		for i := int64(0); i < s.n; i += 10 {
			b.Advance(10, 0)
		}
		time.Sleep(2 * progressTick) // the bar is drawn while the stage runs
	}
	within(t, progressTimeout+time.Second, "Done", b.Done)
	got := out.String()
	for _, want := range []string{`high +300 docs .*done`, `low +700 docs .*done`, `exact +520 docs .*done`, `unknown +40 docs .*done`} {
		if !regexp.MustCompile(want).MatchString(got) {
			t.Errorf("no %q in:\n%s", want, got)
		}
	}
	// A frame drawn before the stage's count passed its estimate shows it
	// ("low 0 / ~100 docs" when the bar is drawn before the first
	// Advance, as on a busy machine); one past it must not.
	for _, m := range regexp.MustCompile(`low +(\d+) / ~100 docs`).FindAllStringSubmatch(got, -1) {
		if n, _ := strconv.Atoi(m[1]); n > 100 {
			t.Errorf("a count above a low estimate showed the estimate (%s):\n%s", m[0], got)
			break
		}
	}
}

// An interrupted run aborts its bar instead of completing it.
func TestProgressInterrupted(t *testing.T) {
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	b := newBarProgress(ctx, &out, mpb.WithAutoRefresh(), mpb.WithWidth(120))
	b.Stage("read", 1000)
	b.Advance(100, 0)
	time.Sleep(2 * progressTick)
	cancel()
	within(t, progressTimeout+time.Second, "Done", b.Done)
	if got := out.String(); regexp.MustCompile(`read .*done`).MatchString(got) {
		t.Errorf("an interrupted stage's bar says done:\n%s", got)
	}
}

// The run reaches Done some time after the interruption (its workers wind
// down first; on a busy machine, many ticks later): the last frame still
// says interrupted. The library's context used to end as soon as the run's
// did, and once the library had drawn its last frame and stopped, Done's
// abort was never drawn (TestPTY/ctrl-c/dedup-read failed so once in
// .ci/run, 2026-11-28). That order was not reproduced here, even under
// load: this guards the late Done, the PTY test the whole path.
func TestProgressInterruptedLateDone(t *testing.T) {
	var out lockedBuffer
	ctx, cancel := context.WithCancel(context.Background())
	b := newBarProgress(ctx, &out, mpb.WithAutoRefresh(), mpb.WithWidth(120))
	b.Stage("read", 1000)
	b.Advance(100, 0)
	time.Sleep(2 * progressTick)
	cancel()
	time.Sleep(5 * progressTick)
	within(t, progressTimeout+time.Second, "Done", b.Done)
	if got := out.String(); !regexp.MustCompile(`read .*interrupted`).MatchString(got) {
		t.Errorf("the interrupted stage's bar does not say so:\n%s", got)
	}
}

// A terminal that never reads blocks the bar library; the work must not
// wait for it, and Done gives up after progressTimeout.
func TestProgressNeverBlocks(t *testing.T) {
	w := blockedWriter{release: make(chan struct{})}
	defer close(w.release)
	b := newBarProgress(context.Background(), w, mpb.WithAutoRefresh())
	within(t, 5*time.Second, "Stage and Advance", func() {
		for i := range 50 {
			b.Stage("stage", 100)
			for range 10 {
				b.Advance(10, 0)
			}
			if i%10 == 0 {
				time.Sleep(progressTick) // let the drawing goroutine block
			}
		}
	})
	start := time.Now()
	within(t, progressTimeout+2*time.Second, "Done", b.Done)
	if d := time.Since(start); d < progressTimeout/2 {
		t.Logf("Done returned after %v: the library was not blocked after all", d)
	}
}

// TestProgressUnsizedTerminal: a terminal of no size (script(1) with no
// terminal around it) gets progress lines, since the bar library draws
// nothing there; once sized, it gets bars.
func TestProgressUnsizedTerminal(t *testing.T) {
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Fatalf("no pseudo-terminal: %v", err)
	}
	defer ptmx.Close()
	defer tty.Close()
	go io.Copy(io.Discard, ptmx) // whatever is drawn
	p := newProgress(context.Background(), tty, false)
	if _, ok := p.(*lineProgress); !ok {
		t.Errorf("an unsized terminal gets %T, want *lineProgress", p)
	}
	p.Done()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 24, Cols: 80}); err != nil {
		t.Fatal(err)
	}
	p = newProgress(context.Background(), tty, false)
	if _, ok := p.(*barProgress); !ok {
		t.Errorf("an 80-column terminal gets %T, want *barProgress", p)
	}
	p.Done()
}
