// Package qlayer builds the layers of a decoder step (a linear layer, an
// LSTM or GRU cell as one product plus elementwise gates) in float32 or in
// one of the reduced-precision forms ONNX Runtime runs: the graphs
// quantized exports are made of, and the candidates internal/opbench measures.
//
// Weights are given in PyTorch's layout (a Linear's weight is [out, in])
// and added as initializers of the graph passed in, which should be the
// model's main graph; the operators go where their inputs are, so a layer
// can be built inside a Loop body with its weights outside it.
package qlayer

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
	"github.com/attnx/attnx/quant"
)

// Form is how a linear layer computes x · Wᵀ + b.
type Form int

// The forms of a linear layer.
const (
	// Float is float32: Gemm(transB) for 2-D inputs, MatMul with the
	// transposed weight plus Add otherwise.
	Float Form = iota
	// Dequantize stores int8 weights with one scale per output and
	// dequantizes them in the graph (DequantizeLinear, then MatMul).
	Dequantize
	// DynamicInt8 quantizes x to uint8 at run time, each row with its own
	// scale and zero point (rowQuantize), multiplies by int8 weights with
	// one scale per output (MatMulInteger), subtracts the zero point's
	// share in int32, then rescales: Mul(Cast(acc), x_scale * w_scales). A
	// row's result depends on that row alone, so a batch decodes each row
	// as it decodes alone. Scheme.PerTensor quantizes the whole x with one
	// scale instead (DynamicQuantizeLinear, which ONNX Runtime fuses with
	// the product into one DynamicQuantizeMatMul), making each row's result
	// depend on the other rows.
	DynamicInt8
	// QLinear is DynamicInt8's product done by QLinearMatMul, whose output
	// is requantized to uint8 over Scheme.OutRange and dequantized after.
	QLinear
	// NBits stores the weights block-wise quantized for ONNX Runtime's
	// com.microsoft MatMulNBits (Scheme.Bits, BlockSize, AccuracyLevel).
	NBits
)

// Scheme is one way of computing a linear layer.
type Scheme struct {
	// Form is the computation.
	Form Form
	// Uint8Weights stores DynamicInt8 weights as uint8 with zero point 128
	// instead of int8 (ONNX Runtime's u8u8 kernels instead of u8s8).
	Uint8Weights bool
	// PerTensor quantizes DynamicInt8's activations with one scale for
	// the whole tensor, as DynamicQuantizeLinear does, not one per row;
	// kept to measure what per-row scales cost.
	PerTensor bool
	// OutRange is the [min, max] QLinear's output is quantized over.
	OutRange [2]float32
	// Bits, BlockSize and AccuracyLevel configure NBits. Asymmetric stores
	// NBits' zero point per block instead of the default 2^(Bits-1); for
	// DynamicInt8 per row it gives each row its own zero point (the row's
	// [min, max] over 256 levels, corrected with the weights' column sums)
	// instead of the symmetric max|x|/127 with zero point 128.
	Bits, BlockSize, AccuracyLevel int
	Asymmetric                     bool
}

// String names the scheme, such as "int8 DynamicQuantizeLinear+MatMulInteger"
// or "4-bit MatMulNBits block 32 acc 4".
func (s Scheme) String() string {
	switch s.Form {
	case Float:
		return "fp32"
	case Dequantize:
		return "int8 DequantizeLinear+MatMul"
	case DynamicInt8:
		name := "int8 per-row QuantizeLinear+MatMulInteger"
		if s.Asymmetric {
			name += " asym"
		}
		if s.PerTensor {
			name = "int8 DynamicQuantizeLinear+MatMulInteger"
		}
		if s.Uint8Weights {
			name += " (u8 weights)"
		}
		return name
	case QLinear:
		return "int8 QLinearMatMul"
	case NBits:
		zp := ""
		if s.Asymmetric {
			zp = " asym"
		}
		return fmt.Sprintf("%d-bit MatMulNBits block %d acc %d%s", s.Bits, s.BlockSize, s.AccuracyLevel, zp)
	}
	return fmt.Sprintf("Form(%d)", int(s.Form))
}

// Layer is a linear layer's parameters, y = x · Wᵀ + B.
type Layer struct {
	// W is the weight, [Out, In] row-major (PyTorch's layout).
	W []float32
	// B is the bias, [Out], or nil.
	B []float32
	// Out and In are W's dimensions.
	Out, In int
}

// Built reports what a layer added to the graph.
type Built struct {
	// Y is the layer's output, x's shape with the last dimension Out.
	Y *builder.Value
	// Bytes is the size of the initializers added (weights, scales, bias).
	Bytes int
}

// Linear adds the layer x · Wᵀ + B computed as s says. Weight initializers
// go into g (named name.*), operators where x is. A problem (weights that
// cannot be quantized, a bad scheme) is recorded as g's error, and the
// returned value is then dead, as with package ops.
func Linear(g *builder.Graph, name string, x *builder.Value, l Layer, s Scheme) Built {
	fail := func(err error) Built {
		g.Fail(fmt.Errorf("qlayer: %s (%s): %w", name, s, err))
		return Built{Y: ops.Identity(x)}
	}
	if len(l.W) != l.Out*l.In || (l.B != nil && len(l.B) != l.Out) {
		return fail(fmt.Errorf("weight has %d values and bias %d for [%d, %d]", len(l.W), len(l.B), l.Out, l.In))
	}
	bytes := 0
	init := func(suffix string, t *builder.Tensor) *builder.Value {
		bytes += len(t.Raw)
		return g.Init(name+"."+suffix, t)
	}
	var bias *builder.Value
	if l.B != nil {
		bias = init("bias", builder.FloatTensor([]int64{int64(l.Out)}, l.B))
	}
	addBias := func(y *builder.Value) *builder.Value {
		if bias == nil {
			return y
		}
		return ops.Add(y, bias)
	}
	switch s.Form {
	case Float:
		w := builder.FloatTensor([]int64{int64(l.Out), int64(l.In)}, l.W)
		if x.Rank() == 2 {
			return Built{Y: ops.Gemm(x, init("weight", w), bias, ops.GemmOpts{TransB: true}), Bytes: bytes}
		}
		wt := builder.FloatTensor([]int64{int64(l.In), int64(l.Out)}, transpose(l.W, l.Out, l.In))
		return Built{Y: addBias(ops.MatMul(x, init("weight^T", wt))), Bytes: bytes}
	case Dequantize, DynamicInt8, QLinear:
		q, err := quant.QuantizeInt8(l.W, l.Out, l.In, 0)
		if err != nil {
			return fail(err)
		}
		qt := q.Transpose() // [In, Out], one scale per column
		scales := init("scale", qt.ScaleTensor())
		wq := qt.Tensor()
		switch s.Form {
		case Dequantize:
			return Built{Y: addBias(ops.MatMul(x, ops.DequantizeLinear(init("weight_q^T", wq), scales, nil, ops.QuantOpts{}))), Bytes: bytes}
		case DynamicInt8:
			var w, wzp *builder.Value
			if s.Uint8Weights {
				w = init("weight_u8^T", &builder.Tensor{DType: builder.Uint8, Dims: wq.Dims, Raw: qt.Uint8()})
				wzp = init("weight_zero_point", &builder.Tensor{DType: builder.Uint8, Raw: []byte{128}})
			} else {
				w = init("weight_q^T", wq)
			}
			if s.PerTensor {
				xq, xs, xzp := ops.DynamicQuantizeLinear(x)
				acc := ops.Cast(ops.MatMulInteger(xq, w, xzp, wzp), builder.Float)
				return Built{Y: addBias(ops.Mul(acc, ops.Mul(xs, scales))), Bytes: bytes}
			}
			if s.Asymmetric {
				// Per row: Σ_k (xq_k - zp) w_k = Σ_k xq_k w_k - zp Σ_k w_k,
				// the second term from the weights' column sums, in int32
				// (ONNX Runtime's MatMulInteger takes one zero point for A
				// only). With u8 weights MatMulInteger subtracts their zero
				// point 128 itself: the sums are the int8 weights' own.
				colSums := init("weight_column_sums", builder.Int32Tensor([]int64{int64(l.Out)}, qt.ColumnSums()))
				x2, back := rows2D(g, x, l.In, l.Out)
				xq, xs, xzp := rowQuantize(g, x2, init("row_zero_point", &builder.Tensor{DType: builder.Uint8, Raw: []byte{0}}))
				acc := ops.MatMulInteger(xq, w, nil, wzp)
				acc = ops.Sub(acc, ops.Mul(ops.Cast(xzp, builder.Int32), colSums))
				y := ops.Mul(ops.Cast(acc, builder.Float), ops.Mul(xs, scales))
				return Built{Y: addBias(back(y)), Bytes: bytes}
			}
			// Per row, symmetric: scale max|x|/127 per row, zero point
			// 128 for every row, which MatMulInteger takes as its scalar.
			zp128 := init("activation_zero_point", &builder.Tensor{DType: builder.Uint8, Raw: []byte{128}})
			xq, xs := rowQuantizeSymmetric(g, x, zp128)
			acc := ops.Cast(ops.MatMulInteger(xq, w, zp128, wzp), builder.Float)
			return Built{Y: addBias(ops.Mul(ops.Mul(acc, scales), xs)), Bytes: bytes}
		default:
			lo, hi := min(s.OutRange[0], 0), max(s.OutRange[1], 0)
			if !(hi > lo) {
				return fail(fmt.Errorf("output range %v is empty", s.OutRange))
			}
			ys := float32(float64(hi-lo) / 255)
			yzp := byte(max(0, min(255, math.Round(-float64(lo)/float64(ys)))))
			ysv := init("out_scale", builder.ScalarFloat(ys))
			yzpv := init("out_zero_point", &builder.Tensor{DType: builder.Uint8, Raw: []byte{yzp}})
			wzp := init("weight_zero_point", &builder.Tensor{DType: builder.Int8, Dims: []int64{int64(l.Out)}, Raw: make([]byte, l.Out)})
			xq, xs, xzp := ops.DynamicQuantizeLinear(x)
			y := ops.QLinearMatMul(xq, xs, xzp, init("weight_q^T", wq), scales, wzp, ysv, yzpv)
			return Built{Y: addBias(ops.DequantizeLinear(y, ysv, yzpv, ops.QuantOpts{})), Bytes: bytes}
		}
	case NBits:
		q, err := quant.QuantizeBlockwise(l.W, l.Out, l.In, s.Bits, s.BlockSize, !s.Asymmetric)
		if err != nil {
			return fail(err)
		}
		packed, scales, zps := q.Tensors()
		opts := ops.MatMulNBitsOpts{AccuracyLevel: int64(s.AccuracyLevel), Bias: bias}
		if s.Bits != 4 {
			opts.Bits = int64(s.Bits)
		}
		if zps != nil {
			opts.ZeroPoints = init("zero_points", zps)
		}
		y := ops.MatMulNBits(x, init("weight_q", packed), init("scales", scales), int64(l.In), int64(l.Out), int64(s.BlockSize), opts)
		return Built{Y: y, Bytes: bytes}
	}
	return fail(fmt.Errorf("unknown form %d", int(s.Form)))
}

// rows2D returns x as a matrix of rows [N, in] and a function that gives a
// [N, out] result x's leading dimensions back.
func rows2D(g *builder.Graph, x *builder.Value, in, out int) (*builder.Value, func(*builder.Value) *builder.Value) {
	if x.Rank() == 2 {
		return x, func(y *builder.Value) *builder.Value { return y }
	}
	lead := ops.Shape(x, ops.ShapeOpts{End: new(int64(-1))})
	x2 := ops.Reshape(x, ops.ConstInt64s(g, -1, int64(in)), ops.ReshapeOpts{})
	return x2, func(y *builder.Value) *builder.Value {
		return ops.Reshape(y, ops.Concat(0, lead, ops.ConstInt64s(g, int64(out))), ops.ReshapeOpts{})
	}
}

// minRowScale keeps a row of zeros from a zero scale (and a NaN zero
// point); any positive scale quantizes zeros to the zero point 0.
const minRowScale = 1e-30

// rowQuantize quantizes each row of x [N, K] to uint8 with its own scale
// and zero point, as DynamicQuantizeLinear does for a whole tensor:
// scale = (max(0, max x) - min(0, min x)) / 255, zero point =
// round(-min(0, min x) / scale) saturated to [0, 255]. It returns xq
// [N, K] uint8, the scales [N, 1] float and the zero points [N, 1] uint8.
// u8zero is a uint8 scalar 0.
func rowQuantize(g *builder.Graph, x, u8zero *builder.Value) (xq, scale, zeroPoint *builder.Value) {
	zero := ops.ScalarFloat(g, 0)
	lo := ops.Min(ops.ReduceMin(x, ops.ReduceOpts{Axes: []int64{1}, NoKeepDims: true}), zero)
	hi := ops.Max(ops.ReduceMax(x, ops.ReduceOpts{Axes: []int64{1}, NoKeepDims: true}), zero)
	s := ops.Max(ops.Div(ops.Sub(hi, lo), ops.ScalarFloat(g, 255)), ops.ScalarFloat(g, minRowScale))
	axis := int64(0)
	// QuantizeLinear rounds half to even and saturates, as
	// DynamicQuantizeLinear does; along axis 0 each row has its own.
	zp := ops.QuantizeLinear(ops.Div(ops.Neg(lo), s), ops.ScalarFloat(g, 1), u8zero, ops.QuantOpts{})
	xq = ops.QuantizeLinear(x, s, zp, ops.QuantOpts{Axis: &axis})
	one := ops.ConstInt64s(g, 1)
	return xq, ops.Unsqueeze(s, one), ops.Unsqueeze(zp, one)
}

// rowQuantizeSymmetric quantizes each row (last axis) of x to uint8 with
// its own scale max|x|/127 and the zero point zp128 (128) shared by every
// row: xq = saturate(round(x / scale) + 128). It returns xq (x's shape)
// and the scales (x's shape with a last dimension of 1).
func rowQuantizeSymmetric(g *builder.Graph, x, zp128 *builder.Value) (xq, scale *builder.Value) {
	last := int64(x.Rank() - 1)
	m := ops.ReduceMax(ops.Abs(x), ops.ReduceOpts{Axes: []int64{last}})
	scale = ops.Max(ops.Div(m, ops.ScalarFloat(g, 127)), ops.ScalarFloat(g, minRowScale))
	// QuantizeLinear with scale 1 rounds half to even and saturates, as
	// DynamicQuantizeLinear does.
	xq = ops.QuantizeLinear(ops.Div(x, scale), ops.ScalarFloat(g, 1), zp128, ops.QuantOpts{})
	return xq, scale
}

// transpose returns the rows x cols matrix w transposed.
func transpose(w []float32, rows, cols int) []float32 {
	t := make([]float32, len(w))
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			t[c*rows+r] = w[r*cols+c]
		}
	}
	return t
}
