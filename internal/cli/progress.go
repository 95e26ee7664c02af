package cli

import (
	"io"
	"os"

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

// barProgress draws one bar per stage with documents, rate, input size and
// ETA (when the document count was estimated).
type barProgress struct {
	p   *mpb.Progress
	bar *mpb.Bar
	est int64
	n   int64
}

func newProgress(w io.Writer, quiet bool) dedup.Progress {
	if quiet || !isTerminal(w) {
		return nil
	}
	return &barProgress{p: mpb.New(mpb.WithOutput(w), mpb.WithWidth(40))}
}

func (b *barProgress) Stage(name string, estimated int64) {
	b.finishBar()
	b.est, b.n = estimated, 0
	b.bar = b.p.AddBar(max(estimated, 0),
		mpb.PrependDecorators(
			decor.Name(name, decor.WC{C: decor.DindentRight | decor.DextraSpace, W: 20}),
			decor.CountersNoUnit("%d / ~%d docs"),
		),
		mpb.AppendDecorators(
			decor.AverageSpeed(0, " %.0f docs/s "),
			decor.OnComplete(decor.AverageETA(decor.ET_STYLE_GO), "done"),
		),
	)
}

func (b *barProgress) Advance(docs int, _ int64) {
	b.n += int64(docs)
	if b.n >= b.est { // the estimate was low: grow the total before the bar completes
		b.est = b.n + b.n/10
		b.bar.SetTotal(b.est, false)
	}
	b.bar.IncrBy(docs)
}

func (b *barProgress) finishBar() {
	if b.bar != nil {
		b.bar.SetTotal(-1, true) // complete at the current count
		b.bar = nil
	}
}

func (b *barProgress) Done() {
	b.finishBar()
	b.p.Wait()
}
