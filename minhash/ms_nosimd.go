//go:build !(goexperiment.simd && amd64)

package minhash

// useSIMD is false: this build has no accelerated path.
const useSIMD = false

func (h *Hasher) signMultiplyShiftSIMD(Signature, []uint64) bool { return false }
