package onnxeval

import (
	"fmt"
	"math"
	"sync"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/quant"
)

// roundEven rounds half to even, as ONNX's quantizers do.
func roundEven(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

func saturate(v float32, lo, hi float32) float32 { return max(lo, min(hi, v)) }

func quantRange(dt builder.DataType) (float32, float32, error) {
	switch dt {
	case builder.Uint8:
		return 0, 255, nil
	case builder.Int8:
		return -128, 127, nil
	}
	return 0, 0, fmt.Errorf("quantized type %v is not supported (uint8 or int8)", dt)
}

// perAxis returns, for element i of a tensor shaped shape, the index of its
// scale: 0 for a scalar scale, its coordinate on axis otherwise.
func perAxis(shape []int64, axis int64, scales int) (func(i int) int, error) {
	if scales == 1 {
		return func(int) int { return 0 }, nil
	}
	k, err := normAxis(axis, len(shape), "axis")
	if err != nil {
		return nil, err
	}
	if int(shape[k]) != scales {
		return nil, fmt.Errorf("%d scales for axis %d of size %d", scales, k, shape[k])
	}
	inner := numel(shape[k+1:])
	dim := int(shape[k])
	return func(i int) int { return (i / inner) % dim }, nil
}

func intsOf(t *Tensor) []int32 {
	switch d := t.Data.(type) {
	case []uint8:
		out := make([]int32, len(d))
		for i, v := range d {
			out[i] = int32(v)
		}
		return out
	case []int8:
		out := make([]int32, len(d))
		for i, v := range d {
			out[i] = int32(v)
		}
		return out
	case []int32:
		return d
	}
	return nil
}

func init() {
	register("QuantizeLinear", func(n *node) (opFunc, error) {
		if err := n.needInputs(2, 3); err != nil {
			return nil, err
		}
		axis := n.int("axis", 1)
		return func(f *frame, in, out []*Tensor) error {
			x, sc := in[0], in[1]
			if x.DType != builder.Float || sc.DType != builder.Float {
				return fmt.Errorf("x is %v and y_scale %v; float32 expected", x.DType, sc.DType)
			}
			odt := builder.Uint8
			var zp []int32
			if len(in) > 2 && in[2] != nil {
				odt = in[2].DType
				zp = intsOf(in[2])
			}
			lo, hi, err := quantRange(odt)
			if err != nil {
				return err
			}
			s := get[float32](sc)
			at, err := perAxis(x.Shape, axis, len(s))
			if err != nil {
				return err
			}
			xs := get[float32](x)
			q := tmp[float32](f.r, len(xs))
			if len(s) == 1 { // one scale and zero point: the usual, per-tensor form
				var z float32
				if zp != nil {
					z = float32(zp[0])
				}
				for i, v := range xs {
					q[i] = saturate(roundEven(v/s[0])+z, lo, hi)
				}
			} else {
				for i, v := range xs {
					j := at(i)
					z := float32(0)
					if zp != nil {
						z = float32(zp[j])
					}
					q[i] = saturate(roundEven(v/s[j])+z, lo, hi)
				}
			}
			out[0] = quantized(f.r, odt, x.Shape, q)
			return nil
		}, nil
	})
	register("DequantizeLinear", func(n *node) (opFunc, error) {
		if err := n.needInputs(2, 3); err != nil {
			return nil, err
		}
		axis := n.int("axis", 1)
		return func(f *frame, in, out []*Tensor) error {
			x, sc := in[0], in[1]
			xs := intsOf(x)
			if xs == nil || sc.DType != builder.Float {
				return fmt.Errorf("x is %v and x_scale %v; int8, uint8 or int32 and float32 expected", x.DType, sc.DType)
			}
			var zp []int32
			if len(in) > 2 && in[2] != nil {
				zp = intsOf(in[2])
			}
			s := get[float32](sc)
			at, err := perAxis(x.Shape, axis, len(s))
			if err != nil {
				return err
			}
			o := f.r.f32(cloneShape(x.Shape))
			z := get[float32](o)
			for i, v := range xs {
				j := at(i)
				var zz int32
				if zp != nil {
					zz = zp[j]
				}
				z[i] = float32(v-zz) * s[j]
			}
			out[0] = o
			return nil
		}, nil
	})
	register("DynamicQuantizeLinear", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			x := in[0]
			if x.DType != builder.Float {
				return fmt.Errorf("x is %v, want float32", x.DType)
			}
			xs := get[float32](x)
			lo, hi := float32(0), float32(0)
			for _, v := range xs {
				lo, hi = min(lo, v), max(hi, v)
			}
			scale := (hi - lo) / 255
			var zp float32
			if scale != 0 {
				zp = saturate(roundEven(0-lo/scale), 0, 255)
			}
			q := fresh[uint8](f.r, len(xs))
			for i, v := range xs {
				if scale == 0 {
					q[i] = uint8(zp)
					continue
				}
				q[i] = uint8(saturate(roundEven(v/scale)+zp, 0, 255))
			}
			out[0] = New(cloneShape(x.Shape), q)
			out[1] = New([]int64{}, []float32{scale})
			out[2] = New([]int64{}, []uint8{uint8(zp)})
			return nil
		}, nil
	})
	register("MatMulInteger", func(n *node) (opFunc, error) {
		if err := n.needInputs(2, 4); err != nil {
			return nil, err
		}
		// A constant B with a constant scalar zero point (or none) is kept
		// transposed as float32, the zero point taken off: the products of
		// 8-bit integers summed in float32 are exact while every partial
		// sum stays below 2^24, which holds when K * max|a| * max|b| does;
		// larger products use integer sums.
		var bt *packedNT
		var q8 *int8Weights
		var bmax, bz0 int32
		if c := n.consts[1]; c != nil && len(c.Shape) == 2 {
			zpConst := !n.has(3)
			if n.has(3) {
				if z := n.consts[3]; z != nil && z.Len() == 1 {
					zpConst, bz0 = true, intsOf(z)[0]
				}
			}
			if bi := intsOf(c); bi != nil && zpConst {
				K, N := int(c.Shape[0]), int(c.Shape[1])
				w := make([]float32, N*K)
				for k := 0; k < K; k++ {
					for j := 0; j < N; j++ {
						v := bi[k*N+j] - bz0
						w[j*K+k] = float32(v)
						bmax = max(bmax, v, -v)
					}
				}
				bt = &packedNT{n: N, k: K, w: w}
				if kernel.HasInt8() && K%64 == 0 && bmax <= 128 && !hasValue(w, 128) {
					// The weights less their zero point fit int8: the
					// VNNI kernel reads a quarter of the float path's bytes.
					q8 = &int8Weights{n: N, k: K, w: make([]int8, N*K), colSum: make([]int32, N)}
					for j := 0; j < N; j++ {
						for k := 0; k < K; k++ {
							v := int8(w[j*K+k])
							q8.w[j*K+k] = v
							q8.colSum[j] += int32(v)
						}
					}
					bt = nil // the integer kernel serves; other A forms take the integer loop
					n.prepare(1)
				}
			}
		}
		return func(f *frame, in, out []*Tensor) error {
			a, b := in[0], in[1]
			if !isByte(a.DType) || !isByte(b.DType) {
				return fmt.Errorf("A is %v and B %v; int8 or uint8 expected", a.DType, b.DType)
			}
			var azp, bzp []int32
			if len(in) > 2 && in[2] != nil {
				azp = intsOf(in[2])
			}
			if len(in) > 3 && in[3] != nil {
				bzp = intsOf(in[3])
			}
			shape, m, k, nn, ia, ib, err := matmulShapes(f.r, a.Shape, b.Shape)
			if err != nil {
				return err
			}
			res := fresh[int32](f.r, numel(shape))
			// A's zero point: a scalar or one per row of A (of M).
			azAt := func(i int) int32 { return zeroPointAt(azp, i) }
			bzAt := func(j int) int32 { return zeroPointAt(bzp, j) }
			// A constant B is 2-D: A's leading dimensions are rows too.
			mt := len(ia) * m
			if q8 != nil && q8.k == k && len(bzp) <= 1 && bzAt(0) == bz0 && len(azp) <= 1 {
				q8.run(a, azAt(0), mt, res)
				out[0] = New(shape, res)
				return nil
			}
			ai := intsOf(a) // A as int32, for the paths below
			var amax int32
			for i, v := range ai {
				d := v - azAt(i/max(k, 1))
				amax = max(amax, d, -d)
			}
			if bt != nil && bt.k == k && len(bzp) <= 1 && bzAt(0) == bz0 && int64(k)*int64(amax)*int64(bmax) < 1<<24 {
				af := tmp[float32](f.r, mt*k)
				for i := range af {
					af[i] = float32(ai[i] - azAt(i/max(k, 1)))
				}
				acc := tmp[float32](f.r, mt*nn)
				kernel.GemmNT(mt, nn, k, af, k, bt.w, k, acc, nn, false, f.r.threads)
				for i, v := range acc {
					res[i] = int32(v)
				}
				out[0] = New(shape, res)
				return nil
			}
			var bi []int32
			if q8 != nil { // B's data went to q8: rebuild it
				bi = make([]int32, q8.k*q8.n)
				for j := 0; j < q8.n; j++ {
					for l := 0; l < q8.k; l++ {
						bi[l*q8.n+j] = int32(q8.w[j*q8.k+l]) + bz0
					}
				}
			} else {
				bi = intsOf(b)
			}
			for p := range ia {
				ap, bp, cp := ai[int(ia[p])*m*k:], bi[int(ib[p])*k*nn:], res[p*m*nn:]
				for i := 0; i < m; i++ {
					za := azAt(i)
					for j := 0; j < nn; j++ {
						zb := bzAt(j)
						var s int32
						for l := 0; l < k; l++ {
							s += (ap[i*k+l] - za) * (bp[l*nn+j] - zb)
						}
						cp[i*nn+j] = s
					}
				}
			}
			out[0] = New(shape, res)
			return nil
		}, nil
	})
	register("QLinearMatMul", func(n *node) (opFunc, error) {
		if err := n.needInputs(8, 8); err != nil {
			return nil, err
		}
		return func(f *frame, in, out []*Tensor) error {
			a, as, az, b, bs, bz, ys, yz := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
			ai, bi := intsOf(a), intsOf(b)
			if ai == nil || bi == nil {
				return fmt.Errorf("a is %v and b %v; int8 or uint8 expected", a.DType, b.DType)
			}
			shape, m, k, nn, ia, ib, err := matmulShapes(f.r, a.Shape, b.Shape)
			if err != nil {
				return err
			}
			lo, hi, err := quantRange(yz.DType)
			if err != nil {
				return err
			}
			azv, bzv, yzv := intsOf(az), intsOf(bz), intsOf(yz)
			asv, bsv, ysv := get[float32](as), get[float32](bs), get[float32](ys)
			q := tmp[float32](f.r, numel(shape))
			for p := range ia {
				ap, bp := ai[int(ia[p])*m*k:], bi[int(ib[p])*k*nn:]
				for i := 0; i < m; i++ {
					for j := 0; j < nn; j++ {
						bzj, bsj := bzv[0], bsv[0]
						if len(bzv) > 1 {
							bzj = bzv[j]
						}
						if len(bsv) > 1 {
							bsj = bsv[j]
						}
						var s int32
						for l := 0; l < k; l++ {
							s += (ap[i*k+l] - azv[0]) * (bp[l*nn+j] - bzj)
						}
						scale := asv[0] * bsj / ysv[0]
						q[p*m*nn+i*nn+j] = saturate(roundEven(float32(s)*scale)+float32(yzv[0]), lo, hi)
					}
				}
			}
			out[0] = quantized(f.r, yz.DType, shape, q)
			return nil
		}, nil
	})
	register("com.microsoft.MatMulNBits", func(n *node) (opFunc, error) {
		if err := n.needInputs(3, 6); err != nil {
			return nil, err
		}
		if n.has(4) {
			return nil, n.unsupported("g_idx (act-order) is not supported")
		}
		// The attributes are checked in int64 before any size is made of
		// them: N=2^62 once wrapped the expected byte count to 0, and an
		// empty B passed.
		K64, N64, bits64, block64 := n.int("K", 0), n.int("N", 0), n.int("bits", 4), n.int("block_size", 0)
		if bits64 != 4 && bits64 != 8 && bits64 != 2 || block64 < 16 || block64 > 1<<16 || K64 <= 0 || N64 <= 0 {
			return nil, n.errorf("K=%d N=%d bits=%d block_size=%d: want K and N positive, bits 2, 4 or 8, and a block_size from 16 to 65536", K64, N64, bits64, block64)
		}
		blocks64 := K64/block64 + min(K64%block64, 1)
		for _, dims := range [][]int64{{N64, K64}, {N64, blocks64, block64 * bits64 / 8}} {
			if _, err := elements(dims); err != nil {
				return nil, n.errorf("K=%d N=%d bits=%d block_size=%d: %v", K64, N64, bits64, block64, err)
			}
		}
		K, N := int(K64), int(N64)
		bits, block := int(bits64), int(block64)
		pb, sc := n.consts[1], n.consts[2]
		if pb == nil || sc == nil || pb.DType != builder.Uint8 || sc.DType != builder.Float {
			return nil, n.unsupported("B and scales must be constant uint8 and float32 tensors")
		}
		bw := &quant.Blockwise{N: N, K: K, Bits: bits, BlockSize: block, B: get[uint8](pb), Scales: get[float32](sc)}
		if n.has(3) {
			zp := n.consts[3]
			if zp == nil || zp.DType != builder.Uint8 {
				return nil, n.unsupported("zero_points must be a constant uint8 tensor")
			}
			bw.ZeroPoints = get[uint8](zp)
		}
		if bits != 4 && bits != 8 && bits != 2 || block < 16 || K <= 0 || N <= 0 ||
			len(bw.B) != N*bw.Blocks()*bw.BlobSize() || len(bw.Scales) != N*bw.Blocks() ||
			(bw.ZeroPoints != nil && len(bw.ZeroPoints) != N*bw.ZeroPointBytes()) {
			return nil, n.errorf("K=%d N=%d bits=%d block_size=%d do not match B (%d bytes), scales (%d) and zero points (%d bytes)",
				K, N, bits, block, len(bw.B), len(bw.Scales), len(bw.ZeroPoints))
		}
		int8A := n.int("accuracy_level", 0) == 4
		var w, wScale []float32
		var nib *nibbleWeights
		if int8A && bits == 4 && kernel.NibbleProductFast() && block%8 == 0 {
			nib = newNibbleWeights(bw)
		} else if int8A {
			// ONNX Runtime's accuracy level 4 quantizes A block-wise to
			// int8 at run time and sums integer products per block: the
			// weights are kept as their integer values less the zero
			// point (exact in float32), with one scale per block.
			nb := bw.Blocks()
			w, wScale = make([]float32, N*K), make([]float32, N*nb)
			for r := 0; r < N; r++ {
				for c := 0; c < K; c++ {
					w[r*K+c] = float32(bw.Value(r, c) - bw.ZeroPoint(r, c/block))
				}
				copy(wScale[r*nb:(r+1)*nb], bw.Scales[r*nb:(r+1)*nb])
			}
		} else {
			w = bw.Dequantize() // N x K: already the layout GemmNT reads
		}
		// B, the scales and the zero points live in w (or nib) from now on.
		n.prepare(1)
		n.prepare(2)
		if n.has(3) {
			n.prepare(3)
		}
		return func(f *frame, in, out []*Tensor) error {
			a := in[0]
			if a.DType != builder.Float || len(a.Shape) < 1 || int(a.Shape[len(a.Shape)-1]) != K {
				return fmt.Errorf("A is %v; float32 [..., %d] expected", a, K)
			}
			M := a.Len() / K
			shape := append(cloneShape(a.Shape[:len(a.Shape)-1]), int64(N))
			o := f.r.f32(shape)
			if nib != nil {
				nib.run(get[float32](a), M, get[float32](o), f.r.threads)
			} else if int8A {
				matMulBlockInt8(f.r, get[float32](a), M, N, K, block, w, wScale, get[float32](o))
			} else {
				kernel.GemmNT(M, N, K, get[float32](a), K, w, K, get[float32](o), N, false, f.r.threads)
			}
			if len(in) > 5 && in[5] != nil { // bias
				bias := get[float32](in[5])
				if len(bias) != N {
					return fmt.Errorf("bias has %d values; N = %d expected", len(bias), N)
				}
				z := get[float32](o)
				for i := 0; i < M; i++ {
					kernel.Arith(kernel.Add, z[i*N:(i+1)*N], bias, z[i*N:(i+1)*N])
				}
			}
			out[0] = o
			return nil
		}, nil
	})
}

// quantized stores float values already rounded and saturated as dt.
func quantized(r *runner, dt builder.DataType, shape []int64, q []float32) *Tensor {
	if dt == builder.Int8 {
		d := fresh[int8](r, len(q))
		for i, v := range q {
			d[i] = int8(v)
		}
		return New(cloneShape(shape), d)
	}
	d := fresh[uint8](r, len(q))
	for i, v := range q {
		d[i] = uint8(v)
	}
	return New(cloneShape(shape), d)
}

// matMulBlockInt8 is MatMulNBits at accuracy level 4 as ONNX Runtime
// computes it: each block of blk values of a row of A is quantized to int8
// symmetrically (scale max|a|/127, rounded to nearest even), multiplied by
// the block's integer weights (wq, N x K, zero point taken off), and the
// block's sum scaled by both scales. Sums of integer products are exact in
// float32 here (|sum| <= blk * 127 * 255 < 2^24 for blk <= 512).
func matMulBlockInt8(r *runner, a []float32, M, N, K, blk int, wq, wScale []float32, c []float32) {
	nb := (K + blk - 1) / blk
	aq := make([]float32, M*K)
	aScale := make([]float32, M*nb)
	for m := 0; m < M; m++ {
		for b := 0; b < nb; b++ {
			lo, hi := b*blk, min(K, (b+1)*blk)
			scale, inv := int8BlockScale(a[m*K+lo : m*K+hi])
			aScale[m*nb+b] = scale
			for k := lo; k < hi; k++ {
				aq[m*K+k] = quantBlockValue(a[m*K+k], inv)
			}
		}
	}
	clear(c[:M*N])
	part := make([]float32, M*N)
	for b := 0; b < nb; b++ {
		lo, hi := b*blk, min(K, (b+1)*blk)
		kernel.GemmNT(M, N, hi-lo, aq[lo:], K, wq[lo:], K, part, N, false, r.threads)
		for m := 0; m < M; m++ {
			as := aScale[m*nb+b]
			for n := 0; n < N; n++ {
				c[m*N+n] += as * wScale[n*nb+b] * part[m*N+n]
			}
		}
	}
}

func isByte(dt builder.DataType) bool { return dt == builder.Int8 || dt == builder.Uint8 }

func hasValue(w []float32, v float32) bool {
	for _, x := range w {
		if x == v {
			return true
		}
	}
	return false
}

// int8Weights is a constant MatMulInteger B less its zero point, as int8
// rows (one per output column, K long) with their sums, for the VNNI kernel.
type int8Weights struct {
	n, k   int
	w      []int8
	colSum []int32
}

// run computes res (m x n) = (A - za) B' for A uint8 or int8 [m, k]: the
// kernel takes A as unsigned, an int8 A shifted by 128, and the shift and
// za come off through the column sums.
func (q *int8Weights) run(a *Tensor, za int32, m int, res []int32) {
	u := make([]uint8, m*q.k)
	off := za
	switch d := a.Data.(type) {
	case []uint8:
		copy(u, d[:m*q.k])
	case []int8:
		for x, v := range d[:m*q.k] {
			u[x] = uint8(int32(v) + 128)
		}
		off = za + 128
	}
	// Blocks of weight rows small enough to stay in cache while every row
	// of A goes through them: the weights are read from memory once.
	const rows = 64
	for j0 := 0; j0 < q.n; j0 += rows {
		j1 := min(q.n, j0+rows)
		for i := 0; i < m; i++ {
			kernel.DotsU8S8(u[i*q.k:(i+1)*q.k], q.w[j0*q.k:], q.k, 1, j1-j0, q.k, res[i*q.n+j0:i*q.n+j1])
		}
	}
	if off != 0 {
		for i := 0; i < m; i++ {
			row := res[i*q.n : (i+1)*q.n]
			for j := range row {
				row[j] -= off * q.colSum[j]
			}
		}
	}
}

// nibbleWeights is MatMulNBits' 4-bit B at accuracy level 4 on the VNNI or
// AVX2 kernels (kernel.NibbleProduct: the weights stay 4-bit), with a
// scratch pool for A's quantized blocks.
type nibbleWeights struct {
	prod    *kernel.NibbleProduct
	scratch sync.Pool // of *nibbleScratch
}

type nibbleScratch struct {
	aq           []int8
	aScale, aSum []float32
}

func newNibbleWeights(bw *quant.Blockwise) *nibbleWeights {
	nb := bw.Blocks()
	vals := make([]uint8, bw.N*bw.K)
	zp := make([]float32, bw.N*nb)
	for r := 0; r < bw.N; r++ {
		for c := 0; c < bw.K; c++ {
			vals[r*bw.K+c] = uint8(bw.Value(r, c))
		}
		for t := 0; t < nb; t++ {
			zp[r*nb+t] = float32(bw.ZeroPoint(r, t))
		}
	}
	return &nibbleWeights{prod: kernel.NewNibbleProduct(vals, bw.N, bw.K, bw.BlockSize, bw.Scales, zp)}
}

// run is accuracy level 4: each block of a row of A quantized to int8 as
// matMulBlockInt8 does (its scale and the sum of its integers kept), then
// the product's kernel. Every integer involved stays below 2^24, so the
// float32 arithmetic on them is exact.
func (w *nibbleWeights) run(a []float32, M int, c []float32, threads int) {
	p := w.prod
	K, N, nb, blk, stride := p.K, p.N, p.Blocks(), p.Block, p.Stride()
	sc, _ := w.scratch.Get().(*nibbleScratch)
	if sc == nil {
		sc = &nibbleScratch{}
	}
	defer w.scratch.Put(sc)
	if cap(sc.aq) < M*stride {
		sc.aq = make([]int8, M*stride) // the padding beyond K stays 0
		sc.aScale, sc.aSum = make([]float32, M*nb), make([]float32, M*nb)
	}
	aq, aScale, aSum := sc.aq[:M*stride], sc.aScale[:M*nb], sc.aSum[:M*nb]
	// Rows are quantized independently, on the run's threads.
	kernel.Parallel(M, threads, 4*M*K, func(m0, m1 int) {
		for m := m0; m < m1; m++ {
			row := a[m*K : (m+1)*K]
			q := aq[m*stride : m*stride+K]
			for t := 0; t < nb; t++ {
				lo, hi := t*blk, min(K, (t+1)*blk)
				scale, inv := int8BlockScale(row[lo:hi])
				aScale[m*nb+t] = scale
				var sum int32
				for k := lo; k < hi; k++ {
					v := int8(quantBlockValue(row[k], inv))
					q[k] = v
					sum += int32(v)
				}
				aSum[m*nb+t] = float32(sum)
			}
		}
	})
	p.Run(M, aq, stride, aScale, aSum, c, N, threads)
}

// zeroPointAt is zero point i of zps: none (0), one for all, or one per
// row or column (cycling).
func zeroPointAt(zps []int32, i int) int32 {
	switch len(zps) {
	case 0:
		return 0
	case 1:
		return zps[0]
	}
	return zps[i%len(zps)]
}

// int8BlockScale is the symmetric int8 scale of a block of A at
// MatMulNBits' accuracy level 4 (max|x| / 127) and its inverse (0 for an
// all-zero block), as ONNX Runtime quantizes A.
func int8BlockScale(x []float32) (scale, inv float32) {
	// The largest |x|, NaN when x holds one (x is not empty: a block).
	amax := kernel.AbsMax(x)
	scale = amax / 127
	if scale != 0 {
		inv = 1 / scale
	}
	return scale, inv
}

// quantBlockValue is v quantized to int8 in its block (inv the block's
// int8BlockScale inverse): rounded half to even, saturated.
func quantBlockValue(v, inv float32) float32 { return saturate(roundEven(v*inv), -128, 127) }
