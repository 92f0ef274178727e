package onnxeval

import (
	"fmt"
	"math"
	"sort"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
)

type reduceKind int

const (
	redSum reduceKind = iota
	redMean
	redMax
	redMin
	redProd
)

func init() {
	for name, k := range map[string]reduceKind{"ReduceSum": redSum, "ReduceMean": redMean, "ReduceMax": redMax, "ReduceMin": redMin, "ReduceProd": redProd} {
		kind := k
		register(name, func(n *node) (opFunc, error) {
			keep := n.int("keepdims", 1) == 1
			noopEmpty := n.int("noop_with_empty_axes", 0) == 1
			return func(f *frame, in, out []*Tensor) error {
				t := in[0]
				axes, _, err := axesOf(n, in, 1)
				if err != nil {
					return err
				}
				r := len(t.Shape)
				mask := make([]bool, r)
				if len(axes) == 0 {
					if noopEmpty {
						o, err := cloneTensor(f.r, t)
						out[0] = o
						return err
					}
					for i := range mask {
						mask[i] = true
					}
				}
				for _, a := range axes {
					k, err := normAxis(a, r, "axis")
					if err != nil {
						return err
					}
					mask[k] = true
				}
				var o *Tensor
				switch t.DType {
				case builder.Float:
					o, err = reduceT[float32](f.r, t, mask, keep, kind)
				case builder.Double:
					o, err = reduceT[float64](f.r, t, mask, keep, kind)
				case builder.Int64:
					o, err = reduceT[int64](f.r, t, mask, keep, kind)
				case builder.Int32:
					o, err = reduceT[int32](f.r, t, mask, keep, kind)
				case builder.Uint8:
					o, err = reduceT[uint8](f.r, t, mask, keep, kind)
				case builder.Int8:
					o, err = reduceT[int8](f.r, t, mask, keep, kind)
				default:
					err = errType(n.Op, t.DType)
				}
				out[0] = o
				return err
			}, nil
		})
	}
	for name, largest := range map[string]bool{"ArgMax": true, "ArgMin": false} {
		largest := largest
		register(name, func(n *node) (opFunc, error) {
			axis, keep, last := n.int("axis", 0), n.int("keepdims", 1) == 1, n.int("select_last_index", 0) == 1
			return func(f *frame, in, out []*Tensor) error {
				t := in[0]
				k, err := normAxis(axis, len(t.Shape), "axis")
				if err != nil {
					return err
				}
				var o *Tensor
				switch t.DType {
				case builder.Float:
					o = argT[float32](t, k, keep, largest, last)
				case builder.Double:
					o = argT[float64](t, k, keep, largest, last)
				case builder.Int64:
					o = argT[int64](t, k, keep, largest, last)
				case builder.Int32:
					o = argT[int32](t, k, keep, largest, last)
				case builder.Uint8:
					o = argT[uint8](t, k, keep, largest, last)
				case builder.Int8:
					o = argT[int8](t, k, keep, largest, last)
				default:
					return errType(name, t.DType)
				}
				out[0] = o
				return nil
			}, nil
		})
	}
	register("Softmax", func(n *node) (opFunc, error) { return softmaxOp(n, false) })
	register("LogSoftmax", func(n *node) (opFunc, error) { return softmaxOp(n, true) })
	register("TopK", func(n *node) (opFunc, error) {
		axis, largest, sorted := n.int("axis", -1), n.int("largest", 1) == 1, n.int("sorted", 1) == 1
		_ = sorted // always sorted: an unsorted order is any order
		return func(f *frame, in, out []*Tensor) error {
			ks, err := ints(in[1], "K")
			if err != nil || len(ks) != 1 {
				return fmt.Errorf("K must be one int64")
			}
			t := in[0]
			a, err := normAxis(axis, len(t.Shape), "axis")
			if err != nil {
				return err
			}
			k := ks[0]
			if k < 0 || k > t.Shape[a] {
				return fmt.Errorf("K %d is out of range for axis %d of size %d", k, axis, t.Shape[a])
			}
			switch t.DType {
			case builder.Float:
				out[0], out[1] = topK[float32](f.r, t, a, int(k), largest)
			case builder.Double:
				out[0], out[1] = topK[float64](f.r, t, a, int(k), largest)
			case builder.Int64:
				out[0], out[1] = topK[int64](f.r, t, a, int(k), largest)
			case builder.Int32:
				out[0], out[1] = topK[int32](f.r, t, a, int(k), largest)
			default:
				return errType("TopK", t.DType)
			}
			return nil
		}, nil
	})
}

func reducedShape(shape []int64, mask []bool, keep bool) []int64 {
	out := []int64{}
	for i, d := range shape {
		switch {
		case !mask[i]:
			out = append(out, d)
		case keep:
			out = append(out, 1)
		}
	}
	return out
}

func reduceT[T number](r *runner, t *Tensor, mask []bool, keep bool, kind reduceKind) (*Tensor, error) {
	shape := reducedShape(t.Shape, mask, keep)
	o := newLike(r, t.DType, shape)
	x, z := get[T](t), get[T](o)
	rank := len(t.Shape)
	// output stride of each input axis (0 where reduced)
	full := make([]int64, rank)
	for i := range full {
		full[i] = t.Shape[i]
		if mask[i] {
			full[i] = 1
		}
	}
	fs := strides(full)
	ost := make([]int, rank)
	for i := range ost {
		if !mask[i] {
			ost[i] = fs[i]
		}
	}
	count := tmp[int](r, len(z))
	seen := tmp[bool](r, len(z))
	ctr := make([]int64, rank)
	pos := 0
	for i, v := range x {
		if !seen[pos] {
			seen[pos] = true
			z[pos] = v
		} else {
			switch kind {
			case redSum, redMean:
				z[pos] += v
			case redProd:
				z[pos] *= v
			case redMax:
				if v > z[pos] || v != v {
					z[pos] = v
				}
			case redMin:
				if v < z[pos] || v != v {
					z[pos] = v
				}
			}
		}
		count[pos]++
		_ = i
		pos = nextPosition(ctr, t.Shape, ost, pos)
	}
	for p := range z {
		if !seen[p] {
			switch kind {
			case redProd:
				z[p] = 1
			case redMax:
				if isFloat[T]() {
					z[p] = T(math.Inf(-1))
				}
			case redMin:
				if isFloat[T]() {
					z[p] = T(math.Inf(1))
				}
			default:
				z[p] = 0
			}
		}
		if kind == redMean && count[p] > 0 {
			z[p] /= T(count[p])
		}
	}
	return o, nil
}

func isFloat[T number]() bool {
	var z T
	switch any(z).(type) {
	case float32, float64:
		return true
	}
	return false
}

func argT[T number](t *Tensor, k int, keep, largest, last bool) *Tensor {
	x := get[T](t)
	outer, dim, inner := numel(t.Shape[:k]), int(t.Shape[k]), numel(t.Shape[k+1:])
	shape := cloneShape(t.Shape)
	if keep {
		shape[k] = 1
	} else {
		shape = append(shape[:k:k], t.Shape[k+1:]...)
	}
	z := make([]int64, outer*inner)
	if xs, ok := any(x).([]float32); ok && inner == 1 && !last && dim > 0 {
		// Along a contiguous row: from each best so far, the vector scan
		// finds the next element strictly beyond it (as the loop below
		// would replace it, NaN never), so a row takes one pass.
		for a := 0; a < outer; a++ {
			row := xs[a*dim : (a+1)*dim]
			best, bi := row[0], 0
			for j := 1; j < dim; {
				k := kernel.FirstBeyond(row[j:], best, !largest)
				if j+k >= dim {
					break
				}
				best, bi = row[j+k], j+k
				j += k + 1
			}
			z[a] = int64(bi)
		}
		return New(shape, z)
	}
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			best, bi := x[a*dim*inner+c], 0
			for j := 1; j < dim; j++ {
				v := x[(a*dim+j)*inner+c]
				better := v > best
				if !largest {
					better = v < best
				}
				if better || (last && v == best) {
					best, bi = v, j
				}
			}
			z[a*inner+c] = int64(bi)
		}
	}
	return New(shape, z)
}

func softmaxOp(n *node, logOut bool) (opFunc, error) {
	ax := softmaxAxisOf(n)
	return func(f *frame, in, out []*Tensor) error {
		t := in[0]
		o := newLike(f.r, t.DType, cloneShape(t.Shape))
		if err := ax.apply(f, t, o, logOut); err != nil {
			return err
		}
		out[0] = o
		return nil
	}, nil
}

// softmaxAxis is a Softmax or LogSoftmax node's axis and how it reads it:
// before opset 13 the input is coerced to 2-D at the axis (default 1),
// from 13 on the axis alone is normalised (default -1).
type softmaxAxis struct {
	op     string // the node's operator, for errors
	axis   int64
	legacy bool
}

func softmaxAxisOf(n *node) softmaxAxis {
	legacy := n.c.opset < 13
	def := int64(-1)
	if legacy {
		def = 1
	}
	return softmaxAxis{op: n.Op, axis: n.int("axis", def), legacy: legacy}
}

// apply writes the softmax (or log-softmax) of t along the axis into o, a
// tensor of t's type and shape; o may be t itself (every element is read
// before it is written, by the same pass).
func (ax softmaxAxis) apply(f *frame, t, o *Tensor, logOut bool) error {
	if t.DType != builder.Float && t.DType != builder.Double {
		return errType(ax.op, t.DType)
	}
	k, err := normAxis(ax.axis, len(t.Shape), "axis")
	if err != nil {
		return err
	}
	outer, dim, inner := numel(t.Shape[:k]), int(t.Shape[k]), numel(t.Shape[k+1:])
	if ax.legacy { // opset < 13: the input is coerced to 2-D at axis
		dim, inner = numel(t.Shape[k:]), 1
	}
	switch x := t.Data.(type) {
	case []float32:
		z := o.Data.([]float32)
		if inner == 1 {
			softmaxRows(f, x, z, outer, dim, logOut, nil)
		} else {
			softmaxStrided(x, z, outer, dim, inner, logOut)
		}
	case []float64:
		softmaxStrided(x, o.Data.([]float64), outer, dim, inner, logOut)
	}
	return nil
}

// softmaxRows writes the softmax (or log-softmax) of each of x's rows
// (dim wide) into z's (z may be x). Rows are independent: they are split
// among the run's threads when there is enough of them (a classifier's
// [rows, V]). prep, when set, first changes a row of x in place (a Gemm's
// bias, added while the row is in cache).
func softmaxRows(f *frame, x, z []float32, rows, dim int, logOut bool, prep func(row []float32)) {
	kernel.Parallel(rows, f.r.threads, 4*rows*dim, func(lo, hi int) {
		for a := lo; a < hi; a++ {
			row := x[a*dim : (a+1)*dim]
			if prep != nil {
				prep(row)
			}
			softmaxRow32(row, z[a*dim:(a+1)*dim], logOut)
		}
	})
}

// softmaxRow32 is softmax (or log-softmax) of one contiguous row, summed in
// float64.
func softmaxRow32(x, z []float32, logOut bool) {
	m := kernel.Max(x)
	if logOut {
		ls := float32(math.Log(kernel.ExpSum(x, m)))
		kernel.SubSub(x, m, ls, z) // (v - m) - ls
		return
	}
	var s float64
	for i, v := range x {
		e := kernel.Exp(v - m)
		z[i] = e
		s += float64(e)
	}
	inv := float32(1 / s)
	for i := range z {
		z[i] *= inv
	}
}

func softmaxStrided[T float32 | float64](x, z []T, outer, dim, inner int, logOut bool) {
	for a := 0; a < outer; a++ {
		for c := 0; c < inner; c++ {
			base := a*dim*inner + c
			m := math.Inf(-1)
			for j := 0; j < dim; j++ {
				m = max(m, float64(x[base+j*inner]))
			}
			var s float64
			for j := 0; j < dim; j++ {
				s += math.Exp(float64(x[base+j*inner]) - m)
			}
			for j := 0; j < dim; j++ {
				v := float64(x[base+j*inner]) - m
				if logOut {
					z[base+j*inner] = T(v - math.Log(s))
				} else {
					z[base+j*inner] = T(math.Exp(v) / s)
				}
			}
		}
	}
}

func topK[T number](r *runner, t *Tensor, a, k int, largest bool) (*Tensor, *Tensor) {
	x := get[T](t)
	outer, dim, inner := numel(t.Shape[:a]), int(t.Shape[a]), numel(t.Shape[a+1:])
	shape := cloneShape(t.Shape)
	shape[a] = int64(k)
	vals := newLike(r, t.DType, shape)
	zv := get[T](vals)
	zi := fresh[int64](r, numel(shape))
	heap := make([]int, 0, k)
	for o := 0; o < outer; o++ {
		for c := 0; c < inner; c++ {
			base := o*dim*inner + c
			// better reports whether index i ranks before index j: larger
			// (smaller) value first, the lower index first among equals.
			better := func(i, j int) bool {
				vi, vj := x[base+i*inner], x[base+j*inner]
				if vi != vj {
					if largest {
						return vi > vj
					}
					return vi < vj
				}
				return i < j
			}
			var next func(from, worst int) int
			if xs, ok := any(x).([]float32); ok && inner == 1 {
				// Only an element strictly beyond the worst kept value can
				// rank before it (an equal one comes later, so after it):
				// the vector scan skips the rest.
				row := xs[base : base+dim]
				next = func(from, worst int) int {
					return from + kernel.FirstBeyond(row[from:], row[worst], !largest)
				}
			}
			heap = selectK(heap[:0], dim, k, better, next)
			for j, ix := range heap {
				p := (o*k+j)*inner + c
				zv[p] = x[base+ix*inner]
				zi[p] = int64(ix)
			}
		}
	}
	return vals, New(shape, zi)
}

// selectK returns the k best of indices 0..n-1 by better, best first: a heap
// whose root is the worst kept, O(n log k). next, when not nil, returns
// the first index from on that may rank before worst (the others may be
// skipped; better decides for those it returns).
func selectK(h []int, n, k int, better func(i, j int) bool, next func(from, worst int) int) []int {
	if k == 0 {
		return h
	}
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for j := 0; j < n; j++ {
		if len(h) == k && next != nil {
			if j = next(j, h[0]); j >= n {
				break
			}
		}
		if len(h) < k {
			h = append(h, j)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		if better(j, h[0]) {
			h[0] = j
			down(0)
		}
	}
	sort.Slice(h, func(a, b int) bool { return better(h[a], h[b]) })
	return h
}
