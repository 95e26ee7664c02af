package dedup

import (
	"errors"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/neardup/neardup/internal/gpu"
	"github.com/neardup/neardup/simhash"
)

// Device says where the documents are sketched (Options.Device).
type Device uint8

const (
	// DeviceCPU (the default) sketches on the CPU workers.
	DeviceCPU Device = iota
	// DeviceGPU sketches on the GPU (package internal/gpu): the workers
	// read and normalise, the GPU tokenises, hashes the shingles and
	// signs. A run fails when no GPU is usable or the method cannot be
	// signed there. Documents the GPU does not handle (non-ASCII text,
	// texts over gpu.MaxDocBytes, shingles over 240 bytes) are sketched
	// on the CPU; Stats.Device counts both. The sketches are identical
	// to the CPU's.
	DeviceGPU
	// DeviceAuto uses the GPU when one is usable for the run, and the CPU
	// otherwise (Stats.Device says which, and why).
	DeviceAuto
)

// String returns cpu, gpu or auto.
func (d Device) String() string {
	switch d {
	case DeviceCPU:
		return "cpu"
	case DeviceGPU:
		return "gpu"
	case DeviceAuto:
		return "auto"
	}
	return fmt.Sprintf("Device(%d)", uint8(d))
}

// ParseDevice parses cpu, gpu or auto.
func ParseDevice(s string) (Device, error) {
	for d := DeviceCPU; d <= DeviceAuto; d++ {
		if d.String() == s {
			return d, nil
		}
	}
	return 0, fmt.Errorf("unknown device %q (want cpu, gpu or auto)", s)
}

// ErrNoGPU is wrapped by the error of a run with DeviceGPU that cannot use
// a GPU: the message says what is missing (the build, the driver, a
// device) or what the GPU cannot compute.
var ErrNoGPU = errors.New("no usable GPU")

// DeviceStats says where a run sketched its documents.
type DeviceStats struct {
	// Requested is Options.Device; Used is "gpu" or "cpu".
	Requested string `json:"requested"`
	Used      string `json:"used"`
	// Name describes the GPU used.
	Name string `json:"name,omitempty"`
	// Reason says why a run with DeviceAuto used the CPU.
	Reason string `json:"reason,omitempty"`
	// GPUDocs counts the documents sketched on the GPU, CPUFallbackDocs
	// those of a GPU run sketched on the CPU instead; GPUBatches the
	// kernel launches.
	GPUDocs         int64 `json:"gpu_docs"`
	CPUFallbackDocs int64 `json:"cpu_fallback_docs"`
	GPUBatches      int64 `json:"gpu_batches"`
}

// gpuDevice and gpuStream are what a run uses of package gpu: tests
// replace openGPU with a fake.
type (
	gpuDevice interface {
		Name() string
		NewStream(gpu.Config) (gpuStream, error)
	}
	gpuStream interface {
		Sign(text []byte, off []uint32) (gpu.Result, error)
		Close()
	}
)

// openGPU opens the GPU (gpu.Open).
var openGPU = func() (gpuDevice, error) {
	d, err := gpu.Open()
	if err != nil {
		return nil, err
	}
	return realDevice{d}, nil
}

type realDevice struct{ d *gpu.Device }

func (r realDevice) Name() string { return r.d.Name() }

func (r realDevice) NewStream(c gpu.Config) (gpuStream, error) { return r.d.NewStream(c) }

// deviceRun is a run's use of the GPU.
type deviceRun struct {
	dev     gpuDevice
	cfg     gpu.Config
	make    gpuSketchMaker // the method's (gpuSigner)
	docs    atomic.Int64
	cpu     atomic.Int64
	batches atomic.Int64
}

// useDevice replaces the workers' sketchers with GPU sketchers when the
// run asks for the GPU and can have it; it returns a function that
// releases them and records Stats.Device.
func (r *run) useDevice(sketchers []DocSketcher) (func(), error) {
	want := r.cfg.Device
	if want == DeviceCPU {
		return func() {}, nil
	}
	st := &DeviceStats{Requested: want.String(), Used: "cpu"}
	r.stats.Device = st
	dr, err := r.openDevice()
	if err != nil {
		if want == DeviceGPU {
			return nil, &OptionError{Field: "Device", Err: fmt.Errorf("%w: %w", ErrNoGPU, err)}
		}
		st.Reason = err.Error()
		return func() {}, nil
	}
	st.Used, st.Name = "gpu", dr.dev.Name()
	streams := make([]gpuStream, 0, len(sketchers))
	release := func() {
		for _, s := range streams {
			s.Close()
		}
		st.GPUDocs, st.CPUFallbackDocs, st.GPUBatches = dr.docs.Load(), dr.cpu.Load(), dr.batches.Load()
	}
	for w, cpu := range sketchers {
		s, err := dr.dev.NewStream(dr.cfg)
		if err != nil {
			release()
			return nil, err
		}
		streams = append(streams, s)
		sketchers[w] = &gpuSketcher{dr: dr, cpu: cpu, st: s}
	}
	return release, nil
}

// openDevice opens the GPU and checks that it can sketch for the run.
func (r *run) openDevice() (*deviceRun, error) {
	cfg, err := gpu.ConfigFor(r.spec)
	if err != nil {
		return nil, err
	}
	signer := r.caps.gpu
	if signer == nil {
		return nil, fmt.Errorf("the GPU does not sketch method %s", r.method.Name())
	}
	dr := &deviceRun{cfg: cfg}
	dr.cfg.Hashes, dr.make = signer.gpuSketches(r.signOnly)
	if dr.dev, err = openGPU(); err != nil {
		return nil, err
	}
	return dr, nil
}

// A gpuSketchMaker builds a document's sketch from what the GPU computed
// (status gpu.StatusOK, or why not): hashes are its shingle hashes when
// the method asked for them (gpuSigner).
type gpuSketchMaker func(status uint32, sig []uint32, fp simhash.Fingerprint, hashes []uint64) DocSketch

// gpuSketches: the signature; dedup keeps the shingle hashes as the CPU's
// sketcher does (except --estimate-only).
func (m *minhashMethod) gpuSketches(signOnly bool) (bool, gpuSketchMaker) {
	join := m.join
	spec := &m.spec
	return !signOnly && join != joinEstimate, func(status uint32, sig []uint32, _ simhash.Fingerprint, hashes []uint64) DocSketch {
		sk := &minhashSketch{spec: spec}
		if status != gpu.StatusOK || signOnly {
			sk.sig = sig
			return sk
		}
		sk.sig = sig
		switch join {
		case joinVerify:
			slices.Sort(hashes)
			sk.set = lazySet{h: slices.Compact(hashes), sorted: true}
		case joinTiered:
			sk.set = lazySet{h: hashes}
			sk.keff = effectiveSlots(m.family, sk.sig)
		}
		return sk
	}
}

// gpuSketches: the fingerprint, and the shingle set under --verify.
func (m *simhashMethod) gpuSketches(bool) (bool, gpuSketchMaker) {
	return m.verify, func(status uint32, _ []uint32, fp simhash.Fingerprint, hashes []uint64) DocSketch {
		if status != gpu.StatusOK {
			return nil
		}
		sk := &simhashSketch{fp: fp, bits: m.bits}
		if m.verify {
			slices.Sort(hashes)
			sk.set = slices.Compact(hashes)
		}
		return sk
	}
}

// deferredSketch stands for the sketch of a document handed to the GPU,
// until gpuSketcher.flush replaces it. Each batch has its own, so that a
// stale entry of a reused batch is never taken for one.
type deferredSketch struct{ _ byte }

func (*deferredSketch) AppendJSON(dst []byte) []byte { panic("dedup: deferred sketch not flushed") }

// gpuSketcher is one worker's DocSketcher on the GPU: Sketch collects the
// documents the GPU can sign (returning a deferred sketch) and sketches
// the others with the method's own sketcher; flush, called by the worker
// at the end of each batch, signs the collected documents in one launch
// and puts their sketches in place.
type gpuSketcher struct {
	dr     *deviceRun
	cpu    DocSketcher
	st     gpuStream
	marker *deferredSketch
	text   []byte
	off    []uint32
	docs   []Doc // the collected documents, Text nil (it is in text)
}

// batchSketcher is a DocSketcher whose sketches are completed for a whole
// batch at once (the GPU path): the worker calls flush with the batch's
// sketches, in order, before it hands the batch on.
type batchSketcher interface {
	DocSketcher
	flush(sketches []DocSketch) error
}

func (g *gpuSketcher) Sketch(d *Doc) (DocSketch, error) {
	if !gpu.Eligible(d.Text) || len(g.text)+len(d.Text) > gpu.MaxBatchBytes {
		g.dr.cpu.Add(1)
		return g.cpu.Sketch(d)
	}
	if g.marker == nil {
		g.marker = &deferredSketch{}
		g.off = append(g.off[:0], 0)
		g.text = g.text[:0]
		g.docs = g.docs[:0]
	}
	g.text = append(g.text, d.Text...)
	g.off = append(g.off, uint32(len(g.text)))
	g.docs = append(g.docs, Doc{Index: d.Index, ID: d.ID, Key: d.Key})
	return g.marker, nil
}

func (g *gpuSketcher) flush(sketches []DocSketch) error {
	if g.marker == nil {
		return nil
	}
	marker := g.marker
	g.marker = nil
	res, err := g.st.Sign(g.text, g.off)
	if err != nil {
		return err
	}
	g.dr.batches.Add(1)
	k := g.dr.cfg.K
	var sigs []uint32
	if g.dr.cfg.Method.MinHash() {
		ok := 0
		for _, s := range res.Status {
			if s == gpu.StatusOK {
				ok++
			}
		}
		sigs = make([]uint32, 0, ok*k) // one allocation for the batch's signatures
	}
	var hashes []uint64
	if g.dr.cfg.Hashes {
		n := 0
		for _, c := range res.Count {
			n += int(c)
		}
		hashes = make([]uint64, 0, n) // one allocation for the batch's shingle hashes
	}
	j, onGPU := 0, 0
	for i, s := range sketches {
		if s != DocSketch(marker) {
			continue
		}
		status := res.Status[j]
		switch status {
		case gpu.StatusFallback:
			d := g.docs[j]
			d.Text = g.text[g.off[j]:g.off[j+1]]
			g.dr.cpu.Add(1)
			if sketches[i], err = g.cpu.Sketch(&d); err != nil {
				return fmt.Errorf("document %q: %w", d.ID, err)
			}
		default:
			onGPU++
			var sig []uint32
			var fp simhash.Fingerprint
			var h []uint64
			if hashes != nil && status == gpu.StatusOK {
				n := len(hashes)
				hashes = append(hashes, res.DocHashes(g.off, j)...)
				h = hashes[n:len(hashes):len(hashes)]
			}
			if status == gpu.StatusOK {
				if sigs != nil {
					n := len(sigs)
					sigs = append(sigs, res.Sig[j*k:(j+1)*k]...)
					sig = sigs[n : n+k : n+k]
				} else {
					fp = simhash.Fingerprint{Lo: res.FP[2*j], Hi: res.FP[2*j+1]}
				}
			}
			sketches[i] = g.dr.make(status, sig, fp, h)
		}
		j++
	}
	g.dr.docs.Add(int64(onGPU))
	if j != len(g.docs) {
		return fmt.Errorf("dedup: %d documents sent to the GPU, %d found in the batch", len(g.docs), j)
	}
	return nil
}
