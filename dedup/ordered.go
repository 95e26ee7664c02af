package dedup

import (
	"io"
	"sync"
)

// encodeOrdered writes n items to w in order, encoded in chunks of chunk
// items on up to workers goroutines: encode appends items [lo, hi) to dst
// and returns it, and must be safe to call concurrently. The chunks are
// written on the calling goroutine, in order, so the bytes do not depend
// on workers; at most 2*workers chunks are in memory.
func encodeOrdered(w io.Writer, n, chunk, workers int, encode func(dst []byte, lo, hi int) []byte) error {
	chunks := (n + chunk - 1) / chunk
	if workers = min(workers, chunks); workers <= 1 {
		var buf []byte
		for lo := 0; lo < n; lo += chunk {
			buf = encode(buf[:0], lo, min(lo+chunk, n))
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	}
	type job struct {
		lo, hi int
		out    chan []byte // cap 1: a worker never waits on it
	}
	jobs := make(chan job)
	order := make(chan chan []byte, 2*workers)
	free := make(chan []byte, 3*workers)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				var buf []byte
				select {
				case buf = <-free:
				default:
				}
				j.out <- encode(buf[:0], j.lo, j.hi)
			}
		}()
	}
	go func() { // hands out the chunks, in order
		defer close(order)
		defer close(jobs)
		for lo := 0; lo < n; lo += chunk {
			j := job{lo: lo, hi: min(lo+chunk, n), out: make(chan []byte, 1)}
			select {
			case jobs <- j:
			case <-done:
				return
			}
			order <- j.out // never blocks for long: the writer drains it
		}
	}()
	var err error
	for out := range order {
		b := <-out
		if _, err = w.Write(b); err != nil {
			close(done)
			break
		}
		select {
		case free <- b[:0]:
		default:
		}
	}
	for out := range order { // after an error: every chunk handed out is encoded
		<-out
	}
	wg.Wait()
	return err
}
