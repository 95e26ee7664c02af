//go:build !nogpu && linux && (amd64 || arm64)

package gpu

import (
	"errors"
	"fmt"
	"os"
	"testing"
)

// openOrSkip opens the GPU, skipping the test where there is none unless
// NEARDUP_GPU_REQUIRED is set (scripts/gpu-device sets it).
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open()
	if err != nil {
		if os.Getenv("NEARDUP_GPU_REQUIRED") != "" {
			t.Fatalf("Open: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	t.Logf("GPU: %s", d.Name())
	return d
}

func TestOpenWithoutDriver(t *testing.T) {
	if _, err := Open(); err != nil && !errors.Is(err, ErrNoDriver) && !errors.Is(err, ErrNoDevice) {
		t.Errorf("Open: %v, want nil or an error wrapping ErrNoDriver or ErrNoDevice", err)
	}
}

// TestKernelOnDevice is TestKernelOnHost on the GPU: every configuration
// over every test text, in batches of several sizes on one stream (the
// buffers grow and are reused).
func TestKernelOnDevice(t *testing.T) {
	d := openOrSkip(t)
	texts := testTexts(1)
	for _, spec := range kernelSpecs() {
		c, err := ConfigFor(spec)
		if err != nil {
			t.Fatal(err)
		}
		t.Run(fmt.Sprintf("%v/%v/k%d/%v-n%d", spec.Method, c.Method, c.K, spec.Shingle.Unit, c.N), func(t *testing.T) {
			c.Hashes = true
			s, err := d.NewStream(c)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, size := range []int{1, 7, 100, len(texts)} {
				for lo := 0; lo < len(texts); lo += size {
					batch := texts[lo:min(lo+size, len(texts))]
					var buf []byte
					off := []uint32{0}
					for _, tx := range batch {
						buf = append(buf, tx...)
						off = append(off, uint32(len(buf)))
					}
					res, err := s.Sign(buf, off)
					if err != nil {
						t.Fatal(err)
					}
					checkResult(t, spec, c, batch, res)
					checkHashes(t, spec, batch, res)
				}
			}
		})
	}
}
