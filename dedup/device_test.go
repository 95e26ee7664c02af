package dedup

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/neardup/neardup/internal/gpu"
	"github.com/neardup/neardup/minhash"
	"github.com/neardup/neardup/shingle"
	"github.com/neardup/neardup/sketch"
	"github.com/neardup/neardup/text"
)

// fakeGPU stands for the GPU in the host-side tests: its streams sign
// with the Go CPU path (the kernel itself is tested against it in package
// gpu) and report every fifth document of a batch as one to sign on the
// CPU, so that the routing, the batching and the order of the sketches
// are tested without a GPU.
type fakeGPU struct {
	spec    sketch.Spec
	mu      sync.Mutex
	batches int
	sent    int
}

func (f *fakeGPU) Name() string { return "fake GPU" }

func (f *fakeGPU) NewStream(c gpu.Config) (gpuStream, error) {
	k, err := f.spec.NewSketcher()
	if err != nil {
		return nil, err
	}
	return &fakeStream{f: f, c: c, k: k}, nil
}

type fakeStream struct {
	f *fakeGPU
	c gpu.Config
	k *sketch.Sketcher
}

func (s *fakeStream) Close() {}

func (s *fakeStream) Sign(text []byte, off []uint32) (gpu.Result, error) {
	nd := len(off) - 1
	s.f.mu.Lock()
	s.f.batches++
	s.f.sent += nd
	s.f.mu.Unlock()
	r := gpu.Result{Status: make([]uint32, nd)}
	if s.c.Hashes {
		r.Count = make([]uint32, nd)
		r.Hashes = make([]uint64, int(off[nd])+nd)
	}
	if s.c.Method.MinHash() {
		r.Sig = make([]uint32, nd*s.c.K)
	} else {
		r.FP = make([]uint64, 2*nd)
	}
	for d := range nd {
		t := text[off[d]:off[d+1]]
		if !gpu.Eligible(t) {
			return r, fmt.Errorf("fake GPU: document %d is not eligible: %q", d, t)
		}
		var sk sketch.Sketch
		s.k.SketchNormalized(&sk, t)
		if s.c.Hashes && d%5 != 3 && !sk.Empty {
			h := s.k.Shingles(nil, string(t))
			r.Count[d] = uint32(len(h))
			copy(r.Hashes[int(off[d])+d:], h)
		}
		switch {
		case d%5 == 3:
			r.Status[d] = gpu.StatusFallback
		case sk.Empty:
			r.Status[d] = gpu.StatusEmpty
		case s.c.Method.MinHash():
			copy(r.Sig[d*s.c.K:], sk.Sig)
		default:
			r.FP[2*d], r.FP[2*d+1] = sk.FP.Lo, sk.FP.Hi
		}
	}
	return r, nil
}

// useFakeGPU makes the runs of the test use f (or fail with err).
func useFakeGPU(t *testing.T, f *fakeGPU, err error) {
	old := openGPU
	openGPU = func() (gpuDevice, error) {
		if err != nil {
			return nil, err
		}
		return f, nil
	}
	t.Cleanup(func() { openGPU = old })
}

// deviceTexts are documents of every kind: ASCII prose with repeats,
// punctuation only, empty, non-ASCII, long.
func deviceTexts(n int) []string {
	rng := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("the quick brown fox jumps over the lazy dog a rose is a rose 42 café 中文 naïve x9 Zebra")
	texts := make([]string, n)
	for i := range texts {
		var b strings.Builder
		m := rng.IntN(120)
		switch i % 41 {
		case 5:
			m = 0
		case 6:
			b.WriteString("$$ !! ??")
			m = 0
		case 7:
			m = 3000
		}
		for j := range m {
			if j > 0 {
				b.WriteString([]string{" ", ", ", ". ", " - ", " | "}[rng.IntN(5)])
			}
			w := words[rng.IntN(len(words))]
			if i%3 != 0 && strings.ContainsFunc(w, func(r rune) bool { return r >= 0x80 }) {
				w = "plain"
			}
			b.WriteString(w)
		}
		texts[i] = b.String()
		if i > 10 && i%7 == 0 {
			texts[i] = texts[i-7] // duplicates, for dedup
		}
	}
	return texts
}

func TestSignDeviceMatchesCPU(t *testing.T) {
	texts := deviceTexts(1500)
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	specs := []struct {
		method string
		spec   sketch.Spec
	}{
		{"minhash", sketch.Spec{}},
		{"minhash", sketch.Spec{Shingle: shingle.Options{Unit: shingle.Char, N: 4}, MinHash: sketch.MinHashSpec{Family: minhash.MultiplyShift, NumPerm: 64}}},
		{"simhash", sketch.Spec{Method: sketch.SimHash}},
		{"simhash", sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Bits: 128, Weights: sketch.WeightCount}}},
	}
	for _, c := range specs {
		t.Run(fmt.Sprintf("%s-%v-%v", c.method, c.spec.MinHash.Family, c.spec.SimHash.Weights), func(t *testing.T) {
			cfg := Options{Method: c.method, Spec: c.spec, Workers: 3}
			spec, _, err := cfg.spec()
			if err != nil {
				t.Fatal(err)
			}
			fake := &fakeGPU{spec: spec}
			useFakeGPU(t, fake, nil)
			dir := t.TempDir()
			want, got := filepath.Join(dir, "cpu.jsonl"), filepath.Join(dir, "gpu.jsonl")
			if _, err := Sign(context.Background(), cfg, Input{Files: []string{path}}, want); err != nil {
				t.Fatal(err)
			}
			cfg.Device = DeviceGPU
			st, err := Sign(context.Background(), cfg, Input{Files: []string{path}}, got)
			if err != nil {
				t.Fatal(err)
			}
			a, _ := os.ReadFile(want)
			b, _ := os.ReadFile(got)
			if !bytes.Equal(a, b) {
				al, bl := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
				for i := range min(len(al), len(bl)) {
					if al[i] != bl[i] {
						t.Fatalf("line %d:\n gpu %.200s\n cpu %.200s", i, bl[i], al[i])
					}
				}
				t.Fatalf("outputs differ: %d and %d lines", len(al), len(bl))
			}
			d := st.Device
			if d == nil || d.Used != "gpu" || d.Name != "fake GPU" {
				t.Fatalf("Stats.Device = %+v, want the fake GPU", d)
			}
			// Every document with a non-empty normalised text is sketched
			// on one side or the other; the fake sends a fifth of what the
			// GPU gets back to the CPU.
			norm, _ := text.New(*spec.Normalize)
			n := int64(0)
			for _, s := range texts {
				if len(norm.Append(nil, s)) > 0 {
					n++
				}
			}
			if d.GPUDocs+d.CPUFallbackDocs != n {
				t.Errorf("gpu %d + cpu %d documents, want %d", d.GPUDocs, d.CPUFallbackDocs, n)
			}
			if d.GPUDocs == 0 || d.CPUFallbackDocs == 0 || d.GPUBatches != int64(fake.batches) || d.GPUDocs >= int64(fake.sent) {
				t.Errorf("Stats.Device = %+v; the fake GPU saw %d documents in %d batches", d, fake.sent, fake.batches)
			}
		})
	}
}

// dedup on the (fake) GPU finds the clusters the CPU finds, for the
// methods it signs.
func TestDedupDeviceMatchesCPU(t *testing.T) {
	texts := deviceTexts(1200)
	path := writeTexts(t, t.TempDir(), texts, "d%d")
	for _, cfg := range []Options{
		{Method: "simhash", Spec: sketch.Spec{Method: sketch.SimHash}, Workers: 2},
		{Method: "simhash", Spec: sketch.Spec{Method: sketch.SimHash, SimHash: sketch.SimHashSpec{Weights: sketch.WeightCount}}, Verify: true, Workers: 2},
		{Method: "minhash", EstimateOnly: true, Workers: 2},
		{Method: "minhash", Workers: 2}, // the tiered join keeps the shingle hashes
		{Method: "minhash", Verify: true, Workers: 3},
	} {
		t.Run(fmt.Sprintf("%s-verify=%v-estimate=%v", cfg.Method, cfg.Verify, cfg.EstimateOnly), func(t *testing.T) {
			spec, _, err := cfg.spec()
			if err != nil {
				t.Fatal(err)
			}
			useFakeGPU(t, &fakeGPU{spec: spec}, nil)
			dir := t.TempDir()
			run := func(name string) []byte {
				out := Outputs{Clusters: filepath.Join(dir, name+".clusters"), Pairs: filepath.Join(dir, name+".pairs")}
				st, err := Run(context.Background(), cfg, Input{Files: []string{path}}, out)
				if err != nil {
					t.Fatal(err)
				}
				if st.Removed == 0 {
					t.Fatalf("%s: nothing removed", name)
				}
				c, _ := os.ReadFile(out.Clusters)
				p, _ := os.ReadFile(out.Pairs)
				return append(c, p...)
			}
			want := run("cpu")
			cfg.Device = DeviceGPU
			if got := run("gpu"); !bytes.Equal(got, want) {
				t.Fatal("clusters or pairs differ between the GPU and the CPU")
			}
		})
	}
}

// Without a GPU, DeviceGPU is an option error that says what is missing,
// and DeviceAuto runs on the CPU and says why; a method the GPU cannot
// sign is refused too.
func TestDeviceUnavailable(t *testing.T) {
	path := writeTexts(t, t.TempDir(), deviceTexts(50), "d%d")
	missing := fmt.Errorf("%w: libcuda.so.1 not found", gpu.ErrNoDriver)
	useFakeGPU(t, nil, missing)
	out := filepath.Join(t.TempDir(), "s.jsonl")
	_, err := Sign(context.Background(), Options{Device: DeviceGPU}, Input{Files: []string{path}}, out)
	var oe *OptionError
	if !errors.As(err, &oe) || oe.Field != "Device" || !errors.Is(err, ErrNoGPU) || !errors.Is(err, gpu.ErrNoDriver) || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("Sign on no GPU: %v, want an OptionError of Device naming libcuda.so.1", err)
	}
	st, err := Sign(context.Background(), Options{Device: DeviceAuto}, Input{Files: []string{path}}, out)
	if err != nil {
		t.Fatal(err)
	}
	if d := st.Device; d == nil || d.Used != "cpu" || !strings.Contains(d.Reason, "libcuda.so.1") {
		t.Fatalf("auto without a GPU: Stats.Device = %+v", d)
	}
	useFakeGPU(t, &fakeGPU{}, nil)
	cfg := Options{Method: "minhash", Spec: sketch.Spec{MinHash: sketch.MinHashSpec{Family: minhash.Permutation}}, Device: DeviceGPU}
	if _, err := Sign(context.Background(), cfg, Input{Files: []string{path}}, out); !errors.Is(err, ErrNoGPU) || !strings.Contains(err.Error(), "permutation") {
		t.Fatalf("permutation family on the GPU: %v", err)
	}
	cfg = Options{Method: "exact", Device: DeviceGPU}
	if _, err := Run(context.Background(), cfg, Input{Files: []string{path}}, Outputs{}); !errors.Is(err, ErrNoGPU) {
		t.Fatalf("dedup exact on the GPU: %v", err)
	}
}

func TestParseDevice(t *testing.T) {
	for _, d := range []Device{DeviceCPU, DeviceGPU, DeviceAuto} {
		if got, err := ParseDevice(d.String()); err != nil || got != d {
			t.Errorf("ParseDevice(%q) = %v, %v", d.String(), got, err)
		}
	}
	if _, err := ParseDevice("tpu"); err == nil {
		t.Error("ParseDevice(tpu) succeeded")
	}
}
