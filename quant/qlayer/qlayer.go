// Package qlayer builds the layers of a decoder step (a linear layer, an
// LSTM or GRU cell as one product plus elementwise gates) in float32 or in
// one of the reduced-precision forms ONNX Runtime runs: the graphs
// quantized exports are made of, and the candidates quant/opbench measures.
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
	// DynamicInt8 quantizes x to uint8 at run time (DynamicQuantizeLinear)
	// and multiplies by int8 weights with one scale per output
	// (MatMulInteger), then rescales: Mul(Cast(acc), x_scale * w_scales).
	// ONNX Runtime fuses the chain into one DynamicQuantizeMatMul.
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
	// OutRange is the [min, max] QLinear's output is quantized over.
	OutRange [2]float32
	// Bits, BlockSize and AccuracyLevel configure NBits; Asymmetric stores a
	// zero point per block instead of the default 2^(Bits-1).
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
		if s.Uint8Weights {
			return "int8 DynamicQuantizeLinear+MatMulInteger (u8 weights)"
		}
		return "int8 DynamicQuantizeLinear+MatMulInteger"
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
			xq, xs, xzp := ops.DynamicQuantizeLinear(x)
			acc := ops.Cast(ops.MatMulInteger(xq, w, xzp, wzp), builder.Float)
			return Built{Y: addBias(ops.Mul(acc, ops.Mul(xs, scales))), Bytes: bytes}
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
