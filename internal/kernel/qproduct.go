package kernel

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// QuantProduct is a dequantized 8-bit product with constant int8 weights
// W (n x k): for uint8 rows a (their zero point azp), per-column scales
// sc and per-row scales rs, it computes
//
//	y[i][j] = (float32(sum_l (a[i][l] - azp) * W[j][l]) * sc[j]) * rs[i] [+ bias[j]]
//
// with the sum exact in int32 and each operation rounded to float32 in
// that order: bit for bit ONNX's MatMulInteger, Cast, two Mul nodes and,
// with a bias, the Add after them.
//
// W is laid out for AVX-512 VNNI (VPDPBUSD): blocks of 64 columns, and in
// each, for every group of 4 values of k, the 4 bytes of each of the 64
// columns together (256 bytes), so that one broadcast of 4 bytes of a row
// of A meets 64 columns in four instructions, and a block of 6 rows by
// 64 columns keeps 24 accumulators in registers, the weights read once per
// 6 rows (the rows left, two to five, in one tile of their own, a last
// single row by the one-row kernel). Sums stay in registers to the end:
// the zero point's correction, the conversion and both scales are applied
// as they are stored.
type QuantProduct struct {
	N, K   int
	k4     int       // groups of 4 values along k (K rounded up, over 4)
	nb     int       // blocks of 64 columns
	p      []int8    // nb blocks of k4*256 bytes, zero beyond N and K
	corr   []int32   // azp * sum_l W[j][l], padded to nb*64
	sc     []float32 // the column scales, padded with zeros to nb*64
	bias   []float32 // nil, or the biases padded to nb*64
	plainW []int8    // W as rows for the Go loop, when there are no panels
	azp    int32     // the activations' zero point
	// lanes8: without AVX-512 VNNI, the panels p serve the 8-lane kernel:
	// on the avx-vnni path for every row and any azp (the correction corr
	// applied as with VNNI); on AVX2 when azp is 128, exact for rows whose
	// bytes are not 0 (as the fused row quantization makes them: bytes 1
	// to 255 unless the row holds NaN or infinities), other rows taking
	// the Go loop.
	lanes8 bool
}

const qBlock = 64 // columns of a block

// NewQuantProduct prepares W (n rows of k int8 values, row-major), the
// activations' zero point azp, the column scales (n of them) and the
// biases (nil, or n of them).
func NewQuantProduct(w []int8, n, k int, azp int32, sc, bias []float32) *QuantProduct {
	if len(w) < n*k || len(sc) < n || bias != nil && len(bias) < n {
		panic(fmt.Sprintf("kernel.NewQuantProduct: %d weights and %d scales for %d x %d", len(w), len(sc), n, k))
	}
	q := &QuantProduct{N: n, K: k, k4: (k + 3) / 4, nb: (n + qBlock - 1) / qBlock, azp: azp}
	q.corr = make([]int32, q.nb*qBlock)
	q.sc = make([]float32, q.nb*qBlock)
	copy(q.sc, sc[:n])
	if bias != nil {
		q.bias = make([]float32, q.nb*qBlock)
		copy(q.bias, bias[:n])
	}
	for j := 0; j < n; j++ {
		var s int32
		for _, v := range w[j*k : (j+1)*k] {
			s += int32(v)
		}
		q.corr[j] = azp * s
	}
	q.lanes8 = !useVNNI && (useVexVNNI || useAsm && azp == 128)
	if !useVNNI && !q.lanes8 {
		q.plainW = w[:n*k]
		return q
	}
	q.p = make([]int8, q.nb*q.k4*4*qBlock)
	for j := 0; j < n; j++ {
		blk, col := j/qBlock, j%qBlock
		base := blk * q.k4 * 4 * qBlock
		for l, v := range w[j*k : (j+1)*k] {
			// group l/4: 256 bytes; column col's 4 bytes at 4*col.
			q.p[base+(l/4)*4*qBlock+4*col+l%4] = v
		}
	}
	return q
}

// Stride is the least row stride (lda) Run accepts for A: K rounded up
// to a multiple of 4. The bytes of a row beyond K may hold anything.
func (q *QuantProduct) Stride() int { return 4 * q.k4 }

// Run computes y (m rows, ldy apart) from a (m rows of K bytes, lda >=
// Stride() apart; the last row needs Stride() bytes) and the row scales rs
// (m of them). Column blocks are split among up to threads goroutines
// when the product is large enough to pay for them.
func (q *QuantProduct) Run(m int, a []uint8, lda int, rs []float32, y []float32, ldy int, threads int) {
	if m == 0 || q.N == 0 {
		return
	}
	if lda < q.Stride() || len(a) < (m-1)*lda+q.Stride() || len(rs) < m || len(y) < (m-1)*ldy+q.N {
		panic(fmt.Sprintf("kernel.QuantProduct.Run: %d rows of %d (stride %d, %d bytes), %d row scales, %d outputs (stride %d) for %d x %d", m, q.K, lda, len(a), len(rs), len(y), ldy, q.N, q.K))
	}
	if q.K == 0 {
		for i := 0; i < m; i++ {
			for j := 0; j < q.N; j++ {
				y[i*ldy+j] = q.finish(0, i, j, rs)
			}
		}
		return
	}
	if q.lanes8 {
		q.runAVX2(m, a, lda, rs, y, ldy, threads)
		return
	}
	if !useVNNI {
		q.runGo(0, m, a, lda, rs, y, ldy)
		return
	}
	t := min(threads, q.nb, m*q.N*q.K/(4*minWork))
	parallel(q.nb, t, func(b0, b1 int) { q.run(b0, b1, m, a, lda, rs, y, ldy) })
}

// runAVX2 is Run on the 8-lane kernels, AVX2's or AVX-VNNI's: rows go
// through them four at a time from one copy (a last group of fewer padded
// with rows whose results are dropped); on AVX2 only the rows whose bytes
// are all non-zero, the others through the Go loop.
func (q *QuantProduct) runAVX2(m int, a []uint8, lda int, rs []float32, y []float32, ldy int, threads int) {
	stride := q.Stride()
	sc := avx2Scratch.Get().(*avx2Rows)
	defer avx2Scratch.Put(sc)
	ok := sc.ok[:0] // the rows the kernel takes
	for i := 0; i < m; i++ {
		if useVexVNNI || bytes.IndexByte(a[i*lda:i*lda+stride], 0) < 0 {
			ok = append(ok, i)
		} else {
			q.runGo(i, i+1, a, lda, rs, y, ldy)
		}
	}
	sc.ok = ok
	if len(ok) == 0 {
		return
	}
	// The kernel's rows, copied four by four: on AVX2 each byte less 128
	// as a signed byte (the byte XOR 0x80), which the kernel multiplies as
	// it is, where flipping every broadcast in the kernel cost one
	// instruction in eleven; padding rows are zeros there, the zero point
	// 128 on AVX-VNNI, which takes the bytes themselves.
	n4 := (len(ok) + 3) &^ 3
	sc.rows = grow(sc.rows, n4*stride)
	sc.groups = grow(sc.groups, n4/4)
	rows, groups := sc.rows, sc.groups
	for g := range n4 {
		gr, r, dst := &groups[g/4], g%4, rows[g*stride:(g+1)*stride]
		if g >= len(ok) {
			gr.rows[r] = -1
			if useVexVNNI {
				fill(dst, 128)
			} else {
				clear(dst)
			}
			continue
		}
		i := ok[g]
		gr.rs[r], gr.rows[r] = rs[i], i
		if useVexVNNI {
			copy(dst, a[i*lda:])
		} else {
			xorCopy(dst, a[i*lda:], 0x80)
		}
	}
	t := min(threads, q.nb, m*q.N*q.K/(4*minWork))
	parallel(q.nb, t, func(b0, b1 int) {
		var tmp [4 * 16]float32
		kernel := func(a *uint8, lda int, j0 int, bp *int8, rs *float32, y *float32, ldy int, bias *float32) {
			q8x16Asm(a, lda, q.k4, bp, &q.corr[j0], &q.sc[j0], rs, y, ldy, bias, useVexVNNI)
		}
		for b := b0; b < b1; b++ {
			for sub := 0; sub < qBlock/16; sub++ {
				j0 := b*qBlock + sub*16
				if j0 >= q.N {
					break
				}
				bp := &q.p[b*q.k4*4*qBlock+sub*64]
				var bias *float32
				if q.bias != nil {
					bias = &q.bias[j0]
				}
				for gi := range groups {
					gr, ga := &groups[gi], &rows[gi*4*stride]
					direct := j0+16 <= q.N && gr.rows[3] == gr.rows[0]+3 && gr.rows[0] >= 0
					if direct {
						kernel(ga, stride, j0, bp, &gr.rs[0], &y[gr.rows[0]*ldy+j0], ldy, bias)
						continue
					}
					kernel(ga, stride, j0, bp, &gr.rs[0], &tmp[0], 16, bias)
					for r, i := range gr.rows {
						if i >= 0 {
							copy(y[i*ldy+j0:i*ldy+min(q.N, j0+16)], tmp[r*16:])
						}
					}
				}
			}
		}
	})
}

// avx2Rows is runAVX2's scratch, reused through avx2Scratch: the rows the
// kernel takes, their copy, and its groups of four.
type avx2Rows struct {
	ok     []int
	rows   []uint8
	groups []avx2Group
}

// avx2Group is four rows of avx2Rows.rows: their scales and their indices
// in the product (-1: padding).
type avx2Group struct {
	rs   [4]float32
	rows [4]int
}

var avx2Scratch = sync.Pool{New: func() any { return new(avx2Rows) }}

// grow returns b resliced to n elements, reallocated when its capacity is
// smaller.
func grow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// xorCopy copies len(dst) bytes of src to dst, each XOR x, eight at a
// time.
func xorCopy(dst, src []uint8, x uint8) {
	src = src[:len(dst)]
	n := len(dst) &^ 7
	x8 := uint64(x) * 0x0101010101010101
	for i := 0; i < n; i += 8 {
		binary.LittleEndian.PutUint64(dst[i:], binary.LittleEndian.Uint64(src[i:])^x8)
	}
	for i := n; i < len(dst); i++ {
		dst[i] = src[i] ^ x
	}
}

// fill sets every byte of b to v.
func fill(b []uint8, v uint8) {
	for i := range b {
		b[i] = v
	}
}

// vnniTiles are the VNNI kernels taking several rows of one 64-column
// block, by their number of rows: six at a time, then one kernel for the
// rest (two to five; one row has its own kernel, with its scale by
// value). One tile reads a block's weights once for all its rows, where
// each row through the one-row kernel reads them again, bound by those
// loads: five rows as four and one, or three as three single rows, took
// up to a third longer than six rows in one tile (16,000 columns, K =
// 1,024, one thread).
var vnniTiles = [7]func(a *uint8, lda, k4 int, bp *int8, corr *int32, sc *float32, rs *float32, y *float32, ldy int, bias *float32){
	2: vnni2x64Asm, 3: vnni3x64Asm, 4: vnni4x64Asm, 5: vnni5x64Asm, 6: vnni6x64Asm,
}

// run computes the column blocks b0..b1 for every row: each block's
// weights (k4*256 bytes) stay in cache while the rows go through them.
func (q *QuantProduct) run(b0, b1, m int, a []uint8, lda int, rs []float32, y []float32, ldy int) {
	var tmp [6 * qBlock]float32
	for b := b0; b < b1; b++ {
		bp := &q.p[b*q.k4*4*qBlock]
		j0 := b * qBlock
		cols := min(qBlock, q.N-j0) // the block's columns: whole but the last
		corr, sc := &q.corr[j0], &q.sc[j0]
		var bias *float32
		if q.bias != nil {
			bias = &q.bias[j0]
		}
		for i := 0; i < m; {
			n := min(6, m-i)
			if n == 1 {
				if cols == qBlock {
					vnni1x64Asm(&a[i*lda], q.k4, bp, corr, sc, rs[i], &y[i*ldy+j0], bias)
				} else {
					vnni1x64Asm(&a[i*lda], q.k4, bp, corr, sc, rs[i], &tmp[0], bias)
					copy(y[i*ldy+j0:i*ldy+j0+cols], tmp[:])
				}
				i++
				continue
			}
			f := vnniTiles[n]
			if cols == qBlock {
				f(&a[i*lda], lda, q.k4, bp, corr, sc, &rs[i], &y[i*ldy+j0], ldy, bias)
			} else {
				f(&a[i*lda], lda, q.k4, bp, corr, sc, &rs[i], &tmp[0], qBlock, bias)
				for r := range n {
					copy(y[(i+r)*ldy+j0:(i+r)*ldy+j0+cols], tmp[r*qBlock:])
				}
			}
			i += n
		}
	}
}

// runGo is Run's integer loop for rows i0..i1: on CPUs without VNNI or
// AVX2, and for the rows the AVX2 kernel cannot take (their weights then
// read from its panels, kept alone).
func (q *QuantProduct) runGo(i0, i1 int, a []uint8, lda int, rs []float32, y []float32, ldy int) {
	K := q.K
	for i := i0; i < i1; i++ {
		row := a[i*lda : i*lda+K]
		for j := 0; j < q.N; j++ {
			var s int32
			if q.plainW != nil {
				for l, v := range q.plainW[j*K : (j+1)*K] {
					s += int32(row[l]) * int32(v)
				}
			} else {
				base := (j/qBlock)*q.k4*4*qBlock + 4*(j%qBlock)
				for l, v := range row {
					s += int32(v) * int32(q.p[base+(l/4)*4*qBlock+l%4])
				}
			}
			y[i*ldy+j] = q.finish(s, i, j, rs)
		}
	}
}

// finish is the epilogue of one sum s (row i, column j) in Go.
func (q *QuantProduct) finish(s int32, i, j int, rs []float32) float32 {
	y := (float32(s-q.corr[j]) * q.sc[j]) * rs[i]
	if q.bias != nil {
		y += q.bias[j]
	}
	return y
}

// AbsMax returns the largest |x[i]|: NaN when x holds a NaN, -Inf when x
// is empty (ReduceMax of Abs, as the nodes compute it).
func AbsMax(x []float32) float32 {
	m := float32(math.Inf(-1))
	done := 0
	var nan bool
	switch {
	case usePanels && len(x) >= 16:
		done = len(x) &^ 15
		m, nan = absMaxAsm(&x[0], done)
	case useAsm && len(x) >= 8:
		done = len(x) &^ 7
		m, nan = absMax8Asm(&x[0], done)
	}
	if nan {
		return float32(math.NaN())
	}
	for _, v := range x[done:] {
		if a := max(v, -v); a > m || a != a {
			m = a
		}
	}
	return m
}

// QuantizeU8 writes q[i] = uint8(min(max(roundEven((x[i] / s) / one) + zp,
// 0), 255)) for every i of x: QuantizeLinear of Div's quotient, rounded
// half to even, NaN giving 0 as Go's conversion of it does on amd64.
func QuantizeU8(x []float32, s, one, zp float32, q []uint8) {
	q = q[:len(x)]
	done := 0
	switch {
	case usePanels && len(x) >= 16:
		done = len(x) &^ 15
		quantizeU8Asm(&x[0], s, one, zp, &q[0], done, one == 1)
	case useAsm && len(x) >= 8:
		done = len(x) &^ 7
		quantizeU8x8Asm(&x[0], s, one, zp, &q[0], done, one == 1)
	}
	for i, v := range x[done:] {
		q[done+i] = quantU8(v, s, one, zp)
	}
}

func quantU8(v, s, one, zp float32) uint8 {
	r := float32(math.RoundToEven(float64((v / s) / one)))
	c := max(0, min(255, r+zp))
	if c != c {
		return 0
	}
	return uint8(c)
}
