//go:build !amd64 || purego

package kernel

import "os"

const useAsm = false

// canPaths: no assembly in this build (another GOARCH, or -tags purego).
var canPaths = []string{PathGo}

var _, _, _, path, pathErr = choosePath(os.Getenv(EnvPath), canPaths)

func dotAsm(a, b *float32, n int) float32                { panic("no assembly") }
func dot4Asm(a, b *float32, ldb, n int, out *[4]float32) { panic("no assembly") }
func axpyAsm(alpha float32, x, y *float32, n int)        { panic("no assembly") }
func scaleInt32Asm(acc *int32, sc *float32, s float32, y *float32, n int) {
	panic("no assembly")
}

func gemvAsm(a, b *float32, k, n, ldb int, c *float32) { panic("no assembly") }

const useVNNI = false

const useVexVNNI = false

func dotsU8S8Asm(a *uint8, b *int8, blk, nblk, n, ldb int, c *int32) { panic("no assembly") }

func expSumAsm(x *float32, n int, m float32) float64 { panic("no assembly") }

func dots4U8S8Asm(a *uint8, b *int8, k, n, ldb int, c *int32) { panic("no assembly") }

const usePanels = false

func gemmPanel4Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int) { panic("no assembly") }
func gemvPanelAsm(a *float32, k int, bp *float32, np int, c *float32)        { panic("no assembly") }

func expVecAsm(x, z *float32, n int) { panic("no assembly") }

func vnni4x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32) {
	panic("no assembly")
}
func vnni6x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32) {
	panic("no assembly")
}
func vnni5x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32) {
	panic("no assembly")
}
func vnni3x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32) {
	panic("no assembly")
}
func vnni2x64Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32) {
	panic("no assembly")
}
func vnni1x64Asm(a *uint8, k4 int, bp *int8, corr *int32, sc *float32, rs float32, y *float32, bias *float32) {
	panic("no assembly")
}
func absMaxAsm(x *float32, n int) (m float32, nan bool) { panic("no assembly") }
func quantizeU8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool) {
	panic("no assembly")
}
func absMax8Asm(x *float32, n int) (m float32, nan bool) { panic("no assembly") }
func quantizeU8x8Asm(x *float32, s, one, zp float32, q *uint8, n int, single bool) {
	panic("no assembly")
}
func maxNaNAsm(x *float32, n int) (m float32, nan bool)           { panic("no assembly") }
func arithVVAsm(op int, x, y, z *float32, n int)                  { panic("no assembly") }
func arithVSAsm(op int, x *float32, v float32, z *float32, n int) { panic("no assembly") }
func tanhAsm(x, z *float32, n int)                                { panic("no assembly") }
func sigmoidAsm(x, z *float32, n int)                             { panic("no assembly") }
func tanh16Asm(x, z *float32, n int)                              { panic("no assembly") }
func sigmoid16Asm(x, z *float32, n int)                           { panic("no assembly") }
func lstmGates16Asm(x, y, c, h2, c2 *float32, h int)              { panic("no assembly") }
func lstmGates8Asm(x, y, c, h2, c2 *float32, h int)               { panic("no assembly") }
func nib4x64Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int) {
	panic("no assembly")
}
func nib4x16Asm(a *int8, lda int, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32, ldy int, vex bool) {
	panic("no assembly")
}
func gemmPanel4Avx2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int) {
	panic("no assembly")
}
func gemvPanelAvx2Asm(a *float32, k int, bp *float32, np int, c *float32) { panic("no assembly") }
func nib1x64Asm(a *int8, bp *uint8, nb, ppb int, as, su *float32, ws, zp *float32, y *float32) {
	panic("no assembly")
}
func expSum16Asm(x *float32, n int, m float32) float64 { panic("no assembly") }
func gemmPanel4x3Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int) {
	panic("no assembly")
}
func gemmPanel5x2Asm(a *float32, lda, k int, bp *float32, c *float32, ldc int) {
	panic("no assembly")
}
func firstBeyondAsm(x *float32, n int, t float32, mode int) int { panic("no assembly") }
func subSubAsm(x *float32, a, b float32, z *float32, n int)     { panic("no assembly") }

func q8x16Asm(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32, vex bool) {
	panic("no assembly")
}
