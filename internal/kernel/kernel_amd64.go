//go:build amd64 && !purego

package kernel

import (
	"os"

	"golang.org/x/sys/cpu"
)

// canPaths are the kernel paths this CPU runs, best first: the assembly
// needs AVX2 and FMA (and the OS saving YMM registers, which x/sys/cpu
// checks), the packed products AVX-512F, the 8-bit kernels AVX-512 (F,
// BW) with VNNI, or AVX-VNNI for the 8-lane one.
var canPaths = func() []string {
	var p []string
	avx2 := cpu.X86.HasAVX2 && cpu.X86.HasFMA
	avx512 := avx2 && cpu.X86.HasAVX512F
	if avx512 && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512VNNI {
		p = append(p, PathVNNI)
	}
	if avx512 {
		p = append(p, PathAVX512)
	}
	if avx2 && cpu.X86.HasAVXVNNI {
		p = append(p, PathAVXVNNI)
	}
	if avx2 {
		p = append(p, PathAVX2)
	}
	return append(p, PathGo)
}()

// useAsm: the AVX2 + FMA kernels; usePanels: the packed products
// (AVX-512F); useVNNI: the 8-bit kernels (AVX-512 VNNI). The path
// EnvPath picks, else the best.
var useAsm, usePanels, useVNNI, path, pathErr = choosePath(os.Getenv(EnvPath), canPaths)

// useVexVNNI: the 8-bit kernel on AVX-VNNI's VEX VPDPBUSD (the avx-vnni
// path; with AVX-512 VNNI the 64-column kernels take the products).
var useVexVNNI = path == PathAVXVNNI

// dotAsm returns sum a[i]*b[i] for i < n; n is a multiple of 16.
//
//go:noescape
func dotAsm(a, b *float32, n int) float32

// dot4Asm writes the dot products of a with b's four rows (ldb apart) over
// n elements, a multiple of 16, to out.
//
//go:noescape
func dot4Asm(a, b *float32, ldb, n int, out *[4]float32)

// scaleInt32Asm writes y[j] = (float32(acc[j]) * sc[j]) * s for j < n, a
// multiple of 16.
//
//go:noescape
func scaleInt32Asm(acc *int32, sc *float32, s float32, y *float32, n int)

// axpyAsm adds alpha*x[i] to y[i] for i < n, a multiple of 16.
//
//go:noescape
func axpyAsm(alpha float32, x, y *float32, n int)

// gemvAsm writes c[j] = the dot product of a with b's row j (rows ldb
// apart) over k elements, a multiple of 16, for j < n.
//
//go:noescape
func gemvAsm(a, b *float32, k, n, ldb int, c *float32)

//go:noescape
func dotsU8S8Asm(a *uint8, b *int8, blk, nblk, n, ldb int, c *int32)

//go:noescape
func expSumAsm(x *float32, n int, m float32) float64

//go:noescape
func dots4U8S8Asm(a *uint8, b *int8, k, n, ldb int, c *int32)

//go:noescape
func gemmPanel4Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)

//go:noescape
func gemvPanelAsm(a *float32, k int, bp *float32, np int, c *float32)

//go:noescape
func expVecAsm(x, z *float32, n int)

//go:noescape
func vnni4x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)

//go:noescape
func vnni6x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)

//go:noescape
func vnni5x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)

//go:noescape
func vnni3x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)

//go:noescape
func vnni2x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32)

// q8x16Asm: QuantProduct's 4 rows x 16 columns on AVX2, or with vex on
// AVX-VNNI (kernel_amd64.s).
//
//go:noescape
func q8x16Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32, vex bool)

//go:noescape
func vnni1x64Asm(a *uint8, k4 int, bp *int8, corr *int32, sc *float32, rs float32, y *float32, bias *float32)

//go:noescape
func absMaxAsm(x *float32, n int) (m float32, nan bool)

//go:noescape
func quantizeU8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool)

//go:noescape
func absMax8Asm(x *float32, n int) (m float32, nan bool)

//go:noescape
func quantizeU8x8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool)

//go:noescape
func maxNaNAsm(x *float32, n int) (m float32, nan bool)

//go:noescape
func arithVVAsm(op int, x, y, z *float32, n int)

//go:noescape
func arithVSAsm(op int, x *float32, v float32, z *float32, n int)

//go:noescape
func tanhAsm(x, z *float32, n int)

//go:noescape
func sigmoidAsm(x, z *float32, n int)

//go:noescape
func tanh16Asm(x, z *float32, n int)

//go:noescape
func sigmoid16Asm(x, z *float32, n int)

//go:noescape
func lstmGates16Asm(x, y, c, h2, c2 *float32, h int)

//go:noescape
func lstmGates8Asm(x, y, c, h2, c2 *float32, h int)

//go:noescape
func nib4x64Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int)

// nib4x16Asm: NibbleProduct's 4 rows x 16 columns on AVX2, or with vex
// on AVX-VNNI (kernel_amd64.s).
//
//go:noescape
func nib4x16Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int, vex bool)

//go:noescape
func nib1x64Asm(a *int8, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32)

//go:noescape
func expSum16Asm(x *float32, n int, m float32) float64

//go:noescape
func gemmPanel4x3Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)

//go:noescape
func gemmPanel5x2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)

//go:noescape
func firstBeyondAsm(x *float32, n int, t float32, mode int) int

// peakAsm runs the register-only loop BenchmarkPeak times.
//
//go:noescape
func peakAsm(n int, vnni bool)

// gemmPanel4Avx2Asm and gemvPanelAvx2Asm: Packed's products on AVX2
// (kernel_amd64.s).
//
//go:noescape
func gemmPanel4Avx2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int)

//go:noescape
func gemvPanelAvx2Asm(a *float32, k int, bp *float32, np int, c *float32)

// peakAVX2Asm runs BenchmarkPeak's loop on 256-bit registers.
//
//go:noescape
func peakAVX2Asm(n int, kind int)

//go:noescape
func subSubAsm(x *float32, a, b float32, z *float32, n int)
