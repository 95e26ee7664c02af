package corpus

import (
	"io"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// framedZstd compresses a stream as consecutive zstd frames of
// zstdFrameLen bytes of input each (the last shorter), compressed on up to
// GOMAXPROCS goroutines (at most zstdEncoders) and written in order (issue
// 25: one zstd stream compresses on one goroutine, which bounded the write
// stage of a run on many cores). Concatenated frames are one valid zstd
// stream: every decoder reads them as the whole input. The bytes depend only on
// the input, not on the number of goroutines. A frame starts without the
// history of the one before, which costs a fraction of a percent of the
// size at 4 MiB a frame.
type framedZstd struct {
	w       io.Writer
	buf     []byte
	queue   chan chan []byte // the frames in order, each when it is done
	done    chan error
	encs    chan *zstd.Encoder
	free    chan []byte // frames written, for the next output
	ins     chan []byte // frames' input, compressed, for the next input
	started bool
	closed  bool
}

// zstdFrameLen is the input of one frame.
const zstdFrameLen = 4 << 20

// zstdEncoders bounds the frames compressed at once. Each encoder holds
// about 17 MB (its tables and history, beside the frame's input and
// output). The kept records of the 1M bench run take 6.5 CPU-s to
// compress on the 2-core machine: with 4 encoders, a 16-core run's write
// stage compressed them on a quarter of its cores (docs/benchmarks.md,
// issue 25, session 12).
const zstdEncoders = 8

func newFramedZstd(w io.Writer) *framedZstd {
	n := min(runtime.GOMAXPROCS(0), zstdEncoders)
	z := &framedZstd{w: w, queue: make(chan chan []byte, n), done: make(chan error, 1),
		encs: make(chan *zstd.Encoder, n), free: make(chan []byte, n+1), ins: make(chan []byte, n+1)}
	return z
}

func (z *framedZstd) start() error {
	z.started = true
	for range cap(z.encs) {
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			return err
		}
		z.encs <- e
	}
	go func() { // writes the frames in order
		var err error
		for c := range z.queue {
			f := <-c
			if err == nil {
				_, err = z.w.Write(f)
			}
			select {
			case z.free <- f[:0]:
			default:
			}
		}
		z.done <- err
	}()
	return nil
}

func (z *framedZstd) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if z.buf == nil {
			// A buffer used before: a new one costs the writing
			// goroutine its zeroing and page faults.
			select {
			case z.buf = <-z.ins:
			default:
				z.buf = make([]byte, 0, zstdFrameLen)
			}
		}
		c := min(len(p), zstdFrameLen-len(z.buf))
		z.buf = append(z.buf, p[:c]...)
		p = p[c:]
		if len(z.buf) == zstdFrameLen {
			if err := z.frame(); err != nil {
				return n - len(p), err
			}
		}
	}
	return n, nil
}

// frame sends the buffered input to be compressed as the next frame.
func (z *framedZstd) frame() error {
	if !z.started {
		if err := z.start(); err != nil {
			return err
		}
	}
	in := z.buf
	z.buf = nil
	c := make(chan []byte, 1)
	z.queue <- c // in order; blocks while n frames are in flight
	e := <-z.encs
	var dst []byte
	select {
	case dst = <-z.free:
	default:
	}
	go func() {
		out := e.EncodeAll(in, dst)
		z.encs <- e
		select {
		case z.ins <- in[:0]:
		default:
		}
		c <- out
	}()
	return nil
}

// Close compresses what is buffered, waits for every frame to be written
// and returns the first write error.
func (z *framedZstd) Close() error {
	if z.closed {
		return nil
	}
	z.closed = true
	if len(z.buf) > 0 || !z.started {
		// An empty input is one empty frame, as a zstd stream writes.
		if err := z.frame(); err != nil {
			return err
		}
	}
	close(z.queue)
	return <-z.done
}
