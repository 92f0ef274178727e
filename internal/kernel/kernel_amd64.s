//go:build amd64 && !purego

#include "textflag.h"

// MAXNAN8RESULT returns (m float32, nan bool) at 16(FP) and 20(FP): the
// largest of Y0's eight lanes, and whether any lane of the mask Y2 is set.
#define MAXNAN8RESULT \
	VEXTRACTF128 $1, Y0, X1 \
	VMAXPS X1, X0, X0 \
	VPERMILPS $0x4E, X0, X1 \
	VMAXPS X1, X0, X0 \
	VPERMILPS $0xB1, X0, X1 \
	VMAXPS X1, X0, X0 \
	MOVSS X0, m+16(FP) \
	VMOVMSKPS Y2, AX \
	TESTL AX, AX \
	SETNE nan+20(FP)

// ZERO8 and ZERO16 zero the accumulators Z0-Z7 and Z0-Z15, ZERO16TO23
// Z16-Z23.
#define ZERO8 \
	VPXORD Z0, Z0, Z0 \
	VPXORD Z1, Z1, Z1 \
	VPXORD Z2, Z2, Z2 \
	VPXORD Z3, Z3, Z3 \
	VPXORD Z4, Z4, Z4 \
	VPXORD Z5, Z5, Z5 \
	VPXORD Z6, Z6, Z6 \
	VPXORD Z7, Z7, Z7

#define ZERO16 \
	ZERO8 \
	VPXORD Z8, Z8, Z8 \
	VPXORD Z9, Z9, Z9 \
	VPXORD Z10, Z10, Z10 \
	VPXORD Z11, Z11, Z11 \
	VPXORD Z12, Z12, Z12 \
	VPXORD Z13, Z13, Z13 \
	VPXORD Z14, Z14, Z14 \
	VPXORD Z15, Z15, Z15

#define ZERO16TO23 \
	VPXORD Z16, Z16, Z16 \
	VPXORD Z17, Z17, Z17 \
	VPXORD Z18, Z18, Z18 \
	VPXORD Z19, Z19, Z19 \
	VPXORD Z20, Z20, Z20 \
	VPXORD Z21, Z21, Z21 \
	VPXORD Z22, Z22, Z22 \
	VPXORD Z23, Z23, Z23

// HSUM8 leaves the sum of Y0's eight lanes v in X0's lowest lane, as
// ((v0+v1)+(v2+v3)) + ((v4+v5)+(v6+v7)): the order dot4Asm sums each of
// its rows in, so that a row's dot product has the same bits whichever
// kernel takes it (a row's answer does not depend on its batch-mates).
#define HSUM8 \
	VHADDPS Y0, Y0, Y0 \
	VHADDPS Y0, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS X1, X0, X0

// func dotAsm(a, b *float32, n int) float32
TEXT ·dotAsm(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
dotloop:
	VMOVUPS (SI), Y2
	VMOVUPS 32(SI), Y3
	VFMADD231PS (DI), Y2, Y0
	VFMADD231PS 32(DI), Y3, Y1
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  dotloop
	VADDPS Y1, Y0, Y0
	HSUM8
	VZEROUPPER
	MOVSS X0, ret+24(FP)
	RET

// func dot4Asm(a, b *float32, ldb, n int, out *[4]float32)
TEXT ·dot4Asm(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ ldb+16(FP), DX
	MOVQ n+24(FP), CX
	SHLQ $2, DX
	LEAQ (DI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R10
	SHRQ $4, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
dot4loop:
	VMOVUPS (SI), Y8
	VMOVUPS 32(SI), Y9
	VFMADD231PS (DI), Y8, Y0
	VFMADD231PS 32(DI), Y9, Y4
	VFMADD231PS (R8), Y8, Y1
	VFMADD231PS 32(R8), Y9, Y5
	VFMADD231PS (R9), Y8, Y2
	VFMADD231PS 32(R9), Y9, Y6
	VFMADD231PS (R10), Y8, Y3
	VFMADD231PS 32(R10), Y9, Y7
	ADDQ $64, SI
	ADDQ $64, DI
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R10
	DECQ CX
	JNZ  dot4loop
	VADDPS Y4, Y0, Y0
	VADDPS Y5, Y1, Y1
	VADDPS Y6, Y2, Y2
	VADDPS Y7, Y3, Y3
	VHADDPS Y1, Y0, Y0
	VHADDPS Y3, Y2, Y2
	VHADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS X1, X0, X0
	MOVQ out+32(FP), AX
	VMOVUPS X0, (AX)
	VZEROUPPER
	RET

// func axpyAsm(alpha float32, x, y *float32, n int)
TEXT ·axpyAsm(SB), NOSPLIT, $0-32
	VBROADCASTSS alpha+0(FP), Y0
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $4, CX
axpyloop:
	VMOVUPS (SI), Y1
	VMOVUPS 32(SI), Y2
	VFMADD213PS (DI), Y0, Y1
	VFMADD213PS 32(DI), Y0, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  axpyloop
	VZEROUPPER
	RET

// func gemvAsm(a, b *float32, k, n, ldb int, c *float32)
// c[j] = sum_i a[i]*b[j*ldb+i] for j < n; k is a multiple of 16.
TEXT ·gemvAsm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ k+16(FP), R8
	MOVQ n+24(FP), R9
	MOVQ ldb+32(FP), DX
	MOVQ c+40(FP), R10
	SHLQ $2, DX
	SHRQ $4, R8
	TESTQ R9, R9
	JZ   gemvdone
gemvrow:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R8, CX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
gemvloop:
	VMOVUPS (AX), Y2
	VMOVUPS 32(AX), Y3
	VFMADD231PS (BX), Y2, Y0
	VFMADD231PS 32(BX), Y3, Y1
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  gemvloop
	VADDPS Y1, Y0, Y0
	HSUM8
	MOVSS X0, (R10)
	ADDQ $4, R10
	ADDQ DX, DI
	DECQ R9
	JNZ  gemvrow
gemvdone:
	VZEROUPPER
	RET

// hsumZ0 leaves the sum of Z0's 16 int32 lanes in X0's lowest lane.
#define HSUMZ0 \
	VEXTRACTI64X4 $1, Z0, Y1 \
	VPADDD Y1, Y0, Y0 \
	VEXTRACTI128 $1, Y0, X1 \
	VPADDD X1, X0, X0 \
	VPSHUFD $0x4E, X0, X1 \
	VPADDD X1, X0, X0 \
	VPSHUFD $0xB1, X0, X1 \
	VPADDD X1, X0, X0

// func dotsU8S8Asm(a *uint8, b *int8, blk, nblk, n, ldb int, c *int32)
// For j < n and t < nblk: c[j*nblk+t] = sum over the blk bytes of block t
// of a[i] (unsigned) * b[j*ldb+i] (signed); blk is a multiple of 64.
TEXT ·dotsU8S8Asm(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ blk+16(FP), R8
	MOVQ nblk+24(FP), R9
	MOVQ n+32(FP), R11
	MOVQ ldb+40(FP), DX
	MOVQ c+48(FP), R10
	SHRQ $6, R8
	TESTQ R11, R11
	JZ   u8done
u8row:
	MOVQ SI, AX
	MOVQ DI, BX
	MOVQ R9, R12
u8block:
	VPXORD Z0, Z0, Z0
	MOVQ R8, CX
u8chunk:
	VMOVDQU32 (AX), Z2
	VPDPBUSD (BX), Z2, Z0
	ADDQ $64, AX
	ADDQ $64, BX
	DECQ CX
	JNZ  u8chunk
	HSUMZ0
	VMOVD X0, (R10)
	ADDQ $4, R10
	DECQ R12
	JNZ  u8block
	ADDQ DX, DI
	DECQ R11
	JNZ  u8row
u8done:
	VZEROUPPER
	RET

// expconst holds the float32 exponential's constants, eight copies each
// (one YMM register's worth), and the int32 exponent bias 127.
DATA expconst<>+0(SB)/4, $0xc2aeac4f
DATA expconst<>+4(SB)/4, $0xc2aeac4f
DATA expconst<>+8(SB)/4, $0xc2aeac4f
DATA expconst<>+12(SB)/4, $0xc2aeac4f
DATA expconst<>+16(SB)/4, $0xc2aeac4f
DATA expconst<>+20(SB)/4, $0xc2aeac4f
DATA expconst<>+24(SB)/4, $0xc2aeac4f
DATA expconst<>+28(SB)/4, $0xc2aeac4f
DATA expconst<>+32(SB)/4, $0x3fb8aa3b
DATA expconst<>+36(SB)/4, $0x3fb8aa3b
DATA expconst<>+40(SB)/4, $0x3fb8aa3b
DATA expconst<>+44(SB)/4, $0x3fb8aa3b
DATA expconst<>+48(SB)/4, $0x3fb8aa3b
DATA expconst<>+52(SB)/4, $0x3fb8aa3b
DATA expconst<>+56(SB)/4, $0x3fb8aa3b
DATA expconst<>+60(SB)/4, $0x3fb8aa3b
DATA expconst<>+64(SB)/4, $0x3f000000
DATA expconst<>+68(SB)/4, $0x3f000000
DATA expconst<>+72(SB)/4, $0x3f000000
DATA expconst<>+76(SB)/4, $0x3f000000
DATA expconst<>+80(SB)/4, $0x3f000000
DATA expconst<>+84(SB)/4, $0x3f000000
DATA expconst<>+88(SB)/4, $0x3f000000
DATA expconst<>+92(SB)/4, $0x3f000000
DATA expconst<>+96(SB)/4, $0x3f318000
DATA expconst<>+100(SB)/4, $0x3f318000
DATA expconst<>+104(SB)/4, $0x3f318000
DATA expconst<>+108(SB)/4, $0x3f318000
DATA expconst<>+112(SB)/4, $0x3f318000
DATA expconst<>+116(SB)/4, $0x3f318000
DATA expconst<>+120(SB)/4, $0x3f318000
DATA expconst<>+124(SB)/4, $0x3f318000
DATA expconst<>+128(SB)/4, $0xb95e8083
DATA expconst<>+132(SB)/4, $0xb95e8083
DATA expconst<>+136(SB)/4, $0xb95e8083
DATA expconst<>+140(SB)/4, $0xb95e8083
DATA expconst<>+144(SB)/4, $0xb95e8083
DATA expconst<>+148(SB)/4, $0xb95e8083
DATA expconst<>+152(SB)/4, $0xb95e8083
DATA expconst<>+156(SB)/4, $0xb95e8083
DATA expconst<>+160(SB)/4, $0x39506967
DATA expconst<>+164(SB)/4, $0x39506967
DATA expconst<>+168(SB)/4, $0x39506967
DATA expconst<>+172(SB)/4, $0x39506967
DATA expconst<>+176(SB)/4, $0x39506967
DATA expconst<>+180(SB)/4, $0x39506967
DATA expconst<>+184(SB)/4, $0x39506967
DATA expconst<>+188(SB)/4, $0x39506967
DATA expconst<>+192(SB)/4, $0x3ab743ce
DATA expconst<>+196(SB)/4, $0x3ab743ce
DATA expconst<>+200(SB)/4, $0x3ab743ce
DATA expconst<>+204(SB)/4, $0x3ab743ce
DATA expconst<>+208(SB)/4, $0x3ab743ce
DATA expconst<>+212(SB)/4, $0x3ab743ce
DATA expconst<>+216(SB)/4, $0x3ab743ce
DATA expconst<>+220(SB)/4, $0x3ab743ce
DATA expconst<>+224(SB)/4, $0x3c088908
DATA expconst<>+228(SB)/4, $0x3c088908
DATA expconst<>+232(SB)/4, $0x3c088908
DATA expconst<>+236(SB)/4, $0x3c088908
DATA expconst<>+240(SB)/4, $0x3c088908
DATA expconst<>+244(SB)/4, $0x3c088908
DATA expconst<>+248(SB)/4, $0x3c088908
DATA expconst<>+252(SB)/4, $0x3c088908
DATA expconst<>+256(SB)/4, $0x3d2aa9c1
DATA expconst<>+260(SB)/4, $0x3d2aa9c1
DATA expconst<>+264(SB)/4, $0x3d2aa9c1
DATA expconst<>+268(SB)/4, $0x3d2aa9c1
DATA expconst<>+272(SB)/4, $0x3d2aa9c1
DATA expconst<>+276(SB)/4, $0x3d2aa9c1
DATA expconst<>+280(SB)/4, $0x3d2aa9c1
DATA expconst<>+284(SB)/4, $0x3d2aa9c1
DATA expconst<>+288(SB)/4, $0x3e2aaaaa
DATA expconst<>+292(SB)/4, $0x3e2aaaaa
DATA expconst<>+296(SB)/4, $0x3e2aaaaa
DATA expconst<>+300(SB)/4, $0x3e2aaaaa
DATA expconst<>+304(SB)/4, $0x3e2aaaaa
DATA expconst<>+308(SB)/4, $0x3e2aaaaa
DATA expconst<>+312(SB)/4, $0x3e2aaaaa
DATA expconst<>+316(SB)/4, $0x3e2aaaaa
DATA expconst<>+320(SB)/4, $0x3f000000
DATA expconst<>+324(SB)/4, $0x3f000000
DATA expconst<>+328(SB)/4, $0x3f000000
DATA expconst<>+332(SB)/4, $0x3f000000
DATA expconst<>+336(SB)/4, $0x3f000000
DATA expconst<>+340(SB)/4, $0x3f000000
DATA expconst<>+344(SB)/4, $0x3f000000
DATA expconst<>+348(SB)/4, $0x3f000000
DATA expconst<>+352(SB)/4, $0x3f800000
DATA expconst<>+356(SB)/4, $0x3f800000
DATA expconst<>+360(SB)/4, $0x3f800000
DATA expconst<>+364(SB)/4, $0x3f800000
DATA expconst<>+368(SB)/4, $0x3f800000
DATA expconst<>+372(SB)/4, $0x3f800000
DATA expconst<>+376(SB)/4, $0x3f800000
DATA expconst<>+380(SB)/4, $0x3f800000
DATA expconst<>+384(SB)/4, $0x0000007f
DATA expconst<>+388(SB)/4, $0x0000007f
DATA expconst<>+392(SB)/4, $0x0000007f
DATA expconst<>+396(SB)/4, $0x0000007f
DATA expconst<>+400(SB)/4, $0x0000007f
DATA expconst<>+404(SB)/4, $0x0000007f
DATA expconst<>+408(SB)/4, $0x0000007f
DATA expconst<>+412(SB)/4, $0x0000007f
GLOBL expconst<>(SB), RODATA|NOPTR, $416

// EXP8 sets Y4 to e^Y0 for eight floats, Y0 clamped below at -87.33654
// (Y1-Y5 scratch); a NaN stays NaN (MAXPS returns its second source, Y0,
// when either is NaN, so the clamp is written with x second): n = floor(x log2(e) + 1/2), r = x - n ln(2) in two
// parts, e^r by Cephes' degree-6 polynomial, times 2^n through the
// exponent bits.
#define EXP8 \
	VMOVUPS expconst<>+0(SB), Y1 \
	VMAXPS Y0, Y1, Y0 \
	VMOVUPS expconst<>+32(SB), Y1 \
	VFMADD213PS expconst<>+64(SB), Y0, Y1 \
	VROUNDPS $1, Y1, Y1 \
	VMOVAPS Y0, Y2 \
	VFNMADD231PS expconst<>+96(SB), Y1, Y2 \
	VFNMADD231PS expconst<>+128(SB), Y1, Y2 \
	VMULPS Y2, Y2, Y3 \
	VMOVUPS expconst<>+160(SB), Y4 \
	VFMADD213PS expconst<>+192(SB), Y2, Y4 \
	VFMADD213PS expconst<>+224(SB), Y2, Y4 \
	VFMADD213PS expconst<>+256(SB), Y2, Y4 \
	VFMADD213PS expconst<>+288(SB), Y2, Y4 \
	VFMADD213PS expconst<>+320(SB), Y2, Y4 \
	VFMADD213PS Y2, Y3, Y4 \
	VADDPS expconst<>+352(SB), Y4, Y4 \
	VCVTPS2DQ Y1, Y5 \
	VPADDD expconst<>+384(SB), Y5, Y5 \
	VPSLLD $23, Y5, Y5 \
	VMULPS Y5, Y4, Y4

// func expSumAsm(x *float32, n int, m float32) float64
// sum over i < n (a multiple of 8) of e^(x[i]-m), x[i]-m clamped below at
// -87.33654: the polynomial of expf32 eight lanes at a time, summed in
// float64.
TEXT ·expSumAsm(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Y15
	SHRQ $3, CX
	VXORPD Y8, Y8, Y8
	VXORPD Y9, Y9, Y9
	TESTQ CX, CX
	JZ   expdone
exploop:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	EXP8
	VCVTPS2PD X4, Y6
	VEXTRACTF128 $1, Y4, X7
	VCVTPS2PD X7, Y7
	VADDPD Y6, Y8, Y8
	VADDPD Y7, Y9, Y9
	ADDQ $32, SI
	DECQ CX
	JNZ  exploop
expdone:
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VHADDPD X8, X8, X8
	VZEROUPPER
	MOVSD X8, ret+24(FP)
	RET

// func dots4U8S8Asm(a *uint8, b *int8, k, n, ldb int, c *int32)
// c[j] = sum over k bytes (a multiple of 64) of a (unsigned) * b's row j
// (signed, rows ldb apart), for j < n, a multiple of 4: four rows at a
// time, each A load shared by four accumulators.
TEXT ·dots4U8S8Asm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ k+16(FP), R8
	MOVQ n+24(FP), R11
	MOVQ ldb+32(FP), DX
	MOVQ c+40(FP), R10
	SHRQ $6, R8
	SHRQ $2, R11
	TESTQ R11, R11
	JZ   d4done
d4row:
	MOVQ SI, AX
	MOVQ DI, BX
	LEAQ (BX)(DX*1), R12
	LEAQ (R12)(DX*1), R13
	LEAQ (R13)(DX*1), R9
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	MOVQ R8, CX
d4chunk:
	VMOVDQU32 (AX), Z4
	VPDPBUSD (BX), Z4, Z0
	VPDPBUSD (R12), Z4, Z1
	VPDPBUSD (R13), Z4, Z2
	VPDPBUSD (R9), Z4, Z3
	ADDQ $64, AX
	ADDQ $64, BX
	ADDQ $64, R12
	ADDQ $64, R13
	ADDQ $64, R9
	DECQ CX
	JNZ  d4chunk
	VEXTRACTI64X4 $1, Z0, Y5
	VPADDD Y5, Y0, Y0
	VEXTRACTI64X4 $1, Z1, Y5
	VPADDD Y5, Y1, Y1
	VEXTRACTI64X4 $1, Z2, Y5
	VPADDD Y5, Y2, Y2
	VEXTRACTI64X4 $1, Z3, Y5
	VPADDD Y5, Y3, Y3
	VPHADDD Y1, Y0, Y0
	VPHADDD Y3, Y2, Y2
	VPHADDD Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X5
	VPADDD X5, X0, X0
	VMOVDQU X0, (R10)
	ADDQ $16, R10
	LEAQ (DI)(DX*4), DI
	DECQ R11
	JNZ  d4row
d4done:
	VZEROUPPER
	RET

// func gemmPanel4Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)
// C[0:4, 0:16] = A[0:4, 0:k] times a packed panel bp (k rows of 16
// floats): the rank-1 updates of four rows by one panel row at a time,
// each A element broadcast from memory, k unrolled by two into eight
// accumulators.
TEXT ·gemmPanel4Asm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k+16(FP), CX
	MOVQ bp+24(FP), DI
	MOVQ c+32(FP), R10
	MOVQ ldc+40(FP), R11
	SHLQ $2, DX
	SHLQ $2, R11
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R12
	ZERO8
	MOVQ CX, BX
	SHRQ $1, BX
	JZ   p4tail
p4loop:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (R8), Z16, Z1
	VFMADD231PS.BCST (R9), Z16, Z2
	VFMADD231PS.BCST (R12), Z16, Z3
	VFMADD231PS.BCST 4(SI), Z17, Z4
	VFMADD231PS.BCST 4(R8), Z17, Z5
	VFMADD231PS.BCST 4(R9), Z17, Z6
	VFMADD231PS.BCST 4(R12), Z17, Z7
	ADDQ $128, DI
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ $8, R12
	DECQ BX
	JNZ  p4loop
p4tail:
	TESTQ $1, CX
	JZ   p4store
	VMOVUPS (DI), Z16
	VFMADD231PS.BCST (SI), Z16, Z0
	VFMADD231PS.BCST (R8), Z16, Z1
	VFMADD231PS.BCST (R9), Z16, Z2
	VFMADD231PS.BCST (R12), Z16, Z3
p4store:
	VADDPS Z4, Z0, Z0
	VADDPS Z5, Z1, Z1
	VADDPS Z6, Z2, Z2
	VADDPS Z7, Z3, Z3
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, (R10)(R11*1)
	LEAQ (R10)(R11*2), R13
	VMOVUPS Z2, (R13)
	VMOVUPS Z3, (R13)(R11*1)
	VZEROUPPER
	RET

// func gemvPanelAsm(a *float32, k int, bp *float32, np int, c *float32)
// c[16p:16p+16] = a[0:k] times packed panel p (k rows of 16 floats,
// panels one after another), for p < np: one sequential pass over the
// panels.
TEXT ·gemvPanelAsm(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ k+8(FP), CX
	MOVQ bp+16(FP), DI
	MOVQ np+24(FP), R11
	MOVQ c+32(FP), R10
	TESTQ R11, R11
	JZ   gvdone
gvpanel:
	MOVQ SI, AX
	MOVQ CX, BX
	SHRQ $1, BX
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	TESTQ BX, BX
	JZ   gvtail
gvloop:
	VMOVUPS (DI), Z16
	VMOVUPS 64(DI), Z17
	VFMADD231PS.BCST (AX), Z16, Z0
	VFMADD231PS.BCST 4(AX), Z17, Z1
	ADDQ $128, DI
	ADDQ $8, AX
	DECQ BX
	JNZ  gvloop
gvtail:
	TESTQ $1, CX
	JZ   gvstore
	VMOVUPS (DI), Z16
	VFMADD231PS.BCST (AX), Z16, Z0
	ADDQ $64, DI
gvstore:
	VADDPS Z1, Z0, Z0
	VMOVUPS Z0, (R10)
	ADDQ $64, R10
	DECQ R11
	JNZ  gvpanel
gvdone:
	VZEROUPPER
	RET

// func expVecAsm(x, z *float32, n int)
// z[i] = e^x[i] for i < n (a multiple of 8), x clamped to
// [-87.33654, 88.37626]: expSumAsm's polynomial, stored.
TEXT ·expVecAsm(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	MOVL $0x42b0c0a5, AX
	MOVD AX, X15
	VBROADCASTSS X15, Y15
	TESTQ CX, CX
	JZ   evdone
evloop:
	VMOVUPS (SI), Y0
	VMINPS Y0, Y15, Y0 // x second: a NaN passes the clamp
	EXP8
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  evloop
evdone:
	VZEROUPPER
	RET

// func scaleInt32Asm(acc *int32, sc *float32, s float32, y *float32, n int)
// y[j] = (float32(acc[j]) * sc[j]) * s for j < n, a multiple of 16.
TEXT ·scaleInt32Asm(SB), NOSPLIT, $0-40
	MOVQ acc+0(FP), SI
	MOVQ sc+8(FP), BX
	VBROADCASTSS s+16(FP), Y0
	MOVQ y+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $4, CX
scaleloop:
	VCVTDQ2PS (SI), Y1
	VCVTDQ2PS 32(SI), Y2
	VMULPS (BX), Y1, Y1
	VMULPS 32(BX), Y2, Y2
	VMULPS Y0, Y1, Y1
	VMULPS Y0, Y2, Y2
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	ADDQ $64, SI
	ADDQ $64, BX
	ADDQ $64, DI
	DECQ CX
	JNZ  scaleloop
	VZEROUPPER
	RET

// V4OUT stores one accumulator of vnni4x64Asm: (float32(acc - c) * s) *
// Z24 at off(BX).
#define V4OUT(acc, c, s, off) \
	VPSUBD c, acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS s, acc, acc \
	VMULPS Z24, acc, acc \
	VMOVUPS acc, off(BX)

#define V4ROW(a0, a1, a2, a3) \
	V4OUT(a0, Z16, Z20, 0) \
	V4OUT(a1, Z17, Z21, 64) \
	V4OUT(a2, Z18, Z22, 128) \
	V4OUT(a3, Z19, Z23, 192)

// V4OUTB is V4OUT with the column's bias (b) added last.
#define V4OUTB(acc, c, s, b, off) \
	VPSUBD c, acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS s, acc, acc \
	VMULPS Z24, acc, acc \
	VADDPS b, acc, acc \
	VMOVUPS acc, off(BX)

#define V4ROWB(a0, a1, a2, a3) \
	V4OUTB(a0, Z16, Z20, Z25, 0) \
	V4OUTB(a1, Z17, Z21, Z26, 64) \
	V4OUTB(a2, Z18, Z22, Z27, 128) \
	V4OUTB(a3, Z19, Z23, Z28, 192)

// V4STORE stores vnni4x64Asm's four rows with ROW (V4ROW or V4ROWB),
// each row's scale at (AX) on, the rows R9 bytes apart from BX.
#define V4STORE(ROW) \
	VBROADCASTSS (AX), Z24 \
	ROW(Z0, Z1, Z2, Z3) \
	ADDQ R9, BX \
	VBROADCASTSS 4(AX), Z24 \
	ROW(Z4, Z5, Z6, Z7) \
	ADDQ R9, BX \
	VBROADCASTSS 8(AX), Z24 \
	ROW(Z8, Z9, Z10, Z11) \
	ADDQ R9, BX \
	VBROADCASTSS 12(AX), Z24 \
	ROW(Z12, Z13, Z14, Z15)

// V1OUT is V4OUT for vnni1x64Asm: corrections at AX, scales at DX.
#define V1OUT(acc, off) \
	VPSUBD off(AX), acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS off(DX), acc, acc \
	VMULPS Z24, acc, acc \
	VMOVUPS acc, off(BX)

// V1OUTB is V1OUT with the bias at R8 added last.
#define V1OUTB(acc, off) \
	VPSUBD off(AX), acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS off(DX), acc, acc \
	VMULPS Z24, acc, acc \
	VADDPS off(R8), acc, acc \
	VMOVUPS acc, off(BX)

// func vnni4x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)
// Four rows of a (lda apart) by one 64-column block of a QuantProduct
// (bp: k4 groups of 256 bytes): 16 accumulators, each group's four
// panels loaded once and each row's 4 bytes broadcast once; then
// y[r][j] = (float32(acc - corr[j]) * sc[j]) * rs[r] (+ bias[j] when bias
// is not nil), rows ldy apart.
TEXT ·vnni4x64Asm(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	LEAQ (SI)(DX*2), R8
	ZERO16
v4loop:
	VMOVDQU32 (DI), Z16
	VMOVDQU32 64(DI), Z17
	VMOVDQU32 128(DI), Z18
	VMOVDQU32 192(DI), Z19
	VPBROADCASTD (SI), Z20
	VPBROADCASTD (SI)(DX*1), Z21
	VPBROADCASTD (R8), Z22
	VPBROADCASTD (R8)(DX*1), Z23
	VPDPBUSD Z16, Z20, Z0
	VPDPBUSD Z17, Z20, Z1
	VPDPBUSD Z18, Z20, Z2
	VPDPBUSD Z19, Z20, Z3
	VPDPBUSD Z16, Z21, Z4
	VPDPBUSD Z17, Z21, Z5
	VPDPBUSD Z18, Z21, Z6
	VPDPBUSD Z19, Z21, Z7
	VPDPBUSD Z16, Z22, Z8
	VPDPBUSD Z17, Z22, Z9
	VPDPBUSD Z18, Z22, Z10
	VPDPBUSD Z19, Z22, Z11
	VPDPBUSD Z16, Z23, Z12
	VPDPBUSD Z17, Z23, Z13
	VPDPBUSD Z18, Z23, Z14
	VPDPBUSD Z19, Z23, Z15
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  v4loop
	MOVQ corr+32(FP), AX
	VMOVDQU32 (AX), Z16
	VMOVDQU32 64(AX), Z17
	VMOVDQU32 128(AX), Z18
	VMOVDQU32 192(AX), Z19
	MOVQ sc+40(FP), AX
	VMOVUPS (AX), Z20
	VMOVUPS 64(AX), Z21
	VMOVUPS 128(AX), Z22
	VMOVUPS 192(AX), Z23
	MOVQ rs+48(FP), AX
	MOVQ y+56(FP), BX
	MOVQ ldy+64(FP), R9
	SHLQ $2, R9
	MOVQ bias+72(FP), CX
	TESTQ CX, CX
	JNZ  v4bias
	V4STORE(V4ROW)
	VZEROUPPER
	RET
v4bias:
	VMOVUPS (CX), Z25
	VMOVUPS 64(CX), Z26
	VMOVUPS 128(CX), Z27
	VMOVUPS 192(CX), Z28
	V4STORE(V4ROWB)
	VZEROUPPER
	RET

// V6OUT stores one accumulator of vnni6x64Asm: V4OUT with the row's
// scale read by embedded broadcast from (R12) (no register is left for it).
#define V6OUT(acc, c, s, off) \
	VPSUBD c, acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS s, acc, acc \
	VMULPS.BCST (R12), acc, acc \
	VMOVUPS acc, off(BX)

// V6OUTB is V6OUT with the column's bias, read from off(CX), added last.
#define V6OUTB(acc, c, s, off) \
	VPSUBD c, acc, acc \
	VCVTDQ2PS acc, acc \
	VMULPS s, acc, acc \
	VMULPS.BCST (R12), acc, acc \
	VADDPS off(CX), acc, acc \
	VMOVUPS acc, off(BX)

#define V6ROW(a0, a1, a2, a3) \
	V6OUT(a0, Z24, Z28, 0) \
	V6OUT(a1, Z25, Z29, 64) \
	V6OUT(a2, Z26, Z30, 128) \
	V6OUT(a3, Z27, Z31, 192)

#define V6ROWB(a0, a1, a2, a3) \
	V6OUTB(a0, Z24, Z28, 0) \
	V6OUTB(a1, Z25, Z29, 64) \
	V6OUTB(a2, Z26, Z30, 128) \
	V6OUTB(a3, Z27, Z31, 192)

// V6NEXT moves the epilogue of vnni6x64Asm and its narrower forms to the
// next row: its outputs R9 bytes on, its scale 4 bytes on.
#define V6NEXT \
	ADDQ R9, BX \
	ADDQ $4, R12

// V6STORE2, 3, 5 and V6STORE store the first two, three, five and six
// rows' accumulators with ROW (V6ROW or V6ROWB), each row's scale at (R12)
// on, the rows R9 bytes apart from BX.
#define V6STORE2(ROW) \
	ROW(Z0, Z1, Z2, Z3) \
	V6NEXT \
	ROW(Z4, Z5, Z6, Z7)

#define V6STORE3(ROW) \
	V6STORE2(ROW) \
	V6NEXT \
	ROW(Z8, Z9, Z10, Z11)

#define V6STORE5(ROW) \
	V6STORE3(ROW) \
	V6NEXT \
	ROW(Z12, Z13, Z14, Z15) \
	V6NEXT \
	ROW(Z16, Z17, Z18, Z19)

#define V6STORE(ROW) \
	V6STORE5(ROW) \
	V6NEXT \
	ROW(Z20, Z21, Z22, Z23)

// V6EPILOGUE loads vnni6x64Asm's (and its narrower forms') corrections
// into Z24-Z27 and column scales into Z28-Z31, the row scales' address
// into R12, y into BX, ldy in bytes into R9 and bias into CX, and sets
// the flags from bias (JNZ: there is one).
#define V6EPILOGUE \
	MOVQ corr+32(FP), AX \
	VMOVDQU32 (AX), Z24 \
	VMOVDQU32 64(AX), Z25 \
	VMOVDQU32 128(AX), Z26 \
	VMOVDQU32 192(AX), Z27 \
	MOVQ sc+40(FP), AX \
	VMOVUPS (AX), Z28 \
	VMOVUPS 64(AX), Z29 \
	VMOVUPS 128(AX), Z30 \
	VMOVUPS 192(AX), Z31 \
	MOVQ rs+48(FP), R12 \
	MOVQ y+56(FP), BX \
	MOVQ ldy+64(FP), R9 \
	SHLQ $2, R9 \
	MOVQ bias+72(FP), CX \
	TESTQ CX, CX

// V6LOADW loads a group's four panels of 64 columns into Z24-Z27.
#define V6LOADW \
	VMOVDQU32 (DI), Z24 \
	VMOVDQU32 64(DI), Z25 \
	VMOVDQU32 128(DI), Z26 \
	VMOVDQU32 192(DI), Z27

// V6DOTS adds a row's broadcast group (b) times the panels in Z24-Z27 to
// its accumulators a0-a3.
#define V6DOTS(b, a0, a1, a2, a3) \
	VPDPBUSD Z24, b, a0 \
	VPDPBUSD Z25, b, a1 \
	VPDPBUSD Z26, b, a2 \
	VPDPBUSD Z27, b, a3

// func vnni6x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)
// vnni4x64Asm on six rows: 24 accumulators, each group's four panels
// loaded once for six rows (ten loads for 24 VPDPBUSD, against eight for
// 16 on four rows); the same epilogue, operation for operation.
TEXT ·vnni6x64Asm(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	LEAQ (SI)(DX*2), R8
	LEAQ (SI)(DX*4), R10
	ZERO16
	ZERO16TO23
v6loop:
	VMOVDQU32 (DI), Z24
	VMOVDQU32 64(DI), Z25
	VMOVDQU32 128(DI), Z26
	VMOVDQU32 192(DI), Z27
	VPBROADCASTD (SI), Z28
	VPBROADCASTD (SI)(DX*1), Z29
	VPBROADCASTD (R8), Z30
	VPBROADCASTD (R8)(DX*1), Z31
	VPDPBUSD Z24, Z28, Z0
	VPDPBUSD Z25, Z28, Z1
	VPDPBUSD Z26, Z28, Z2
	VPDPBUSD Z27, Z28, Z3
	VPDPBUSD Z24, Z29, Z4
	VPDPBUSD Z25, Z29, Z5
	VPDPBUSD Z26, Z29, Z6
	VPDPBUSD Z27, Z29, Z7
	VPBROADCASTD (R10), Z28
	VPBROADCASTD (R10)(DX*1), Z29
	VPDPBUSD Z24, Z30, Z8
	VPDPBUSD Z25, Z30, Z9
	VPDPBUSD Z26, Z30, Z10
	VPDPBUSD Z27, Z30, Z11
	VPDPBUSD Z24, Z31, Z12
	VPDPBUSD Z25, Z31, Z13
	VPDPBUSD Z26, Z31, Z14
	VPDPBUSD Z27, Z31, Z15
	VPDPBUSD Z24, Z28, Z16
	VPDPBUSD Z25, Z28, Z17
	VPDPBUSD Z26, Z28, Z18
	VPDPBUSD Z27, Z28, Z19
	VPDPBUSD Z24, Z29, Z20
	VPDPBUSD Z25, Z29, Z21
	VPDPBUSD Z26, Z29, Z22
	VPDPBUSD Z27, Z29, Z23
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R10
	ADDQ $256, DI
	DECQ CX
	JNZ  v6loop
	V6EPILOGUE
	JNZ  v6bias
	V6STORE(V6ROW)
	VZEROUPPER
	RET
v6bias:
	V6STORE(V6ROWB)
	VZEROUPPER
	RET

// func vnni5x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)
// vnni6x64Asm on five rows (20 accumulators): a beam of five
// hypotheses, or what six-row tiles leave, in one pass over the block's
// weights instead of the four-row kernel's and the one-row kernel's.
TEXT ·vnni5x64Asm(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	LEAQ (SI)(DX*2), R8
	LEAQ (SI)(DX*4), R10
	ZERO16
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	VPXORD Z18, Z18, Z18
	VPXORD Z19, Z19, Z19
v5loop:
	V6LOADW
	VPBROADCASTD (SI), Z28
	VPBROADCASTD (SI)(DX*1), Z29
	VPBROADCASTD (R8), Z30
	VPBROADCASTD (R8)(DX*1), Z31
	V6DOTS(Z28, Z0, Z1, Z2, Z3)
	V6DOTS(Z29, Z4, Z5, Z6, Z7)
	VPBROADCASTD (R10), Z28
	V6DOTS(Z30, Z8, Z9, Z10, Z11)
	V6DOTS(Z31, Z12, Z13, Z14, Z15)
	V6DOTS(Z28, Z16, Z17, Z18, Z19)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R10
	ADDQ $256, DI
	DECQ CX
	JNZ  v5loop
	V6EPILOGUE
	JNZ  v5bias
	V6STORE5(V6ROW)
	VZEROUPPER
	RET
v5bias:
	V6STORE5(V6ROWB)
	VZEROUPPER
	RET

// func vnni3x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)
// vnni6x64Asm on three rows (12 accumulators).
TEXT ·vnni3x64Asm(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	LEAQ (SI)(DX*2), R8
	ZERO8
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
v3loop:
	V6LOADW
	VPBROADCASTD (SI), Z28
	VPBROADCASTD (SI)(DX*1), Z29
	VPBROADCASTD (R8), Z30
	V6DOTS(Z28, Z0, Z1, Z2, Z3)
	V6DOTS(Z29, Z4, Z5, Z6, Z7)
	V6DOTS(Z30, Z8, Z9, Z10, Z11)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  v3loop
	V6EPILOGUE
	JNZ  v3bias
	V6STORE3(V6ROW)
	VZEROUPPER
	RET
v3bias:
	V6STORE3(V6ROWB)
	VZEROUPPER
	RET

// func vnni2x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)
// vnni6x64Asm on two rows (8 accumulators).
TEXT ·vnni2x64Asm(SB), NOSPLIT, $0-80
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	ZERO8
v2loop:
	V6LOADW
	VPBROADCASTD (SI), Z28
	VPBROADCASTD (SI)(DX*1), Z29
	V6DOTS(Z28, Z0, Z1, Z2, Z3)
	V6DOTS(Z29, Z4, Z5, Z6, Z7)
	ADDQ $4, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  v2loop
	V6EPILOGUE
	JNZ  v2bias
	V6STORE2(V6ROW)
	VZEROUPPER
	RET
v2bias:
	V6STORE2(V6ROWB)
	VZEROUPPER
	RET

// func vnni1x64Asm(a *uint8, k4 int, bp *int8, corr *int32, sc *float32, rs float32, y *float32, bias *float32)
// One row by one 64-column block: vnni4x64Asm's sums and epilogue, two
// groups per iteration into eight accumulators.
TEXT ·vnni1x64Asm(SB), NOSPLIT, $0-64
	MOVQ a+0(FP), SI
	MOVQ k4+8(FP), CX
	MOVQ bp+16(FP), DI
	ZERO8
	CMPQ CX, $2
	JLT  v1tail
v1loop:
	VPBROADCASTD (SI), Z20
	VPBROADCASTD 4(SI), Z21
	VPDPBUSD (DI), Z20, Z0
	VPDPBUSD 64(DI), Z20, Z1
	VPDPBUSD 128(DI), Z20, Z2
	VPDPBUSD 192(DI), Z20, Z3
	VPDPBUSD 256(DI), Z21, Z4
	VPDPBUSD 320(DI), Z21, Z5
	VPDPBUSD 384(DI), Z21, Z6
	VPDPBUSD 448(DI), Z21, Z7
	ADDQ $8, SI
	ADDQ $512, DI
	SUBQ $2, CX
	CMPQ CX, $2
	JGE  v1loop
v1tail:
	TESTQ CX, CX
	JZ   v1sum
	VPBROADCASTD (SI), Z20
	VPDPBUSD (DI), Z20, Z0
	VPDPBUSD 64(DI), Z20, Z1
	VPDPBUSD 128(DI), Z20, Z2
	VPDPBUSD 192(DI), Z20, Z3
v1sum:
	VPADDD Z4, Z0, Z0
	VPADDD Z5, Z1, Z1
	VPADDD Z6, Z2, Z2
	VPADDD Z7, Z3, Z3
	MOVQ corr+24(FP), AX
	MOVQ sc+32(FP), DX
	VBROADCASTSS rs+40(FP), Z24
	MOVQ y+48(FP), BX
	MOVQ bias+56(FP), R8
	TESTQ R8, R8
	JNZ  v1bias
	V1OUT(Z0, 0)
	V1OUT(Z1, 64)
	V1OUT(Z2, 128)
	V1OUT(Z3, 192)
	VZEROUPPER
	RET
v1bias:
	V1OUTB(Z0, 0)
	V1OUTB(Z1, 64)
	V1OUTB(Z2, 128)
	V1OUTB(Z3, 192)
	VZEROUPPER
	RET

// func absMaxAsm(x *float32, n int) (m float32, nan bool)
// m = max |x[i]| over n (a multiple of 16) elements; nan reports a NaN.
TEXT ·absMaxAsm(SB), NOSPLIT, $0-21
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $4, CX
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z3
	MOVL $0xff800000, AX
	VPBROADCASTD AX, Z0
	KXORW K2, K2, K2
amloop:
	VMOVUPS (SI), Z1
	VCMPPS $3, Z1, Z1, K1
	KORW K1, K2, K2
	VPANDD Z3, Z1, Z1
	VMAXPS Z1, Z0, Z0
	ADDQ $64, SI
	DECQ CX
	JNZ  amloop
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0x4e, X0, X1
	VMAXPS X1, X0, X0
	VPERMILPS $0xb1, X0, X1
	VMAXPS X1, X0, X0
	MOVSS X0, m+16(FP)
	KMOVW K2, AX
	TESTL AX, AX
	SETNE nan+20(FP)
	VZEROUPPER
	RET

// QUANTFINISH rounds, offsets, clamps and stores quantizeU8Asm's Z1 as 16
// bytes at DI, then steps SI and DI.
#define QUANTFINISH \
	VRNDSCALEPS $8, Z1, Z1 \
	VADDPS Z6, Z1, Z1 \
	VMINPS Z1, Z7, Z1 \
	VMAXPS Z1, Z8, Z1 \
	VCVTTPS2DQ Z1, Z1 \
	VPMOVDB Z1, (DI) \
	ADDQ $64, SI \
	ADDQ $16, DI

// func quantizeU8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool)
// q[i] = the bytes of min(max(roundEven((x[i] / s) / one) + zp, 0), 255),
// NaN giving 0, for n (a multiple of 16) elements. VMINPS and VMAXPS
// return their second source (x's side) when it is NaN, and the
// truncating conversion of NaN has a zero low byte.
// single skips the division by one (one == 1: x / 1 is x, bit for bit).
TEXT ·quantizeU8Asm(SB), NOSPLIT, $0-41
	MOVQ x+0(FP), SI
	VBROADCASTSS s+8(FP), Z4
	VBROADCASTSS one+12(FP), Z5
	VBROADCASTSS zp+16(FP), Z6
	MOVQ q+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $4, CX
	MOVL $0x437f0000, AX
	VPBROADCASTD AX, Z7
	VPXORD Z8, Z8, Z8
	MOVBLZX single+40(FP), AX
	TESTQ AX, AX
	JNZ  q1loop
qloop:
	VMOVUPS (SI), Z1
	VDIVPS Z4, Z1, Z1
	VDIVPS Z5, Z1, Z1
	QUANTFINISH
	DECQ CX
	JNZ  qloop
	VZEROUPPER
	RET
q1loop:
	VMOVUPS (SI), Z1
	VDIVPS Z4, Z1, Z1
	QUANTFINISH
	DECQ CX
	JNZ  q1loop
	VZEROUPPER
	RET

// func absMax8Asm(x *float32, n int) (m float32, nan bool)
// absMaxAsm on eight lanes (AVX2): n a multiple of 8, at least 8.
TEXT ·absMax8Asm(SB), NOSPLIT, $0-21
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	MOVL $0x7fffffff, AX
	VMOVD AX, X3
	VPBROADCASTD X3, Y3
	MOVL $0xff800000, AX
	VMOVD AX, X0
	VPBROADCASTD X0, Y0
	VXORPS Y2, Y2, Y2
am8loop:
	VMOVUPS (SI), Y1
	VCMPPS $3, Y1, Y1, Y4
	VORPS Y4, Y2, Y2
	VANDPS Y3, Y1, Y1
	VMAXPS Y1, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  am8loop
	MAXNAN8RESULT
	VZEROUPPER
	RET

// QUANTFINISH8 is QUANTFINISH on eight lanes: the clamped values
// truncated to int32 and packed with unsigned saturation to 8 bytes (NaN's
// conversion, the most negative int32, saturates to 0).
#define QUANTFINISH8 \
	VROUNDPS $8, Y1, Y1 \
	VADDPS Y6, Y1, Y1 \
	VMINPS Y1, Y7, Y1 \
	VMAXPS Y1, Y8, Y1 \
	VCVTTPS2DQ Y1, Y1 \
	VEXTRACTI128 $1, Y1, X2 \
	VPACKUSDW X2, X1, X1 \
	VPACKUSWB X1, X1, X1 \
	VMOVQ X1, (DI) \
	ADDQ $32, SI \
	ADDQ $8, DI

// func quantizeU8x8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool)
// quantizeU8Asm on eight lanes (AVX2): n a multiple of 8, at least 8.
TEXT ·quantizeU8x8Asm(SB), NOSPLIT, $0-41
	MOVQ x+0(FP), SI
	VBROADCASTSS s+8(FP), Y4
	VBROADCASTSS one+12(FP), Y5
	VBROADCASTSS zp+16(FP), Y6
	MOVQ q+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	MOVL $0x437f0000, AX
	VMOVD AX, X7
	VPBROADCASTD X7, Y7
	VXORPS Y8, Y8, Y8
	MOVBLZX single+40(FP), AX
	TESTQ AX, AX
	JNZ  q81loop
q8loop:
	VMOVUPS (SI), Y1
	VDIVPS Y4, Y1, Y1
	VDIVPS Y5, Y1, Y1
	QUANTFINISH8
	DECQ CX
	JNZ  q8loop
	VZEROUPPER
	RET
q81loop:
	VMOVUPS (SI), Y1
	VDIVPS Y4, Y1, Y1
	QUANTFINISH8
	DECQ CX
	JNZ  q81loop
	VZEROUPPER
	RET

// func maxNaNAsm(x *float32, n int) (m float32, nan bool)
// m = the largest of x[i] over n (a multiple of 8) elements, nan whether
// one of them is NaN (VMAXPS alone drops NaNs).
TEXT ·maxNaNAsm(SB), NOSPLIT, $0-21
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	SHRQ $3, CX
	VMOVUPS (SI), Y0
	VCMPPS $3, Y0, Y0, Y2
	ADDQ $32, SI
	DECQ CX
	JZ   mnreduce
mnloop:
	VMOVUPS (SI), Y1
	VCMPPS $3, Y1, Y1, Y3
	VORPS Y3, Y2, Y2
	VMAXPS Y1, Y0, Y0
	ADDQ $32, SI
	DECQ CX
	JNZ  mnloop
mnreduce:
	MAXNAN8RESULT
	VZEROUPPER
	RET

// func arithVVAsm(op int, x, y, z *float32, n int)
// z[i] = x[i] op y[i] for i < n (a multiple of 8); op 0 +, 1 -, 2 *, 3 /.
TEXT ·arithVVAsm(SB), NOSPLIT, $0-40
	MOVQ op+0(FP), AX
	MOVQ x+8(FP), SI
	MOVQ y+16(FP), BX
	MOVQ z+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   vvdone
	CMPQ AX, $1
	JEQ  vvsub
	CMPQ AX, $2
	JEQ  vvmul
	CMPQ AX, $3
	JEQ  vvdiv
vvadd:
	VMOVUPS (SI), Y0
	VADDPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  vvadd
	JMP  vvdone
vvsub:
	VMOVUPS (SI), Y0
	VSUBPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  vvsub
	JMP  vvdone
vvmul:
	VMOVUPS (SI), Y0
	VMULPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  vvmul
	JMP  vvdone
vvdiv:
	VMOVUPS (SI), Y0
	VDIVPS (BX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, BX
	ADDQ $32, DI
	DECQ CX
	JNZ  vvdiv
vvdone:
	VZEROUPPER
	RET

// func arithVSAsm(op int, x *float32, v float32, z *float32, n int)
// z[i] = x[i] op v for i < n (a multiple of 8); op 0 +, 1 -, 2 *, 3 /,
// 4 v - x[i], 5 v / x[i].
TEXT ·arithVSAsm(SB), NOSPLIT, $0-40
	MOVQ op+0(FP), AX
	MOVQ x+8(FP), SI
	VBROADCASTSS v+16(FP), Y15
	MOVQ z+24(FP), DI
	MOVQ n+32(FP), CX
	SHRQ $3, CX
	JZ   vsdone
	CMPQ AX, $1
	JEQ  vssub
	CMPQ AX, $2
	JEQ  vsmul
	CMPQ AX, $3
	JEQ  vsdiv
	CMPQ AX, $4
	JEQ  vsrsub
	CMPQ AX, $5
	JEQ  vsrdiv
vsadd:
	VMOVUPS (SI), Y0
	VADDPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vsadd
	JMP  vsdone
vssub:
	VMOVUPS (SI), Y0
	VSUBPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vssub
	JMP  vsdone
vsmul:
	VMOVUPS (SI), Y0
	VMULPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vsmul
	JMP  vsdone
vsdiv:
	VMOVUPS (SI), Y0
	VDIVPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vsdiv
	JMP  vsdone
vsrsub:
	VMOVUPS (SI), Y0
	VSUBPS Y0, Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vsrsub
	JMP  vsdone
vsrdiv:
	VMOVUPS (SI), Y0
	VDIVPS Y0, Y15, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  vsrdiv
vsdone:
	VZEROUPPER
	RET

// func tanhAsm(x, z *float32, n int)
// z[i] = 1 - 2/(e^(2x[i]) + 1) for i < n (a multiple of 8): Tanh's
// steps, e^ as expVecAsm computes it (2x clamped above at 88.37626).
TEXT ·tanhAsm(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	MOVL $0x42b0c0a5, AX
	MOVD AX, X15
	VBROADCASTSS X15, Y15
	MOVL $0x40000000, AX
	MOVD AX, X14
	VBROADCASTSS X14, Y14
	MOVL $0x3f800000, AX
	MOVD AX, X13
	VBROADCASTSS X13, Y13
	TESTQ CX, CX
	JZ   thdone
thloop:
	VMOVUPS (SI), Y0
	VMULPS Y14, Y0, Y0
	VMINPS Y0, Y15, Y0
	EXP8
	VADDPS Y13, Y4, Y4
	VDIVPS Y4, Y14, Y4
	VSUBPS Y4, Y13, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  thloop
thdone:
	VZEROUPPER
	RET

// func sigmoidAsm(x, z *float32, n int)
// z[i] = 1/(1 + e^(-x[i])) for i < n (a multiple of 8): Sigmoid's steps,
// e^ as expVecAsm computes it.
TEXT ·sigmoidAsm(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $3, CX
	MOVL $0x42b0c0a5, AX
	MOVD AX, X15
	VBROADCASTSS X15, Y15
	MOVL $0x80000000, AX
	MOVD AX, X14
	VBROADCASTSS X14, Y14
	MOVL $0x3f800000, AX
	MOVD AX, X13
	VBROADCASTSS X13, Y13
	TESTQ CX, CX
	JZ   sgdone
sgloop:
	VMOVUPS (SI), Y0
	VXORPS Y14, Y0, Y0
	VMINPS Y0, Y15, Y0
	EXP8
	VADDPS Y13, Y4, Y4
	VDIVPS Y4, Y13, Y4
	VMOVUPS Y4, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  sgloop
sgdone:
	VZEROUPPER
	RET

// NIBPANEL: one panel (16 columns) of a group of 8 values of k for four
// rows: the 64 packed bytes at off(DI) unpacked into the low (Z25) and
// high (Z26) nibbles, against the rows' broadcast bytes (Z16-Z19 for
// the low half, Z20-Z23 for the high one).
#define NIBPANEL(off, a0, a1, a2, a3) \
	VMOVDQU32 off(DI), Z24 \
	VPANDD Z27, Z24, Z25 \
	VPSRLW $4, Z24, Z26 \
	VPANDD Z27, Z26, Z26 \
	VPDPBUSD Z16, Z25, a0 \
	VPDPBUSD Z20, Z26, a0 \
	VPDPBUSD Z17, Z25, a1 \
	VPDPBUSD Z21, Z26, a1 \
	VPDPBUSD Z18, Z25, a2 \
	VPDPBUSD Z22, Z26, a2 \
	VPDPBUSD Z19, Z25, a3 \
	VPDPBUSD Z23, Z26, a3

// NIBOUT adds one accumulator's block term to the tile at off(AX):
// y + (as * ws) * (float32(acc) - zp * su), as in Z28 and su in Z29, the
// block's scales at R11 and zero points at R12; the accumulator is zeroed.
#define NIBOUT(acc, off) \
	VCVTDQ2PS acc, acc \
	VMULPS off(R12), Z29, Z30 \
	VSUBPS Z30, acc, acc \
	VMULPS off(R11), Z28, Z30 \
	VMULPS Z30, acc, acc \
	VADDPS off(AX), acc, acc \
	VMOVUPS acc, off(AX) \
	VPXORD acc, acc, acc

// NIBROW: NIBOUT for a row's four accumulators, its scale and sum at
// (R9) and (R10), then the next row's (CX bytes on) and tile row.
#define NIBROW(a0, a1, a2, a3) \
	VBROADCASTSS (R9), Z28 \
	VBROADCASTSS (R10), Z29 \
	NIBOUT(a0, 0) \
	NIBOUT(a1, 64) \
	NIBOUT(a2, 128) \
	NIBOUT(a3, 192) \
	ADDQ CX, R9 \
	ADDQ CX, R10 \
	ADDQ R14, AX

// func nib4x64Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int)
// Four rows of aq (lda apart) by one 64-column block of a NibbleProduct:
// nb blocks of ppb groups of 8 values; the tile y (4 rows, ldy apart)
// is zeroed, then gets each block's term.
TEXT ·nib4x64Asm(SB), NOSPLIT, $0-88
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ bp+16(FP), DI
	MOVQ nb+24(FP), BX
	MOVQ as+40(FP), R9
	MOVQ su+48(FP), R10
	MOVQ ws+56(FP), R11
	MOVQ zp+64(FP), R12
	MOVQ y+72(FP), R13
	MOVQ ldy+80(FP), R14
	SHLQ $2, R14
	LEAQ (SI)(DX*2), R8
	MOVL $0x0f0f0f0f, AX
	VPBROADCASTD AX, Z27
	ZERO16
	MOVQ R13, AX
	MOVQ $4, CX
n4zero:
	VMOVUPS Z0, (AX)
	VMOVUPS Z0, 64(AX)
	VMOVUPS Z0, 128(AX)
	VMOVUPS Z0, 192(AX)
	ADDQ R14, AX
	DECQ CX
	JNZ  n4zero
n4block:
	MOVQ ppb+32(FP), CX
n4pair:
	VPBROADCASTD (SI), Z16
	VPBROADCASTD (SI)(DX*1), Z17
	VPBROADCASTD (R8), Z18
	VPBROADCASTD (R8)(DX*1), Z19
	VPBROADCASTD 4(SI), Z20
	VPBROADCASTD 4(SI)(DX*1), Z21
	VPBROADCASTD 4(R8), Z22
	VPBROADCASTD 4(R8)(DX*1), Z23
	NIBPANEL(0, Z0, Z4, Z8, Z12)
	NIBPANEL(64, Z1, Z5, Z9, Z13)
	NIBPANEL(128, Z2, Z6, Z10, Z14)
	NIBPANEL(192, Z3, Z7, Z11, Z15)
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  n4pair
	MOVQ nb+24(FP), CX
	SHLQ $2, CX
	MOVQ R13, AX
	NIBROW(Z0, Z1, Z2, Z3)
	NIBROW(Z4, Z5, Z6, Z7)
	NIBROW(Z8, Z9, Z10, Z11)
	NIBROW(Z12, Z13, Z14, Z15)
	SHLQ $2, CX
	SUBQ CX, R9
	SUBQ CX, R10
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $256, R11
	ADDQ $256, R12
	DECQ BX
	JNZ  n4block
	VZEROUPPER
	RET

// NIB1PANEL is NIBPANEL for one row: low nibbles into lo, high into hi.
#define NIB1PANEL(off, lo, hi) \
	VMOVDQU32 off(DI), Z24 \
	VPANDD Z27, Z24, Z25 \
	VPSRLW $4, Z24, Z26 \
	VPANDD Z27, Z26, Z26 \
	VPDPBUSD Z16, Z25, lo \
	VPDPBUSD Z20, Z26, hi

// func nib1x64Asm(a *int8, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32)
// One row by one 64-column block: nib4x64Asm's sums and terms, the low
// and high nibbles into separate accumulators (Z0-Z3, Z4-Z7).
TEXT ·nib1x64Asm(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), SI
	MOVQ bp+8(FP), DI
	MOVQ nb+16(FP), BX
	MOVQ as+32(FP), R9
	MOVQ su+40(FP), R10
	MOVQ ws+48(FP), R11
	MOVQ zp+56(FP), R12
	MOVQ y+64(FP), AX
	MOVL $0x0f0f0f0f, CX
	VPBROADCASTD CX, Z27
	ZERO8
	VMOVUPS Z0, (AX)
	VMOVUPS Z0, 64(AX)
	VMOVUPS Z0, 128(AX)
	VMOVUPS Z0, 192(AX)
n1block:
	MOVQ ppb+24(FP), CX
n1pair:
	VPBROADCASTD (SI), Z16
	VPBROADCASTD 4(SI), Z20
	NIB1PANEL(0, Z0, Z4)
	NIB1PANEL(64, Z1, Z5)
	NIB1PANEL(128, Z2, Z6)
	NIB1PANEL(192, Z3, Z7)
	ADDQ $8, SI
	ADDQ $256, DI
	DECQ CX
	JNZ  n1pair
	VPADDD Z4, Z0, Z0
	VPADDD Z5, Z1, Z1
	VPADDD Z6, Z2, Z2
	VPADDD Z7, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VBROADCASTSS (R9), Z28
	VBROADCASTSS (R10), Z29
	NIBOUT(Z0, 0)
	NIBOUT(Z1, 64)
	NIBOUT(Z2, 128)
	NIBOUT(Z3, 192)
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $256, R11
	ADDQ $256, R12
	DECQ BX
	JNZ  n1block
	VZEROUPPER
	RET

// EXP16 is EXP8 on sixteen lanes (Z0 in, Z4 out; Z1-Z3, Z5 scratch),
// the constants in Z16-Z28 (loaded by EXPCONST16): the same operations
// lane by lane, floor by VRNDSCALEPS.
#define EXP16 \
	VMAXPS Z0, Z16, Z0 \
	VMOVAPS Z17, Z1 \
	VFMADD213PS Z18, Z0, Z1 \
	VRNDSCALEPS $9, Z1, Z1 \
	VMOVAPS Z0, Z2 \
	VFNMADD231PS Z19, Z1, Z2 \
	VFNMADD231PS Z20, Z1, Z2 \
	VMULPS Z2, Z2, Z3 \
	VMOVAPS Z21, Z4 \
	VFMADD213PS Z22, Z2, Z4 \
	VFMADD213PS Z23, Z2, Z4 \
	VFMADD213PS Z24, Z2, Z4 \
	VFMADD213PS Z25, Z2, Z4 \
	VFMADD213PS Z26, Z2, Z4 \
	VFMADD213PS Z2, Z3, Z4 \
	VADDPS Z27, Z4, Z4 \
	VCVTPS2DQ Z1, Z5 \
	VPADDD Z28, Z5, Z5 \
	VPSLLD $23, Z5, Z5 \
	VMULPS Z5, Z4, Z4

#define EXPCONST16 \
	VBROADCASTSS expconst<>+0(SB), Z16 \
	VBROADCASTSS expconst<>+32(SB), Z17 \
	VBROADCASTSS expconst<>+64(SB), Z18 \
	VBROADCASTSS expconst<>+96(SB), Z19 \
	VBROADCASTSS expconst<>+128(SB), Z20 \
	VBROADCASTSS expconst<>+160(SB), Z21 \
	VBROADCASTSS expconst<>+192(SB), Z22 \
	VBROADCASTSS expconst<>+224(SB), Z23 \
	VBROADCASTSS expconst<>+256(SB), Z24 \
	VBROADCASTSS expconst<>+288(SB), Z25 \
	VBROADCASTSS expconst<>+320(SB), Z26 \
	VBROADCASTSS expconst<>+352(SB), Z27 \
	VPBROADCASTD expconst<>+384(SB), Z28

// func expSum16Asm(x *float32, n int, m float32) float64
// expSumAsm on sixteen lanes: n a multiple of 16.
TEXT ·expSum16Asm(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS m+16(FP), Z15
	SHRQ $4, CX
	EXPCONST16
	VXORPD Z8, Z8, Z8
	VXORPD Z9, Z9, Z9
	TESTQ CX, CX
	JZ   e16done
e16loop:
	VMOVUPS (SI), Z0
	VSUBPS Z15, Z0, Z0
	EXP16
	VCVTPS2PD Y4, Z6
	VEXTRACTF64X4 $1, Z4, Y7
	VCVTPS2PD Y7, Z7
	VADDPD Z6, Z8, Z8
	VADDPD Z7, Z9, Z9
	ADDQ $64, SI
	DECQ CX
	JNZ  e16loop
e16done:
	VADDPD Z9, Z8, Z8
	VEXTRACTF64X4 $1, Z8, Y9
	VADDPD Y9, Y8, Y8
	VEXTRACTF128 $1, Y8, X9
	VADDPD X9, X8, X8
	VHADDPD X8, X8, X8
	VZEROUPPER
	MOVSD X8, ret+24(FP)
	RET

// func sigmoid16Asm(x, z *float32, n int)
// sigmoidAsm on sixteen lanes (n a multiple of 16): the same steps in the
// same order, so each element's bits are sigmoidAsm's.
TEXT ·sigmoid16Asm(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	EXPCONST16
	MOVL $0x42b0c0a5, AX
	VPBROADCASTD AX, Z29
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z30
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z31
	TESTQ CX, CX
	JZ   sg16done
sg16loop:
	VMOVUPS (SI), Z0
	VPXORD Z30, Z0, Z0
	VMINPS Z0, Z29, Z0
	EXP16
	VADDPS Z31, Z4, Z4
	VDIVPS Z4, Z31, Z4
	VMOVUPS Z4, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  sg16loop
sg16done:
	VZEROUPPER
	RET

// func tanh16Asm(x, z *float32, n int)
// tanhAsm on sixteen lanes (n a multiple of 16): the same steps in the
// same order, so each element's bits are tanhAsm's.
TEXT ·tanh16Asm(SB), NOSPLIT, $0-24
	MOVQ x+0(FP), SI
	MOVQ z+8(FP), DI
	MOVQ n+16(FP), CX
	SHRQ $4, CX
	EXPCONST16
	MOVL $0x42b0c0a5, AX
	VPBROADCASTD AX, Z29
	MOVL $0x40000000, AX
	VPBROADCASTD AX, Z30
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z31
	TESTQ CX, CX
	JZ   th16done
th16loop:
	VMOVUPS (SI), Z0
	VMULPS Z30, Z0, Z0
	VMINPS Z0, Z29, Z0
	EXP16
	VADDPS Z31, Z4, Z4
	VDIVPS Z4, Z30, Z4
	VSUBPS Z4, Z31, Z4
	VMOVUPS Z4, (DI)
	ADDQ $64, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  th16loop
th16done:
	VZEROUPPER
	RET

// SIG16: Z4 = sigmoid(Z0), sigmoid16Asm's steps (Z29 its clamp, Z30 the
// sign bit, Z31 one; EXP16's registers).
#define SIG16 \
	VPXORD Z30, Z0, Z0 \
	VMINPS Z0, Z29, Z0 \
	EXP16 \
	VADDPS Z31, Z4, Z4 \
	VDIVPS Z4, Z31, Z4

// TANH16: Z4 = tanh(Z0), tanh16Asm's steps (Z15 two, Z29 the clamp, Z31
// one; EXP16's registers).
#define TANH16 \
	VMULPS Z15, Z0, Z0 \
	VMINPS Z0, Z29, Z0 \
	EXP16 \
	VADDPS Z31, Z4, Z4 \
	VDIVPS Z4, Z15, Z4 \
	VSUBPS Z4, Z31, Z4

// LGCELL: sixteen elements of the state update from the gates i (Z6), f
// (Z7), o (Z8) and tanh of the candidate (Z4): c2 = f*c + i*tanh(t) at
// (R12), h2 = o*tanh(c2) at (R11), c read at (R10); each product and the
// sum rounded on its own, as the nodes compute them.
#define LGCELL \
	VMULPS (R10), Z7, Z10 \
	VMULPS Z4, Z6, Z11 \
	VADDPS Z11, Z10, Z10 \
	VMOVUPS Z10, (R12) \
	VMOVAPS Z10, Z0 \
	TANH16 \
	VMULPS Z4, Z8, Z4 \
	VMOVUPS Z4, (R11) \
	ADDQ $64, SI \
	ADDQ $64, R10 \
	ADDQ $64, R11 \
	ADDQ $64, R12

// func lstmGates16Asm(x, y, c, h2, c2 *float32, h int)
// One row of an LSTM cell's state update, sixteen elements at a time (h a
// multiple of 16): the gates' pre-activations x (plus y when y is not
// nil), [i f o t] of h each, the cell state c; writes c2 and h2. Every
// value is computed by the steps of sigmoid16Asm, tanh16Asm and the
// vector products and sums, in the nodes' order: bit for bit theirs.
TEXT ·lstmGates16Asm(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ c+16(FP), R10
	MOVQ h2+24(FP), R11
	MOVQ c2+32(FP), R12
	MOVQ h+40(FP), CX
	MOVQ CX, R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	SHRQ $4, CX
	EXPCONST16
	MOVL $0x42b0c0a5, AX
	VPBROADCASTD AX, Z29
	MOVL $0x80000000, AX
	VPBROADCASTD AX, Z30
	MOVL $0x3f800000, AX
	VPBROADCASTD AX, Z31
	MOVL $0x40000000, AX
	VPBROADCASTD AX, Z15
	TESTQ CX, CX
	JZ   lgdone
	TESTQ DX, DX
	JZ   lgloop1
lgloop2:
	VMOVUPS (SI), Z0
	VADDPS (DX), Z0, Z0
	SIG16
	VMOVAPS Z4, Z6
	VMOVUPS (SI)(R8*1), Z0
	VADDPS (DX)(R8*1), Z0, Z0
	SIG16
	VMOVAPS Z4, Z7
	VMOVUPS (SI)(R8*2), Z0
	VADDPS (DX)(R8*2), Z0, Z0
	SIG16
	VMOVAPS Z4, Z8
	VMOVUPS (SI)(R9*1), Z0
	VADDPS (DX)(R9*1), Z0, Z0
	TANH16
	LGCELL
	ADDQ $64, DX
	DECQ CX
	JNZ  lgloop2
	JMP  lgdone
lgloop1:
	VMOVUPS (SI), Z0
	SIG16
	VMOVAPS Z4, Z6
	VMOVUPS (SI)(R8*1), Z0
	SIG16
	VMOVAPS Z4, Z7
	VMOVUPS (SI)(R8*2), Z0
	SIG16
	VMOVAPS Z4, Z8
	VMOVUPS (SI)(R9*1), Z0
	TANH16
	LGCELL
	DECQ CX
	JNZ  lgloop1
lgdone:
	VZEROUPPER
	RET

// SIG8: Y4 = sigmoid(Y0), sigmoidAsm's steps (Y15 its clamp, Y14 the sign
// bit, Y13 one; EXP8's registers).
#define SIG8 \
	VXORPS Y14, Y0, Y0 \
	VMINPS Y0, Y15, Y0 \
	EXP8 \
	VADDPS Y13, Y4, Y4 \
	VDIVPS Y4, Y13, Y4

// TANH8: Y4 = tanh(Y0), tanhAsm's steps (Y12 two, Y15 the clamp, Y13 one;
// EXP8's registers).
#define TANH8 \
	VMULPS Y12, Y0, Y0 \
	VMINPS Y0, Y15, Y0 \
	EXP8 \
	VADDPS Y13, Y4, Y4 \
	VDIVPS Y4, Y12, Y4 \
	VSUBPS Y4, Y13, Y4

// LGCELL8 is LGCELL on eight elements: gates i (Y6), f (Y7), o (Y8),
// tanh of the candidate in Y4; c read at (R10), c2 stored at (R12), h2 at
// (R11).
#define LGCELL8 \
	VMULPS (R10), Y7, Y10 \
	VMULPS Y4, Y6, Y11 \
	VADDPS Y11, Y10, Y10 \
	VMOVUPS Y10, (R12) \
	VMOVAPS Y10, Y0 \
	TANH8 \
	VMULPS Y4, Y8, Y4 \
	VMOVUPS Y4, (R11) \
	ADDQ $32, SI \
	ADDQ $32, R10 \
	ADDQ $32, R11 \
	ADDQ $32, R12

// func lstmGates8Asm(x, y, c, h2, c2 *float32, h int)
// lstmGates16Asm on eight lanes (AVX2; h a multiple of 8): every value
// by the steps of sigmoidAsm, tanhAsm and the vector products and sums,
// bit for bit theirs.
TEXT ·lstmGates8Asm(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ y+8(FP), DX
	MOVQ c+16(FP), R10
	MOVQ h2+24(FP), R11
	MOVQ c2+32(FP), R12
	MOVQ h+40(FP), CX
	MOVQ CX, R8
	SHLQ $2, R8
	LEAQ (R8)(R8*2), R9
	SHRQ $3, CX
	MOVL $0x42b0c0a5, AX
	MOVD AX, X15
	VBROADCASTSS X15, Y15
	MOVL $0x80000000, AX
	MOVD AX, X14
	VBROADCASTSS X14, Y14
	MOVL $0x3f800000, AX
	MOVD AX, X13
	VBROADCASTSS X13, Y13
	MOVL $0x40000000, AX
	MOVD AX, X12
	VBROADCASTSS X12, Y12
	TESTQ CX, CX
	JZ   lg8done
	TESTQ DX, DX
	JZ   lg8loop1
lg8loop2:
	VMOVUPS (SI), Y0
	VADDPS (DX), Y0, Y0
	SIG8
	VMOVAPS Y4, Y6
	VMOVUPS (SI)(R8*1), Y0
	VADDPS (DX)(R8*1), Y0, Y0
	SIG8
	VMOVAPS Y4, Y7
	VMOVUPS (SI)(R8*2), Y0
	VADDPS (DX)(R8*2), Y0, Y0
	SIG8
	VMOVAPS Y4, Y8
	VMOVUPS (SI)(R9*1), Y0
	VADDPS (DX)(R9*1), Y0, Y0
	TANH8
	LGCELL8
	ADDQ $32, DX
	DECQ CX
	JNZ  lg8loop2
	JMP  lg8done
lg8loop1:
	VMOVUPS (SI), Y0
	SIG8
	VMOVAPS Y4, Y6
	VMOVUPS (SI)(R8*1), Y0
	SIG8
	VMOVAPS Y4, Y7
	VMOVUPS (SI)(R8*2), Y0
	SIG8
	VMOVAPS Y4, Y8
	VMOVUPS (SI)(R9*1), Y0
	TANH8
	LGCELL8
	DECQ CX
	JNZ  lg8loop1
lg8done:
	VZEROUPPER
	RET

// G43ROW: one k step of gemmPanel4x3Asm for one row: its element at
// off(reg) broadcast into Z27 (Z28 for odd steps' rows, so that the
// broadcasts overlap), times the three panels' rows in Z24-Z26.
#define G43ROW(src, bc, a0, a1, a2) \
	VBROADCASTSS src, bc \
	VFMADD231PS Z24, bc, a0 \
	VFMADD231PS Z25, bc, a1 \
	VFMADD231PS Z26, bc, a2

// func gemmPanel4x3Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)
// C[0:4, 0:48] = A[0:4, 0:k] times three consecutive packed panels at bp
// (each k rows of 16 floats): 24 accumulators, each A element broadcast
// once for the three panels; even steps of k into Z0-Z11, odd ones into
// Z12-Z23, summed at the end: each row's sums in the order of
// gemmPanel4Asm and gemvPanelAsm, bit for bit theirs.
TEXT ·gemmPanel4x3Asm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k+16(FP), CX
	MOVQ bp+24(FP), DI
	SHLQ $2, DX
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R12
	MOVQ CX, AX
	SHLQ $6, AX
	LEAQ (DI)(AX*1), R13
	LEAQ (R13)(AX*1), R14
	ZERO16
	ZERO16TO23
	MOVQ CX, BX
	SHRQ $1, BX
	JZ   g43tail
g43loop:
	VMOVUPS (DI), Z24
	VMOVUPS (R13), Z25
	VMOVUPS (R14), Z26
	G43ROW((SI), Z27, Z0, Z1, Z2)
	G43ROW((R8), Z28, Z3, Z4, Z5)
	G43ROW((R9), Z29, Z6, Z7, Z8)
	G43ROW((R12), Z30, Z9, Z10, Z11)
	VMOVUPS 64(DI), Z24
	VMOVUPS 64(R13), Z25
	VMOVUPS 64(R14), Z26
	G43ROW(4(SI), Z27, Z12, Z13, Z14)
	G43ROW(4(R8), Z28, Z15, Z16, Z17)
	G43ROW(4(R9), Z29, Z18, Z19, Z20)
	G43ROW(4(R12), Z30, Z21, Z22, Z23)
	ADDQ $128, DI
	ADDQ $128, R13
	ADDQ $128, R14
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ $8, R12
	DECQ BX
	JNZ  g43loop
g43tail:
	TESTQ $1, CX
	JZ   g43store
	VMOVUPS (DI), Z24
	VMOVUPS (R13), Z25
	VMOVUPS (R14), Z26
	G43ROW((SI), Z27, Z0, Z1, Z2)
	G43ROW((R8), Z28, Z3, Z4, Z5)
	G43ROW((R9), Z29, Z6, Z7, Z8)
	G43ROW((R12), Z30, Z9, Z10, Z11)
g43store:
	VADDPS Z12, Z0, Z0
	VADDPS Z13, Z1, Z1
	VADDPS Z14, Z2, Z2
	VADDPS Z15, Z3, Z3
	VADDPS Z16, Z4, Z4
	VADDPS Z17, Z5, Z5
	VADDPS Z18, Z6, Z6
	VADDPS Z19, Z7, Z7
	VADDPS Z20, Z8, Z8
	VADDPS Z21, Z9, Z9
	VADDPS Z22, Z10, Z10
	VADDPS Z23, Z11, Z11
	MOVQ c+32(FP), R10
	MOVQ ldc+40(FP), R11
	SHLQ $2, R11
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, 64(R10)
	VMOVUPS Z2, 128(R10)
	ADDQ R11, R10
	VMOVUPS Z3, (R10)
	VMOVUPS Z4, 64(R10)
	VMOVUPS Z5, 128(R10)
	ADDQ R11, R10
	VMOVUPS Z6, (R10)
	VMOVUPS Z7, 64(R10)
	VMOVUPS Z8, 128(R10)
	ADDQ R11, R10
	VMOVUPS Z9, (R10)
	VMOVUPS Z10, 64(R10)
	VMOVUPS Z11, 128(R10)
	VZEROUPPER
	RET

// func firstBeyondAsm(x *float32, n int, t float32, mode int) int
// The index of the first x[i] beyond t, i < n (a multiple of 8), or n:
// mode 0 x[i] > t, 1 x[i] < t (ordered: never for NaN), 2 !(x[i] <= t)
// (x[i] > t or x[i] NaN).
TEXT ·firstBeyondAsm(SB), NOSPLIT, $0-40
	MOVQ x+0(FP), SI
	MOVQ n+8(FP), CX
	VBROADCASTSS t+16(FP), Y1
	XORQ AX, AX
	MOVQ mode+24(FP), BX
	CMPQ BX, $1
	JEQ  fbbelow
	CMPQ BX, $2
	JEQ  fbnan
fbabove:
	CMPQ AX, CX
	JAE  fbnone
	VCMPPS $0x11, (SI)(AX*4), Y1, Y2
	VMOVMSKPS Y2, DX
	TESTL DX, DX
	JNZ  fbfound
	ADDQ $8, AX
	JMP  fbabove
fbbelow:
	CMPQ AX, CX
	JAE  fbnone
	VCMPPS $0x1e, (SI)(AX*4), Y1, Y2
	VMOVMSKPS Y2, DX
	TESTL DX, DX
	JNZ  fbfound
	ADDQ $8, AX
	JMP  fbbelow
fbnan:
	CMPQ AX, CX
	JAE  fbnone
	VCMPPS $0x19, (SI)(AX*4), Y1, Y2
	VMOVMSKPS Y2, DX
	TESTL DX, DX
	JNZ  fbfound
	ADDQ $8, AX
	JMP  fbnan
fbfound:
	BSFL DX, DX
	ADDQ DX, AX
	VZEROUPPER
	MOVQ AX, ret+32(FP)
	RET
fbnone:
	VZEROUPPER
	MOVQ CX, ret+32(FP)
	RET

// func peakAsm(n int, vnni bool)
// n iterations of 16 independent register-only VFMADD231PS (or VPDPBUSD
// when vnni) on 512-bit registers: the core's peak rate of the products'
// instruction, for BenchmarkPeak (no memory is touched).
TEXT ·peakAsm(SB), NOSPLIT, $0-9
	MOVQ n+0(FP), CX
	MOVBLZX vnni+8(FP), AX
	VPXORD Z16, Z16, Z16
	VPXORD Z17, Z17, Z17
	TESTQ AX, AX
	JNZ  pkvnni
pkfma:
	VFMADD231PS Z16, Z17, Z0
	VFMADD231PS Z16, Z17, Z1
	VFMADD231PS Z16, Z17, Z2
	VFMADD231PS Z16, Z17, Z3
	VFMADD231PS Z16, Z17, Z4
	VFMADD231PS Z16, Z17, Z5
	VFMADD231PS Z16, Z17, Z6
	VFMADD231PS Z16, Z17, Z7
	VFMADD231PS Z16, Z17, Z8
	VFMADD231PS Z16, Z17, Z9
	VFMADD231PS Z16, Z17, Z10
	VFMADD231PS Z16, Z17, Z11
	VFMADD231PS Z16, Z17, Z12
	VFMADD231PS Z16, Z17, Z13
	VFMADD231PS Z16, Z17, Z14
	VFMADD231PS Z16, Z17, Z15
	DECQ CX
	JNZ  pkfma
	VZEROUPPER
	RET
pkvnni:
	VPDPBUSD Z16, Z17, Z0
	VPDPBUSD Z16, Z17, Z1
	VPDPBUSD Z16, Z17, Z2
	VPDPBUSD Z16, Z17, Z3
	VPDPBUSD Z16, Z17, Z4
	VPDPBUSD Z16, Z17, Z5
	VPDPBUSD Z16, Z17, Z6
	VPDPBUSD Z16, Z17, Z7
	VPDPBUSD Z16, Z17, Z8
	VPDPBUSD Z16, Z17, Z9
	VPDPBUSD Z16, Z17, Z10
	VPDPBUSD Z16, Z17, Z11
	VPDPBUSD Z16, Z17, Z12
	VPDPBUSD Z16, Z17, Z13
	VPDPBUSD Z16, Z17, Z14
	VPDPBUSD Z16, Z17, Z15
	DECQ CX
	JNZ  pkvnni
	VZEROUPPER
	RET

// func subSubAsm(x *float32, a, b float32, z *float32, n int)
// z[i] = (x[i] - a) - b for i < n (a multiple of 8): log-softmax's last
// pass, its two roundings in one sweep.
TEXT ·subSubAsm(SB), NOSPLIT, $0-32
	MOVQ x+0(FP), SI
	VBROADCASTSS a+8(FP), Y14
	VBROADCASTSS b+12(FP), Y15
	MOVQ z+16(FP), DI
	MOVQ n+24(FP), CX
	SHRQ $3, CX
	JZ   ssdone
ssloop:
	VMOVUPS (SI), Y0
	VSUBPS Y14, Y0, Y0
	VSUBPS Y15, Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ $32, SI
	ADDQ $32, DI
	DECQ CX
	JNZ  ssloop
ssdone:
	VZEROUPPER
	RET

// VEXDPBUSD is VPDPBUSD in its VEX form (AVX-VNNI: CPUs with it but not
// AVX-512, where the EVEX form Go's assembler writes would fault), which
// the assembler does not write: the bytes of VPDPBUSD ymm(d), ymm(v),
// ymm(s) for an accumulator d < 8, a row's broadcast v in Y8-Y11 and the
// weights s in Y12-Y13: C4, C2 (R and X not extended, B extended), vvvv
// inverted with L=1 and pp=66, opcode 50, ModRM 11 d s.
#define VEXDPBUSD(vvvv, modrm) \
	BYTE $0xC4 \
	BYTE $0xC2 \
	BYTE vvvv \
	BYTE $0x50 \
	BYTE modrm

// MADD4 adds one group of 4 values of k of row pointer p (broadcast:
// signed bytes, the row's bytes less 128) times the 16 columns' weights
// (Y8, Y9; their magnitudes Y10, Y11) into accumulators lo and hi:
// VPSIGNB moves each weight's sign onto the activation, VPMADDUBSW
// multiplies magnitude (unsigned, at most 128) by signed activation (at
// most 127 in magnitude) and adds pairs, which stay below 2^15, and
// VPMADDWD by ones (Y14) adds the pairs into int32: exact sums.
#define MADD4(p, lo, hi) \
	VPBROADCASTD p, Y12 \
	VPSIGNB      Y8, Y12, Y13 \
	VPMADDUBSW   Y13, Y10, Y13 \
	VPMADDWD     Y14, Y13, Y13 \
	VPADDD       Y13, lo, lo \
	VPSIGNB      Y9, Y12, Y13 \
	VPMADDUBSW   Y13, Y11, Y13 \
	VPMADDWD     Y14, Y13, Y13 \
	VPADDD       Y13, hi, hi

// MOUT finishes one row's 16 sums (lo, hi) as QuantProduct's epilogue
// does, ((float32(s) * sc[j]) * rs) [+ bias[j]], and stores them at y.
#define MOUT(lo, hi, rsoff, y) \
	VCVTDQ2PS    lo, lo \
	VCVTDQ2PS    hi, hi \
	VMULPS       (AX), lo, lo \
	VMULPS       32(AX), hi, hi \
	VBROADCASTSS rsoff(DX), Y12 \
	VMULPS       Y12, lo, lo \
	VMULPS       Y12, hi, hi \
	TESTQ        CX, CX \
	JZ           3(PC) \
	VADDPS       (CX), lo, lo \
	VADDPS       32(CX), hi, hi \
	VMOVUPS      lo, (y) \
	VMOVUPS      hi, 32(y)

// func q8x16Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32, vex bool)
// QuantProduct's product on 8 lanes: 4 rows (lda apart) by 16 columns,
// whose weights are 64 bytes of each 256-byte group of a VNNI panel (bp,
// groups 256 bytes apart), k4 groups, into int32, exact. On AVX2 (MADD4)
// the rows are signed bytes in [-127, 127] (the row quantization's
// bytes, which must not be 0, less 128) and the sums are theirs; with vex, on AVX-VNNI, VPDPBUSD sums
// the bytes themselves, and corr (the zero point's correction, per
// column) comes off them first. Then the epilogue, MOUT's.
TEXT ·q8x16Asm(SB), NOSPLIT, $0-81
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k4+16(FP), CX
	MOVQ bp+24(FP), DI
	LEAQ (SI)(DX*2), R8
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	CMPB vex+80(FP), $0
	JNE  q8vex
	VPCMPEQW Y14, Y14, Y14
	VPSRLW   $15, Y14, Y14
q8loop:
	VMOVDQU (DI), Y8
	VMOVDQU 32(DI), Y9
	VPABSB  Y8, Y10
	VPABSB  Y9, Y11
	MADD4((SI), Y0, Y1)
	MADD4((SI)(DX*1), Y2, Y3)
	MADD4((R8), Y4, Y5)
	MADD4((R8)(DX*1), Y6, Y7)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  q8loop
	JMP  q8out
q8vex:
	VMOVDQU      (DI), Y12
	VMOVDQU      32(DI), Y13
	VPBROADCASTD (SI), Y8
	VPBROADCASTD (SI)(DX*1), Y9
	VPBROADCASTD (R8), Y10
	VPBROADCASTD (R8)(DX*1), Y11
	VEXDPBUSD($0x3D, $0xC4) // Y0 += Y8 . Y12
	VEXDPBUSD($0x3D, $0xCD) // Y1 += Y8 . Y13
	VEXDPBUSD($0x35, $0xD4) // Y2 += Y9 . Y12
	VEXDPBUSD($0x35, $0xDD) // Y3 += Y9 . Y13
	VEXDPBUSD($0x2D, $0xE4) // Y4 += Y10 . Y12
	VEXDPBUSD($0x2D, $0xED) // Y5 += Y10 . Y13
	VEXDPBUSD($0x25, $0xF4) // Y6 += Y11 . Y12
	VEXDPBUSD($0x25, $0xFD) // Y7 += Y11 . Y13
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  q8vex
	MOVQ corr+32(FP), R10
	VMOVDQU (R10), Y8
	VMOVDQU 32(R10), Y9
	VPSUBD  Y8, Y0, Y0
	VPSUBD  Y9, Y1, Y1
	VPSUBD  Y8, Y2, Y2
	VPSUBD  Y9, Y3, Y3
	VPSUBD  Y8, Y4, Y4
	VPSUBD  Y9, Y5, Y5
	VPSUBD  Y8, Y6, Y6
	VPSUBD  Y9, Y7, Y7
q8out:
	MOVQ sc+40(FP), AX
	MOVQ rs+48(FP), DX
	MOVQ y+56(FP), BX
	MOVQ ldy+64(FP), R9
	SHLQ $2, R9
	MOVQ bias+72(FP), CX
	MOUT(Y0, Y1, 0, BX)
	ADDQ R9, BX
	MOUT(Y2, Y3, 4, BX)
	ADDQ R9, BX
	MOUT(Y4, Y5, 8, BX)
	ADDQ R9, BX
	MOUT(Y6, Y7, 12, BX)
	VZEROUPPER
	RET

// nibconst: 32 bytes of 0x0f (a nibble's mask), then 16 int16 ones
// (VPMADDWD's pair sum), for nib4x16Asm, whose 16 registers are all
// taken.
DATA nibconst<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibconst<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibconst<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibconst<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA nibconst<>+32(SB)/8, $0x0001000100010001
DATA nibconst<>+40(SB)/8, $0x0001000100010001
DATA nibconst<>+48(SB)/8, $0x0001000100010001
DATA nibconst<>+56(SB)/8, $0x0001000100010001
GLOBL nibconst<>(SB), RODATA|NOPTR, $64

// NIBAVX2 adds one row's group of 8 values of k (its bytes at p0 and p4,
// broadcast) times the 16 columns' 4-bit weights (low nibbles Y8, Y9
// for k..k+3, high nibbles Y10, Y11 for k+4..k+7) into lo and hi:
// VPMADDUBSW multiplies the weights (unsigned, at most 15) by the row's
// int8 values and adds pairs (at most 3,840 in magnitude), VPADDW adds
// the two halves' (7,680), VPMADDWD by ones adds pairs into int32: exact.
#define NIBAVX2(p0, p4, lo, hi) \
	VPBROADCASTD p0, Y12 \
	VPBROADCASTD p4, Y13 \
	VPMADDUBSW   Y12, Y8, Y14 \
	VPMADDUBSW   Y13, Y10, Y15 \
	VPADDW       Y15, Y14, Y14 \
	VPMADDWD     nibconst<>+32(SB), Y14, Y14 \
	VPADDD       Y14, lo, lo \
	VPMADDUBSW   Y12, Y9, Y14 \
	VPMADDUBSW   Y13, Y11, Y15 \
	VPADDW       Y15, Y14, Y14 \
	VPMADDWD     nibconst<>+32(SB), Y14, Y14 \
	VPADDD       Y14, hi, hi

// NIBOUTAVX2 is NIBOUT on 8 columns: y + (as * ws) * (float32(acc) - zp *
// su), as in Y12 and su in Y13, the block's scales at off(R11) and zero
// points at off(R12); the accumulator is zeroed.
#define NIBOUTAVX2(acc, off) \
	VCVTDQ2PS acc, acc \
	VMULPS    off(R12), Y13, Y15 \
	VSUBPS    Y15, acc, acc \
	VMULPS    off(R11), Y12, Y15 \
	VMULPS    Y15, acc, acc \
	VADDPS    off(AX), acc, acc \
	VMOVUPS   acc, off(AX) \
	VPXOR     acc, acc, acc

// NIBROWAVX2: NIBOUTAVX2 for a row's two accumulators, its scale and sum
// at (R9) and (R10), then the next row's (CX bytes on) and tile row.
#define NIBROWAVX2(lo, hi) \
	VBROADCASTSS (R9), Y12 \
	VBROADCASTSS (R10), Y13 \
	NIBOUTAVX2(lo, 0) \
	NIBOUTAVX2(hi, 32) \
	ADDQ CX, R9 \
	ADDQ CX, R10 \
	ADDQ R14, AX

// NIBVEX adds one row's group of 8 values of k (its bytes at p0 and p4,
// broadcast into Y12 and Y13) times the 16 columns' 4-bit weights (low
// nibbles Y8, Y9 for k..k+3, high nibbles Y10, Y11 for k+4..k+7) into its
// accumulators, by VEX VPDPBUSD (weights unsigned, the row's values
// signed): m0..m3 are the ModRM bytes for lo += Y8.Y12, lo += Y10.Y13,
// hi += Y9.Y12, hi += Y11.Y13.
#define NIBVEX(p0, p4, m0, m1, m2, m3) \
	VPBROADCASTD p0, Y12 \
	VPBROADCASTD p4, Y13 \
	VEXDPBUSD($0x3D, m0) \
	VEXDPBUSD($0x2D, m1) \
	VEXDPBUSD($0x35, m2) \
	VEXDPBUSD($0x25, m3)

// func nib4x16Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int, vex bool)
// NibbleProduct on 8 lanes: four rows of aq (lda apart) by 16 columns,
// whose weights are 64 bytes of each 256-byte group of the VNNI layout
// (bp, groups 256 bytes apart; ws and zp the 16 columns' of the first
// block, blocks 64 values apart): nb blocks of ppb groups of 8 values;
// the tile y (4 rows of 16, ldy apart) is zeroed, then gets each block's
// term in nib4x64Asm's order. The products on AVX2 (NIBAVX2), or with vex
// on AVX-VNNI (NIBVEX): the integer sums are exact either way.
TEXT ·nib4x16Asm(SB), NOSPLIT, $0-89
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ bp+16(FP), DI
	MOVQ nb+24(FP), BX
	MOVQ as+40(FP), R9
	MOVQ su+48(FP), R10
	MOVQ ws+56(FP), R11
	MOVQ zp+64(FP), R12
	MOVQ y+72(FP), R13
	MOVQ ldy+80(FP), R14
	SHLQ $2, R14
	LEAQ (SI)(DX*2), R8
	VPXOR Y0, Y0, Y0
	VPXOR Y1, Y1, Y1
	VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4
	VPXOR Y5, Y5, Y5
	VPXOR Y6, Y6, Y6
	VPXOR Y7, Y7, Y7
	MOVQ R13, AX
	MOVQ $4, CX
na2zero:
	VMOVUPS Y0, (AX)
	VMOVUPS Y0, 32(AX)
	ADDQ R14, AX
	DECQ CX
	JNZ  na2zero
na2block:
	MOVQ ppb+32(FP), CX
na2group:
	VMOVDQU (DI), Y10
	VMOVDQU 32(DI), Y11
	VPAND   nibconst<>(SB), Y10, Y8
	VPAND   nibconst<>(SB), Y11, Y9
	VPSRLW  $4, Y10, Y10
	VPSRLW  $4, Y11, Y11
	VPAND   nibconst<>(SB), Y10, Y10
	VPAND   nibconst<>(SB), Y11, Y11
	CMPB    vex+88(FP), $0
	JNE     na2vex
	NIBAVX2((SI), 4(SI), Y0, Y1)
	NIBAVX2((SI)(DX*1), 4(SI)(DX*1), Y2, Y3)
	NIBAVX2((R8), 4(R8), Y4, Y5)
	NIBAVX2((R8)(DX*1), 4(R8)(DX*1), Y6, Y7)
	JMP     na2next
na2vex:
	NIBVEX((SI), 4(SI), $0xC4, $0xC5, $0xCC, $0xCD)
	NIBVEX((SI)(DX*1), 4(SI)(DX*1), $0xD4, $0xD5, $0xDC, $0xDD)
	NIBVEX((R8), 4(R8), $0xE4, $0xE5, $0xEC, $0xED)
	NIBVEX((R8)(DX*1), 4(R8)(DX*1), $0xF4, $0xF5, $0xFC, $0xFD)
na2next:
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ $256, DI
	DECQ CX
	JNZ  na2group
	MOVQ nb+24(FP), CX
	SHLQ $2, CX
	MOVQ R13, AX
	NIBROWAVX2(Y0, Y1)
	NIBROWAVX2(Y2, Y3)
	NIBROWAVX2(Y4, Y5)
	NIBROWAVX2(Y6, Y7)
	SHLQ $2, CX
	SUBQ CX, R9
	SUBQ CX, R10
	ADDQ $4, R9
	ADDQ $4, R10
	ADDQ $256, R11
	ADDQ $256, R12
	DECQ BX
	JNZ  na2block
	VZEROUPPER
	RET

// func peakAVX2Asm(n int, kind int)
// n iterations of register-only work on 256-bit registers, AVX2's peak for
// BenchmarkPeak: kind 0, 12 independent VFMADD231PS; kind 1, 6
// independent products of 32 bytes as the AVX2 8-bit kernel computes them
// (VPMADDUBSW, VPMADDWD by ones, VPADDD into an accumulator); kind 2, 4 of
// 64 bytes as the AVX2 4-bit kernel does (two VPMADDUBSW added by VPADDW
// before VPMADDWD and VPADDD); kind 3, 8 independent VEX VPDPBUSD (32
// byte products each: AVX-VNNI).
TEXT ·peakAVX2Asm(SB), NOSPLIT, $0-16
	MOVQ n+0(FP), CX
	MOVQ kind+8(FP), AX
	VPXOR Y12, Y12, Y12
	VPXOR Y13, Y13, Y13
	VPXOR Y14, Y14, Y14
	CMPQ AX, $1
	JEQ  pa2int8
	CMPQ AX, $3
	JEQ  pa2vex
	JGT  pa2done
	CMPQ AX, $2
	JEQ  pa2nib
pa2fma:
	VFMADD231PS Y12, Y13, Y0
	VFMADD231PS Y12, Y13, Y1
	VFMADD231PS Y12, Y13, Y2
	VFMADD231PS Y12, Y13, Y3
	VFMADD231PS Y12, Y13, Y4
	VFMADD231PS Y12, Y13, Y5
	VFMADD231PS Y12, Y13, Y6
	VFMADD231PS Y12, Y13, Y7
	VFMADD231PS Y12, Y13, Y8
	VFMADD231PS Y12, Y13, Y9
	VFMADD231PS Y12, Y13, Y10
	VFMADD231PS Y12, Y13, Y11
	DECQ CX
	JNZ  pa2fma
	VZEROUPPER
	RET
pa2int8:
	VPMADDUBSW Y12, Y13, Y6
	VPMADDUBSW Y12, Y13, Y7
	VPMADDUBSW Y12, Y13, Y8
	VPMADDUBSW Y12, Y13, Y9
	VPMADDUBSW Y12, Y13, Y10
	VPMADDUBSW Y12, Y13, Y11
	VPMADDWD   Y14, Y6, Y6
	VPMADDWD   Y14, Y7, Y7
	VPMADDWD   Y14, Y8, Y8
	VPMADDWD   Y14, Y9, Y9
	VPMADDWD   Y14, Y10, Y10
	VPMADDWD   Y14, Y11, Y11
	VPADDD     Y6, Y0, Y0
	VPADDD     Y7, Y1, Y1
	VPADDD     Y8, Y2, Y2
	VPADDD     Y9, Y3, Y3
	VPADDD     Y10, Y4, Y4
	VPADDD     Y11, Y5, Y5
	DECQ CX
	JNZ  pa2int8
	VZEROUPPER
	RET
pa2nib:
	VPMADDUBSW Y12, Y13, Y4
	VPMADDUBSW Y12, Y13, Y5
	VPMADDUBSW Y12, Y13, Y6
	VPMADDUBSW Y12, Y13, Y7
	VPMADDUBSW Y12, Y13, Y8
	VPMADDUBSW Y12, Y13, Y9
	VPMADDUBSW Y12, Y13, Y10
	VPMADDUBSW Y12, Y13, Y11
	VPADDW     Y5, Y4, Y4
	VPADDW     Y7, Y6, Y6
	VPADDW     Y9, Y8, Y8
	VPADDW     Y11, Y10, Y10
	VPMADDWD   Y14, Y4, Y4
	VPMADDWD   Y14, Y6, Y6
	VPMADDWD   Y14, Y8, Y8
	VPMADDWD   Y14, Y10, Y10
	VPADDD     Y4, Y0, Y0
	VPADDD     Y6, Y1, Y1
	VPADDD     Y8, Y2, Y2
	VPADDD     Y10, Y3, Y3
	DECQ CX
	JNZ  pa2nib
	VZEROUPPER
	RET
pa2vex:
	VPXOR Y8, Y8, Y8
	VEXDPBUSD($0x3D, $0xC4)
	VEXDPBUSD($0x3D, $0xCC)
	VEXDPBUSD($0x3D, $0xD4)
	VEXDPBUSD($0x3D, $0xDC)
	VEXDPBUSD($0x3D, $0xE4)
	VEXDPBUSD($0x3D, $0xEC)
	VEXDPBUSD($0x3D, $0xF4)
	VEXDPBUSD($0x3D, $0xFC)
	DECQ CX
	JNZ  pa2vex
pa2done:
	VZEROUPPER
	RET

// func gemmPanel4Avx2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)
// C[0:4, 0:16] = A[0:4, 0:k] times a packed panel bp (k rows of 16
// floats) on AVX2: each output's multiply-adds in order of k into one
// accumulator (VFMADD231PS), as gemvPanelAvx2Asm adds them, so that a
// row's sums do not depend on its batch-mates.
TEXT ·gemmPanel4Avx2Asm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k+16(FP), CX
	MOVQ bp+24(FP), DI
	MOVQ c+32(FP), R10
	MOVQ ldc+40(FP), R11
	SHLQ $2, DX
	SHLQ $2, R11
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R12
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	TESTQ CX, CX
	JZ   pa4store
pa4loop:
	VMOVUPS      (DI), Y8
	VMOVUPS      32(DI), Y9
	VBROADCASTSS (SI), Y10
	VBROADCASTSS (R8), Y11
	VBROADCASTSS (R9), Y12
	VBROADCASTSS (R12), Y13
	VFMADD231PS  Y8, Y10, Y0
	VFMADD231PS  Y9, Y10, Y1
	VFMADD231PS  Y8, Y11, Y2
	VFMADD231PS  Y9, Y11, Y3
	VFMADD231PS  Y8, Y12, Y4
	VFMADD231PS  Y9, Y12, Y5
	VFMADD231PS  Y8, Y13, Y6
	VFMADD231PS  Y9, Y13, Y7
	ADDQ $64, DI
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $4, R12
	DECQ CX
	JNZ  pa4loop
pa4store:
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y2, (R10)
	VMOVUPS Y3, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y4, (R10)
	VMOVUPS Y5, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y6, (R10)
	VMOVUPS Y7, 32(R10)
	VZEROUPPER
	RET

// func gemvPanelAvx2Asm(a *float32, k int, bp *float32, np int, c *float32)
// c[16p:16p+16] = a[0:k] times packed panel p (k rows of 16 floats,
// panels one after another), for p < np, on AVX2: six panels at a time
// (twelve accumulators, six streams of weights in flight), then one; each
// output's multiply-adds in order of k into one accumulator, as
// gemmPanel4Avx2Asm adds them.
TEXT ·gemvPanelAvx2Asm(SB), NOSPLIT, $0-40
	MOVQ a+0(FP), SI
	MOVQ k+8(FP), CX
	MOVQ bp+16(FP), DI
	MOVQ np+24(FP), R11
	MOVQ c+32(FP), R10
	MOVQ CX, R12
	SHLQ $6, R12
gva6:
	CMPQ R11, $6
	JLT  gva1
	MOVQ SI, AX
	MOVQ CX, BX
	MOVQ DI, R8
	LEAQ (DI)(R12*1), R9
	LEAQ (R9)(R12*1), R13
	LEAQ (R13)(R12*1), R14
	LEAQ (R14)(R12*1), R15
	LEAQ (R15)(R12*1), DX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3
	VXORPS Y4, Y4, Y4
	VXORPS Y5, Y5, Y5
	VXORPS Y6, Y6, Y6
	VXORPS Y7, Y7, Y7
	VXORPS Y8, Y8, Y8
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	TESTQ BX, BX
	JZ   gva6store
gva6loop:
	VBROADCASTSS (AX), Y15
	VFMADD231PS  (R8), Y15, Y0
	VFMADD231PS  32(R8), Y15, Y1
	VFMADD231PS  (R9), Y15, Y2
	VFMADD231PS  32(R9), Y15, Y3
	VFMADD231PS  (R13), Y15, Y4
	VFMADD231PS  32(R13), Y15, Y5
	VFMADD231PS  (R14), Y15, Y6
	VFMADD231PS  32(R14), Y15, Y7
	VFMADD231PS  (R15), Y15, Y8
	VFMADD231PS  32(R15), Y15, Y9
	VFMADD231PS  (DX), Y15, Y10
	VFMADD231PS  32(DX), Y15, Y11
	ADDQ $64, R8
	ADDQ $64, R9
	ADDQ $64, R13
	ADDQ $64, R14
	ADDQ $64, R15
	ADDQ $64, DX
	ADDQ $4, AX
	DECQ BX
	JNZ  gva6loop
gva6store:
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	VMOVUPS Y2, 64(R10)
	VMOVUPS Y3, 96(R10)
	VMOVUPS Y4, 128(R10)
	VMOVUPS Y5, 160(R10)
	VMOVUPS Y6, 192(R10)
	VMOVUPS Y7, 224(R10)
	VMOVUPS Y8, 256(R10)
	VMOVUPS Y9, 288(R10)
	VMOVUPS Y10, 320(R10)
	VMOVUPS Y11, 352(R10)
	ADDQ $384, R10
	MOVQ DX, DI
	SUBQ $6, R11
	JMP  gva6
gva1:
	TESTQ R11, R11
	JZ   gvadone
	MOVQ SI, AX
	MOVQ CX, BX
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	TESTQ BX, BX
	JZ   gva1store
gva1loop:
	VBROADCASTSS (AX), Y15
	VFMADD231PS  (DI), Y15, Y0
	VFMADD231PS  32(DI), Y15, Y1
	ADDQ $64, DI
	ADDQ $4, AX
	DECQ BX
	JNZ  gva1loop
gva1store:
	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ $64, R10
	DECQ R11
	JMP  gva1
gvadone:
	VZEROUPPER
	RET

// G52ROW: one k step of gemmPanel5x2Asm for one row: its element at
// src broadcast into bc, times the two panels' rows in Z24 and Z25.
#define G52ROW(src, bc, a0, a1) \
	VBROADCASTSS src, bc \
	VFMADD231PS Z24, bc, a0 \
	VFMADD231PS Z25, bc, a1

// G52STEP is one k step of gemmPanel5x2Asm for its five rows, the
// elements off bytes into each row, into the accumulators from a0 on
// (a0..a0+9, named one by one).
#define G52STEP(off, a0, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
	G52ROW(off(SI), Z27, a0, a1) \
	G52ROW(off(R8), Z28, a2, a3) \
	G52ROW(off(R9), Z29, a4, a5) \
	G52ROW(off(R12), Z30, a6, a7) \
	G52ROW(off(R10), Z31, a8, a9)

// func gemmPanel5x2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)
// C[0:5, 0:32] = A[0:5, 0:k] times two consecutive packed panels at bp:
// five rows (a beam of five for one sentence) in one pass over the
// panels, where four rows and one read them twice. Even steps of k into
// Z0-Z9, odd ones into Z10-Z19, summed at the end: each row's sums in the
// order of gemmPanel4x3Asm and gemvPanelAsm, bit for bit theirs.
TEXT ·gemmPanel5x2Asm(SB), NOSPLIT, $0-48
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ k+16(FP), CX
	MOVQ bp+24(FP), DI
	SHLQ $2, DX
	LEAQ (SI)(DX*1), R8
	LEAQ (R8)(DX*1), R9
	LEAQ (R9)(DX*1), R12
	LEAQ (R12)(DX*1), R10
	MOVQ CX, AX
	SHLQ $6, AX
	LEAQ (DI)(AX*1), R13
	ZERO16
	ZERO16TO23
	MOVQ CX, BX
	SHRQ $1, BX
	JZ   g52tail
g52loop:
	VMOVUPS (DI), Z24
	VMOVUPS (R13), Z25
	G52STEP(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9)
	VMOVUPS 64(DI), Z24
	VMOVUPS 64(R13), Z25
	G52STEP(4, Z10, Z11, Z12, Z13, Z14, Z15, Z16, Z17, Z18, Z19)
	ADDQ $128, DI
	ADDQ $128, R13
	ADDQ $8, SI
	ADDQ $8, R8
	ADDQ $8, R9
	ADDQ $8, R12
	ADDQ $8, R10
	DECQ BX
	JNZ  g52loop
g52tail:
	TESTQ $1, CX
	JZ   g52store
	VMOVUPS (DI), Z24
	VMOVUPS (R13), Z25
	G52STEP(0, Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9)
g52store:
	VADDPS Z10, Z0, Z0
	VADDPS Z11, Z1, Z1
	VADDPS Z12, Z2, Z2
	VADDPS Z13, Z3, Z3
	VADDPS Z14, Z4, Z4
	VADDPS Z15, Z5, Z5
	VADDPS Z16, Z6, Z6
	VADDPS Z17, Z7, Z7
	VADDPS Z18, Z8, Z8
	VADDPS Z19, Z9, Z9
	MOVQ c+32(FP), R10
	MOVQ ldc+40(FP), R11
	SHLQ $2, R11
	VMOVUPS Z0, (R10)
	VMOVUPS Z1, 64(R10)
	ADDQ R11, R10
	VMOVUPS Z2, (R10)
	VMOVUPS Z3, 64(R10)
	ADDQ R11, R10
	VMOVUPS Z4, (R10)
	VMOVUPS Z5, 64(R10)
	ADDQ R11, R10
	VMOVUPS Z6, (R10)
	VMOVUPS Z7, 64(R10)
	ADDQ R11, R10
	VMOVUPS Z8, (R10)
	VMOVUPS Z9, 64(R10)
	VZEROUPPER
	RET
