//go:build !amd64 || purego

package minhash

// useSIMD is false: this build has no accelerated path.
const useSIMD = false

func (h *Hasher) signMultiplyShiftSIMD(Signature, []uint64) bool { return false }
