// Package quant quantizes float32 weight matrices for the reduced-precision
// exports: symmetric int8 with one scale per row or per column (for
// DequantizeLinear, MatMulInteger and QLinearMatMul, and row-wise for
// embedding tables), and block-wise 2/4/8-bit in the packed layout of ONNX
// Runtime's com.microsoft MatMulNBits. It also measures how far a reduced
// model's greedy output is from the float32 reference (Agreement).
//
// The package is pure Go: it knows the layouts the operators expect, not
// how graphs are built. Every quantizer has a Dequantize that returns the
// float32 values the runtime will compute with, so accuracy can be judged
// without running a graph.
package quant

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
)

// Int8 is a 2-D float32 matrix quantized to int8 symmetrically (zero point
// 0) with one scale per row (Axis 0) or per column (Axis 1):
//
//	w[r][c] ≈ Q[r*Cols+c] * Scales[r]   (Axis 0)
//	w[r][c] ≈ Q[r*Cols+c] * Scales[c]   (Axis 1)
//
// Quantized values lie in [-127, 127] (never -128), so that the range is
// symmetric and a product of two of them cannot saturate an int16 pair sum
// on hardware without VNNI.
type Int8 struct {
	// Rows and Cols are the matrix's dimensions.
	Rows, Cols int
	// Axis is the axis the scales run along: 0, one per row; 1, one per
	// column. It is the axis attribute DequantizeLinear needs.
	Axis int
	// Q holds the quantized values, row-major.
	Q []int8
	// Scales holds Rows (Axis 0) or Cols (Axis 1) positive scales.
	Scales []float32
}

// Int8Max is the largest magnitude of a symmetric int8 value.
const Int8Max = 127

// QuantizeInt8 quantizes the row-major rows x cols matrix w with one scale
// per row (axis 0) or per column (axis 1). Each scale is the channel's
// largest magnitude divided by 127, values are rounded half to even (as ONNX
// QuantizeLinear rounds). A channel of zeros gets scale 1 and zeros. NaN or
// infinite weights are an error.
func QuantizeInt8(w []float32, rows, cols, axis int) (*Int8, error) {
	if err := checkMatrix(w, rows, cols); err != nil {
		return nil, err
	}
	if axis != 0 && axis != 1 {
		return nil, fmt.Errorf("quant: int8 axis is %d, want 0 (per row) or 1 (per column)", axis)
	}
	nScales := rows
	if axis == 1 {
		nScales = cols
	}
	q := &Int8{Rows: rows, Cols: cols, Axis: axis, Q: make([]int8, len(w)), Scales: make([]float32, nScales)}
	maxAbs := make([]float32, nScales)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			ch := q.channel(r, c)
			maxAbs[ch] = max(maxAbs[ch], float32(math.Abs(float64(w[r*cols+c]))))
		}
	}
	for i, m := range maxAbs {
		q.Scales[i] = 1
		if m > 0 {
			q.Scales[i] = m / Int8Max
		}
	}
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			i := r*cols + c
			q.Q[i] = int8(clampRound(w[i]/q.Scales[q.channel(r, c)], -Int8Max, Int8Max))
		}
	}
	return q, nil
}

// channel returns the index of the scale element (r, c) uses.
func (q *Int8) channel(r, c int) int {
	if q.Axis == 0 {
		return r
	}
	return c
}

// Dequantize returns the float32 matrix the quantized values stand for,
// row-major: what DequantizeLinear computes.
func (q *Int8) Dequantize() []float32 {
	out := make([]float32, len(q.Q))
	for r := 0; r < q.Rows; r++ {
		for c := 0; c < q.Cols; c++ {
			out[r*q.Cols+c] = float32(q.Q[r*q.Cols+c]) * q.Scales[q.channel(r, c)]
		}
	}
	return out
}

// Uint8 returns the values shifted to uint8 with zero point 128 (q + 128),
// for MatMulInteger and QLinearMatMul in their uint8-weight form.
func (q *Int8) Uint8() []uint8 {
	out := make([]uint8, len(q.Q))
	for i, v := range q.Q {
		out[i] = uint8(int(v) + 128)
	}
	return out
}

// Tensor returns the quantized values as an int8 initializer of shape
// [Rows, Cols].
func (q *Int8) Tensor() *builder.Tensor {
	raw := make([]byte, len(q.Q))
	for i, v := range q.Q {
		raw[i] = byte(v)
	}
	return &builder.Tensor{DType: builder.Int8, Dims: []int64{int64(q.Rows), int64(q.Cols)}, Raw: raw}
}

// ScaleTensor returns the scales as a 1-D float32 initializer.
func (q *Int8) ScaleTensor() *builder.Tensor {
	return builder.FloatTensor([]int64{int64(len(q.Scales))}, q.Scales)
}

// ColumnSums returns the sum of each column of the quantized values, in
// int32: what a per-row activation zero point contributes to a product
// (zp times the column sum).
func (q *Int8) ColumnSums() []int32 {
	out := make([]int32, q.Cols)
	for r := range q.Rows {
		for c, v := range q.Q[r*q.Cols : (r+1)*q.Cols] {
			out[c] += int32(v)
		}
	}
	return out
}

// Bytes returns the size of the quantized values and scales in bytes.
func (q *Int8) Bytes() int { return len(q.Q) + 4*len(q.Scales) }

// MaxError returns the largest |w - Dequantize(w)| that rounding allows for
// the element (r, c): half its channel's scale.
func (q *Int8) MaxError(r, c int) float32 { return q.Scales[q.channel(r, c)] / 2 }

// Transpose returns the same quantized matrix transposed: [Cols, Rows], its
// scales on the other axis. A weight quantized per output row in PyTorch's
// [out, in] layout becomes a per-column B of MatMul's [in, out].
func (q *Int8) Transpose() *Int8 {
	t := &Int8{Rows: q.Cols, Cols: q.Rows, Axis: 1 - q.Axis, Q: make([]int8, len(q.Q)), Scales: append([]float32(nil), q.Scales...)}
	for r := 0; r < q.Rows; r++ {
		for c := 0; c < q.Cols; c++ {
			t.Q[c*q.Rows+r] = q.Q[r*q.Cols+c]
		}
	}
	return t
}

// clampRound rounds x half to even and clamps it to [lo, hi].
func clampRound(x float32, lo, hi int) int {
	v := math.RoundToEven(float64(x))
	if v < float64(lo) {
		return lo
	}
	if v > float64(hi) {
		return hi
	}
	return int(v)
}

// checkMatrix checks that w holds rows x cols finite values.
func checkMatrix(w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: matrix is %dx%d, want positive dimensions", rows, cols)
	}
	if len(w) != rows*cols {
		return fmt.Errorf("quant: %d values for a %dx%d matrix (want %d)", len(w), rows, cols, rows*cols)
	}
	for i, v := range w {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("quant: element [%d,%d] is %v: only finite weights can be quantized", i/cols, i%cols, v)
		}
	}
	return nil
}

// FloatsOf decodes a 2-D float32 tensor, returning its values and
// dimensions, for quantizing an initializer.
func FloatsOf(t *builder.Tensor) (w []float32, rows, cols int, err error) {
	if t == nil {
		return nil, 0, 0, fmt.Errorf("quant: nil tensor")
	}
	if len(t.Dims) != 2 {
		return nil, 0, 0, fmt.Errorf("quant: tensor %q is %v%v, want a 2-D matrix", t.Name, t.DType, t.Dims)
	}
	w, err = t.Float32s()
	if err != nil {
		return nil, 0, 0, fmt.Errorf("quant: %w", err)
	}
	return w, int(t.Dims[0]), int(t.Dims[1]), nil
}

// uint8Tensor returns a uint8 initializer of the given shape holding data.
func uint8Tensor(dims []int64, data []byte) *builder.Tensor {
	return &builder.Tensor{DType: builder.Uint8, Dims: append([]int64(nil), dims...), Raw: append([]byte(nil), data...)}
}
