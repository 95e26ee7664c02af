//go:build goexperiment.simd && amd64

package minhash

import "simd/archsimd"

// useSIMD is true when the AVX-512 path of the multiply-shift family can
// run (built with GOEXPERIMENT=simd, on a CPU with AVX-512).
var useSIMD = archsimd.X86.AVX512()

// signMultiplyShiftSIMD is signMultiplyShift eight slots at a time with
// AVX-512 (VPMULLQ, VPADDQ, VPSRLQ, VPMOVQD, VPMINUD). The results are
// identical to the portable path (TestSIMDMatchesPortable).
func (h *Hasher) signMultiplyShiftSIMD(dst Signature, hashes []uint64) bool {
	if !useSIMD || len(dst)%8 != 0 {
		return false
	}
	a, b := h.a[:len(dst)], h.b[:len(dst)]
	empty := archsimd.BroadcastUint32x8(Empty - 1) // clampSlot folded in
	for g := 0; g < len(dst); g += 8 {
		av := archsimd.LoadUint64x8Slice(a[g : g+8])
		bv := archsimd.LoadUint64x8Slice(b[g : g+8])
		m0, m1 := empty, empty
		xs := hashes
		for len(xs) >= 2 {
			v0 := av.Mul(archsimd.BroadcastUint64x8(xs[0])).Add(bv).ShiftAllRight(32).TruncateToUint32()
			v1 := av.Mul(archsimd.BroadcastUint64x8(xs[1])).Add(bv).ShiftAllRight(32).TruncateToUint32()
			m0 = m0.Min(v0)
			m1 = m1.Min(v1)
			xs = xs[2:]
		}
		if len(xs) == 1 {
			m0 = m0.Min(av.Mul(archsimd.BroadcastUint64x8(xs[0])).Add(bv).ShiftAllRight(32).TruncateToUint32())
		}
		m0.Min(m1).StoreSlice(dst[g : g+8])
	}
	return true
}
