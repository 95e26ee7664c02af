package corpus

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestFramedZstd: the frames decode to the input, for inputs around the
// frame length, and the bytes are the same on 1 and 4 goroutines.
func TestFramedZstd(t *testing.T) {
	var text bytes.Buffer
	for i := 0; text.Len() < 2*zstdFrameLen+1000; i++ {
		fmt.Fprintf(&text, `{"id":"%d","text":"line %d of the framed zstd test"}`+"\n", i, i*7919%1000)
	}
	dec, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	for _, n := range []int{0, 1, zstdFrameLen - 1, zstdFrameLen, zstdFrameLen + 1, 2*zstdFrameLen + 1000} {
		in := text.Bytes()[:n]
		var outs [2][]byte
		for k, procs := range []int{1, zstdEncoders} {
			old := runtime.GOMAXPROCS(procs)
			var out bytes.Buffer
			z := newFramedZstd(&out)
			for rest := in; len(rest) > 0; { // uneven writes
				c := min(len(rest), 100000+k)
				if _, err := z.Write(rest[:c]); err != nil {
					t.Fatal(err)
				}
				rest = rest[c:]
			}
			err := z.Close()
			runtime.GOMAXPROCS(old)
			if err != nil {
				t.Fatal(err)
			}
			outs[k] = out.Bytes()
			got, err := dec.DecodeAll(out.Bytes(), nil)
			if err != nil || !bytes.Equal(got, in) {
				t.Fatalf("%d bytes on %d goroutines: decoded %d bytes, %v", n, procs, len(got), err)
			}
		}
		if !bytes.Equal(outs[0], outs[1]) {
			t.Errorf("%d bytes: the frames differ between 1 and 4 goroutines", n)
		}
	}
}
