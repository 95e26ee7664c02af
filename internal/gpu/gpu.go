// Package gpu signs documents on an NVIDIA GPU: shingle hashing, MinHash
// (one permutation hashing with optimal densification, and multiply-shift)
// and SimHash (set and count weights), bit for bit what packages shingle,
// minhash and simhash compute on the CPU.
//
// # How
//
// The kernel is CUDA C (kernel/sign.cu), compiled to PTX by scripts/gen-ptx
// (clang's NVPTX backend; the PTX is committed and embedded) and
// JIT-compiled by the driver for the GPU at hand. The CUDA driver API
// (libcuda.so.1) is loaded at run time with github.com/ebitengine/purego,
// so building needs neither cgo nor the CUDA toolkit, and the binary runs
// where there is no GPU or no driver. It is compiled in on linux/amd64 and
// linux/arm64 unless the build tag nogpu is given; elsewhere, and with the
// tag, Open returns ErrUnsupported. The price of purego: a CGO_ENABLED=0
// Linux binary is dynamically linked against glibc (its fake cgo runtime
// loads libc), so it no longer runs on musl or in an empty container;
// -tags nogpu gives the fully static binary back.
//
// One warp signs one document: the 32 lanes find the token bounds, hash
// every 32nd shingle each (XXH3-64 with the shingle seed), and fill the
// signature or count the fingerprint's bits. The kernel takes normalised
// texts that are ASCII only (word or char units): the caller sends other
// texts to the CPU, as it does the documents the kernel reports with
// StatusFallback (a shingle longer than 240 bytes).
//
// # Concurrency and errors
//
// A Device is safe for concurrent use; a Stream is not (one per
// goroutine). Open's errors wrap ErrUnsupported, ErrNoDriver or ErrNoDevice
// and say what is missing; a Stream's errors name the driver call and its
// CUDA error.
package gpu

import (
	"errors"
	"fmt"
)

// Errors of Open.
var (
	// ErrUnsupported: this binary has no GPU support (built with the tag
	// nogpu, or for a platform other than linux/amd64, linux/arm64).
	ErrUnsupported = errors.New("this neardup was built without GPU support (GPU support needs linux/amd64 or linux/arm64, without -tags nogpu)")
	// ErrNoDriver: the CUDA driver library libcuda.so.1 cannot be loaded
	// or initialised.
	ErrNoDriver = errors.New("no usable CUDA driver")
	// ErrNoDevice: the driver sees no GPU.
	ErrNoDevice = errors.New("no CUDA device")
)

// Method is what the kernel computes for each document.
type Method uint32

// The kernel's methods (kernel/sign.cu's M_*).
const (
	OPH           Method = 0 // MinHash, one permutation hashing (minhash.OPH)
	MultiplyShift Method = 1 // MinHash, multiply-shift (minhash.MultiplyShift)
	SimHashSet    Method = 2 // SimHash, each distinct shingle weighs 1
	SimHashCount  Method = 3 // SimHash, each shingle occurrence weighs 1
)

// Unit is the token unit (kernel/sign.cu's UNIT_*).
type Unit uint32

// The units the kernel knows, on ASCII text.
const (
	Word Unit = 0 // runs of ASCII letters and digits (shingle.Word)
	Char Unit = 1 // bytes (shingle.Char on ASCII)
)

// Status of one document after Sign.
const (
	StatusOK       = 0 // signed
	StatusEmpty    = 1 // no token: no shingle
	StatusFallback = 2 // not signed: sign it on the CPU
)

// Config says how to sign: the shingles, the method and its constants.
type Config struct {
	Method Method
	Unit   Unit
	// N is the n-gram size, 1 to 64.
	N int
	// K is the number of MinHash slots, or the SimHash bits (1 to 128).
	K int
	// Seed is the shingles' XXH3 seed.
	Seed uint64
	// Key and Probe are, for OPH, the element key and the densification
	// seed (minhash.Hasher.Coefficients); for SimHash the seeds of bits
	// 0-63 and 64-127.
	Key, Probe uint64
	// A and B are the multiply-shift coefficients, K each.
	A, B []uint64
	// Hashes makes Sign return the shingle hashes too (Result.Hashes),
	// for the callers that keep shingle sets.
	Hashes bool
}

// Validate reports a Config the kernel cannot run.
func (c *Config) Validate() error {
	switch {
	case c.Method > SimHashCount:
		return fmt.Errorf("gpu: unknown method %d", c.Method)
	case c.Unit > Char:
		return fmt.Errorf("gpu: unknown unit %d", c.Unit)
	case c.N < 1 || c.N > 64:
		return fmt.Errorf("gpu: n-gram size %d not in 1..64", c.N)
	case c.K < 1 || c.K > 1<<16:
		return fmt.Errorf("gpu: %d slots not in 1..65536", c.K)
	case c.Method >= SimHashSet && c.K > 128:
		return fmt.Errorf("gpu: %d SimHash bits, at most 128", c.K)
	case c.Method == MultiplyShift && (len(c.A) != c.K || len(c.B) != c.K):
		return fmt.Errorf("gpu: multiply-shift needs %d coefficients a and b", c.K)
	}
	return nil
}

// MinHash reports whether the method makes MinHash signatures (else
// SimHash fingerprints).
func (m Method) MinHash() bool { return m <= MultiplyShift }

// Result is what Sign returns for a batch of n documents. Its slices
// belong to the Stream and are overwritten by the next Sign.
type Result struct {
	// Status holds each document's Status*.
	Status []uint32
	// Sig holds n*K slots (MinHash): document d's are Sig[d*K:(d+1)*K],
	// valid when its status is StatusOK.
	Sig []uint32
	// FP holds 2n words (SimHash): document d's fingerprint is FP[2d]
	// (bits 0-63) and FP[2d+1] (bits 64-127).
	FP []uint64
	// Count and Hashes, with Config.Hashes: document d's shingle hashes,
	// in shingle order with repeats (shingle.Shingler.AppendHashes), are
	// Hashes[off[d]+d:][:Count[d]] for the batch's offsets off (use
	// DocHashes). Count is 0 unless the status is StatusOK.
	Count  []uint32
	Hashes []uint64
}

// DocHashes returns document d's shingle hashes (Config.Hashes), for the
// offsets off the batch was signed with.
func (r *Result) DocHashes(off []uint32, d int) []uint64 {
	lo := int(off[d]) + d
	return r.Hashes[lo : lo+int(r.Count[d])]
}

// LibEnv is the environment variable that, when set, names the CUDA
// driver library to load instead of libcuda.so.1 (a path, or another
// soname).
const LibEnv = "NEARDUP_LIBCUDA"

// MaxBatchBytes bounds the text of one batch (offsets are 32-bit).
const MaxBatchBytes = 1 << 30
