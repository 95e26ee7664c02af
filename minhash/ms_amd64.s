//go:build amd64 && !purego

#include "textflag.h"

// func msMinAVX512(dst *uint32, a, b *uint64, groups int, xs *uint64, n int)
//
// For each group of 8 slots: Z0 = a, Z1 = b; for every shingle hash x,
// v = a*x + b (VPMULLQ, VPADDQ, 64-bit wrapping) and the running minimum
// of v (VPMINUQ), two accumulators to break the dependency chain. v >> 32
// is monotone in v, so the high half of the minimum is the minimum of the
// high halves: shift once, narrow to 32 bits (VPMOVQD) and clamp below
// Empty (0xFFFFFFFF), as the portable signMultiplyShift does.
TEXT ·msMinAVX512(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ a+8(FP), R8
	MOVQ b+16(FP), R9
	MOVQ groups+24(FP), CX
	MOVQ xs+32(FP), R10
	MOVQ n+40(FP), R11
	MOVL $0xFFFFFFFE, AX
	VPBROADCASTD AX, Y7             // Empty - 1 in 8 dwords

group:
	VMOVDQU64 (R8), Z0              // a[g:g+8]
	VMOVDQU64 (R9), Z1              // b[g:g+8]
	VPTERNLOGQ $0xFF, Z2, Z2, Z2    // all ones: the largest uint64
	VMOVDQA64 Z2, Z3
	MOVQ R10, SI
	MOVQ R11, DX

pair:
	CMPQ DX, $2
	JB   last
	VPBROADCASTQ (SI), Z4
	VPBROADCASTQ 8(SI), Z5
	VPMULLQ Z0, Z4, Z4
	VPMULLQ Z0, Z5, Z5
	VPADDQ Z1, Z4, Z4
	VPADDQ Z1, Z5, Z5
	VPMINUQ Z4, Z2, Z2
	VPMINUQ Z5, Z3, Z3
	ADDQ $16, SI
	SUBQ $2, DX
	JMP  pair

last:
	TESTQ DX, DX
	JZ    done
	VPBROADCASTQ (SI), Z4
	VPMULLQ Z0, Z4, Z4
	VPADDQ Z1, Z4, Z4
	VPMINUQ Z4, Z2, Z2

done:
	VPMINUQ Z3, Z2, Z2
	VPSRLQ $32, Z2, Z2
	VPMOVQD Z2, Y2
	VPMINUD Y7, Y2, Y2
	VMOVDQU Y2, (DI)
	ADDQ $32, DI
	ADDQ $64, R8
	ADDQ $64, R9
	DECQ CX
	JNZ  group
	VZEROUPPER
	RET
