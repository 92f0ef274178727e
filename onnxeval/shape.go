package onnxeval

import (
	"fmt"
	"math"
	"reflect"

	"github.com/attnx/attnx/builder"
)

// takeT gathers src[idx[i]] into dst.
func takeT[T element](src, dst []T, idx []int32) {
	for i, j := range idx {
		dst[i] = src[j]
	}
}

// take returns a tensor of shape whose element i is t's element idx[i].
func take(r *runner, t *Tensor, shape []int64, idx []int32) (*Tensor, error) {
	o := newLike(r, t.DType, shape)
	switch d := o.Data.(type) {
	case []float32:
		takeT(t.Data.([]float32), d, idx)
	case []float64:
		takeT(t.Data.([]float64), d, idx)
	case []int64:
		takeT(t.Data.([]int64), d, idx)
	case []int32:
		takeT(t.Data.([]int32), d, idx)
	case []int16:
		takeT(t.Data.([]int16), d, idx)
	case []int8:
		takeT(t.Data.([]int8), d, idx)
	case []uint8:
		takeT(t.Data.([]uint8), d, idx)
	case []uint16:
		takeT(t.Data.([]uint16), d, idx)
	case []uint32:
		takeT(t.Data.([]uint32), d, idx)
	case []uint64:
		takeT(t.Data.([]uint64), d, idx)
	case []bool:
		takeT(t.Data.([]bool), d, idx)
	default:
		return nil, errType("data movement", t.DType)
	}
	return o, nil
}

// copyBlocks copies n elements from src at so to dst at do (same types).
func copyBlock(dst any, do int, src any, so, n int) {
	switch d := dst.(type) {
	case []float32:
		copy(d[do:do+n], src.([]float32)[so:so+n])
	case []float64:
		copy(d[do:do+n], src.([]float64)[so:so+n])
	case []int64:
		copy(d[do:do+n], src.([]int64)[so:so+n])
	case []int32:
		copy(d[do:do+n], src.([]int32)[so:so+n])
	case []int16:
		copy(d[do:do+n], src.([]int16)[so:so+n])
	case []int8:
		copy(d[do:do+n], src.([]int8)[so:so+n])
	case []uint8:
		copy(d[do:do+n], src.([]uint8)[so:so+n])
	case []uint16:
		copy(d[do:do+n], src.([]uint16)[so:so+n])
	case []uint32:
		copy(d[do:do+n], src.([]uint32)[so:so+n])
	case []uint64:
		copy(d[do:do+n], src.([]uint64)[so:so+n])
	case []bool:
		copy(d[do:do+n], src.([]bool)[so:so+n])
	}
}

func view(t *Tensor, shape []int64) *Tensor {
	return &Tensor{DType: t.DType, Shape: shape, Data: t.Data}
}

// subView is a view of elements lo..hi of t's buffer, with shape.
func subView(t *Tensor, shape []int64, lo, hi int) *Tensor {
	return &Tensor{DType: t.DType, Shape: shape, Data: reflect.ValueOf(t.Data).Slice3(lo, hi, hi).Interface()}
}

// splitViews reports whether a Split node returns views of its input: along
// axis 0 each output is one contiguous run of it.
func splitViews(n *node) bool { return n.int("axis", 0) == 0 }

// gatherViews reports whether a Gather node returns a view of its data: one
// constant index (a scalar) along axis 0 picks one contiguous run of it.
func gatherViews(n *node) bool {
	return n.int("axis", 0) == 0 && len(n.consts) > 1 && n.consts[1] != nil && len(n.consts[1].Shape) == 0
}

// axesInput reads axes from input i (opset 13+) or attribute "axes".
func axesOf(n *node, in []*Tensor, i int) ([]int64, bool, error) {
	if i < len(in) && in[i] != nil {
		a, err := ints(in[i], "axes")
		return a, true, err
	}
	if a, ok := n.ints("axes"); ok {
		return a, true, nil
	}
	return nil, false, nil
}

func init() {
	register("Identity", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			out[0] = view(in[0], in[0].Shape)
			return nil
		}, nil
	})
	register("Shape", func(n *node) (opFunc, error) {
		start, end := n.int("start", 0), n.int("end", 1<<62)
		return func(f *frame, in, out []*Tensor) error {
			r := int64(len(in[0].Shape))
			s, e := clampAxis(start, r), clampAxis(end, r)
			dims := []int64{}
			if s < e {
				dims = append(dims, in[0].Shape[s:e]...)
			}
			out[0] = New([]int64{int64(len(dims))}, dims)
			return nil
		}, nil
	})
	register("Size", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			out[0] = New([]int64{}, []int64{int64(in[0].Len())})
			return nil
		}, nil
	})
	register("Reshape", func(n *node) (opFunc, error) {
		allowZero := n.int("allowzero", 0) == 1
		return func(f *frame, in, out []*Tensor) error {
			spec, err := ints(in[1], "shape")
			if err != nil {
				return err
			}
			shape := make([]int64, len(spec))
			infer, known := -1, int64(1)
			for i, d := range spec {
				switch {
				case d == 0 && !allowZero:
					if i >= len(in[0].Shape) {
						return fmt.Errorf("shape %v copies dimension %d of a rank-%d input", spec, i, len(in[0].Shape))
					}
					d = in[0].Shape[i]
				case d == -1:
					if infer >= 0 {
						return fmt.Errorf("shape %v has two -1 dimensions", spec)
					}
					infer = i
					shape[i] = 1 // for the checks below, until inferred
					continue
				case d < 0:
					return fmt.Errorf("shape %v has dimension %d", spec, d)
				}
				shape[i] = d
				known *= d
			}
			if _, err := elements(shape); err != nil {
				return err
			}
			total := int64(in[0].Len())
			if infer >= 0 {
				if known == 0 || total%known != 0 {
					return fmt.Errorf("cannot reshape %v into %v", in[0].Shape, spec)
				}
				shape[infer] = total / known
			} else if known != total {
				return fmt.Errorf("cannot reshape %v (%d elements) into %v", in[0].Shape, total, spec)
			}
			out[0] = view(in[0], shape)
			return nil
		}, nil
	})
	register("Flatten", func(n *node) (opFunc, error) {
		axis := n.int("axis", 1)
		return func(f *frame, in, out []*Tensor) error {
			r := len(in[0].Shape)
			a := axis
			if a < 0 {
				a += int64(r)
			}
			if a < 0 || a > int64(r) {
				return fmt.Errorf("axis %d out of range for rank %d", axis, r)
			}
			outer := numel(in[0].Shape[:a])
			out[0] = view(in[0], []int64{int64(outer), int64(in[0].Len() / max(outer, 1))})
			if outer == 0 {
				out[0].Shape[1] = int64(numel(in[0].Shape[a:]))
			}
			return nil
		}, nil
	})
	register("Squeeze", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			axes, given, err := axesOf(n, in, 1)
			if err != nil {
				return err
			}
			s := in[0].Shape
			drop := make([]bool, len(s))
			if !given {
				for i, d := range s {
					drop[i] = d == 1
				}
			}
			for _, a := range axes {
				k, err := normAxis(a, len(s), "axis")
				if err != nil {
					return err
				}
				if s[k] != 1 {
					return fmt.Errorf("cannot squeeze axis %d of shape %v: its size is %d", a, s, s[k])
				}
				drop[k] = true
			}
			shape := []int64{}
			for i, d := range s {
				if !drop[i] {
					shape = append(shape, d)
				}
			}
			out[0] = view(in[0], shape)
			return nil
		}, nil
	})
	register("Unsqueeze", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			axes, _, err := axesOf(n, in, 1)
			if err != nil {
				return err
			}
			r := len(in[0].Shape) + len(axes)
			ins := make([]bool, r)
			for _, a := range axes {
				k, err := normAxis(a, r, "axis")
				if err != nil {
					return err
				}
				if ins[k] {
					return fmt.Errorf("axis %d given twice", a)
				}
				ins[k] = true
			}
			shape := make([]int64, r)
			j := 0
			for i := range shape {
				if ins[i] {
					shape[i] = 1
				} else {
					shape[i] = in[0].Shape[j]
					j++
				}
			}
			out[0] = view(in[0], shape)
			return nil
		}, nil
	})
	register("Concat", func(n *node) (opFunc, error) {
		axis, ok := n.attr("axis")
		if !ok {
			return nil, n.errorf("Concat needs the axis attribute")
		}
		return func(f *frame, in, out []*Tensor) error {
			first := in[0]
			r := len(first.Shape)
			k, err := normAxis(axis.Int, r, "axis")
			if err != nil {
				return err
			}
			shape := cloneShape(first.Shape)
			shape[k] = 0
			for i, t := range in {
				if t.DType != first.DType || len(t.Shape) != r {
					return fmt.Errorf("input %d is %v, input 0 is %v", i, t, first)
				}
				for d := range t.Shape {
					if d != k && t.Shape[d] != first.Shape[d] {
						return fmt.Errorf("input %d is %v, input 0 is %v: they differ outside axis %d", i, t, first, k)
					}
				}
				shape[k] += t.Shape[k]
			}
			o := newLike(f.r, first.DType, shape)
			outer := numel(shape[:k])
			inner := numel(shape[k+1:])
			rowOut := int(shape[k]) * inner
			off := 0
			for _, t := range in {
				w := int(t.Shape[k]) * inner
				for o2 := 0; o2 < outer; o2++ {
					copyBlock(o.Data, o2*rowOut+off, t.Data, o2*w, w)
				}
				off += w
			}
			out[0] = o
			return nil
		}, nil
	})
	register("Gather", func(n *node) (opFunc, error) {
		axis := n.int("axis", 0)
		views := gatherViews(n)
		return func(f *frame, in, out []*Tensor) error {
			data := in[0]
			idx, err := ints(in[1], "indices")
			if err != nil {
				return err
			}
			k, err := normAxis(axis, len(data.Shape), "axis")
			if err != nil {
				return err
			}
			dim := data.Shape[k]
			shape := append(append(cloneShape(data.Shape[:k]), in[1].Shape...), data.Shape[k+1:]...)
			outer, inner := numel(data.Shape[:k]), numel(data.Shape[k+1:])
			if views {
				// One constant index along axis 0: its run of the data
				// (the plan knows it views the data: viewsInput).
				ix := idx[0]
				if ix < 0 {
					ix += dim
				}
				if ix < 0 || ix >= dim {
					return fmt.Errorf("index %d is out of range for axis %d of size %d", idx[0], k, dim)
				}
				out[0] = subView(data, shape, int(ix)*inner, int(ix+1)*inner)
				return nil
			}
			o := newLike(f.r, data.DType, shape)
			for a := 0; a < outer; a++ {
				for j, ix := range idx {
					if ix < 0 {
						ix += dim
					}
					if ix < 0 || ix >= dim {
						return fmt.Errorf("index %d is out of range for axis %d of size %d", idx[j], k, dim)
					}
					copyBlock(o.Data, (a*len(idx)+j)*inner, data.Data, (a*int(dim)+int(ix))*inner, inner)
				}
			}
			out[0] = o
			return nil
		}, nil
	})
	register("GatherElements", func(n *node) (opFunc, error) {
		axis := n.int("axis", 0)
		return func(f *frame, in, out []*Tensor) error {
			data := in[0]
			idx, err := ints(in[1], "indices")
			if err != nil {
				return err
			}
			r := len(data.Shape)
			k, err := normAxis(axis, r, "axis")
			if err != nil {
				return err
			}
			ish := in[1].Shape
			if len(ish) != r {
				return fmt.Errorf("indices have rank %d, data %d", len(ish), r)
			}
			ds, is := strides(data.Shape), strides(ish)
			pick := tmp[int32](f.r, len(idx))
			for i, ix := range idx {
				if ix < 0 {
					ix += data.Shape[k]
				}
				if ix < 0 || ix >= data.Shape[k] {
					return fmt.Errorf("index %d is out of range for axis %d of size %d", idx[i], k, data.Shape[k])
				}
				pos, rem := 0, i
				for d := 0; d < r; d++ {
					c := rem / is[d]
					rem %= is[d]
					if d == k {
						c = int(ix)
					}
					pos += c * ds[d]
				}
				pick[i] = int32(pos)
			}
			o, err := take(f.r, data, cloneShape(ish), pick)
			out[0] = o
			return err
		}, nil
	})
	register("Transpose", func(n *node) (opFunc, error) {
		permAttr, hasPerm := n.ints("perm")
		return func(f *frame, in, out []*Tensor) error {
			t := in[0]
			r := len(t.Shape)
			perm := permAttr
			if !hasPerm {
				perm = make([]int64, r)
				for i := range perm {
					perm[i] = int64(r - 1 - i)
				}
			}
			if len(perm) != r {
				return fmt.Errorf("perm %v for rank %d", perm, r)
			}
			shape := make([]int64, r)
			for i, p := range perm {
				shape[i] = t.Shape[p]
			}
			o, err := transpose(f.r, t, perm, shape)
			out[0] = o
			return err
		}, nil
	})
	register("Expand", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			want, err := ints(in[1], "shape")
			if err != nil {
				return err
			}
			shape, err := broadcastShape(in[0].Shape, want)
			if err != nil {
				return err
			}
			idx := bcastIndex(f.r, shape, in[0].Shape)
			if idx == nil {
				o, err := cloneTensor(f.r, in[0])
				out[0] = o
				return err
			}
			o, err := take(f.r, in[0], shape, idx)
			out[0] = o
			return err
		}, nil
	})
	register("Slice", func(n *node) (opFunc, error) {
		slice := func(f *frame, in, out []*Tensor) error {
			t := in[0]
			r := len(t.Shape)
			starts, err := ints(in[1], "starts")
			if err != nil {
				return err
			}
			ends, err := ints(in[2], "ends")
			if err != nil {
				return err
			}
			if len(ends) != len(starts) {
				return fmt.Errorf("%d starts and %d ends", len(starts), len(ends))
			}
			axes := make([]int64, len(starts))
			for i := range axes {
				axes[i] = int64(i)
			}
			if len(in) > 3 && in[3] != nil {
				if axes, err = ints(in[3], "axes"); err != nil {
					return err
				}
			}
			steps := make([]int64, len(starts))
			for i := range steps {
				steps[i] = 1
			}
			if len(in) > 4 && in[4] != nil {
				if steps, err = ints(in[4], "steps"); err != nil {
					return err
				}
			}
			if len(axes) != len(starts) || len(steps) != len(starts) {
				return fmt.Errorf("starts, ends, axes and steps differ in length")
			}
			st, en, sp := make([]int64, r), cloneShape(t.Shape), make([]int64, r)
			for i := range sp {
				sp[i] = 1
			}
			for i, a := range axes {
				k, err := normAxis(a, r, "axis")
				if err != nil {
					return err
				}
				if steps[i] == 0 {
					return fmt.Errorf("step 0 on axis %d", a)
				}
				st[k], en[k], sp[k] = sliceBounds(starts[i], ends[i], steps[i], t.Shape[k])
			}
			shape := make([]int64, r)
			for k := range shape {
				var c int64
				if sp[k] > 0 && en[k] > st[k] {
					c = (en[k] - st[k] + sp[k] - 1) / sp[k]
				} else if sp[k] < 0 && st[k] > en[k] {
					c = (st[k] - en[k] - sp[k] - 1) / -sp[k]
				}
				shape[k] = c
			}
			ts := strides(t.Shape)
			nOut := numel(shape)
			idx := make([]int32, nOut)
			ctr := make([]int64, r)
			for i := 0; i < nOut; i++ {
				pos := 0
				for k := 0; k < r; k++ {
					pos += int(st[k]+ctr[k]*sp[k]) * ts[k]
				}
				idx[i] = int32(pos)
				for k := r - 1; k >= 0; k-- {
					ctr[k]++
					if ctr[k] < shape[k] {
						break
					}
					ctr[k] = 0
				}
			}
			o, err := take(f.r, t, shape, idx)
			out[0] = o
			return err
		}
		if n.nin() == 1 { // opset < 10: starts, ends and axes are attributes
			starts, _ := n.ints("starts")
			ends, _ := n.ints("ends")
			axes, hasAxes := n.ints("axes")
			consts := []*Tensor{New([]int64{int64(len(starts))}, starts), New([]int64{int64(len(ends))}, ends)}
			if hasAxes {
				consts = append(consts, New([]int64{int64(len(axes))}, axes))
			}
			return func(f *frame, in, out []*Tensor) error {
				return slice(f, append([]*Tensor{in[0]}, consts...), out)
			}, nil
		}
		return slice, nil
	})
	register("Split", func(n *node) (opFunc, error) {
		axis := n.int("axis", 0)
		views := splitViews(n)
		splitAttr, hasAttr := n.ints("split")
		numOut := len(n.Outputs)
		return func(f *frame, in, out []*Tensor) error {
			t := in[0]
			k, err := normAxis(axis, len(t.Shape), "axis")
			if err != nil {
				return err
			}
			dim := t.Shape[k]
			sizes := splitAttr
			if len(in) > 1 && in[1] != nil {
				if sizes, err = ints(in[1], "split"); err != nil {
					return err
				}
			} else if !hasAttr {
				sizes = make([]int64, numOut)
				chunk := (dim + int64(numOut) - 1) / int64(numOut)
				left := dim
				for i := range sizes {
					sizes[i] = min(chunk, left)
					left -= sizes[i]
				}
			}
			if len(sizes) != numOut {
				return fmt.Errorf("%d split sizes for %d outputs", len(sizes), numOut)
			}
			var sum int64
			for _, s := range sizes {
				sum += s
			}
			if sum != dim {
				return fmt.Errorf("split sizes %v do not add up to %d", sizes, dim)
			}
			outer, inner := numel(t.Shape[:k]), numel(t.Shape[k+1:])
			var off int64
			for i, s := range sizes {
				shape := cloneShape(t.Shape)
				shape[k] = s
				if views {
					// Axis 0: the part is a run of the input (the plan
					// knows it views the input: viewsInput).
					out[i] = subView(t, shape, int(off)*inner, int(off+s)*inner)
					off += s
					continue
				}
				o := newLike(f.r, t.DType, shape)
				w := int(s) * inner
				for a := 0; a < outer; a++ {
					copyBlock(o.Data, a*w, t.Data, (a*int(dim)+int(off))*inner, w)
				}
				off += s
				out[i] = o
			}
			return nil
		}, nil
	})
	register("Range", func(n *node) (opFunc, error) {
		return func(f *frame, in, out []*Tensor) error {
			switch in[0].DType {
			case builder.Int64:
				out[0] = rangeT(f.r, get[int64](in[0])[0], get[int64](in[1])[0], get[int64](in[2])[0])
			case builder.Int32:
				out[0] = rangeT(f.r, get[int32](in[0])[0], get[int32](in[1])[0], get[int32](in[2])[0])
			case builder.Float:
				out[0] = rangeT(f.r, get[float32](in[0])[0], get[float32](in[1])[0], get[float32](in[2])[0])
			case builder.Double:
				out[0] = rangeT(f.r, get[float64](in[0])[0], get[float64](in[1])[0], get[float64](in[2])[0])
			default:
				return errType("Range", in[0].DType)
			}
			if out[0] == nil {
				return fmt.Errorf("delta is 0")
			}
			return nil
		}, nil
	})
	register("ConstantOfShape", func(n *node) (opFunc, error) {
		val := New([]int64{1}, []float32{0})
		if a, ok := n.attr("value"); ok {
			t, err := FromBuilder(a.Tensor)
			if err != nil {
				return nil, n.errorf("value: %v", err)
			}
			val = t
		}
		return func(f *frame, in, out []*Tensor) error {
			shape, err := ints(in[0], "shape")
			if err != nil {
				return err
			}
			shape = cloneShape(shape)
			idx := tmp[int32](f.r, numel(shape))
			o, err := take(f.r, val, shape, idx)
			out[0] = o
			return err
		}, nil
	})
}

func rangeT[T int64 | int32 | float32 | float64](r *runner, start, limit, delta T) *Tensor {
	if delta == 0 {
		return nil
	}
	n := int64(0)
	if c := float64(limit-start) / float64(delta); c > 0 {
		n = int64(c)
		if float64(n) < c {
			n++
		}
	}
	if n > math.MaxInt32 {
		r.charge(math.MaxInt64) // the limit's error, naming the node
	}
	d := fresh[T](r, int(n))
	for i := range d {
		d[i] = start + T(i)*delta
	}
	return New([]int64{n}, d)
}

// sliceBounds clamps a Slice's start and end on a dimension of size dim.
func sliceBounds(start, end, step, dim int64) (int64, int64, int64) {
	if start < 0 {
		start += dim
	}
	if end < 0 {
		end += dim
	}
	if step > 0 {
		start = max(0, min(start, dim))
		end = max(0, min(end, dim))
	} else {
		start = max(-1, min(start, dim-1))
		end = max(-1, min(end, dim-1))
	}
	return start, end, step
}

func clampAxis(a, r int64) int64 {
	if a < 0 {
		a += r
	}
	return max(0, min(a, r))
}

// transpose permutes t's axes.
func transpose(r *runner, t *Tensor, perm, shape []int64) (*Tensor, error) {
	rank := len(shape)
	ts := strides(t.Shape)
	st := make([]int, rank) // input stride of each output axis
	for i, p := range perm {
		if p < 0 || int(p) >= rank {
			return nil, fmt.Errorf("perm %v is not a permutation", perm)
		}
		st[i] = ts[p]
	}
	n := numel(shape)
	// The trailing output axes whose input elements lie together (a
	// permutation that keeps the last axes, as moving the batch and
	// direction axes of an RNN's output does) are copied as runs.
	run, inner := 1, rank
	for inner > 0 && st[inner-1] == run {
		inner--
		run *= int(shape[inner])
	}
	if run >= 8 && n > 0 {
		o := newLike(r, t.DType, shape)
		ctr := make([]int64, inner)
		pos := 0
		for out := 0; out < n; out += run {
			copyBlock(o.Data, out, t.Data, pos, run)
			pos = nextPosition(ctr, shape[:inner], st[:inner], pos)
		}
		return o, nil
	}
	idx := make([]int32, n)
	ctr := make([]int64, rank)
	pos := 0
	for i := 0; i < n; i++ {
		idx[i] = int32(pos)
		pos = nextPosition(ctr, shape, st, pos)
	}
	return take(r, t, shape, idx)
}

// nextPosition steps the counter ctr (an index into shape, last axis
// fastest) to the next element and returns pos, that element's position in
// a tensor whose axes lie strides apart (0 for an axis broadcast).
func nextPosition(ctr, shape []int64, strides []int, pos int) int {
	for d := len(ctr) - 1; d >= 0; d-- {
		ctr[d]++
		pos += strides[d]
		if ctr[d] < shape[d] {
			return pos
		}
		pos -= strides[d] * int(shape[d])
		ctr[d] = 0
	}
	return pos
}
