package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// This file holds the selection operators a search needs: TopK, the
// per-element gather GatherElements, the running sum CumSum and Mod, which
// splits a flattened index.

var (
	topKTypes   = typeSet{builder.Uint8, builder.Uint16, builder.Uint32, builder.Uint64, builder.Int8, builder.Int16, builder.Int32, builder.Int64, builder.Float16, builder.Float, builder.Double, builder.BFloat16}
	cumSumTypes = typeSet{builder.Uint32, builder.Uint64, builder.Int32, builder.Int64, builder.Float16, builder.Float, builder.Double, builder.BFloat16}
)

// TopKOpts holds the optional attributes of TopK.
type TopKOpts struct {
	// Axis is the axis to select along; nil means the schema's default, -1.
	Axis *int64
	// Smallest selects the k smallest elements instead of the largest.
	Smallest bool
	// Unsorted leaves the order of the selected elements to the runtime
	// (sorted=0) instead of sorting them.
	Unsorted bool
}

// TopK returns the k largest (or smallest) elements of x along an axis and
// their int64 indices (ONNX TopK, opset 11). k is an int64 tensor of one
// element, [1]. Sorted results run from the largest down (from the smallest
// up with Smallest), and of two equal elements the one with the lower index
// comes first: the operator's definition, which ONNX Runtime follows.
func TopK(x, k *builder.Value, opts TopKOpts) (values, indices *builder.Value) {
	var attrs []builder.Attr
	if opts.Axis != nil && *opts.Axis != -1 {
		attrs = append(attrs, builder.IntAttr("axis", *opts.Axis))
	}
	if opts.Smallest {
		attrs = append(attrs, builder.IntAttr("largest", 0))
	}
	if opts.Unsorted {
		attrs = append(attrs, builder.IntAttr("sorted", 0))
	}
	ins := operands{{"X", x}, {"K", k}}
	outs := builder.Apply(builder.Call{Op: "TopK", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("X", x, topKTypes); err != nil {
				return nil, err
			}
			if err := checkElem("K", k, int64Types); err != nil {
				return nil, err
			}
			if err := checkRank("K", k, 1); err != nil {
				return nil, err
			}
			if n, ok := len1D(k); ok && n != 1 {
				return nil, fmt.Errorf("K is %s, want one element", k.Type())
			}
			if err := checkMinRank("X", x, 1); err != nil {
				return nil, err
			}
			in := x.Shape()
			if in == nil {
				return []*builder.Type{{Elem: x.Elem()}, {Elem: builder.Int64}}, nil
			}
			axis := int64(-1)
			if opts.Axis != nil {
				axis = *opts.Axis
			}
			a, err := builder.NormAxis(axis, len(in))
			if err != nil {
				return nil, err
			}
			out := in.Clone()
			out[a] = builder.UnknownDim()
			if kv, ok := constInts(k); ok {
				if kv[0] < 0 {
					return nil, fmt.Errorf("K is %d, want >= 0", kv[0])
				}
				if in[a].Known() && kv[0] > in[a].Value {
					return nil, fmt.Errorf("K is %d but X has only %d elements along axis %d", kv[0], in[a].Value, axis)
				}
				out[a] = builder.D(kv[0])
			}
			return []*builder.Type{{Elem: x.Elem(), Shape: out}, {Elem: builder.Int64, Shape: out.Clone()}}, nil
		}}, 2)
	return outs[0], outs[1]
}

// GatherElements returns, for each position of indices, the element of data
// at that position with the axis coordinate replaced by the index there
// (ONNX GatherElements, opset 13): out[i][j] = data[indices[i][j]][j] for
// axis 0, data[i][indices[i][j]] for axis 1. data and indices have the same
// rank; the result has indices' shape.
func GatherElements(data, indices *builder.Value, axis int64) *builder.Value {
	var attrs []builder.Attr
	if axis != 0 {
		attrs = append(attrs, builder.IntAttr("axis", axis))
	}
	ins := operands{{"data", data}, {"indices", indices}}
	return builder.Apply(builder.Call{Op: "GatherElements", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
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
			if r := data.Rank(); r >= 0 {
				if _, err := builder.NormAxis(axis, r); err != nil {
					return nil, err
				}
				if err := checkRank("indices", indices, r); err != nil {
					return nil, fmt.Errorf("%w (data's rank)", err)
				}
			}
			return one(data.Elem(), indices.Shape())
		}}, 1)[0]
}

// CumSumOpts holds the optional attributes of CumSum.
type CumSumOpts struct {
	// Exclusive leaves each element out of its own sum: the first sum is 0.
	Exclusive bool
	// Reverse sums from the end of the axis.
	Reverse bool
}

// CumSum returns the running sums of x along axis, a scalar int32 or int64
// tensor (ONNX CumSum, opset 14). The result has x's shape.
func CumSum(x, axis *builder.Value, opts CumSumOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.Exclusive {
		attrs = append(attrs, builder.IntAttr("exclusive", 1))
	}
	if opts.Reverse {
		attrs = append(attrs, builder.IntAttr("reverse", 1))
	}
	ins := operands{{"x", x}, {"axis", axis}}
	return builder.Apply(builder.Call{Op: "CumSum", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("x", x, cumSumTypes); err != nil {
				return nil, err
			}
			if err := checkElem("axis", axis, indexTypes); err != nil {
				return nil, err
			}
			if err := checkRank("axis", axis, 0, 1); err != nil {
				return nil, err
			}
			if a, ok := constInts(axis); ok && len(a) == 1 && x.Rank() >= 0 {
				if _, err := builder.NormAxis(a[0], x.Rank()); err != nil {
					return nil, err
				}
			}
			return one(x.Elem(), x.Shape())
		}}, 1)[0]
}

// ModOpts holds the optional attribute of Mod.
type ModOpts struct {
	// Fmod takes the sign of the dividend (C fmod) instead of the
	// divisor's (Python's %); floating-point inputs require it.
	Fmod bool
}

// Mod returns the remainder of a / b elementwise, with numpy broadcasting
// (ONNX Mod, opset 13): by default with the sign of b, as Python's %.
func Mod(a, b *builder.Value, opts ModOpts) *builder.Value {
	var attrs []builder.Attr
	if opts.Fmod {
		attrs = append(attrs, builder.IntAttr("fmod", 1))
	}
	ins := operands{{"A", a}, {"B", b}}
	return builder.Apply(builder.Call{Op: "Mod", InputNames: ins.names(), Inputs: ins.values(), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, numTypes); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[1]); err != nil {
				return nil, err
			}
			if a.Elem().IsFloat() && !opts.Fmod {
				return nil, fmt.Errorf("A is %s: floating-point Mod needs Fmod", a.Type())
			}
			s, err := builder.Broadcast(a.Shape(), b.Shape())
			if err != nil {
				return nil, err
			}
			return one(a.Elem(), s)
		}}, 1)[0]
}
