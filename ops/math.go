package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// MatMul returns the matrix product of a and b with numpy matmul semantics
// (ONNX MatMul): the last two dimensions are multiplied, leading ones
// broadcast, and a 1-D a (b) gets a dimension prepended (appended) that is
// then removed. [batch,S,H] x [H,K] gives [batch,S,K].
func MatMul(a, b *builder.Value) *builder.Value {
	ins := operands{{"A", a}, {"B", b}}
	return builder.Apply(builder.Call{Op: "MatMul", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, matmulTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1]); err != nil {
				return nil, err
			}
			out, err := matmulShape(a, b)
			if err != nil {
				return nil, err
			}
			return one(a.Elem(), out)
		}}, 1)[0]
}

// matmulShape checks the ranks and inner dimensions of a numpy matmul of a
// and b and returns the result's shape (nil when a rank is unknown). MatMul,
// MatMulInteger and QLinearMatMul share it.
func matmulShape(a, b *builder.Value) (builder.Shape, error) {
	if err := checkMinRank("A", a, 1); err != nil {
		return nil, err
	}
	if err := checkMinRank("B", b, 1); err != nil {
		return nil, err
	}
	sa, sb := a.Shape(), b.Shape()
	if sa == nil || sb == nil {
		return nil, nil
	}
	ea, eb := sa.Clone(), sb.Clone()
	if len(ea) == 1 {
		ea = builder.Shape{builder.D(1), ea[0]}
	}
	if len(eb) == 1 {
		eb = builder.Shape{eb[0], builder.D(1)}
	}
	k1, k2 := ea[len(ea)-1], eb[len(eb)-2]
	if k1.Conflicts(k2) {
		return nil, fmt.Errorf("inner dimensions differ: A is %s and B is %s", a.Type(), b.Type())
	}
	batch, err := builder.Broadcast(ea[:len(ea)-2], eb[:len(eb)-2])
	if err != nil {
		return nil, fmt.Errorf("batch dimensions of A (%s) and B (%s) do not broadcast: %w", a.Type(), b.Type(), err)
	}
	out := batch
	if len(sa) > 1 {
		out = append(out, ea[len(ea)-2])
	}
	if len(sb) > 1 {
		out = append(out, eb[len(eb)-1])
	}
	return out, nil
}

// GemmOpts holds the optional attributes of Gemm.
type GemmOpts struct {
	// Alpha scales A*B (default 1).
	Alpha *float32
	// Beta scales C (default 1).
	Beta *float32
	// TransA and TransB transpose A and B before multiplying.
	TransA, TransB bool
}

// Gemm returns alpha*A'*B' + beta*C for 2-D A and B, where ' is an optional
// transpose and C (nil-able) broadcasts to the [M,N] result (ONNX Gemm).
func Gemm(a, b, c *builder.Value, opts GemmOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.Alpha != nil {
		attrs = append(attrs, builder.FloatAttr("alpha", *opts.Alpha))
	}
	if opts.Beta != nil {
		attrs = append(attrs, builder.FloatAttr("beta", *opts.Beta))
	}
	if opts.TransA {
		attrs = append(attrs, builder.IntAttr("transA", 1))
	}
	if opts.TransB {
		attrs = append(attrs, builder.IntAttr("transB", 1))
	}
	ins := operands{{"A", a}, {"B", b}, {"C", c}}
	return builder.Apply(builder.Call{Op: "Gemm", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:2]...); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, matmulTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1:]...); err != nil {
				return nil, err
			}
			if err := checkRank("A", a, 2); err != nil {
				return nil, err
			}
			if err := checkRank("B", b, 2); err != nil {
				return nil, err
			}
			sa, sb := unknownShape(2), unknownShape(2)
			if a.Shape() != nil {
				sa = a.Shape().Clone()
			}
			if b.Shape() != nil {
				sb = b.Shape().Clone()
			}
			if opts.TransA {
				sa[0], sa[1] = sa[1], sa[0]
			}
			if opts.TransB {
				sb[0], sb[1] = sb[1], sb[0]
			}
			if sa[1].Conflicts(sb[0]) {
				return nil, fmt.Errorf("inner dimensions differ: A is %s and B is %s (transA=%v, transB=%v)", a.Type(), b.Type(), opts.TransA, opts.TransB)
			}
			out := builder.Shape{sa[0], sb[1]}
			if c != nil {
				if c.Rank() > 2 {
					return nil, fmt.Errorf("C is %s, want rank 2 or less", c.Type())
				}
				s, err := builder.Broadcast(out, c.Shape())
				if err != nil || (s != nil && (s[0].Conflicts(out[0]) || s[1].Conflicts(out[1]))) {
					return nil, fmt.Errorf("C is %s, which does not broadcast to the result %s", c.Type(), out)
				}
			}
			return one(a.Elem(), out)
		}}, 1)[0]
}

// axisOp adds Softmax-like operators: same type out, one axis attribute.
func axisOp(op string, x *builder.Value, axis, def int64) *builder.Value {
	var attrs []builder.Attr
	if axis != def {
		attrs = append(attrs, builder.IntAttr("axis", axis))
	}
	ins := operands{{"input", x}}
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("input", x, floatTypes); err != nil {
				return nil, err
			}
			if r := x.Rank(); r >= 0 {
				if _, err := builder.NormAxis(axis, r); err != nil {
					return nil, err
				}
			}
			return one(x.Elem(), x.Shape())
		}}, 1)[0]
}

// Softmax returns exp(x)/sum(exp(x)) along axis (ONNX Softmax, opset 13;
// the schema default axis is -1).
func Softmax(x *builder.Value, axis int64) *builder.Value { return axisOp("Softmax", x, axis, -1) }

// LogSoftmax returns log(softmax(x)) along axis (ONNX LogSoftmax, opset 13;
// the schema default axis is -1).
func LogSoftmax(x *builder.Value, axis int64) *builder.Value {
	return axisOp("LogSoftmax", x, axis, -1)
}

// reduceShape works out the shape of a reduction over axes (nil: all axes,
// unless noop).
func reduceShape(in builder.Shape, axes []int64, keep bool) (builder.Shape, error) {
	if in == nil {
		return nil, nil
	}
	var drop []bool
	if len(axes) == 0 {
		drop = make([]bool, len(in))
		for i := range drop {
			drop[i] = true
		}
	} else {
		idx, err := normAxes(axes, len(in))
		if err != nil {
			return nil, err
		}
		drop = make([]bool, len(in))
		for _, a := range idx {
			drop[a] = true
		}
	}
	out := builder.Shape{}
	for i, d := range in {
		switch {
		case !drop[i]:
			out = append(out, d)
		case keep:
			out = append(out, builder.D(1))
		}
	}
	return out, nil
}

// ReduceSumOpts holds the optional attributes of ReduceSum.
type ReduceSumOpts struct {
	// NoKeepDims drops the reduced dimensions (keepdims=0) instead of
	// keeping them with size 1.
	NoKeepDims bool
	// NoopWithEmptyAxes makes an empty or missing axes input mean "reduce
	// nothing" instead of "reduce everything".
	NoopWithEmptyAxes bool
}

// ReduceSum sums data over axes, a 1-D int64 tensor (ONNX ReduceSum, opset
// 13, where axes is an input). A nil axes reduces over all dimensions.
func ReduceSum(data, axes *builder.Value, opts ReduceSumOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.NoKeepDims {
		attrs = append(attrs, builder.IntAttr("keepdims", 0))
	}
	if opts.NoopWithEmptyAxes {
		attrs = append(attrs, builder.IntAttr("noop_with_empty_axes", 1))
	}
	ins := operands{{"data", data}, {"axes", axes}}
	return builder.Apply(builder.Call{Op: "ReduceSum", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[0]); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, reduceTypes); err != nil {
				return nil, err
			}
			var vals []int64
			if axes != nil {
				if err := checkElem("axes", axes, int64Types); err != nil {
					return nil, err
				}
				if err := checkRank("axes", axes, 1); err != nil {
					return nil, err
				}
				var ok bool
				if vals, ok = constInts(axes); !ok {
					if opts.NoKeepDims {
						return one(data.Elem(), nil)
					}
					return one(data.Elem(), unknownShape(data.Rank()))
				}
			}
			if len(vals) == 0 && opts.NoopWithEmptyAxes {
				return one(data.Elem(), data.Shape())
			}
			s, err := reduceShape(data.Shape(), vals, !opts.NoKeepDims)
			if err != nil {
				return nil, err
			}
			return one(data.Elem(), s)
		}}, 1)[0]
}

// ReduceOpts holds the attributes of the reductions that take axes as an
// attribute at opset 17 (ReduceMax, ReduceMin, ReduceMean, ReduceProd).
type ReduceOpts struct {
	// Axes lists the dimensions to reduce; nil reduces all of them.
	Axes []int64
	// NoKeepDims drops the reduced dimensions (keepdims=0) instead of
	// keeping them with size 1.
	NoKeepDims bool
}

func reduceAttrOp(op string, data *builder.Value, opts ReduceOpts, allowed typeSet) *builder.Value {
	var attrs []builder.Attr
	if opts.Axes != nil {
		attrs = append(attrs, builder.IntsAttr("axes", opts.Axes))
	}
	if opts.NoKeepDims {
		attrs = append(attrs, builder.IntAttr("keepdims", 0))
	}
	ins := operands{{"data", data}}
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, allowed); err != nil {
				return nil, err
			}
			s, err := reduceShape(data.Shape(), opts.Axes, !opts.NoKeepDims)
			if err != nil {
				return nil, err
			}
			return one(data.Elem(), s)
		}}, 1)[0]
}

var reduceMaxTypes = append(append(typeSet{}, reduceTypes...), builder.Uint8, builder.Int8)

// ReduceMax returns the maximum of data over opts.Axes (ONNX ReduceMax; at
// opset 17 axes is an attribute, it becomes an input at opset 18).
func ReduceMax(data *builder.Value, opts ReduceOpts) *builder.Value {
	return reduceAttrOp("ReduceMax", data, opts, reduceMaxTypes)
}

// ReduceMin returns the minimum of data over opts.Axes (ONNX ReduceMin;
// axes is an attribute at opset 17).
func ReduceMin(data *builder.Value, opts ReduceOpts) *builder.Value {
	return reduceAttrOp("ReduceMin", data, opts, reduceMaxTypes)
}

// ReduceMean returns the mean of data over opts.Axes (ONNX ReduceMean; axes
// is an attribute at opset 17).
func ReduceMean(data *builder.Value, opts ReduceOpts) *builder.Value {
	return reduceAttrOp("ReduceMean", data, opts, reduceTypes)
}

// ArgOpts holds the optional attributes of ArgMax and ArgMin.
type ArgOpts struct {
	// NoKeepDims drops the reduced dimension (keepdims=0).
	NoKeepDims bool
	// SelectLastIndex picks the last index among equal extremes instead of
	// the first.
	SelectLastIndex bool
}

func argOp(op string, data *builder.Value, axis int64, opts ArgOpts) *builder.Value {
	var attrs []builder.Attr
	if axis != 0 {
		attrs = append(attrs, builder.IntAttr("axis", axis))
	}
	if opts.NoKeepDims {
		attrs = append(attrs, builder.IntAttr("keepdims", 0))
	}
	if opts.SelectLastIndex {
		attrs = append(attrs, builder.IntAttr("select_last_index", 1))
	}
	ins := operands{{"data", data}}
	return builder.Apply(builder.Call{Op: op, InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("data", data, numTypes); err != nil {
				return nil, err
			}
			if data.Shape() == nil {
				return one(builder.Int64, nil)
			}
			s, err := reduceShape(data.Shape(), []int64{axis}, !opts.NoKeepDims)
			if err != nil {
				return nil, err
			}
			return one(builder.Int64, s)
		}}, 1)[0]
}

// ArgMax returns the int64 indices of the largest elements of data along
// axis (ONNX ArgMax).
func ArgMax(data *builder.Value, axis int64, opts ArgOpts) *builder.Value {
	return argOp("ArgMax", data, axis, opts)
}

// ArgMin returns the int64 indices of the smallest elements of data along
// axis (ONNX ArgMin).
func ArgMin(data *builder.Value, axis int64, opts ArgOpts) *builder.Value {
	return argOp("ArgMin", data, axis, opts)
}
