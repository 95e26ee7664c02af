package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"
	"golang.org/x/term"

	"github.com/neardup/neardup/dedup"
)

// isTerminal reports whether w is a terminal (isatty, not merely a
// character device: /dev/null is one too): progress bars are drawn only
// there, never in pipes, files, /dev/null or CI logs.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// hasWidth reports whether the terminal w says how wide it is. A terminal
// of no size (a pseudo-terminal nobody sized: script(1) without a
// terminal around it, some CI runners and editors) gets no bars from the
// bar library, not even one frame, so it gets progress lines instead.
func hasWidth(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	width, _, err := term.GetSize(int(f.Fd()))
	return err == nil && width > 0
}

// Timing of the bars: how often the drawing goroutine passes the counts
// on, and how long Done waits for the bar library before abandoning it.
const (
	progressTick    = 100 * time.Millisecond
	progressTimeout = 2 * time.Second
)

// progressPace slows every Advance of the stage progressPaceStage (of
// every stage when empty) by this much. It is zero except in the binary
// the pseudo-terminal tests build (progress_pace.go, build tag ptytest),
// where it makes a stage last long enough to be interrupted or resized.
var (
	progressPace      time.Duration
	progressPaceStage string
)

// barProgress draws one bar per stage with documents, rate and ETA.
//
// The pipeline's calls (Stage, Advance) only record counts under a mutex:
// they never wait for the bar library, whose calls block while it draws
// (on a terminal that does not read, for instance). One goroutine of its
// own (draw) passes the counts on to the bars every progressTick. Done
// completes the bars (or aborts them when ctx was cancelled) and waits for
// the library at most progressTimeout, then abandons it: a run always ends.
type barProgress struct {
	ctx context.Context
	w   io.Writer
	p   *mpb.Progress

	mu     sync.Mutex
	stages []stageCount // every stage started, the last one running

	done    chan struct{} // closed by Done
	once    sync.Once
	stopped chan struct{} // closed when draw returns
}

// stageCount is one stage: its name, its estimated and its real count,
// when it started and when it ended (in ns after its start; 0 while it
// runs). The bar's decorators read end from the library's goroutine.
type stageCount struct {
	name   string
	est, n int64
	start  time.Time
	end    *atomic.Int64
}

// ended records that the last stage ended now.
func (b *barProgress) endStage() {
	if k := len(b.stages); k > 0 {
		s := &b.stages[k-1]
		s.end.CompareAndSwap(0, int64(max(time.Since(s.start), 1)))
	}
}

// newProgress returns bars drawn on w when w is a terminal that has a
// width, a line every few seconds when it is not (lineProgress: a log
// file, a batch job, a terminal of no size), or nil (no progress) when
// quiet.
func newProgress(ctx context.Context, w io.Writer, quiet bool) dedup.Progress {
	if quiet {
		return nil
	}
	if !isTerminal(w) || !hasWidth(w) {
		return newLineProgress(w)
	}
	return newBarProgress(ctx, w)
}

func newBarProgress(ctx context.Context, w io.Writer, opts ...mpb.ContainerOption) *barProgress {
	b := &barProgress{ctx: ctx, w: w, done: make(chan struct{}), stopped: make(chan struct{})}
	// The library's own context ends progressTimeout after the run's, so
	// that a drawing that blocks cannot outlive an interrupted run; not at
	// once, since the library draws a last frame and stops when its context
	// ends, and Done, which comes when the run's workers have wound down
	// (late on a busy machine), would then abort the bars unseen: the last
	// frame said nothing of the interruption (TestPTY/ctrl-c/dedup-read
	// failed so in .ci/run, 2026-11-28). The cursor goes back to the first
	// column at once.
	lctx, cancel := context.WithCancel(context.Background())
	b.p = mpb.NewWithContext(lctx, append([]mpb.ContainerOption{mpb.WithOutput(w), mpb.WithWidth(40)}, opts...)...)
	go b.draw()
	go func() {
		select {
		case <-ctx.Done():
			b.firstColumn()
			t := time.NewTimer(progressTimeout)
			select {
			case <-b.stopped:
			case <-t.C:
			}
			t.Stop()
		case <-b.stopped:
		}
		cancel()
	}()
	return b
}

// firstColumn moves the cursor back to the first column after an
// interruption. The terminal echoed ^C where the cursor was, at the start
// of the line below the bars; the library's next frame moves the cursor
// up from that column and would leave the echo's two columns of the bar
// line before the redrawn name ("reread, sketch, find"). The library
// writes each frame with one call, so this lands between frames; it is
// written as soon as the run is cancelled, before the library's context
// ends (it then draws a last frame), and again before the bars are
// aborted.
func (b *barProgress) firstColumn() { fmt.Fprint(b.w, "\r") }

func (b *barProgress) Stage(name string, estimated int64) {
	b.mu.Lock()
	b.endStage()
	b.stages = append(b.stages, stageCount{name: name, est: max(estimated, 0), start: time.Now(), end: new(atomic.Int64)})
	b.mu.Unlock()
}

func (b *barProgress) Advance(docs int, _ int64) {
	b.mu.Lock()
	name := ""
	if k := len(b.stages); k > 0 {
		b.stages[k-1].n += int64(docs)
		name = b.stages[k-1].name
	}
	b.mu.Unlock()
	if progressPace > 0 && (progressPaceStage == "" || progressPaceStage == name) {
		time.Sleep(progressPace)
	}
}

// Done ends the bars; it returns within progressTimeout whatever the bar
// library does.
func (b *barProgress) Done() {
	b.once.Do(func() {
		b.mu.Lock()
		b.endStage()
		b.mu.Unlock()
		close(b.done)
	})
	t := time.NewTimer(progressTimeout)
	defer t.Stop()
	select {
	case <-b.stopped:
	case <-t.C:
		// The library is stuck (writing to a terminal that does not
		// read, or a bug of its own): abandon it, the run matters more.
		go b.p.Shutdown()
	}
}

// draw runs until Done: it creates a bar for each new stage and passes the
// counts on.
func (b *barProgress) draw() {
	defer close(b.stopped)
	var bars []*mpb.Bar
	var ended []bool // the bar was completed or aborted
	tick := time.NewTicker(progressTick)
	defer tick.Stop()
	for final := false; ; {
		select {
		case <-tick.C:
		case <-b.done:
			final = true
		}
		b.mu.Lock()
		stages := append([]stageCount(nil), b.stages...)
		b.mu.Unlock()
		if final && b.ctx.Err() != nil {
			b.firstColumn()
		}
		for i, s := range stages {
			if i == len(bars) {
				bar, err := b.addBar(s)
				if err != nil { // the library was shut down: no more bars
					return
				}
				bars, ended = append(bars, bar), append(ended, false)
			}
			bar := bars[i]
			if i < len(stages)-1 || final {
				// A stage that ended: complete its bar at the real count,
				// whatever the estimate was; or abort it when the run was
				// interrupted.
				if ended[i] {
					continue
				}
				ended[i] = true
				bar.SetCurrent(s.n)
				if final && b.ctx.Err() != nil {
					bar.Abort(false)
				} else {
					bar.SetTotal(-1, true)
				}
				continue
			}
			// The running stage. The bar was made with no total, so that
			// neither a count above the estimate completes it nor SetTotal
			// is ignored: a low estimate grows ahead of the count.
			total := s.est
			if s.n >= total && total > 0 {
				total = s.n + s.n/10
			}
			bar.SetTotal(total, false)
			bar.SetCurrent(s.n)
		}
		if final {
			b.p.Wait()
			return
		}
	}
}

// addBar adds a bar with no total (it is set as counts come) for stage
// st; it fails once the library was shut down (Done gave up on it, or the
// run's context ended).
func (b *barProgress) addBar(st stageCount) (*mpb.Bar, error) {
	// The rate and ETA come from the stage's own clock, not the bar's: a
	// bar is made up to progressTick after its stage started, or at Done
	// for a stage shorter than that.
	rate := func(s decor.Statistics) string {
		d := time.Since(st.start)
		if e := st.end.Load(); e > 0 {
			d = time.Duration(e)
		}
		if r := docsRate(s.Current, d); r != "" {
			return " " + r
		}
		return "" // no document yet, or a stage under a millisecond: "0 docs/s" before
	}
	return b.p.Add(0, mpb.BarStyle().Build(),
		mpb.PrependDecorators(
			decor.Name(st.name, decor.WC{C: decor.DindentRight | decor.DextraSpace, W: 20}),
			decor.Any(func(s decor.Statistics) string { return countDecor(s, st.est) }),
		),
		mpb.AppendDecorators(decor.Any(func(s decor.Statistics) string { return rateDecor(s, rate(s), st.est, time.Since(st.start)) })),
	)
}

// rateDecor is a bar's rate (rate: " R docs/s" or "") and its end, or
// the time left to its stage, which has run for inStage of about est
// documents.
func rateDecor(s decor.Statistics, rate string, est int64, inStage time.Duration) string {
	switch {
	case s.Aborted:
		return rate + "  interrupted"
	case s.Completed:
		return rate + "  done"
	}
	if eta, ok := progressETA(s.Current, est, inStage); ok {
		return fmt.Sprintf("%s  ~%s left", rate, eta)
	}
	return rate
}

// countDecor shows "n / ~est docs" while a stage runs within its
// estimate est, "n docs (~est estimated)" once the count has passed it
// (the bar's own total then runs ahead of the count, and showing it made
// the total jump: "3024 / ~3326"), and "n docs" otherwise.
func countDecor(s decor.Statistics, est int64) string {
	switch {
	case s.Completed || s.Aborted || est <= 0:
		return fmt.Sprintf("%d docs", s.Current)
	case s.Current > est:
		return fmt.Sprintf("%d docs (~%d estimated)", s.Current, est)
	}
	return fmt.Sprintf("%d / ~%d docs", s.Current, est)
}

// startCPUProfile starts --cpuprofile's profile into path ("" for none)
// and returns what stops it and closes the file.
func startCPUProfile(path string) (stop func(), err error) {
	return startRecording(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts --trace's execution trace into path ("" for none) and
// returns what stops it and closes the file.
func startTrace(path string) (stop func(), err error) {
	return startRecording(path, trace.Start, trace.Stop)
}

// startRecording creates path and starts a recording into it with start
// (nothing when path is ""), and returns what stops it and closes the
// file.
func startRecording(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { end(); f.Close() }, nil
}
