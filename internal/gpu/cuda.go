//go:build !nogpu && linux && (amd64 || arm64)

package gpu

import (
	_ "embed"
	"fmt"
	"os"
	"runtime"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

//go:embed kernel/sign.ptx
var ptx []byte

// Supported reports whether this binary can use a GPU at all (linux/amd64
// or linux/arm64 without the tag nogpu); Open says whether one is there.
const Supported = true

// The driver API functions used, loaded by Open.
var cu struct {
	init                   func(flags uint32) int32
	driverGetVersion       func(v *int32) int32
	deviceGetCount         func(n *int32) int32
	deviceGet              func(dev *int32, ordinal int32) int32
	deviceGetName          func(name *byte, n int32, dev int32) int32
	deviceGetAttribute     func(v *int32, attr int32, dev int32) int32
	devicePrimaryCtxRetain func(ctx *uintptr, dev int32) int32
	ctxSetCurrent          func(ctx uintptr) int32
	moduleLoadDataEx       func(mod *uintptr, image *byte, n uint32, opts *int32, vals *uintptr) int32
	moduleGetFunction      func(fn *uintptr, mod uintptr, name *byte) int32
	memAlloc               func(p *uintptr, size uintptr) int32
	memFree                func(p uintptr) int32
	memAllocHost           func(p *unsafe.Pointer, size uintptr) int32
	memFreeHost            func(p unsafe.Pointer) int32
	memcpyHtoDAsync        func(dst uintptr, src unsafe.Pointer, n uintptr, stream uintptr) int32
	memcpyDtoHAsync        func(dst unsafe.Pointer, src uintptr, n uintptr, stream uintptr) int32
	streamCreate           func(s *uintptr, flags uint32) int32
	streamDestroy          func(s uintptr) int32
	streamSynchronize      func(s uintptr) int32
	launchKernel           func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, stream uintptr, params unsafe.Pointer, extra unsafe.Pointer) int32
	getErrorName           func(e int32, s **byte) int32
}

var (
	loadOnce sync.Once
	loadErr  error
	device   *Device
)

// cuErr turns a CUresult into an error naming the call.
func cuErr(call string, r int32) error {
	if r == 0 {
		return nil
	}
	name := fmt.Sprintf("CUDA error %d", r)
	var p *byte
	if cu.getErrorName != nil && cu.getErrorName(r, &p) == 0 && p != nil {
		name = goString(p)
	}
	return fmt.Errorf("gpu: %s: %s", call, name)
}

// goString copies the NUL-terminated C string at p.
func goString(p *byte) string {
	var b []byte
	for q := unsafe.Pointer(p); *(*byte)(q) != 0; q = unsafe.Add(q, 1) {
		b = append(b, *(*byte)(q))
	}
	return string(b)
}

// Device is an initialised GPU with the kernel loaded.
type Device struct {
	name   string
	cc     [2]int32
	driver int32
	ctx    uintptr
	module uintptr
	kernel uintptr
}

// Open loads the driver, picks GPU 0 and loads the kernel, once per
// process; later calls return the same Device or error.
func Open() (*Device, error) {
	loadOnce.Do(func() { device, loadErr = open() })
	return device, loadErr
}

func open() (*Device, error) {
	name := "libcuda.so.1"
	if p := os.Getenv(LibEnv); p != "" {
		name = p
	}
	lib, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		return nil, fmt.Errorf("%w: %s not found (%v); is the NVIDIA driver installed?", ErrNoDriver, name, err)
	}
	for _, f := range []struct {
		fn   any
		name string
	}{
		{&cu.init, "cuInit"},
		{&cu.driverGetVersion, "cuDriverGetVersion"},
		{&cu.deviceGetCount, "cuDeviceGetCount"},
		{&cu.deviceGet, "cuDeviceGet"},
		{&cu.deviceGetName, "cuDeviceGetName"},
		{&cu.deviceGetAttribute, "cuDeviceGetAttribute"},
		{&cu.devicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&cu.ctxSetCurrent, "cuCtxSetCurrent"},
		{&cu.moduleLoadDataEx, "cuModuleLoadDataEx"},
		{&cu.moduleGetFunction, "cuModuleGetFunction"},
		{&cu.memAlloc, "cuMemAlloc_v2"},
		{&cu.memFree, "cuMemFree_v2"},
		{&cu.memAllocHost, "cuMemAllocHost_v2"},
		{&cu.memFreeHost, "cuMemFreeHost"},
		{&cu.memcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&cu.memcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&cu.streamCreate, "cuStreamCreate"},
		{&cu.streamDestroy, "cuStreamDestroy_v2"},
		{&cu.streamSynchronize, "cuStreamSynchronize"},
		{&cu.launchKernel, "cuLaunchKernel"},
		{&cu.getErrorName, "cuGetErrorName"},
	} {
		sym, err := purego.Dlsym(lib, f.name)
		if err != nil {
			return nil, fmt.Errorf("%w: %s has no %s (driver too old?)", ErrNoDriver, name, f.name)
		}
		purego.RegisterFunc(f.fn, sym)
	}
	if r := cu.init(0); r != 0 {
		if r == 100 { // CUDA_ERROR_NO_DEVICE
			return nil, fmt.Errorf("%w: the driver found no GPU (cuInit: CUDA_ERROR_NO_DEVICE)", ErrNoDevice)
		}
		return nil, fmt.Errorf("%w: %v", ErrNoDriver, cuErr("cuInit", r))
	}
	d := &Device{}
	cu.driverGetVersion(&d.driver)
	var n int32
	if err := cuErr("cuDeviceGetCount", cu.deviceGetCount(&n)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoDevice, err)
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: the driver sees no GPU", ErrNoDevice)
	}
	var dev int32
	if err := cuErr("cuDeviceGet", cu.deviceGet(&dev, 0)); err != nil {
		return nil, err
	}
	var dname [256]byte
	cu.deviceGetName(&dname[0], int32(len(dname)), dev)
	for i, c := range dname {
		if c == 0 {
			d.name = string(dname[:i])
			break
		}
	}
	cu.deviceGetAttribute(&d.cc[0], 75, dev) // CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR
	cu.deviceGetAttribute(&d.cc[1], 76, dev) // ..._MINOR
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuDevicePrimaryCtxRetain", cu.devicePrimaryCtxRetain(&d.ctx, dev)); err != nil {
		return nil, err
	}
	if err := cuErr("cuCtxSetCurrent", cu.ctxSetCurrent(d.ctx)); err != nil {
		return nil, err
	}
	// The PTX must end with a NUL; the JIT's error log says why it fails.
	img := append(append([]byte(nil), ptx...), 0)
	log := make([]byte, 8192)
	opts := []int32{5, 6} // CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
	vals := []uintptr{uintptr(unsafe.Pointer(&log[0])), uintptr(len(log))}
	r := cu.moduleLoadDataEx(&d.module, &img[0], uint32(len(opts)), &opts[0], &vals[0])
	runtime.KeepAlive(img)
	runtime.KeepAlive(log)
	if r != 0 {
		msg := string(log)
		if i := indexByte(log, 0); i >= 0 {
			msg = string(log[:i])
		}
		return nil, fmt.Errorf("%v (JIT log: %s)", cuErr("cuModuleLoadDataEx", r), msg)
	}
	fname := []byte("sign\x00")
	if err := cuErr("cuModuleGetFunction", cu.moduleGetFunction(&d.kernel, d.module, &fname[0])); err != nil {
		return nil, err
	}
	return d, nil
}

func indexByte(b []byte, c byte) int {
	for i, x := range b {
		if x == c {
			return i
		}
	}
	return -1
}

// Name describes the GPU: its name, compute capability and driver version.
func (d *Device) Name() string {
	return fmt.Sprintf("%s (sm_%d%d, CUDA driver %d.%d)", d.name, d.cc[0], d.cc[1], d.driver/1000, d.driver%1000/10)
}

// params is the kernel's struct Params (kernel/sign.cu), field for field.
type params struct {
	text, off                uintptr
	numDocs, n, unit, method uint32
	k, pad                   uint32
	seed, key, probe         uint64
	a, b                     uintptr
	status, sig, fp          uintptr
	bounds, hashes, filled   uintptr
	count                    uintptr
}

// paramsSize is the size of struct Params in the PTX (sign_param_0[136]);
// the array index below fails to compile if params differs.
const paramsSize = 136

var _ = [1]struct{}{}[unsafe.Sizeof(params{})-paramsSize]

// warpsPerBlock is kernel/sign.cu's WARPS_PER_BLOCK.
const warpsPerBlock = 4

// buffer is a device allocation and its pinned host twin (host may be 0).
type buffer struct {
	dev  uintptr
	host unsafe.Pointer
	size uintptr
}

// Stream signs batches on its own CUDA stream with its own buffers. Not
// safe for concurrent use.
type Stream struct {
	d      *Device
	cfg    Config
	stream uintptr
	// Device buffers, grown as batches need.
	text, off, status, out, bounds, hashes, filled, coef, count buffer
	// par is pinned host memory for the kernel's parameters.
	par    unsafe.Pointer
	closed bool
}

// NewStream returns a Stream that signs with cfg.
func (d *Device) NewStream(cfg Config) (*Stream, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Stream{d: d, cfg: cfg}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuCtxSetCurrent", cu.ctxSetCurrent(d.ctx)); err != nil {
		return nil, err
	}
	if err := cuErr("cuStreamCreate", cu.streamCreate(&s.stream, 1)); err != nil { // CU_STREAM_NON_BLOCKING
		return nil, err
	}
	if err := cuErr("cuMemAllocHost", cu.memAllocHost(&s.par, 256)); err != nil {
		return nil, err
	}
	if cfg.Method == MultiplyShift {
		n := uintptr(16 * cfg.K)
		if err := s.coef.grow(n, true); err != nil {
			return nil, err
		}
		host := unsafe.Slice((*uint64)(s.coef.host), 2*cfg.K)
		copy(host, cfg.A)
		copy(host[cfg.K:], cfg.B)
		if err := cuErr("cuMemcpyHtoDAsync", cu.memcpyHtoDAsync(s.coef.dev, s.coef.host, n, s.stream)); err != nil {
			return nil, err
		}
		if err := cuErr("cuStreamSynchronize", cu.streamSynchronize(s.stream)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// grow makes b hold at least n bytes on the device (and pinned on the
// host when host is true), dropping its contents.
func (b *buffer) grow(n uintptr, host bool) error {
	if n <= b.size && (b.host != nil || !host) {
		return nil
	}
	n = max(n, b.size+b.size/2, 4096)
	b.free()
	if err := cuErr("cuMemAlloc", cu.memAlloc(&b.dev, n)); err != nil {
		return err
	}
	if host {
		if err := cuErr("cuMemAllocHost", cu.memAllocHost(&b.host, n)); err != nil {
			return err
		}
	}
	b.size = n
	return nil
}

func (b *buffer) free() {
	if b.dev != 0 {
		cu.memFree(b.dev)
	}
	if b.host != nil {
		cu.memFreeHost(b.host)
	}
	*b = buffer{}
}

// Close frees the Stream's memory.
func (s *Stream) Close() {
	if s.closed {
		return
	}
	s.closed = true
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	cu.ctxSetCurrent(s.d.ctx)
	for _, b := range []*buffer{&s.text, &s.off, &s.status, &s.out, &s.bounds, &s.hashes, &s.filled, &s.coef, &s.count} {
		b.free()
	}
	if s.par != nil {
		cu.memFreeHost(s.par)
	}
	cu.streamDestroy(s.stream)
}

// Sign signs the documents text[off[d]:off[d+1]] (len(off)-1 of them;
// off[0] == 0), all ASCII, and returns their statuses and signatures or
// fingerprints. The Result is overwritten by the next call.
func (s *Stream) Sign(text []byte, off []uint32) (Result, error) {
	nd := len(off) - 1
	if nd <= 0 {
		return Result{}, nil
	}
	if len(text) > MaxBatchBytes || int(off[nd]) != len(text) {
		return Result{}, fmt.Errorf("gpu: batch of %d bytes with offsets to %d", len(text), off[nd])
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := cuErr("cuCtxSetCurrent", cu.ctxSetCurrent(s.d.ctx)); err != nil {
		return Result{}, err
	}
	k := s.cfg.K
	total := uintptr(len(text))
	var outBytes uintptr
	if s.cfg.Method.MinHash() {
		outBytes = uintptr(nd*k) * 4
	} else {
		outBytes = uintptr(nd) * 16
	}
	words := uintptr((k + 31) / 32)
	for _, g := range []struct {
		b    *buffer
		n    uintptr
		host bool
	}{
		{&s.text, total + 1, true},
		{&s.off, uintptr(nd+1) * 4, true},
		{&s.status, uintptr(nd) * 4, true},
		{&s.out, outBytes, true},
		{&s.bounds, (total + uintptr(nd) + 1) * 4, false},
		{&s.hashes, (total + uintptr(nd) + 1) * 8, s.cfg.Hashes},
		{&s.count, uintptr(nd)*4 + 4, true},
		{&s.filled, uintptr(nd)*words*4 + 4, false},
	} {
		if err := g.b.grow(g.n, g.host); err != nil {
			return Result{}, err
		}
	}
	copy(unsafe.Slice((*byte)(s.text.host), len(text)), text)
	copy(unsafe.Slice((*uint32)(s.off.host), nd+1), off[:nd+1])
	p := (*params)(s.par)
	*p = params{
		text: s.text.dev, off: s.off.dev, numDocs: uint32(nd), n: uint32(s.cfg.N), unit: uint32(s.cfg.Unit),
		method: uint32(s.cfg.Method), k: uint32(k), seed: s.cfg.Seed, key: s.cfg.Key, probe: s.cfg.Probe,
		a: s.coef.dev, b: s.coef.dev + uintptr(8*k), status: s.status.dev, bounds: s.bounds.dev,
		hashes: s.hashes.dev, filled: s.filled.dev, count: s.count.dev,
	}
	if s.cfg.Method.MinHash() {
		p.sig = s.out.dev
	} else {
		p.fp = s.out.dev
	}
	// kernelParams: an array of one pointer, to the struct; both pinned.
	argv := unsafe.Add(s.par, 192) // after the struct (paramsSize)
	*(*unsafe.Pointer)(argv) = s.par
	st := s.stream
	if err := cuErr("cuMemcpyHtoDAsync", cu.memcpyHtoDAsync(s.text.dev, s.text.host, total, st)); err != nil {
		return Result{}, err
	}
	if err := cuErr("cuMemcpyHtoDAsync", cu.memcpyHtoDAsync(s.off.dev, s.off.host, uintptr(nd+1)*4, st)); err != nil {
		return Result{}, err
	}
	blocks := uint32((nd + warpsPerBlock - 1) / warpsPerBlock)
	if err := cuErr("cuLaunchKernel", cu.launchKernel(s.d.kernel, blocks, 1, 1, 32*warpsPerBlock, 1, 1, 0, st, argv, nil)); err != nil {
		return Result{}, err
	}
	if err := cuErr("cuMemcpyDtoHAsync", cu.memcpyDtoHAsync(s.status.host, s.status.dev, uintptr(nd)*4, st)); err != nil {
		return Result{}, err
	}
	if err := cuErr("cuMemcpyDtoHAsync", cu.memcpyDtoHAsync(s.out.host, s.out.dev, outBytes, st)); err != nil {
		return Result{}, err
	}
	if s.cfg.Hashes {
		if err := cuErr("cuMemcpyDtoHAsync", cu.memcpyDtoHAsync(s.count.host, s.count.dev, uintptr(nd)*4, st)); err != nil {
			return Result{}, err
		}
		if err := cuErr("cuMemcpyDtoHAsync", cu.memcpyDtoHAsync(s.hashes.host, s.hashes.dev, (total+uintptr(nd))*8, st)); err != nil {
			return Result{}, err
		}
	}
	if err := cuErr("cuStreamSynchronize", cu.streamSynchronize(st)); err != nil {
		return Result{}, err
	}
	res := Result{Status: unsafe.Slice((*uint32)(s.status.host), nd)}
	if s.cfg.Method.MinHash() {
		res.Sig = unsafe.Slice((*uint32)(s.out.host), nd*k)
	} else {
		res.FP = unsafe.Slice((*uint64)(s.out.host), 2*nd)
	}
	if s.cfg.Hashes {
		res.Count = unsafe.Slice((*uint32)(s.count.host), nd)
		res.Hashes = unsafe.Slice((*uint64)(s.hashes.host), int(total)+nd)
	}
	return res, nil
}
