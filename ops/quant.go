package ops

import (
	"fmt"

	"github.com/attnx/attnx/builder"
)

// MicrosoftDomain is the operator set domain of ONNX Runtime's contrib
// operators, such as MatMulNBits. A model using one needs ONNX Runtime; its
// opset import (com.microsoft, version 1) is written by package onnxfile.
const MicrosoftDomain = "com.microsoft"

var (
	quantTypes   = typeSet{builder.Uint8, builder.Int8}
	dequantTypes = typeSet{builder.Int8, builder.Uint8, builder.Int32}
	scaleTypes   = typeSet{builder.Float}
	uint8Types   = typeSet{builder.Uint8}
)

// QuantOpts holds the optional attribute of QuantizeLinear and
// DequantizeLinear.
type QuantOpts struct {
	// Axis is the axis a 1-D scale runs along (per-axis quantization); nil
	// means the schema's default, 1. A negative axis counts from the end.
	Axis *int64
}

func (o QuantOpts) attrs() []builder.Attr {
	if o.Axis == nil || *o.Axis == 1 {
		return nil
	}
	return []builder.Attr{builder.IntAttr("axis", *o.Axis)}
}

// checkQuantParams checks a scale and optional zero point for data x: the
// scale is float32, a scalar or one element (per tensor), or 1-D with
// x.shape[axis] elements (per axis); the zero point has the scale's shape
// and zpTypes' element type.
func checkQuantParams(x, scale, zp *builder.Value, scaleName, zpName string, axis int64, zpTypes typeSet) error {
	if err := checkElem(scaleName, scale, scaleTypes); err != nil {
		return err
	}
	if err := checkRank(scaleName, scale, 0, 1); err != nil {
		return err
	}
	if zp != nil {
		if err := checkElem(zpName, zp, zpTypes); err != nil {
			return err
		}
		if err := checkRank(zpName, zp, 0, 1); err != nil {
			return err
		}
		if scale.Rank() >= 0 && zp.Rank() >= 0 {
			if scale.Rank() != zp.Rank() {
				return fmt.Errorf("%s is %s but %s is %s: they must have the same shape", scaleName, scale.Type(), zpName, zp.Type())
			}
			if scale.Rank() == 1 {
				if _, ok := mergeDim(scale.Shape()[0], zp.Shape()[0]); !ok {
					return fmt.Errorf("%s is %s but %s is %s: they must have the same shape", scaleName, scale.Type(), zpName, zp.Type())
				}
			}
		}
	}
	if scale.Rank() != 1 || x.Rank() < 0 {
		return nil
	}
	a, err := builder.NormAxis(axis, x.Rank())
	if err != nil {
		return fmt.Errorf("per-axis %s (%s): %w", scaleName, scale.Type(), err)
	}
	if d := scale.Shape()[0]; !d.Same(builder.D(1)) && d.Conflicts(x.Shape()[a]) {
		return fmt.Errorf("%s is %s but x is %s: a 1-D scale needs x's dimension %d (axis %d) elements", scaleName, scale.Type(), x.Type(), a, axis)
	}
	return nil
}

func (o QuantOpts) axis() int64 {
	if o.Axis == nil {
		return 1
	}
	return *o.Axis
}

// QuantizeLinear returns saturate(round(x / scale) + zeroPoint) (ONNX
// QuantizeLinear, opset 13): uint8, or the zero point's type (int8 or uint8)
// when given. x is float32 or int32; scale is a float32 scalar, or 1-D along
// opts.Axis for per-axis quantization; zeroPoint (nil-able) has the scale's
// shape.
func QuantizeLinear(x, scale, zeroPoint *builder.Value, opts QuantOpts) *builder.Value {
	ins := operands{{"x", x}, {"y_scale", scale}, {"y_zero_point", zeroPoint}}
	return builder.Apply(builder.Call{Op: "QuantizeLinear", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: opts.attrs(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:2]...); err != nil {
				return nil, err
			}
			if err := checkElem("x", x, typeSet{builder.Float, builder.Int32}); err != nil {
				return nil, err
			}
			if err := checkQuantParams(x, scale, zeroPoint, "y_scale", "y_zero_point", opts.axis(), quantTypes); err != nil {
				return nil, err
			}
			out := builder.Uint8
			if zeroPoint != nil {
				out = zeroPoint.Elem()
			}
			return one(out, x.Shape())
		}}, 1)[0]
}

// DequantizeLinear returns (x - zeroPoint) * scale as float32 (ONNX
// DequantizeLinear, opset 13). x is int8, uint8 or int32; scale is a float32
// scalar, or 1-D along opts.Axis for per-axis quantization (one scale per
// output channel of a weight, one per row of an embedding table); zeroPoint
// (nil-able, meaning 0) has the scale's shape and x's type.
func DequantizeLinear(x, scale, zeroPoint *builder.Value, opts QuantOpts) *builder.Value {
	ins := operands{{"x", x}, {"x_scale", scale}, {"x_zero_point", zeroPoint}}
	return builder.Apply(builder.Call{Op: "DequantizeLinear", InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: opts.attrs(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:2]...); err != nil {
				return nil, err
			}
			if err := checkElem("x", x, dequantTypes); err != nil {
				return nil, err
			}
			if err := checkQuantParams(x, scale, zeroPoint, "x_scale", "x_zero_point", opts.axis(), typeSet{x.Elem()}); err != nil {
				return nil, err
			}
			return one(builder.Float, x.Shape())
		}}, 1)[0]
}

// DynamicQuantizeLinear quantizes the float32 x to uint8 with a scale and
// zero point computed from x's range at run time (ONNX
// DynamicQuantizeLinear): y has x's shape, scale and zeroPoint are scalars
// (float32 and uint8).
func DynamicQuantizeLinear(x *builder.Value) (y, scale, zeroPoint *builder.Value) {
	ins := operands{{"x", x}}
	outs := builder.Apply(builder.Call{Op: "DynamicQuantizeLinear", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("x", x, scaleTypes); err != nil {
				return nil, err
			}
			return []*builder.Type{
				{Elem: builder.Uint8, Shape: x.Shape()},
				{Elem: builder.Float, Shape: builder.Scalar()},
				{Elem: builder.Uint8, Shape: builder.Scalar()},
			}, nil
		}}, 3)
	return outs[0], outs[1], outs[2]
}

// checkMatmulZeroPoint checks a MatMulInteger zero point (or a QLinearMatMul
// scale): a scalar or one element (per tensor), or a 1-D tensor with one
// element per row of A (dim) or column of B.
func checkMatmulZeroPoint(name string, zp, of *builder.Value, dim builder.Dim) error {
	if zp == nil {
		return nil
	}
	if err := checkElem(name, zp, typeSet{of.Elem()}); err != nil {
		return err
	}
	if err := checkRank(name, zp, 0, 1); err != nil {
		return err
	}
	if zp.Rank() == 1 {
		d := zp.Shape()[0]
		if _, ok := mergeDim(d, dim); !ok && !d.Same(builder.D(1)) {
			return fmt.Errorf("%s is %s, want a scalar, 1 or %s elements", name, zp.Type(), dim)
		}
	}
	return nil
}

// rowsCols returns the number of rows of A and columns of B in a matmul
// (unknown dimensions when the rank is unknown or 1-D).
func rowsCols(a, b *builder.Value) (rows, cols builder.Dim) {
	rows, cols = builder.UnknownDim(), builder.UnknownDim()
	if s := a.Shape(); len(s) >= 2 {
		rows = s[len(s)-2]
	}
	if s := b.Shape(); len(s) >= 2 {
		cols = s[len(s)-1]
	}
	return rows, cols
}

// MatMulInteger returns the int32 matrix product (A - aZeroPoint) ·
// (B - bZeroPoint) with numpy matmul semantics (ONNX MatMulInteger). A and B
// are int8 or uint8; a zero point (nil-able, meaning 0) has its matrix's
// type and is a scalar, or 1-D per row of A / per column of B.
func MatMulInteger(a, b, aZeroPoint, bZeroPoint *builder.Value) *builder.Value {
	ins := operands{{"A", a}, {"B", b}, {"a_zero_point", aZeroPoint}, {"b_zero_point", bZeroPoint}}
	return builder.Apply(builder.Call{Op: "MatMulInteger", InputNames: ins.names(), Inputs: trimInputs(ins.values()),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:2]...); err != nil {
				return nil, err
			}
			if err := checkElem("A", a, quantTypes); err != nil {
				return nil, err
			}
			if err := checkElem("B", b, quantTypes); err != nil {
				return nil, err
			}
			rows, cols := rowsCols(a, b)
			if err := checkMatmulZeroPoint("a_zero_point", aZeroPoint, a, rows); err != nil {
				return nil, err
			}
			if err := checkMatmulZeroPoint("b_zero_point", bZeroPoint, b, cols); err != nil {
				return nil, err
			}
			out, err := matmulShape(a, b)
			if err != nil {
				return nil, err
			}
			return one(builder.Int32, out)
		}}, 1)[0]
}

// QLinearMatMul returns the quantized matrix product of quantized A and B
// (ONNX QLinearMatMul, opset 10): it dequantizes A and B with their scales
// and zero points, multiplies, and quantizes the result with yScale and
// yZeroPoint. A, B and the result are int8 or uint8 (each its zero point's
// type); scales are float32. All eight inputs are required. A's scale and
// zero point are scalars or 1-D per row, B's per column, y's scalars.
func QLinearMatMul(a, aScale, aZeroPoint, b, bScale, bZeroPoint, yScale, yZeroPoint *builder.Value) *builder.Value {
	ins := operands{{"a", a}, {"a_scale", aScale}, {"a_zero_point", aZeroPoint}, {"b", b}, {"b_scale", bScale},
		{"b_zero_point", bZeroPoint}, {"y_scale", yScale}, {"y_zero_point", yZeroPoint}}
	return builder.Apply(builder.Call{Op: "QLinearMatMul", InputNames: ins.names(), Inputs: ins.values(),
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins...); err != nil {
				return nil, err
			}
			if err := checkElem("a", a, quantTypes); err != nil {
				return nil, err
			}
			if err := checkElem("b", b, quantTypes); err != nil {
				return nil, err
			}
			if err := checkElem("y_zero_point", yZeroPoint, quantTypes); err != nil {
				return nil, err
			}
			rows, cols := rowsCols(a, b)
			for _, p := range []struct {
				scale, zp operand
				of        *builder.Value
				dim       builder.Dim
			}{
				{ins[1], ins[2], a, rows},
				{ins[4], ins[5], b, cols},
				{ins[6], ins[7], yZeroPoint, builder.D(1)},
			} {
				if err := checkElem(p.scale.name, p.scale.v, scaleTypes); err != nil {
					return nil, err
				}
				if err := checkMatmulZeroPoint(p.scale.name, p.scale.v, p.scale.v, p.dim); err != nil {
					return nil, err
				}
				if err := checkMatmulZeroPoint(p.zp.name, p.zp.v, p.of, p.dim); err != nil {
					return nil, err
				}
			}
			out, err := matmulShape(a, b)
			if err != nil {
				return nil, err
			}
			return one(yZeroPoint.Elem(), out)
		}}, 1)[0]
}

// MatMulNBitsOpts holds the optional attributes and inputs of MatMulNBits.
type MatMulNBitsOpts struct {
	// Bits is the width of a quantized weight: 2, 4 or 8; 0 means 4.
	Bits int64
	// AccuracyLevel is the lowest precision A may be computed in: 0 (unset,
	// float32), 1 (float32), 2 (float16), 3 (bfloat16) or 4 (int8: A is
	// quantized block-wise at run time, which is much faster on CPUs with
	// integer dot-product instructions).
	AccuracyLevel int64
	// ZeroPoints holds the zero points: uint8, packed Bits at a time, N *
	// ceil(blocks*Bits/8) elements ([N*that] or [N, that]); or A's float
	// type, [N * blocks] elements, unpacked. Nil means 2^(Bits-1).
	ZeroPoints *builder.Value
	// Bias, when not nil, is added to the result: [N], A's type.
	Bias *builder.Value
}

// MatMulNBits returns A · Wᵀ where W [n, k] is quantized block-wise along k
// to Bits bits (ONNX Runtime's com.microsoft MatMulNBits, version 1): B is
// uint8 [n, ceil(k/blockSize), blockSize*Bits/8], the packed quantized
// values, and scales float32 [n * ceil(k/blockSize)] (or [n, blocks]), one
// per block. A is [..., k]; the result is [..., n]. blockSize is a power of
// two, at least 16. A model using it runs only in ONNX Runtime. Package
// quant writes B, scales and zero points in this layout (quant.Blockwise).
func MatMulNBits(a, b, scales *builder.Value, k, n, blockSize int64, opts MatMulNBitsOpts) *builder.Value {
	bits := opts.Bits
	if bits == 0 {
		bits = 4
	}
	attrs := []builder.Attr{builder.IntAttr("K", k), builder.IntAttr("N", n), builder.IntAttr("block_size", blockSize)}
	if opts.Bits != 0 {
		attrs = append(attrs, builder.IntAttr("bits", bits))
	}
	if opts.AccuracyLevel != 0 {
		attrs = append(attrs, builder.IntAttr("accuracy_level", opts.AccuracyLevel))
	}
	ins := operands{{"A", a}, {"B", b}, {"scales", scales}, {"zero_points", opts.ZeroPoints}, {"g_idx", nil}, {"bias", opts.Bias}}
	return builder.Apply(builder.Call{Op: "MatMulNBits", Domain: MicrosoftDomain, InputNames: ins.names(), Inputs: trimInputs(ins.values()), Attrs: attrs,
		Infer: func() ([]*builder.Type, error) {
			if err := required(ins[:3]...); err != nil {
				return nil, err
			}
			if bits != 2 && bits != 4 && bits != 8 {
				return nil, fmt.Errorf("bits is %d, want 2, 4 or 8", bits)
			}
			if blockSize < 16 || blockSize&(blockSize-1) != 0 {
				return nil, fmt.Errorf("block_size is %d, want a power of two of at least 16", blockSize)
			}
			if k <= 0 || n <= 0 {
				return nil, fmt.Errorf("K is %d and N is %d, want positive sizes", k, n)
			}
			if opts.AccuracyLevel < 0 || opts.AccuracyLevel > 4 {
				return nil, fmt.Errorf("accuracy_level is %d, want 0 to 4", opts.AccuracyLevel)
			}
			if err := checkElem("A", a, typeSet{builder.Float, builder.Float16}); err != nil {
				return nil, err
			}
			if err := checkMinRank("A", a, 1); err != nil {
				return nil, err
			}
			if s := a.Shape(); s != nil && s[len(s)-1].Conflicts(builder.D(k)) {
				return nil, fmt.Errorf("A is %s, want its last dimension to be K = %d", a.Type(), k)
			}
			blocks := (k + blockSize - 1) / blockSize
			if err := checkElem("B", b, uint8Types); err != nil {
				return nil, err
			}
			if err := wantDims("B", b, n, blocks, blockSize*bits/8); err != nil {
				return nil, err
			}
			if err := sameElem(ins[0], ins[2]); err != nil {
				return nil, err
			}
			if err := wantCount("scales", scales, n, blocks); err != nil {
				return nil, err
			}
			if zp := opts.ZeroPoints; zp != nil {
				if zp.Elem() == builder.Uint8 {
					if err := wantCount("zero_points", zp, n, (blocks*bits+7)/8); err != nil {
						return nil, err
					}
				} else {
					if err := sameElem(ins[0], ins[3]); err != nil {
						return nil, fmt.Errorf("%w (or uint8, packed)", err)
					}
					if err := wantCount("zero_points", zp, n, blocks); err != nil {
						return nil, err
					}
				}
			}
			if opts.Bias != nil {
				if err := sameElem(ins[0], ins[5]); err != nil {
					return nil, err
				}
				if err := wantDims("bias", opts.Bias, n); err != nil {
					return nil, err
				}
			}
			if a.Shape() == nil {
				return one(a.Elem(), nil)
			}
			out := a.Shape().Clone()
			out[len(out)-1] = builder.D(n)
			return one(a.Elem(), out)
		}}, 1)[0]
}

// wantDims checks that v has exactly the given (known) dimensions, where
// its shape is known.
func wantDims(name string, v *builder.Value, dims ...int64) error {
	want := make(builder.Shape, len(dims))
	for i, d := range dims {
		want[i] = builder.D(d)
	}
	if err := checkRank(name, v, len(dims)); err != nil {
		return fmt.Errorf("%w %s", err, want)
	}
	for i, d := range v.Shape() {
		if d.Conflicts(want[i]) {
			return fmt.Errorf("%s is %s, want %s", name, v.Type(), want)
		}
	}
	return nil
}

// wantCount checks that v is [rows*cols] or [rows, cols], where its shape
// is known.
func wantCount(name string, v *builder.Value, rows, cols int64) error {
	switch v.Rank() {
	case -1:
		return nil
	case 1:
		return wantDims(name, v, rows*cols)
	case 2:
		return wantDims(name, v, rows, cols)
	}
	return fmt.Errorf("%s is %s, want [%d] or [%d,%d]", name, v.Type(), rows*cols, rows, cols)
}
