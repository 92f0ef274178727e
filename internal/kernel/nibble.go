package kernel

import "fmt"

// NibbleProduct is MatMulNBits' 4-bit product at accuracy level 4 with
// constant weights: for rows of A already quantized block by block to
// int8 (aq, with each block's scale as and integer sum su), it computes
//
//	y[i][j] = sum over blocks t, in order from 0, of
//	          (as[i][t] * ws[j][t]) * (float32(sum_k aq[i][k] * w[j][k]) - zp[j][t] * su[i][t])
//
// where k runs over block t, w holds the 4-bit values (0..15), ws and zp
// are the blocks' scales and zero points; the integer sums are exact and
// every float32 operation is rounded in the order written (y starts at 0).
//
// The weights stay 4-bit, laid out for AVX-512 VNNI: blocks of 64 columns
// and, per 8 values of k, 256 bytes: for each of 4 panels of 16 columns,
// each column's 4 bytes holding values k..k+3 in their low nibbles and
// k+4..k+7 in their high ones. A block of 4 rows by 64 columns keeps 16
// integer accumulators in registers; at the end of each of the weights'
// blocks along k they are scaled into the output tile.
type NibbleProduct struct {
	N, K, Block int
	nb          int       // blocks along k
	ppb         int       // groups of 8 values per block
	ncb         int       // blocks of 64 columns
	p           []uint8   // ncb * nb*ppb * 256 bytes
	ws, zp      []float32 // [ncb][nb][64], zero beyond N
	vals        []uint8   // w as N x K values, for the Go loop (no VNNI)
	wsRows      []float32 // ws as N x nb, for the Go loop
	zpRows      []float32
}

// NewNibbleProduct prepares the values w (n x k, each 0..15), the block
// size (a multiple of 8) and the blocks' scales and zero points (n x
// ceil(k/block) each).
func NewNibbleProduct(w []uint8, n, k, block int, scales, zps []float32) *NibbleProduct {
	nb := (k + block - 1) / block
	if block%8 != 0 || len(w) < n*k || len(scales) < n*nb || len(zps) < n*nb {
		panic(fmt.Sprintf("kernel.NewNibbleProduct: %d values, %d scales, %d zero points for %d x %d in blocks of %d", len(w), len(scales), len(zps), n, k, block))
	}
	q := &NibbleProduct{N: n, K: k, Block: block, nb: nb, ppb: block / 8, ncb: (n + qBlock - 1) / qBlock}
	if !NibbleProductFast() {
		q.vals, q.wsRows, q.zpRows = w[:n*k], scales[:n*nb], zps[:n*nb]
		return q
	}
	pairs := nb * q.ppb
	q.p = make([]uint8, q.ncb*pairs*256)
	q.ws = make([]float32, q.ncb*nb*qBlock)
	q.zp = make([]float32, q.ncb*nb*qBlock)
	for j := 0; j < n; j++ {
		cb, col := j/qBlock, j%qBlock
		panelOff := (col/16)*64 + (col%16)*4
		for l, v := range w[j*k : (j+1)*k] {
			p := l / 8
			at := (cb*pairs+p)*256 + panelOff + l%4
			if l%8 < 4 {
				q.p[at] |= v & 15
			} else {
				q.p[at] |= (v & 15) << 4
			}
		}
		for t := 0; t < nb; t++ {
			q.ws[(cb*nb+t)*qBlock+col] = scales[j*nb+t]
			q.zp[(cb*nb+t)*qBlock+col] = zps[j*nb+t]
		}
	}
	return q
}

// Stride is the least row stride of aq: the blocks' length, nb*Block;
// the values of a row beyond K must be 0.
func (q *NibbleProduct) Stride() int { return q.nb * q.Block }

// Blocks is the number of blocks along k (the row length of as and su).
func (q *NibbleProduct) Blocks() int { return q.nb }

// Run computes y (m rows, ldy apart) from aq (m rows, lda >= Stride()
// apart) and the blocks' scales as and sums su (m rows of Blocks()).
// Column blocks are split among up to threads goroutines when the product
// is large enough to pay for them.
func (q *NibbleProduct) Run(m int, aq []int8, lda int, as, su []float32, y []float32, ldy int, threads int) {
	if m == 0 || q.N == 0 {
		return
	}
	if lda < q.Stride() || len(aq) < (m-1)*lda+q.Stride() || len(as) < m*q.nb || len(su) < m*q.nb || len(y) < (m-1)*ldy+q.N {
		panic(fmt.Sprintf("kernel.NibbleProduct.Run: %d rows (stride %d, %d values), %d scales, %d sums, %d outputs (stride %d) for %d x %d", m, lda, len(aq), len(as), len(su), len(y), ldy, q.N, q.K))
	}
	t := min(threads, q.ncb, m*q.N*q.K/(4*minWork))
	switch {
	case useVNNI:
		parallel(q.ncb, t, func(b0, b1 int) { q.run(b0, b1, m, aq, lda, as, su, y, ldy) })
	case useAsm:
		pad := q.padRows(m, aq, lda, as, su)
		parallel(q.ncb, t, func(b0, b1 int) { q.runAVX2(b0, b1, m, aq, lda, as, su, y, ldy, pad) })
	default:
		q.runGo(m, aq, lda, as, su, y, ldy)
	}
}

// NibbleProductFast reports whether NibbleProduct runs in assembly on this
// path (AVX-512 VNNI, AVX-VNNI or AVX2) rather than in Go: where it does not,
// MatMulNBits is faster on float32 kernels.
func NibbleProductFast() bool { return useAsm }

// nibblePad holds the rows left over from the blocks of four, padded with
// zero rows (zero scales and sums), for the 8-lane kernel.
type nibblePad struct {
	first  int // the first row left over
	aq     []int8
	as, su []float32
}

func (q *NibbleProduct) padRows(m int, aq []int8, lda int, as, su []float32) *nibblePad {
	m4 := m &^ 3
	if m4 == m {
		return nil
	}
	stride := q.Stride()
	p := &nibblePad{first: m4, aq: make([]int8, 4*stride), as: make([]float32, 4*q.nb), su: make([]float32, 4*q.nb)}
	for r := 0; r < m-m4; r++ {
		copy(p.aq[r*stride:(r+1)*stride], aq[(m4+r)*lda:])
		copy(p.as[r*q.nb:(r+1)*q.nb], as[(m4+r)*q.nb:])
		copy(p.su[r*q.nb:(r+1)*q.nb], su[(m4+r)*q.nb:])
	}
	return p
}

// runAVX2 computes the column blocks b0..b1 on AVX2 (or AVX-VNNI), 4 rows
// by 16 columns at a time from the VNNI layout; the rows beyond the blocks
// of four come from pad. Each value is computed as nib4x64Asm computes it.
func (q *NibbleProduct) runAVX2(b0, b1, m int, aq []int8, lda int, as, su []float32, y []float32, ldy int, pad *nibblePad) {
	var tmp [4 * 16]float32
	pairs, nb := q.nb*q.ppb, q.nb
	m4 := m &^ 3
	for b := b0; b < b1; b++ {
		for p := 0; p < qBlock/16; p++ {
			j0 := b*qBlock + p*16
			if j0 >= q.N {
				break
			}
			bp := &q.p[b*pairs*256+p*64]
			ws, zp := &q.ws[b*nb*qBlock+p*16], &q.zp[b*nb*qBlock+p*16]
			full := j0+16 <= q.N
			for i := 0; i < m4; i += 4 {
				if full {
					nib4x16Asm(&aq[i*lda], lda, bp, nb, q.ppb, &as[i*nb], &su[i*nb], ws, zp, &y[i*ldy+j0], ldy, useVexVNNI)
					continue
				}
				nib4x16Asm(&aq[i*lda], lda, bp, nb, q.ppb, &as[i*nb], &su[i*nb], ws, zp, &tmp[0], 16, useVexVNNI)
				for r := 0; r < 4; r++ {
					copy(y[(i+r)*ldy+j0:(i+r)*ldy+q.N], tmp[r*16:(r+1)*16])
				}
			}
			if pad != nil {
				nib4x16Asm(&pad.aq[0], q.Stride(), bp, nb, q.ppb, &pad.as[0], &pad.su[0], ws, zp, &tmp[0], 16, useVexVNNI)
				for r := pad.first; r < m; r++ {
					copy(y[r*ldy+j0:r*ldy+q.N], tmp[(r-pad.first)*16:(r-pad.first+1)*16])
				}
			}
		}
	}
}

func (q *NibbleProduct) run(b0, b1, m int, aq []int8, lda int, as, su []float32, y []float32, ldy int) {
	var tmp [4 * qBlock]float32
	pairs := q.nb * q.ppb
	for b := b0; b < b1; b++ {
		bp := &q.p[b*pairs*256]
		ws, zp := &q.ws[b*q.nb*qBlock], &q.zp[b*q.nb*qBlock]
		j0 := b * qBlock
		full := j0+qBlock <= q.N
		i := 0
		for ; i+4 <= m; i += 4 {
			if full {
				nib4x64Asm(&aq[i*lda], lda, bp, q.nb, q.ppb, &as[i*q.nb], &su[i*q.nb], ws, zp, &y[i*ldy+j0], ldy)
				continue
			}
			nib4x64Asm(&aq[i*lda], lda, bp, q.nb, q.ppb, &as[i*q.nb], &su[i*q.nb], ws, zp, &tmp[0], qBlock)
			for r := 0; r < 4; r++ {
				copy(y[(i+r)*ldy+j0:(i+r)*ldy+q.N], tmp[r*qBlock:])
			}
		}
		for ; i < m; i++ {
			if full {
				nib1x64Asm(&aq[i*lda], bp, q.nb, q.ppb, &as[i*q.nb], &su[i*q.nb], ws, zp, &y[i*ldy+j0])
				continue
			}
			nib1x64Asm(&aq[i*lda], bp, q.nb, q.ppb, &as[i*q.nb], &su[i*q.nb], ws, zp, &tmp[0])
			copy(y[i*ldy+j0:i*ldy+q.N], tmp[:])
		}
	}
}

// runGo is Run's loop in Go (no assembly on this path).
func (q *NibbleProduct) runGo(m int, aq []int8, lda int, as, su []float32, y []float32, ldy int) {
	K, nb, blk := q.K, q.nb, q.Block
	for i := 0; i < m; i++ {
		for j := 0; j < q.N; j++ {
			var s float32
			for t := 0; t < nb; t++ {
				var d int32
				for k := t * blk; k < min(K, (t+1)*blk); k++ {
					d += int32(aq[i*lda+k]) * int32(q.vals[j*K+k])
				}
				u := j*nb + t
				s += as[i*nb+t] * q.wsRows[u] * (float32(d) - q.zpRows[u]*su[i*nb+t])
			}
			y[i*ldy+j] = s
		}
	}
}
