package ops

import (
	"errors"
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
)

// Constant adds a Constant node that outputs t (ONNX Constant, value
// attribute) in g. The output's contents are recorded with builder.SetConst
// so that shape inference of later operators (Reshape, Slice, Unsqueeze...)
// can read them. The tensor is stored, not copied.
func Constant(g *builder.Graph, t *builder.Tensor) *builder.Value {
	out := builder.Apply(builder.Call{Graph: g, Op: "Constant", Attrs: []builder.Attr{builder.TensorAttr("value", t)},
		Infer: func() ([]*builder.Type, error) {
			if t == nil {
				return nil, errors.New("nil tensor")
			}
			if err := t.Validate(); err != nil {
				return nil, err
			}
			typ := t.Type()
			return []*builder.Type{&typ}, nil
		}}, 1)[0]
	builder.SetConst(out, t)
	return out
}

// ConstInt64s returns a 1-D int64 constant holding vals, for shapes, axes,
// starts and the like.
func ConstInt64s(g *builder.Graph, vals ...int64) *builder.Value {
	return Constant(g, builder.Int64Tensor([]int64{int64(len(vals))}, vals))
}

// ConstFloats returns a 1-D float32 constant holding vals.
func ConstFloats(g *builder.Graph, vals ...float32) *builder.Value {
	return Constant(g, builder.FloatTensor([]int64{int64(len(vals))}, vals))
}

// ScalarInt64 returns a rank-0 int64 constant.
func ScalarInt64(g *builder.Graph, v int64) *builder.Value {
	return Constant(g, builder.ScalarInt64(v))
}

// ScalarFloat returns a rank-0 float32 constant.
func ScalarFloat(g *builder.Graph, v float32) *builder.Value {
	return Constant(g, builder.ScalarFloat(v))
}

// ScalarBool returns a rank-0 bool constant.
func ScalarBool(g *builder.Graph, v bool) *builder.Value {
	return Constant(g, builder.BoolTensor(nil, []bool{v}))
}

// ShapeOpts holds the optional attributes of Shape.
type ShapeOpts struct {
	// Start is the first dimension to include (default 0; negative counts
	// from the end).
	Start int64
	// End, when set, is one past the last dimension to include (negative
	// counts from the end). Nil means up to the last dimension.
	End *int64
}

// Shape returns the shape of data as a 1-D int64 tensor, or the slice of it
// from opts.Start to opts.End (ONNX Shape). When data's shape is fully known
// the result is also recorded as a build-time constant.
func Shape(data *builder.Value, opts ShapeOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.Start != 0 {
		attrs = append(attrs, builder.IntAttr("start", opts.Start))
	}
	if opts.End != nil {
		attrs = append(attrs, builder.IntAttr("end", *opts.End))
	}
	var dims []int64
	known := false
	ins := operands{{"data", data}}
	out := builder.Apply(builder.Call{Op: "Shape", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			r := data.Rank()
			if r < 0 {
				return one(builder.Int64, unknownShape(1))
			}
			clamp := func(v int64) int64 {
				if v < 0 {
					v += int64(r)
				}
				return max(0, min(v, int64(r)))
			}
			start, end := clamp(opts.Start), int64(r)
			if opts.End != nil {
				end = clamp(*opts.End)
			}
			n := max(0, end-start)
			if n > 0 {
				dims, known = data.Shape()[start:end].Static()
			} else {
				dims, known = []int64{}, true
			}
			return one(builder.Int64, builder.Dims(n))
		}}, 1)[0]
	if known {
		builder.SetConst(out, builder.Int64Tensor([]int64{int64(len(dims))}, dims))
	}
	return out
}

// Cast converts x to element type to (ONNX Cast).
func Cast(x *builder.Value, to builder.DataType) *builder.Value {
	ins := operands{{"input", x}}
	return builder.Apply(builder.Call{Op: "Cast", InputNames: ins.names(), Inputs: ins.values(),
		Attrs: []builder.Attr{builder.IntAttr("to", int64(to))},
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("input", x, castTypes); err != nil {
				return nil, err
			}
			if !castTypes.has(to) {
				return nil, fmt.Errorf("cannot cast to %v: want one of %s", to, castTypes)
			}
			return one(to, x.Shape())
		}}, 1)[0]
}

// ReshapeOpts holds the optional attributes of Reshape.
type ReshapeOpts struct {
	// AllowZero makes a 0 in shape mean a zero-sized dimension instead of
	// "copy the input's dimension".
	AllowZero bool
}

// Reshape returns data with the given shape (ONNX Reshape). In shape, 0
// copies the input's dimension at that index (unless opts.AllowZero) and one
// -1 stands for whatever makes the element counts agree. The output shape is
// inferred when shape is a build-time constant.
func Reshape(data, shape *builder.Value, opts ReshapeOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.AllowZero {
		attrs = append(attrs, builder.IntAttr("allowzero", 1))
	}
	ins := operands{{"data", data}, {"shape", shape}}
	return builder.Apply(builder.Call{Op: "Reshape", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			if err := checkElem("shape", shape, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("shape", shape, 1); err != nil {
				return nil, err
			}
			target, ok := constInts(shape)
			if !ok {
				n, ok := len1D(shape)
				if !ok {
					return one(data.Elem(), nil)
				}
				return one(data.Elem(), unknownShape(n))
			}
			s, err := reshapeShape(data.Shape(), target, opts.AllowZero)
			if err != nil {
				return nil, err
			}
			return one(data.Elem(), s)
		}}, 1)[0]
}

// reshapeShape works out Reshape's output shape for a constant target.
func reshapeShape(in builder.Shape, target []int64, allowZero bool) (builder.Shape, error) {
	out := make(builder.Shape, len(target))
	inferred := -1
	for i, t := range target {
		switch {
		case t == -1:
			if inferred >= 0 {
				return nil, fmt.Errorf("shape %v has more than one -1", target)
			}
			inferred = i
		case t == 0 && !allowZero:
			if in == nil {
				out[i] = builder.UnknownDim()
			} else if i >= len(in) {
				return nil, fmt.Errorf("shape %v copies dimension %d (0) but data has rank %d", target, i, len(in))
			} else {
				out[i] = in[i]
			}
		case t < 0:
			return nil, fmt.Errorf("shape %v has invalid dimension %d", target, t)
		default:
			out[i] = builder.D(t)
		}
	}
	if in == nil {
		if inferred >= 0 {
			out[inferred] = builder.UnknownDim()
		}
		return out, nil
	}
	// Cancel dimensions that appear on both sides, then compare what is left.
	rest := in.Clone()
	outRest := builder.Shape{}
	for i, d := range out {
		if i == inferred {
			continue
		}
		matched := false
		for j, e := range rest {
			if d.Same(e) {
				rest = append(rest[:j], rest[j+1:]...)
				matched = true
				break
			}
		}
		if !matched {
			outRest = append(outRest, d)
		}
	}
	_, inKnown := rest.Static()
	outN, outKnown := outRest.Static()
	var known []int64 // the fixed dimensions among those left of the input
	for _, d := range rest {
		if d.Known() {
			known = append(known, d.Value)
		}
	}
	knownIn, err := builder.ElementCount(known)
	if err != nil {
		return nil, fmt.Errorf("data %v: %w", in, err)
	}
	var b int64
	if outKnown {
		if b, err = builder.ElementCount(outN); err != nil {
			return nil, fmt.Errorf("shape %v: %w", target, err)
		}
	}
	if inKnown && outKnown {
		a := knownIn
		if inferred >= 0 {
			if b == 0 || a%b != 0 {
				return nil, fmt.Errorf("cannot reshape %v to %v: %d elements do not divide into %d", in, target, a, b)
			}
			out[inferred] = builder.D(a / b)
		} else if a != b {
			return nil, fmt.Errorf("cannot reshape %v to %v: element counts differ", in, target)
		}
		return out, nil
	}
	if inferred >= 0 {
		// One symbolic input dimension left over and the fixed ones on both
		// sides balance: the -1 is that dimension.
		var sym []builder.Dim
		for _, d := range rest {
			if !d.Known() {
				sym = append(sym, d)
			}
		}
		if len(sym) == 1 && sym[0].Param != "" && outKnown && b == knownIn {
			out[inferred] = sym[0]
		} else {
			out[inferred] = builder.UnknownDim()
		}
	}
	return out, nil
}

// Transpose permutes the dimensions of data: output dimension i is input
// dimension perm[i] (ONNX Transpose). A nil perm reverses the dimensions.
func Transpose(data *builder.Value, perm []int64) *builder.Value {
	var attrs []builder.Attr
	if perm != nil {
		attrs = append(attrs, builder.IntsAttr("perm", perm))
	}
	ins := operands{{"data", data}}
	return builder.Apply(builder.Call{Op: "Transpose", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			in := data.Shape()
			if in == nil {
				if perm == nil {
					return one(data.Elem(), nil)
				}
				return one(data.Elem(), unknownShape(len(perm)))
			}
			if perm == nil {
				out := make(builder.Shape, len(in))
				for i := range in {
					out[i] = in[len(in)-1-i]
				}
				return one(data.Elem(), out)
			}
			if len(perm) != len(in) {
				return nil, fmt.Errorf("perm %v has %d entries but data has rank %d", perm, len(perm), len(in))
			}
			seen := make([]bool, len(in))
			out := make(builder.Shape, len(in))
			for i, p := range perm {
				if p < 0 || p >= int64(len(in)) || seen[p] {
					return nil, fmt.Errorf("perm %v is not a permutation of 0..%d", perm, len(in)-1)
				}
				seen[p] = true
				out[i] = in[p]
			}
			return one(data.Elem(), out)
		}}, 1)[0]
}

// Squeeze removes dimensions of size 1 from data (ONNX Squeeze): those
// listed in axes (a 1-D int64 tensor), or all of them when axes is nil.
func Squeeze(data, axes *builder.Value) *builder.Value {
	ins := operands{{"data", data}, {"axes", axes}}
	return builder.Apply(builder.Call{Op: "Squeeze", InputNames: ins.names(), Inputs: trimInputs(ins.values()),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[0]); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			in := data.Shape()
			if axes == nil {
				if in == nil {
					return one(data.Elem(), nil)
				}
				out := builder.Shape{}
				for _, d := range in {
					if !d.Known() {
						return one(data.Elem(), nil)
					}
					if d.Value != 1 {
						out = append(out, d)
					}
				}
				return one(data.Elem(), out)
			}
			if err := checkElem("axes", axes, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("axes", axes, 1); err != nil {
				return nil, err
			}
			vals, ok := constInts(axes)
			if in == nil || !ok {
				if n, ok := len1D(axes); ok && in != nil {
					return one(data.Elem(), unknownShape(len(in)-n))
				}
				return one(data.Elem(), nil)
			}
			idx, err := normAxes(vals, len(in))
			if err != nil {
				return nil, err
			}
			drop := map[int]bool{}
			for i, a := range idx {
				if in[a].Known() && in[a].Value != 1 {
					return nil, fmt.Errorf("cannot squeeze axis %d: dimension is %s, not 1", vals[i], in[a])
				}
				drop[a] = true
			}
			out := builder.Shape{}
			for i, d := range in {
				if !drop[i] {
					out = append(out, d)
				}
			}
			return one(data.Elem(), out)
		}}, 1)[0]
}

// Unsqueeze inserts dimensions of size 1 into data at the positions listed in
// axes, a 1-D int64 tensor of output axes (ONNX Unsqueeze).
func Unsqueeze(data, axes *builder.Value) *builder.Value {
	ins := operands{{"data", data}, {"axes", axes}}
	return builder.Apply(builder.Call{Op: "Unsqueeze", InputNames: ins.names(), Inputs: trimInputs(ins.values()),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			if err := checkElem("axes", axes, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("axes", axes, 1); err != nil {
				return nil, err
			}
			in := data.Shape()
			vals, ok := constInts(axes)
			if in == nil || !ok {
				if n, ok := len1D(axes); ok && in != nil {
					return one(data.Elem(), unknownShape(len(in)+n))
				}
				return one(data.Elem(), nil)
			}
			rank := len(in) + len(vals)
			idx, err := normAxes(vals, rank)
			if err != nil {
				return nil, err
			}
			ones := make([]bool, rank)
			for _, a := range idx {
				ones[a] = true
			}
			out := make(builder.Shape, rank)
			j := 0
			for i := range out {
				if ones[i] {
					out[i] = builder.D(1)
				} else {
					out[i] = in[j]
					j++
				}
			}
			return one(data.Elem(), out)
		}}, 1)[0]
}

// Concat joins its inputs along axis (ONNX Concat). All inputs have the same
// element type and rank and agree on every other dimension.
func Concat(axis int64, inputs ...*builder.Value) *builder.Value {
	ins := numbered("inputs", inputs)
	return builder.Apply(builder.Call{Op: "Concat", InputNames: ins.names(), Inputs: ins.values(),
		Attrs: []builder.Attr{builder.IntAttr("axis", axis)},
		Infer: func() ([]*builder.Type, error) {
			if len(inputs) == 0 {
				return nil, errors.New("needs at least one input")
			}
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem(ins[0].name, inputs[0], allTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1:]...); err != nil {
				return nil, err
			}
			var out builder.Shape
			var first operand // the input out's shape comes from
			a := -1
			for _, in := range ins {
				s := in.v.Shape()
				if s == nil {
					continue
				}
				if out == nil {
					var err error
					if a, err = builder.NormAxis(axis, len(s)); err != nil {
						return nil, err
					}
					out, first = s.Clone(), in
					continue
				}
				if len(s) != len(out) {
					return nil, fmt.Errorf("%s is %s but %s has rank %d: ranks must match", in.name, in.v.Type(), first.name, len(out))
				}
				for d := range s {
					if d == a {
						if out[d].Known() && s[d].Known() {
							out[d] = builder.D(out[d].Value + s[d].Value)
						} else {
							out[d] = builder.UnknownDim()
						}
						continue
					}
					m, ok := mergeDim(out[d], s[d])
					if !ok {
						return nil, fmt.Errorf("%s is %s: dimension %d is %s, want %s as in the other inputs", in.name, in.v.Type(), d, s[d], out[d])
					}
					out[d] = m
				}
			}
			for _, in := range inputs {
				if in.Shape() == nil && out != nil {
					out[a] = builder.UnknownDim()
				}
			}
			return one(inputs[0].Elem(), out)
		}}, 1)[0]
}

// Split cuts input along axis into numOutputs pieces (ONNX Split, opset 13):
// of the sizes in split (a 1-D int64 tensor with numOutputs entries), or of
// equal size when split is nil.
func Split(input, split *builder.Value, axis int64, numOutputs int) []*builder.Value {
	var attrs []builder.Attr
	if axis != 0 {
		attrs = append(attrs, builder.IntAttr("axis", axis))
	}
	ins := operands{{"input", input}, {"split", split}}
	return builder.Apply(builder.Call{Op: "Split", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[0]); err != nil {
				return nil, err
			}
			if numOutputs < 1 {
				return nil, fmt.Errorf("number of outputs is %d, want at least 1", numOutputs)
			}
			if err := checkElem("input", input, allTypes); err != nil {
				return nil, err
			}
			if split != nil {
				if err := checkElem("split", split, int64Types); err != nil {
					return nil, err
				}
				if err := checkRank("split", split, 1); err != nil {
					return nil, err
				}
			}
			outs := make([]*builder.Type, numOutputs)
			in := input.Shape()
			a := 0
			if in != nil {
				var err error
				if a, err = builder.NormAxis(axis, len(in)); err != nil {
					return nil, err
				}
			}
			sizes := make([]builder.Dim, numOutputs)
			for i := range sizes {
				sizes[i] = builder.UnknownDim()
			}
			if split != nil {
				if vals, ok := constInts(split); ok {
					if len(vals) != numOutputs {
						return nil, fmt.Errorf("split has %d entries but there are %d outputs", len(vals), numOutputs)
					}
					total := int64(0)
					for i, v := range vals {
						if v < 0 {
							return nil, fmt.Errorf("split %v has a negative size", vals)
						}
						sizes[i] = builder.D(v)
						total += v
					}
					if in != nil && in[a].Known() && in[a].Value != total {
						return nil, fmt.Errorf("split %v adds up to %d but axis %d of input is %s", vals, total, axis, in[a])
					}
				} else if n, ok := len1D(split); ok && n != numOutputs {
					return nil, fmt.Errorf("split has %d entries but there are %d outputs", n, numOutputs)
				}
			} else if in != nil && in[a].Known() {
				if in[a].Value%int64(numOutputs) != 0 {
					return nil, fmt.Errorf("axis %d of input is %s, which does not split into %d equal parts", axis, in[a], numOutputs)
				}
				for i := range sizes {
					sizes[i] = builder.D(in[a].Value / int64(numOutputs))
				}
			}
			for i := range outs {
				s := in.Clone()
				if s != nil {
					s[a] = sizes[i]
				}
				outs[i] = &builder.Type{Elem: input.Elem(), Shape: s}
			}
			return outs, nil
		}}, numOutputs)
}

// Slice returns the part of data selected by starts, ends, axes and steps,
// 1-D integer tensors of equal length (ONNX Slice). axes and steps are
// optional (nil): all leading axes and steps of 1. The output shape is
// inferred when they are build-time constants.
func Slice(data, starts, ends, axes, steps *builder.Value) *builder.Value {
	ins := operands{{"data", data}, {"starts", starts}, {"ends", ends}, {"axes", axes}, {"steps", steps}}
	return builder.Apply(builder.Call{Op: "Slice", InputNames: ins.names(), Inputs: trimInputs(ins.values()),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:3]...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			for _, in := range ins[1:] {
				if in.v == nil {
					continue
				}
				if err := checkElem(in.name, in.v, indexTypes); err != nil {
					return nil, err
				}
				if err := checkRank(in.name, in.v, 1); err != nil {
					return nil, err
				}
				if err := sameElem(ins[1], in); err != nil {
					return nil, err
				}
			}
			in := data.Shape()
			if in == nil {
				return one(data.Elem(), nil)
			}
			st, ok1 := constInts(starts)
			en, ok2 := constInts(ends)
			if !ok1 || !ok2 {
				return one(data.Elem(), unknownShape(len(in)))
			}
			if len(st) != len(en) {
				return nil, fmt.Errorf("starts has %d entries but ends has %d", len(st), len(en))
			}
			ax := make([]int64, len(st))
			for i := range ax {
				ax[i] = int64(i)
			}
			if axes != nil {
				var ok bool
				if ax, ok = constInts(axes); !ok {
					return one(data.Elem(), unknownShape(len(in)))
				}
			}
			sp := make([]int64, len(st))
			for i := range sp {
				sp[i] = 1
			}
			if steps != nil {
				var ok bool
				if sp, ok = constInts(steps); !ok {
					return one(data.Elem(), unknownShape(len(in)))
				}
			}
			if len(ax) != len(st) || len(sp) != len(st) {
				return nil, fmt.Errorf("starts, ends, axes and steps must have the same length, got %d, %d, %d and %d", len(st), len(en), len(ax), len(sp))
			}
			a, err := normAxes(ax, len(in))
			if err != nil {
				return nil, err
			}
			out := in.Clone()
			for i, axis := range a {
				if sp[i] == 0 {
					return nil, fmt.Errorf("steps %v has a zero step", sp)
				}
				out[axis] = sliceDim(in[axis], st[i], en[i], sp[i])
			}
			return one(data.Elem(), out)
		}}, 1)[0]
}

// sliceDim is the size of one sliced dimension, as in the ONNX reference.
func sliceDim(d builder.Dim, start, end, step int64) builder.Dim {
	if !d.Known() {
		if start == 0 && step == 1 && end >= math.MaxInt32 {
			return d
		}
		return builder.UnknownDim()
	}
	n := d.Value
	clamp := func(v, lo, hi int64) int64 {
		if v < 0 {
			v += n
		}
		return max(lo, min(v, hi))
	}
	var size int64
	if step > 0 {
		s, e := clamp(start, 0, n), clamp(end, 0, n)
		size = (e - s + step - 1) / step
	} else {
		s, e := clamp(start, -1, n-1), clamp(end, -1, n-1)
		size = (s - e - step - 1) / -step
	}
	return builder.D(max(0, size))
}

// Gather picks entries of data along axis at the given indices (ONNX
// Gather): the output shape is data's with the axis dimension replaced by
// indices' shape. Data [V,H] with indices [batch] gives [batch,H].
func Gather(data, indices *builder.Value, axis int64) *builder.Value {
	var attrs []builder.Attr
	if axis != 0 {
		attrs = append(attrs, builder.IntAttr("axis", axis))
	}
	ins := operands{{"data", data}, {"indices", indices}}
	return builder.Apply(builder.Call{Op: "Gather", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			if err := checkElem("indices", indices, indexTypes); err != nil {
				return nil, err
			}
			if err := checkMinRank("data", data, 1); err != nil {
				return nil, err
			}
			in, idx := data.Shape(), indices.Shape()
			if in == nil {
				return one(data.Elem(), nil)
			}
			a, err := builder.NormAxis(axis, len(in))
			if err != nil {
				return nil, err
			}
			if idx == nil {
				return one(data.Elem(), nil)
			}
			out := append(append(append(builder.Shape{}, in[:a]...), idx...), in[a+1:]...)
			return one(data.Elem(), out)
		}}, 1)[0]
}

// Expand broadcasts input to shape, a 1-D int64 tensor (ONNX Expand). The
// result has the numpy broadcast of input's shape and shape.
func Expand(input, shape *builder.Value) *builder.Value {
	ins := operands{{"input", input}, {"shape", shape}}
	return builder.Apply(builder.Call{Op: "Expand", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("input", input, allTypes); err != nil {
				return nil, err
			}
			if err := checkElem("shape", shape, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("shape", shape, 1); err != nil {
				return nil, err
			}
			target, ok := constInts(shape)
			if !ok {
				n, ok := len1D(shape)
				if !ok || input.Shape() == nil {
					return one(input.Elem(), nil)
				}
				return one(input.Elem(), unknownShape(max(n, input.Rank())))
			}
			ts := make(builder.Shape, len(target))
			for i, t := range target {
				if t < 0 {
					return nil, fmt.Errorf("shape %v has a negative dimension", target)
				}
				ts[i] = builder.D(t)
			}
			s, err := builder.Broadcast(input.Shape(), ts)
			if err != nil {
				return nil, err
			}
			return one(input.Elem(), s)
		}}, 1)[0]
}

// ConstantOfShape returns a tensor of the given shape (a 1-D int64 tensor)
// filled with the single element of value (ONNX ConstantOfShape). A nil
// value means float32 zero.
func ConstantOfShape(shape *builder.Value, value *builder.Tensor) *builder.Value {
	var attrs []builder.Attr
	if value != nil {
		attrs = append(attrs, builder.TensorAttr("value", value))
	}
	ins := operands{{"input", shape}}
	return builder.Apply(builder.Call{Op: "ConstantOfShape", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("input", shape, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("input", shape, 1); err != nil {
				return nil, err
			}
			elem := builder.Float
			if value != nil {
				if err := value.Validate(); err != nil {
					return nil, err
				}
				if value.NumElements() != 1 || len(value.Dims) > 1 {
					return nil, fmt.Errorf("value is %s, want a one-element tensor", value.Type())
				}
				if !castTypes.has(value.DType) || value.DType == builder.String || value.DType == builder.BFloat16 {
					return nil, fmt.Errorf("value has element type %v, which ConstantOfShape does not allow", value.DType)
				}
				elem = value.DType
			}
			if dims, ok := constInts(shape); ok {
				s := make(builder.Shape, len(dims))
				for i, d := range dims {
					if d < 0 {
						return nil, fmt.Errorf("shape %v has a negative dimension", dims)
					}
					s[i] = builder.D(d)
				}
				return one(elem, s)
			}
			if n, ok := len1D(shape); ok {
				return one(elem, unknownShape(n))
			}
			return one(elem, nil)
		}}, 1)[0]
}

// Range returns the 1-D sequence start, start+delta, ... up to but not
// including limit (ONNX Range). The three inputs are scalars of the same
// type; the length is inferred when they are build-time constants.
func Range(start, limit, delta *builder.Value) *builder.Value {
	ins := operands{{"start", start}, {"limit", limit}, {"delta", delta}}
	return builder.Apply(builder.Call{Op: "Range", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("start", start, rangeTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1:]...); err != nil {
				return nil, err
			}
			for _, in := range ins {
				if err := checkRank(in.name, in.v, 0); err != nil {
					return nil, err
				}
			}
			s, ok1 := constInts(start)
			l, ok2 := constInts(limit)
			d, ok3 := constInts(delta)
			if ok1 && ok2 && ok3 {
				if d[0] == 0 {
					return nil, errors.New("delta is 0")
				}
				n := (l[0] - s[0] + d[0] - 1) / d[0]
				if d[0] < 0 {
					n = (s[0] - l[0] - d[0] - 1) / -d[0]
				}
				return one(start.Elem(), builder.Dims(max(0, n)))
			}
			return one(start.Elem(), unknownShape(1))
		}}, 1)[0]
}

// PadOpts holds the optional input and attribute of Pad.
type PadOpts struct {
	// ConstantValue is the scalar to pad with in "constant" mode (default 0).
	ConstantValue *builder.Value
	// Mode is "constant" (the default when empty), "reflect" or "edge".
	Mode string
}

// Pad pads data by pads, a 1-D int64 tensor [x1_begin, x2_begin, ...,
// x1_end, x2_end, ...] (ONNX Pad, opset 13).
func Pad(data, pads *builder.Value, opts PadOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.Mode != "" && opts.Mode != "constant" {
		attrs = append(attrs, builder.StringAttr("mode", opts.Mode))
	}
	cv := opts.ConstantValue
	ins := operands{{"data", data}, {"pads", pads}, {"constant_value", cv}}
	return builder.Apply(builder.Call{Op: "Pad", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:2]...); err != nil {
				return nil, err
			}
			switch opts.Mode {
			case "", "constant", "reflect", "edge":
			default:
				return nil, fmt.Errorf("mode %q is not one of constant, reflect, edge", opts.Mode)
			}
			if err := checkElem("data", data, allTypes); err != nil {
				return nil, err
			}
			if err := checkElem("pads", pads, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("pads", pads, 1); err != nil {
				return nil, err
			}
			if cv != nil {
				if err := sameElem(ins[0], ins[2]); err != nil {
					return nil, err
				}
				if err := checkRank("constant_value", cv, 0, 1); err != nil {
					return nil, err
				}
			}
			in := data.Shape()
			p, ok := constInts(pads)
			if in == nil || !ok {
				return one(data.Elem(), unknownShape(data.Rank()))
			}
			if len(p) != 2*len(in) {
				return nil, fmt.Errorf("pads has %d entries, want %d (twice the rank of data)", len(p), 2*len(in))
			}
			out := in.Clone()
			for i, d := range in {
				if d.Known() {
					out[i] = builder.D(d.Value + p[i] + p[i+len(in)])
				} else if p[i] != 0 || p[i+len(in)] != 0 {
					out[i] = builder.UnknownDim()
				}
			}
			return one(data.Elem(), out)
		}}, 1)[0]
}
