//go:build nogpu || !(linux && (amd64 || arm64))

package gpu

// Supported reports whether this binary can use a GPU at all (linux/amd64
// or linux/arm64 without the tag nogpu); Open says whether one is there.
const Supported = false

// Device is a GPU; this build has none.
type Device struct{}

// Open returns ErrUnsupported: this build has no GPU support.
func Open() (*Device, error) { return nil, ErrUnsupported }

// Name describes the GPU.
func (d *Device) Name() string { return "" }

// Stream signs batches on a GPU; this build has none.
type Stream struct{}

// NewStream returns ErrUnsupported.
func (d *Device) NewStream(Config) (*Stream, error) { return nil, ErrUnsupported }

// Sign returns ErrUnsupported.
func (s *Stream) Sign([]byte, []uint32) (Result, error) { return Result{}, ErrUnsupported }

// Close does nothing.
func (s *Stream) Close() {}
