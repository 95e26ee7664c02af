package dedup

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
)

// TestEncodeOrdered: the bytes written are those of encoding every item in
// order on one goroutine, for any chunk size and number of workers.
func TestEncodeOrdered(t *testing.T) {
	encode := func(dst []byte, lo, hi int) []byte {
		for i := lo; i < hi; i++ {
			dst = strconv.AppendInt(dst, int64(i), 10)
			dst = append(dst, '\n')
		}
		return dst
	}
	for _, n := range []int{0, 1, 7, 1000} {
		want := encode(nil, 0, n)
		for _, chunk := range []int{1, 3, 64, 5000} {
			for _, workers := range []int{1, 2, 3, 8} {
				var got bytes.Buffer
				if err := encodeOrdered(&got, n, chunk, workers, encode); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got.Bytes(), want) {
					t.Errorf("n %d, chunk %d, %d workers: %q..., want %q...", n, chunk, workers, head(got.Bytes()), head(want))
				}
			}
		}
	}
}

func head(b []byte) []byte { return b[:min(len(b), 40)] }

// failAfter fails its writes after n bytes.
type failAfter struct{ n int }

var errFull = errors.New("disk full")

func (w *failAfter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, errFull
	}
	w.n -= len(p)
	return len(p), nil
}

// TestEncodeOrderedWriteError: a write error ends the call, once its
// goroutines are done, with that error.
func TestEncodeOrderedWriteError(t *testing.T) {
	encode := func(dst []byte, lo, hi int) []byte { return append(dst, bytes.Repeat([]byte{'x'}, hi-lo)...) }
	for _, workers := range []int{1, 2, 8} {
		err := encodeOrdered(&failAfter{n: 100}, 10000, 10, workers, encode)
		if !errors.Is(err, errFull) {
			t.Errorf("%d workers: error %v, want %v", workers, err, errFull)
		}
	}
}
