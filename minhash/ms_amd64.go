//go:build amd64 && !purego

package minhash

import "golang.org/x/sys/cpu"

// useSIMD is true when the AVX-512 kernel of the multiply-shift family can
// run: the CPU has AVX-512 F and DQ (VPMULLQ) and the OS saves their
// registers.
var useSIMD = cpu.X86.HasAVX512F && cpu.X86.HasAVX512DQ

// msMinAVX512 sets dst[i], for i < 8*groups, to the minimum over xs of
// (a[i]*x + b[i]) >> 32 (wrapping 64-bit arithmetic), clamped below Empty:
// signMultiplyShift eight slots at a time (ms_amd64.s). xs must not be
// empty.
//
//go:noescape
func msMinAVX512(dst *uint32, a, b *uint64, groups int, xs *uint64, n int)

// signMultiplyShiftSIMD is signMultiplyShift with the AVX-512 kernel,
// slot for slot the same (TestSIMDMatchesPortable). It returns false, and
// does nothing, when the kernel cannot run or the slots are not a multiple
// of 8.
func (h *Hasher) signMultiplyShiftSIMD(dst Signature, hashes []uint64) bool {
	if !useSIMD || len(dst)%8 != 0 || len(dst) == 0 || len(hashes) == 0 {
		return false
	}
	msMinAVX512(&dst[0], &h.a[0], &h.b[0], len(dst)/8, &hashes[0], len(hashes))
	return true
}
