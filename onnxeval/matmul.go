package onnxeval

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
)

// packedNT is a constant matrix kept as n rows of k (B^T of a product A B),
// the layout kernel.GemmNT reads.
type packedNT struct {
	n, k int
	w    []float32
}

// packConst returns B (k x n, or n x k when trans) as an n x k matrix.
func packConst(b []float32, rows, cols int, trans bool) packedNT {
	if trans { // already n x k
		return packedNT{n: rows, k: cols, w: b}
	}
	w := make([]float32, rows*cols)
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			w[j*rows+i] = b[i*cols+j]
		}
	}
	return packedNT{n: cols, k: rows, w: w}
}

func init() {
	register("MatMul", compileMatMul)
	register("Gemm", compileGemm)
}

func compileMatMul(n *node) (opFunc, error) {
	if err := n.needInputs(2, 2); err != nil {
		return nil, err
	}
	var packed *kernel.Packed
	if c := n.consts[1]; c != nil && c.DType == builder.Float && len(c.Shape) == 2 {
		p := packConst(get[float32](c), int(c.Shape[0]), int(c.Shape[1]), false)
		packed = kernel.Pack(p.w, p.n, p.k)
		if packed.Owns() {
			n.prepare(1)
		}
	}
	return func(f *frame, in, out []*Tensor) error {
		a, b := in[0], in[1]
		if a.DType != builder.Float || b.DType != builder.Float {
			if a.DType == builder.Double && b.DType == builder.Double {
				o, err := matmulGeneric[float64](f.r, a, b)
				out[0] = o
				return err
			}
			if a.DType == b.DType && (a.DType == builder.Int64 || a.DType == builder.Int32) {
				var o *Tensor
				var err error
				if a.DType == builder.Int64 {
					o, err = matmulGeneric[int64](f.r, a, b)
				} else {
					o, err = matmulGeneric[int32](f.r, a, b)
				}
				out[0] = o
				return err
			}
			return fmt.Errorf("inputs are %v and %v; float32 or float64 (both the same) expected", a.DType, b.DType)
		}
		if packed != nil && len(a.Shape) >= 1 {
			K := int(a.Shape[len(a.Shape)-1])
			if K != packed.K {
				return fmt.Errorf("A is %v, B is [%d,%d]: inner dimensions differ", a, packed.K, packed.N)
			}
			M := a.Len() / max(K, 1)
			if K == 0 {
				M = numel(a.Shape[:len(a.Shape)-1])
			}
			shape := append(cloneShape(a.Shape[:len(a.Shape)-1]), int64(packed.N))
			o := f.r.f32(shape)
			if K == 0 {
				clear(get[float32](o))
			} else {
				packed.Mul(M, get[float32](a), K, get[float32](o), packed.N, f.r.threads)
			}
			out[0] = o
			return nil
		}
		o, err := matmulF32(f.r, a, b)
		out[0] = o
		return err
	}, nil
}

// matmulShapes works out numpy matmul's broadcast: the batch shape, M, K, N,
// and each operand's batch index per output batch.
func matmulShapes(r *runner, as, bs []int64) (shape []int64, m, k, n int, ia, ib []int32, err error) {
	if len(as) == 0 || len(bs) == 0 {
		return nil, 0, 0, 0, nil, nil, fmt.Errorf("MatMul of a scalar")
	}
	a2, b2 := as, bs
	if len(as) == 1 {
		a2 = []int64{1, as[0]}
	}
	if len(bs) == 1 {
		b2 = []int64{bs[0], 1}
	}
	m, k = int(a2[len(a2)-2]), int(a2[len(a2)-1])
	if int(b2[len(b2)-2]) != k {
		return nil, 0, 0, 0, nil, nil, fmt.Errorf("shapes %v and %v: inner dimensions %d and %d differ", as, bs, k, b2[len(b2)-2])
	}
	n = int(b2[len(b2)-1])
	batch, err := broadcastShape(a2[:len(a2)-2], b2[:len(b2)-2])
	if err != nil {
		return nil, 0, 0, 0, nil, nil, err
	}
	ia, ib = bcastIndex(r, batch, a2[:len(a2)-2]), bcastIndex(r, batch, b2[:len(b2)-2])
	shape = cloneShape(batch)
	if len(as) > 1 {
		shape = append(shape, int64(m))
	}
	if len(bs) > 1 {
		shape = append(shape, int64(n))
	}
	if ia == nil {
		ia = identity(r, numel(batch))
	}
	if ib == nil {
		ib = identity(r, numel(batch))
	}
	return shape, m, k, n, ia, ib, nil
}

func identity(r *runner, n int) []int32 {
	x := tmp[int32](r, n)
	for i := range x {
		x[i] = int32(i)
	}
	return x
}

func matmulF32(r *runner, a, b *Tensor) (*Tensor, error) {
	shape, m, k, n, ia, ib, err := matmulShapes(r, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	o := r.f32(shape)
	x, y, z := get[float32](a), get[float32](b), get[float32](o)
	// The batch's products are independent and each is computed the same
	// way wherever it runs: with a batch at least as large as the run's
	// threads (attention's scores and contexts, one product per
	// hypothesis), the batch is split among the threads and each product
	// runs on one; otherwise each product may split its own columns.
	inner := r.threads
	split := func(f func(lo, hi int)) { f(0, len(ia)) }
	if r.threads > 1 && len(ia) >= r.threads {
		inner = 1
		split = func(f func(lo, hi int)) { kernel.Parallel(len(ia), r.threads, len(ia)*m*k*n, f) }
	}
	if n == 1 && k > 0 {
		// B is a column (attention's scoring vector): one dot product per
		// row of A, A's rows read in order.
		split(func(lo, hi int) {
			for p := lo; p < hi; p++ {
				kernel.GemmNT(1, m, k, y[int(ib[p])*k:], k, x[int(ia[p])*m*k:], k, z[p*m:], m, false, inner)
			}
		})
		return o, nil
	}
	split(func(lo, hi int) {
		for p := lo; p < hi; p++ {
			ap, bp, cp := x[int(ia[p])*m*k:], y[int(ib[p])*k*n:], z[p*m*n:(p+1)*m*n]
			clear(cp)
			for i := 0; i < m; i++ {
				ci := cp[i*n : (i+1)*n]
				for l := 0; l < k; l++ {
					if v := ap[i*k+l]; v != 0 {
						kernel.Axpy(v, bp[l*n:(l+1)*n], ci)
					}
				}
			}
		}
	})
	return o, nil
}

func matmulGeneric[T int64 | int32 | float64](r *runner, a, b *Tensor) (*Tensor, error) {
	shape, m, k, n, ia, ib, err := matmulShapes(r, a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	o := newLike(r, a.DType, shape)
	x, y, z := get[T](a), get[T](b), get[T](o)
	for p := range ia {
		ap, bp, cp := x[int(ia[p])*m*k:], y[int(ib[p])*k*n:], z[p*m*n:]
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s T
				for l := 0; l < k; l++ {
					s += ap[i*k+l] * bp[l*n+j]
				}
				cp[i*n+j] = s
			}
		}
	}
	return o, nil
}

func compileGemm(n *node) (opFunc, error) { return gemmOp(n, nil) }

// gemmOp compiles a Gemm node; with ls, a LogSoftmax folded into it
// (foldLogSoftmax), whose log-probabilities it writes over its result. A
// row's bias and log-softmax then run one after the other while the row
// is in cache, the rows split among the run's threads as LogSoftmax
// splits them.
func gemmOp(n *node, ls *softmaxAxis) (opFunc, error) {
	if err := n.needInputs(2, 3); err != nil {
		return nil, err
	}
	transA, transB := n.int("transA", 0) == 1, n.int("transB", 0) == 1
	alpha, beta := n.float("alpha", 1), n.float("beta", 1)
	// A folded log-softmax along C's rows (axis 1, or -1, in either
	// opset's reading of a 2-D tensor) follows each row's bias.
	rowLS := ls != nil && (ls.axis == 1 || ls.axis == -1)
	var packed *kernel.Packed
	if c := n.consts[1]; c != nil && c.DType == builder.Float && len(c.Shape) == 2 {
		p := packConst(get[float32](c), int(c.Shape[0]), int(c.Shape[1]), transB)
		packed = kernel.Pack(p.w, p.n, p.k)
		if packed.Owns() {
			n.prepare(1)
		}
	}
	return func(f *frame, in, out []*Tensor) error {
		a, b := in[0], in[1]
		if a.DType != builder.Float || b.DType != builder.Float || len(a.Shape) != 2 || len(b.Shape) != 2 {
			return fmt.Errorf("A is %v and B is %v; two float32 matrices expected", a, b)
		}
		A := get[float32](a)
		M, K := int(a.Shape[0]), int(a.Shape[1])
		if transA {
			M, K = K, M
			A = transpose2(A, int(a.Shape[0]), int(a.Shape[1]))
		}
		var N int
		var mul func(C []float32)
		if packed != nil {
			if packed.K != K {
				return fmt.Errorf("A is %v (transA=%v), B is %v (transB=%v): inner dimensions differ", a, transA, b, transB)
			}
			N = packed.N
			mul = func(C []float32) { packed.Mul(M, A, K, C, N, f.r.threads) }
		} else {
			q := packConst(get[float32](b), int(b.Shape[0]), int(b.Shape[1]), transB)
			if q.k != K {
				return fmt.Errorf("A is %v (transA=%v), B is %v (transB=%v): inner dimensions differ", a, transA, b, transB)
			}
			N = q.n
			mul = func(C []float32) { kernel.GemmNT(M, N, K, A, K, q.w, K, C, N, false, f.r.threads) }
		}
		o := f.r.f32([]int64{int64(M), int64(N)})
		C := get[float32](o)
		// The product first (the kernels' fastest form writes C), then
		// alpha and the bias.
		mul(C)
		if alpha != 1 {
			for i := range C {
				C[i] *= alpha
			}
		}
		if len(in) > 2 && in[2] != nil && beta != 0 {
			bias := in[2]
			if bias.DType != builder.Float {
				return fmt.Errorf("C is %v, want float32", bias.DType)
			}
			shape, err := broadcastShape([]int64{int64(M), int64(N)}, bias.Shape)
			if err != nil || shape[0] != int64(M) || shape[1] != int64(N) {
				return fmt.Errorf("C %v does not broadcast to [%d,%d]", bias.Shape, M, N)
			}
			bv := get[float32](bias)
			switch {
			case len(bv) == N && beta == 1 && rowLS: // a classifier's
				softmaxRows(f, C, C, M, N, true, func(row []float32) { kernel.Axpy(1, bv, row) })
				out[0] = o
				return nil
			case len(bv) == N && beta == 1: // a bias row, the usual case
				for i := 0; i < M; i++ {
					kernel.Axpy(1, bv, C[i*N:(i+1)*N])
				}
			default:
				idx := bcastIndex(f.r, shape, bias.Shape)
				for i := range C {
					j := i
					if idx != nil {
						j = int(idx[i])
					}
					C[i] += beta * bv[j]
				}
			}
		}
		if ls != nil {
			if err := ls.apply(f, o, o, true); err != nil {
				return fmt.Errorf("the folded %s: %w", ls.op, err)
			}
		}
		out[0] = o
		return nil
	}, nil
}

func transpose2(x []float32, rows, cols int) []float32 {
	y := make([]float32, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			y[j*rows+i] = x[i*cols+j]
		}
	}
	return y
}
