package onnxeval

import (
	"fmt"
	"math"
	"slices"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
)

// broadcastShape is numpy's broadcast of shapes.
func broadcastShape(shapes ...[]int64) ([]int64, error) {
	rank := 0
	for _, s := range shapes {
		rank = max(rank, len(s))
	}
	out := make([]int64, rank)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		off := rank - len(s)
		for i, d := range s {
			o := out[off+i]
			switch {
			case d < 0:
				return nil, &ShapeError{Shape: slices.Clone(s), Err: fmt.Errorf("shape %v: dimension %d is negative (%d)", s, i, d)}
			case o == d || d == 1:
			case o == 1:
				out[off+i] = d
			default:
				return nil, fmt.Errorf("shapes %v do not broadcast (dimension %d: %d vs %d)", shapes, off+i, o, d)
			}
		}
	}
	if _, err := elements(out); err != nil {
		return nil, err
	}
	return out, nil
}

// bcastIndex returns, for each element of out, the index of the element of
// an input shaped in that broadcasts to it; nil when in equals out.
func bcastIndex(r *runner, out, in []int64) []int32 {
	if sameShape(out, in) {
		return nil
	}
	n := numel(out)
	idx := tmp[int32](r, n)
	if numel(in) == 1 {
		return idx
	}
	rank := len(out)
	st := make([]int, rank) // input stride per output dim, 0 where broadcast
	is := strides(in)
	off := rank - len(in)
	for i := range in {
		if in[i] != 1 {
			st[off+i] = is[i]
		}
	}
	ctr := make([]int64, rank)
	pos := 0
	for o := 0; o < n; o++ {
		idx[o] = int32(pos)
		pos = nextPosition(ctr, out, st, pos)
	}
	return idx
}

func newLike(r *runner, dt builder.DataType, shape []int64) *Tensor {
	if dt == dtFloat {
		return r.f32(shape)
	}
	n := numel(shape)
	r.charge(int64(n) * int64(dt.Size()))
	d, _ := makeData(dt, n)
	return &Tensor{DType: dt, Shape: shape, Data: d}
}

// binaryT applies f elementwise with broadcasting.
func binaryT[T element, R element](r *runner, a, b *Tensor, f func(x, y T) R) (*Tensor, error) {
	shape, err := broadcastShape(a.Shape, b.Shape)
	if err != nil {
		return nil, err
	}
	out := newLike(r, dtypeOf[R](), shape)
	x, y, z := get[T](a), get[T](b), get[R](out)
	switch {
	case sameShape(a.Shape, b.Shape):
		y = y[:len(x)]
		z = z[:len(x)]
		for i := range x {
			z[i] = f(x[i], y[i])
		}
	case len(y) == 1 && len(x) == len(z):
		v := y[0]
		for i := range x {
			z[i] = f(x[i], v)
		}
	case len(x) == 1 && len(y) == len(z):
		v := x[0]
		for i := range y {
			z[i] = f(v, y[i])
		}
	case len(x) == len(z) && isSuffix(b.Shape, shape):
		// b repeats along the leading axes (a bias row): no index maps.
		for i := range x {
			z[i] = f(x[i], y[i%len(y)])
		}
	case len(y) == len(z) && isSuffix(a.Shape, shape):
		for i := range y {
			z[i] = f(x[i%len(x)], y[i])
		}
	case len(z) > 0:
		// Both broadcast (a mask: positions [1, S] against lengths
		// [B, 1]): the last axis in a loop, each input's position
		// stepped by its strides (0 where it repeats), the other axes
		// counted off; no index maps.
		rank := len(shape)
		sx, sy := bcastStrides(a.Shape, rank), bcastStrides(b.Shape, rank)
		n, ix, iy := int(shape[rank-1]), sx[rank-1], sy[rank-1]
		ctr := make([]int64, rank-1)
		ox, oy := 0, 0
		for oz := 0; oz < len(z); oz += n {
			for i := range n {
				z[oz+i] = f(x[ox+i*ix], y[oy+i*iy])
			}
			ox, oy = nextRun(ctr, shape, sx, sy, ox, oy)
		}
	}
	return out, nil
}

type arith int

const (
	opAdd arith = iota
	opSub
	opMul
	opDiv
	opMax
	opMin
	opPow
	opModInt   // Python-style (fmod=0)
	opModFloat // C fmod (fmod=1)
)

func arithFn[T number](op arith) func(x, y T) T {
	switch op {
	case opAdd:
		return func(x, y T) T { return x + y }
	case opSub:
		return func(x, y T) T { return x - y }
	case opMul:
		return func(x, y T) T { return x * y }
	case opDiv:
		return func(x, y T) T { return x / y }
	case opMax:
		return func(x, y T) T { return max(x, y) }
	case opMin:
		return func(x, y T) T { return min(x, y) }
	case opPow:
		return func(x, y T) T { return T(math.Pow(float64(x), float64(y))) }
	case opModFloat:
		return func(x, y T) T { return T(math.Mod(float64(x), float64(y))) }
	case opModInt:
		return func(x, y T) T {
			m := T(math.Mod(float64(x), float64(y)))
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return m
		}
	}
	return nil
}

// maxOf / minOf with NaN propagation for floats as ONNX Runtime does.
func arithDispatch(r *runner, op arith, a, b *Tensor) (*Tensor, error) {
	if op == opPow && a.DType != b.DType {
		// Pow's exponent may be of another type; the result has the base's.
		e, err := cast(r, b, a.DType)
		if err != nil {
			return nil, err
		}
		b = e
	}
	if a.DType != b.DType {
		return nil, fmt.Errorf("inputs are %v and %v; both must be the same type", a.DType, b.DType)
	}
	if op == opDiv && a.DType.IsInteger() && hasZero(b) {
		return nil, fmt.Errorf("integer division by zero")
	}
	if (op == opModInt || op == opModFloat) && a.DType.IsInteger() && hasZero(b) {
		return nil, fmt.Errorf("integer modulo by zero")
	}
	if op == opModInt && a.DType.IsInteger() {
		switch a.DType {
		case builder.Int64:
			return binaryT(r, a, b, intMod[int64])
		case builder.Int32:
			return binaryT(r, a, b, intMod[int32])
		}
	}
	switch a.DType {
	case builder.Float:
		if o := arithF32(r, op, a, b); o != nil {
			return o, nil
		}
		return binaryT(r, a, b, arithFn[float32](op))
	case builder.Double:
		return binaryT(r, a, b, arithFn[float64](op))
	case builder.Int64:
		return binaryT(r, a, b, arithFn[int64](op))
	case builder.Int32:
		return binaryT(r, a, b, arithFn[int32](op))
	case builder.Int16:
		return binaryT(r, a, b, arithFn[int16](op))
	case builder.Int8:
		return binaryT(r, a, b, arithFn[int8](op))
	case builder.Uint8:
		return binaryT(r, a, b, arithFn[uint8](op))
	case builder.Uint16:
		return binaryT(r, a, b, arithFn[uint16](op))
	case builder.Uint32:
		return binaryT(r, a, b, arithFn[uint32](op))
	case builder.Uint64:
		return binaryT(r, a, b, arithFn[uint64](op))
	}
	return nil, errType("arithmetic", a.DType)
}

func intMod[T int64 | int32](x, y T) T {
	m := x % y
	if m != 0 && (m < 0) != (y < 0) {
		m += y
	}
	return m
}

// arithF32 computes float32 Add, Sub, Mul and Div with numpy broadcasting
// on the vector kernels: the output is cut into runs along which each
// input is either contiguous or one repeated value; nil for other ops.
func arithF32(r *runner, op arith, a, b *Tensor) *Tensor {
	if op > opDiv {
		return nil
	}
	shape, err := broadcastShape(a.Shape, b.Shape)
	if err != nil {
		return nil // binaryT reports it
	}
	kop := [...]kernel.Op{opAdd: kernel.Add, opSub: kernel.Sub, opMul: kernel.Mul, opDiv: kernel.Div}[op]
	out := r.f32(cloneShape(shape))
	arithRuns(kop, get[float32](a), get[float32](b), get[float32](out), a.Shape, b.Shape, shape)
	return out
}

// arithRuns writes z (shaped out) = x (shaped xs) op y (shaped ys), both
// broadcast to out. The innermost axes along which x and y each keep one
// mode, contiguous or repeated (stride 0), make a run; the axes outside
// it are counted off, and each run is one call of a vector kernel.
func arithRuns(op kernel.Op, x, y, z []float32, xs, ys, out []int64) {
	rank := len(out)
	if len(z) == 0 {
		return
	}
	sx, sy := bcastStrides(xs, rank), bcastStrides(ys, rank)
	// The run: axes d..rank-1, while each input's stride over them stays
	// contiguous (its stride equals the run's length so far) or zero.
	run, d := 1, rank
	modeX, modeY := 0, 0 // 0 undecided, 1 contiguous, 2 repeated
	mode := func(m *int, st int) bool {
		k := 2
		if st != 0 {
			if st != run {
				return false
			}
			k = 1
		}
		if *m != 0 && *m != k {
			return false
		}
		*m = k
		return true
	}
	for d > 0 {
		n := int(out[d-1])
		if n == 1 {
			d--
			continue
		}
		mx, my := modeX, modeY
		if !mode(&mx, sx[d-1]) || !mode(&my, sy[d-1]) {
			break
		}
		modeX, modeY = mx, my
		run *= n
		d--
	}
	ctr := make([]int64, d)
	ox, oy := 0, 0
	for oz := 0; oz < len(z); oz += run {
		zr := z[oz : oz+run]
		switch {
		case modeX != 2 && modeY != 2:
			kernel.Arith(op, x[ox:ox+run], y[oy:oy+run], zr)
		case modeX != 2:
			kernel.ArithScalar(op, x[ox:ox+run], y[oy], zr, false)
		case modeY != 2:
			kernel.ArithScalar(op, y[oy:oy+run], x[ox], zr, true)
		default:
			v := kernel.ArithValue(op, x[ox], y[oy])
			for i := range zr {
				zr[i] = v
			}
		}
		ox, oy = nextRun(ctr, out, sx, sy, ox, oy)
	}
}

// nextRun counts the outer axes ctr (the first len(ctr) of out) on by one
// run and returns the two inputs' positions ox and oy stepped with them
// by their strides sx and sy.
func nextRun(ctr, out []int64, sx, sy []int, ox, oy int) (int, int) {
	for k := len(ctr) - 1; k >= 0; k-- {
		ctr[k]++
		ox += sx[k]
		oy += sy[k]
		if ctr[k] < out[k] {
			break
		}
		ox -= sx[k] * int(out[k])
		oy -= sy[k] * int(out[k])
		ctr[k] = 0
	}
	return ox, oy
}

// bcastStrides is the element stride of in (right-aligned to rank axes)
// along each output axis, 0 where in is broadcast.
func bcastStrides(in []int64, rank int) []int {
	st := make([]int, rank)
	is := strides(in)
	off := rank - len(in)
	for i := range in {
		if in[i] != 1 {
			st[off+i] = is[i]
		}
	}
	return st
}

func hasZero(t *Tensor) bool {
	switch d := t.Data.(type) {
	case []int64:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []int32:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []int16:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []int8:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []uint8:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []uint16:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []uint32:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	case []uint64:
		for _, v := range d {
			if v == 0 {
				return true
			}
		}
	}
	return false
}

func registerArith(name string, op arith, variadic bool) {
	register(name, func(n *node) (opFunc, error) {
		lo, hi := 2, 2
		if variadic {
			lo, hi = 1, 1<<20
		}
		if err := n.needInputs(lo, hi); err != nil {
			return nil, err
		}
		aop := op
		if name == "Mod" && n.int("fmod", 0) == 1 {
			aop = opModFloat
		}
		return func(f *frame, in, out []*Tensor) error {
			if len(in) == 1 {
				c, err := cloneTensor(f.r, in[0])
				out[0] = c
				return err
			}
			acc, err := arithDispatch(f.r, aop, in[0], in[1])
			for _, t := range in[2:] {
				if err != nil {
					break
				}
				prev := acc
				acc, err = arithDispatch(f.r, aop, acc, t)
				f.r.release(prev)
			}
			out[0] = acc
			return err
		}, nil
	})
}

func init() {
	registerArith("Add", opAdd, false)
	registerArith("Sub", opSub, false)
	registerArith("Mul", opMul, false)
	registerArith("Div", opDiv, false)
	registerArith("Pow", opPow, false)
	registerArith("Mod", opModInt, false)
	registerArith("Max", opMax, true)
	registerArith("Min", opMin, true)
	registerArith("Sum", opAdd, true)

	registerCompare("Equal", func(c int, eq bool) bool { return eq })
	registerCompare("Less", func(c int, eq bool) bool { return c < 0 })
	registerCompare("Greater", func(c int, eq bool) bool { return c > 0 })
	registerCompare("LessOrEqual", func(c int, eq bool) bool { return c <= 0 && (c < 0 || eq) })
	registerCompare("GreaterOrEqual", func(c int, eq bool) bool { return c >= 0 && (c > 0 || eq) })

	registerLogic("And", func(x, y bool) bool { return x && y })
	registerLogic("Or", func(x, y bool) bool { return x || y })
	registerLogic("Xor", func(x, y bool) bool { return x != y })

	register("Not", func(n *node) (opFunc, error) {
		if err := n.needInputs(1, 1); err != nil {
			return nil, err
		}
		return func(f *frame, in, out []*Tensor) error {
			if in[0].DType != builder.Bool {
				return fmt.Errorf("input is %v, want bool", in[0].DType)
			}
			x := get[bool](in[0])
			z := fresh[bool](f.r, len(x))
			for i, v := range x {
				z[i] = !v
			}
			out[0] = New(cloneShape(in[0].Shape), z)
			return nil
		}, nil
	})

	register("Where", func(n *node) (opFunc, error) {
		if err := n.needInputs(3, 3); err != nil {
			return nil, err
		}
		return func(f *frame, in, out []*Tensor) error {
			c, x, y := in[0], in[1], in[2]
			if c.DType != builder.Bool {
				return fmt.Errorf("condition is %v, want bool", c.DType)
			}
			if x.DType != y.DType {
				return fmt.Errorf("X is %v and Y is %v; both must be the same type", x.DType, y.DType)
			}
			shape, err := broadcastShape(c.Shape, x.Shape, y.Shape)
			if err != nil {
				return err
			}
			if x.DType == dtFloat {
				if o := whereRunsF32(f.r, c, x, y, shape); o != nil {
					out[0] = o
					return nil
				}
			}
			ic, ix, iy := bcastIndex(f.r, shape, c.Shape), bcastIndex(f.r, shape, x.Shape), bcastIndex(f.r, shape, y.Shape)
			o, err := where(f.r, get[bool](c), x, y, shape, ic, ix, iy)
			out[0] = o
			return err
		}, nil
	})

	register("Cast", func(n *node) (opFunc, error) {
		if err := n.needInputs(1, 1); err != nil {
			return nil, err
		}
		to := builder.DataType(n.int("to", 0))
		if !supported(to) {
			return nil, n.unsupported("Cast to %v", to)
		}
		return func(f *frame, in, out []*Tensor) error {
			o, err := cast(f.r, in[0], to)
			out[0] = o
			return err
		}, nil
	})
}

func registerCompare(name string, pred func(c int, eq bool) bool) {
	register(name, func(n *node) (opFunc, error) {
		if err := n.needInputs(2, 2); err != nil {
			return nil, err
		}
		return func(f *frame, in, out []*Tensor) error {
			a, b := in[0], in[1]
			if a.DType != b.DType {
				return fmt.Errorf("inputs are %v and %v; both must be the same type", a.DType, b.DType)
			}
			var o *Tensor
			var err error
			switch a.DType {
			case builder.Float:
				o, err = binaryT(f.r, a, b, cmpFn[float32](pred))
			case builder.Double:
				o, err = binaryT(f.r, a, b, cmpFn[float64](pred))
			case builder.Int64:
				o, err = binaryT(f.r, a, b, cmpFn[int64](pred))
			case builder.Int32:
				o, err = binaryT(f.r, a, b, cmpFn[int32](pred))
			case builder.Int16:
				o, err = binaryT(f.r, a, b, cmpFn[int16](pred))
			case builder.Int8:
				o, err = binaryT(f.r, a, b, cmpFn[int8](pred))
			case builder.Uint8:
				o, err = binaryT(f.r, a, b, cmpFn[uint8](pred))
			case builder.Uint16:
				o, err = binaryT(f.r, a, b, cmpFn[uint16](pred))
			case builder.Uint32:
				o, err = binaryT(f.r, a, b, cmpFn[uint32](pred))
			case builder.Uint64:
				o, err = binaryT(f.r, a, b, cmpFn[uint64](pred))
			case builder.Bool:
				if name != "Equal" {
					return errType(name, a.DType)
				}
				o, err = binaryT(f.r, a, b, func(x, y bool) bool { return x == y })
			default:
				return errType(name, a.DType)
			}
			out[0] = o
			return err
		}, nil
	})
}

func cmpFn[T number](pred func(c int, eq bool) bool) func(x, y T) bool {
	return func(x, y T) bool {
		c := 0
		if x < y {
			c = -1
		} else if x > y {
			c = 1
		}
		return pred(c, x == y)
	}
}

func registerLogic(name string, fn func(x, y bool) bool) {
	register(name, func(n *node) (opFunc, error) {
		if err := n.needInputs(2, 2); err != nil {
			return nil, err
		}
		return func(f *frame, in, out []*Tensor) error {
			if in[0].DType != builder.Bool || in[1].DType != builder.Bool {
				return fmt.Errorf("inputs are %v and %v, want bool", in[0].DType, in[1].DType)
			}
			o, err := binaryT(f.r, in[0], in[1], fn)
			out[0] = o
			return err
		}, nil
	})
}

func cloneShape(s []int64) []int64 { return append(make([]int64, 0, len(s)), s...) }

// cloneTensor copies t into a new tensor.
func cloneTensor(r *runner, t *Tensor) (*Tensor, error) {
	o := newLike(r, t.DType, cloneShape(t.Shape))
	copyData(o.Data, t.Data)
	return o, nil
}

func copyData(dst, src any) {
	switch d := dst.(type) {
	case []float32:
		copy(d, src.([]float32))
	case []float64:
		copy(d, src.([]float64))
	case []int64:
		copy(d, src.([]int64))
	case []int32:
		copy(d, src.([]int32))
	case []int16:
		copy(d, src.([]int16))
	case []int8:
		copy(d, src.([]int8))
	case []uint8:
		copy(d, src.([]uint8))
	case []uint16:
		copy(d, src.([]uint16))
	case []uint32:
		copy(d, src.([]uint32))
	case []uint64:
		copy(d, src.([]uint64))
	case []bool:
		copy(d, src.([]bool))
	}
}

// whereT sets z[i] to x's or y's element as cond's says, each operand's
// element at i or, where it is broadcast, at its index map's entry.
func whereT[T element](cond []bool, x, y, z []T, ic, ix, iy []int32) {
	for i := range z {
		jc, jx, jy := i, i, i
		if ic != nil {
			jc = int(ic[i])
		}
		if ix != nil {
			jx = int(ix[i])
		}
		if iy != nil {
			jy = int(iy[i])
		}
		if cond[jc] {
			z[i] = x[jx]
		} else {
			z[i] = y[jy]
		}
	}
}

// whereRunsF32 is float32 Where when X and Y each have the output's shape
// or one element, and the condition is the same along the output's last
// axes (a mask over positions applied to their vectors, as an encoder
// masks its padded outputs): each run of the output is a copy of X's or
// Y's, without index maps. It returns nil for other shapes.
func whereRunsF32(r *runner, c, x, y *Tensor, shape []int64) *Tensor {
	n := numel(shape)
	fullOrOne := func(t *Tensor) bool { return sameShape(t.Shape, shape) || t.Len() == 1 }
	if !fullOrOne(x) || !fullOrOne(y) || n == 0 {
		return nil
	}
	// run: the output's trailing axes along which the condition is
	// broadcast (its dimension 1, or absent); inner: the cond's shape
	// without them must then match the output's leading axes exactly.
	rank, off := len(shape), len(shape)-len(c.Shape)
	run, lead := 1, rank
	for lead > 0 && (lead-1 < off || c.Shape[lead-1-off] == 1) {
		lead--
		run *= int(shape[lead])
	}
	if run < 8 {
		return nil
	}
	for d := 0; d < lead; d++ {
		if d < off || c.Shape[d-off] != shape[d] {
			return nil // the condition is also broadcast along a leading axis
		}
	}
	cond := get[bool](c)
	xs, ys := get[float32](x), get[float32](y)
	o := r.f32(shape)
	z := get[float32](o)
	for k, pick := range cond[:n/run] {
		seg := z[k*run : (k+1)*run]
		src, one := xs, len(xs) == 1
		if !pick {
			src, one = ys, len(ys) == 1
		}
		if one {
			for i := range seg {
				seg[i] = src[0]
			}
		} else {
			copy(seg, src[k*run:(k+1)*run])
		}
	}
	return o
}

func where(r *runner, cond []bool, x, y *Tensor, shape []int64, ic, ix, iy []int32) (*Tensor, error) {
	o := newLike(r, x.DType, shape)
	switch z := o.Data.(type) {
	case []float32:
		whereT(cond, x.Data.([]float32), y.Data.([]float32), z, ic, ix, iy)
	case []float64:
		whereT(cond, x.Data.([]float64), y.Data.([]float64), z, ic, ix, iy)
	case []int64:
		whereT(cond, x.Data.([]int64), y.Data.([]int64), z, ic, ix, iy)
	case []int32:
		whereT(cond, x.Data.([]int32), y.Data.([]int32), z, ic, ix, iy)
	case []int16:
		whereT(cond, x.Data.([]int16), y.Data.([]int16), z, ic, ix, iy)
	case []int8:
		whereT(cond, x.Data.([]int8), y.Data.([]int8), z, ic, ix, iy)
	case []uint8:
		whereT(cond, x.Data.([]uint8), y.Data.([]uint8), z, ic, ix, iy)
	case []uint16:
		whereT(cond, x.Data.([]uint16), y.Data.([]uint16), z, ic, ix, iy)
	case []uint32:
		whereT(cond, x.Data.([]uint32), y.Data.([]uint32), z, ic, ix, iy)
	case []uint64:
		whereT(cond, x.Data.([]uint64), y.Data.([]uint64), z, ic, ix, iy)
	case []bool:
		whereT(cond, x.Data.([]bool), y.Data.([]bool), z, ic, ix, iy)
	default:
		return nil, errType("Where", x.DType)
	}
	return o, nil
}

// cast converts t's elements to type to.
func cast(r *runner, t *Tensor, to builder.DataType) (*Tensor, error) {
	o := newLike(r, to, cloneShape(t.Shape))
	var err error
	switch s := t.Data.(type) {
	case []float32:
		err = castFrom(s, o.Data)
	case []float64:
		err = castFrom(s, o.Data)
	case []int64:
		err = castFrom(s, o.Data)
	case []int32:
		err = castFrom(s, o.Data)
	case []int16:
		err = castFrom(s, o.Data)
	case []int8:
		err = castFrom(s, o.Data)
	case []uint8:
		err = castFrom(s, o.Data)
	case []uint16:
		err = castFrom(s, o.Data)
	case []uint32:
		err = castFrom(s, o.Data)
	case []uint64:
		err = castFrom(s, o.Data)
	case []bool:
		b := make([]uint8, len(s))
		for i, v := range s {
			if v {
				b[i] = 1
			}
		}
		err = castFrom(b, o.Data)
	default:
		err = errType("Cast", t.DType)
	}
	return o, err
}

func castFrom[S number](s []S, dst any) error {
	switch d := dst.(type) {
	case []float32:
		castTo(s, d)
	case []float64:
		castTo(s, d)
	case []int64:
		castTo(s, d)
	case []int32:
		castTo(s, d)
	case []int16:
		castTo(s, d)
	case []int8:
		castTo(s, d)
	case []uint8:
		castTo(s, d)
	case []uint16:
		castTo(s, d)
	case []uint32:
		castTo(s, d)
	case []uint64:
		castTo(s, d)
	case []bool:
		for i, v := range s {
			d[i] = v != 0
		}
	default:
		return fmt.Errorf("Cast: unsupported target")
	}
	return nil
}

func castTo[S, D number](s []S, d []D) {
	for i, v := range s {
		d[i] = D(v)
	}
}

// isSuffix reports whether in, without its leading 1s, equals the trailing
// dimensions of out: a tensor of in's shape repeats along out's leading
// axes, element i of out reading element i % size.
func isSuffix(in, out []int64) bool {
	for len(in) > 0 && in[0] == 1 {
		in = in[1:]
	}
	if len(in) > len(out) || len(in) == 0 {
		return false
	}
	return sameShape(in, out[len(out)-len(in):])
}
