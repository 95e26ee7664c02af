package corpus

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// damagedZstd is a zstd stream of three frames of many blocks each, with
// a byte of the second frame's compressed data changed, and the offset
// where that frame starts.
func damagedZstd(t *testing.T) ([]byte, int64) {
	t.Helper()
	var frames [][]byte
	for f := range 3 {
		var b bytes.Buffer
		for i := range 6000 {
			fmt.Fprintf(&b, `{"id": "f%d-%d", "text": "frame %d line %d: %d"}`+"\n", f, i, f, i, i*7919%104729)
		}
		e, err := zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, e.EncodeAll(b.Bytes(), nil))
	}
	start := int64(len(frames[0]))
	data := bytes.Join(frames, nil)
	data[start+int64(len(frames[1]))/2] ^= 0x5a
	return data, start
}

// TestZstdDamageDeterministic decodes the same damaged zstd stream 200
// times with each decoder concurrency: the decoder reads blocks ahead on
// goroutines of its own, and how far it had read when the damage surfaced
// varied from run to run, but the error, which names the start of the
// damaged frame, is the same every time.
func TestZstdDamageDeterministic(t *testing.T) {
	data, start := damagedZstd(t)
	var first string
	for _, conc := range []int{1, 2} {
		for i := range 200 {
			d := newDecoder(io.NopCloser(bytes.NewReader(data)), compSniff)
			d.zstdConcurrency = conc
			n, err := io.Copy(io.Discard, d)
			d.Close()
			if err == nil {
				t.Fatalf("concurrency %d: %d bytes and no error from the damaged stream", conc, n)
			}
			if first == "" {
				first = err.Error()
				if want := fmt.Sprintf("in the frame that starts at compressed offset %d;", start); !strings.Contains(first, want) {
					t.Fatalf("error %q does not say %q", first, want)
				}
			}
			if err.Error() != first {
				t.Fatalf("concurrency %d, run %d: error %q, the first run's %q", conc, i, err, first)
			}
		}
	}
	t.Log(first)
}

// TestZstdFrames: frames of every header form the encoder writes (with
// and without a content size and a checksum, single segment or not,
// empty), skippable frames between them, and raw and RLE blocks are read
// back whole, one frame at a time.
func TestZstdFrames(t *testing.T) {
	var want, data bytes.Buffer
	add := func(b []byte, opts ...zstd.EOption) {
		e, err := zstd.NewWriter(nil, append(opts, zstd.WithEncoderConcurrency(1))...)
		if err != nil {
			t.Fatal(err)
		}
		data.Write(e.EncodeAll(b, nil)) // with its content size
		var s bytes.Buffer
		e.Reset(&s) // streamed: no content size
		e.Write(b)
		e.Close()
		data.Write(s.Bytes())
		want.Write(b)
		want.Write(b)
	}
	skippable := func(payload string) {
		data.Write([]byte{0x5f, 0x2a, 0x4d, 0x18})
		data.Write([]byte{byte(len(payload)), 0, 0, 0})
		data.WriteString(payload)
	}
	var big bytes.Buffer
	for i := range 50000 {
		fmt.Fprintf(&big, "line %d of a frame: %d\n", i, i*7919%104729)
	}
	skippable("at the start")
	add([]byte("a short frame\n"))
	add(nil)
	add(big.Bytes(), zstd.WithEncoderCRC(false))
	skippable("")
	add(bytes.Repeat([]byte{'x'}, 300000)) // RLE blocks
	add([]byte(strings.Repeat("incompressible? no\n", 10)), zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithNoEntropyCompression(true))
	skippable("at the end")
	for _, c := range []struct {
		conc int
		comp compression
	}{{1, compZstd}, {2, compZstd}, {2, compSniff}} {
		// By name, and sniffed as standard input is: the stream starts
		// with a skippable frame.
		conc := c.conc
		d := newDecoder(io.NopCloser(bytes.NewReader(data.Bytes())), c.comp)
		d.zstdConcurrency = conc
		got, err := io.ReadAll(d)
		d.Close()
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("concurrency %d: %d bytes, %v; want %d bytes", conc, len(got), err, want.Len())
		}
		if d.offset() != int64(data.Len()) {
			t.Errorf("concurrency %d: read %d compressed bytes of %d", conc, d.offset(), data.Len())
		}
	}
}
