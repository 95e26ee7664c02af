package staged

import (
	"bufio"
	"context"
	"io"

	"github.com/neardup/neardup/internal/heapx"
)

// runFile is one sorted run of a sign task's partition, being read.
type runFile struct {
	rd   *bufio.Reader
	c    io.Closer
	name string // its URL, for errors
	base uint32 // the shard's first document in the whole input
	ok   bool   // the run's current entry is read
}

func (f *runFile) Close() error { return f.c.Close() }

// sortedRun is a run reader: next reads its next entry (ok false at the
// end).
type sortedRun interface {
	next() error
	file() *runFile
}

func (f *runFile) file() *runFile { return f }

// mergeRuns opens section sec of the runs of every sign task (runs[s]
// sign task s's packs; off[s] its first document), each read through a
// buffer of bufSize bytes, and hands fn their entries in the order of
// before: the least run, whose current entry is the next.
func mergeRuns[R sortedRun](ctx context.Context, j *Job, runs [][]*packIndex, sec int, off []int64, bufSize int, open func(runFile) R, before func(a, b R) bool, fn func(R) error) error {
	h := heapx.New(make([]R, 0, len(runs)), before)
	defer func() {
		for _, r := range h.Items() {
			r.file().Close()
		}
	}()
	for s, packs := range runs {
		for _, px := range packs {
			rd, err := j.openSection(ctx, px, sec, bufSize)
			if err != nil {
				return err
			}
			r := open(runFile{rd: rd.Reader, c: rd, name: rd.name, base: uint32(off[s])})
			if err := r.next(); err != nil {
				rd.Close()
				return err
			}
			if r.file().ok {
				h.Push(r)
			} else {
				rd.Close()
			}
		}
	}
	for k := 0; h.Len() > 0; k++ {
		r := h.Top()
		if err := fn(r); err != nil {
			return err
		}
		if err := r.next(); err != nil {
			return err
		}
		if r.file().ok {
			h.FixTop()
		} else {
			r.file().Close()
			h.Pop()
		}
		if k%(1<<16) == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}
