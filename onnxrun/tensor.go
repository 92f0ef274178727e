package onnxrun

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
)

// DType is an ONNX tensor element type. The values are those of
// onnx.TensorProto.DataType (and of ORT's ONNXTensorElementDataType).
type DType int32

// The element types. Tensor supports all of them except Complex64 and
// Complex128 (Float16 and BFloat16 as []F16 and []BF16).
const (
	Undefined  DType = 0
	Float32    DType = 1
	Uint8      DType = 2
	Int8       DType = 3
	Uint16     DType = 4
	Int16      DType = 5
	Int32      DType = 6
	Int64      DType = 7
	String     DType = 8
	Bool       DType = 9
	Float16    DType = 10
	Float64    DType = 11
	Uint32     DType = 12
	Uint64     DType = 13
	Complex64  DType = 14
	Complex128 DType = 15
	BFloat16   DType = 16
)

// String returns the Go-style name: "float32", "int64", "bool", ... The
// values are ONNX's element types, so builder.DataType names them.
func (d DType) String() string { return builder.DataType(d).String() }

// supportedData lists the Data slice types Tensor accepts, for error messages.
const supportedData = "[]float32, []float64, []int8, []int16, []int32, []int64, []uint8, []uint16, []uint32, []uint64, []bool, []string, []F16 (float16), []BF16 (bfloat16)"

// Element is the set of Go element types a Tensor can hold.
type Element interface {
	float32 | float64 | int8 | int16 | int32 | int64 | uint8 | uint16 | uint32 | uint64 | bool | string | F16 | BF16
}

// Tensor is a dense row-major tensor owned by Go: a shape and a flat data
// slice. Data is one of []float32, []float64, []int8, []int16, []int32,
// []int64, []uint8, []uint16, []uint32, []uint64, []bool, []string, []F16
// (ONNX float16, as bit patterns) or []BF16 (bfloat16, as bit patterns; see
// F16, BF16 and AsFloat32 for conversions), and must hold exactly the
// product of Shape elements. A rank-0 (scalar) tensor
// has an empty Shape and one element.
//
// Run reads input Data in place (no copy) while it runs, so callers must not
// modify it concurrently with a Run that uses it. Output tensors own fresh
// slices.
type Tensor struct {
	Shape []int64
	Data  any
}

// NewTensor returns a tensor over data with a copy of shape. data is not
// copied.
func NewTensor[T Element](shape []int64, data []T) *Tensor {
	return &Tensor{Shape: append([]int64{}, shape...), Data: data}
}

// Scalar returns a rank-0 tensor holding v.
func Scalar[T Element](v T) *Tensor {
	return &Tensor{Shape: []int64{}, Data: []T{v}}
}

// NewFloat32 returns a float32 tensor; see NewTensor.
func NewFloat32(shape []int64, data []float32) *Tensor { return NewTensor(shape, data) }

// NewFloat64 returns a float64 tensor; see NewTensor.
func NewFloat64(shape []int64, data []float64) *Tensor { return NewTensor(shape, data) }

// NewInt64 returns an int64 tensor; see NewTensor.
func NewInt64(shape []int64, data []int64) *Tensor { return NewTensor(shape, data) }

// NewInt32 returns an int32 tensor; see NewTensor.
func NewInt32(shape []int64, data []int32) *Tensor { return NewTensor(shape, data) }

// NewInt8 returns an int8 tensor; see NewTensor.
func NewInt8(shape []int64, data []int8) *Tensor { return NewTensor(shape, data) }

// NewUint8 returns a uint8 tensor; see NewTensor.
func NewUint8(shape []int64, data []uint8) *Tensor { return NewTensor(shape, data) }

// NewBool returns a bool tensor; see NewTensor.
func NewBool(shape []int64, data []bool) *Tensor { return NewTensor(shape, data) }

// NewString returns a string tensor; see NewTensor.
func NewString(shape []int64, data []string) *Tensor { return NewTensor(shape, data) }

// DType returns the element type of Data, or Undefined when Data is not one
// of the supported slice types.
func (t *Tensor) DType() DType {
	switch t.Data.(type) {
	case []float32:
		return Float32
	case []float64:
		return Float64
	case []int8:
		return Int8
	case []int16:
		return Int16
	case []int32:
		return Int32
	case []int64:
		return Int64
	case []uint8:
		return Uint8
	case []uint16:
		return Uint16
	case []uint32:
		return Uint32
	case []uint64:
		return Uint64
	case []bool:
		return Bool
	case []string:
		return String
	case []F16:
		return Float16
	case []BF16:
		return BFloat16
	}
	return Undefined
}

// Len returns the length of the Data slice, or -1 when Data is not a
// supported slice type.
func (t *Tensor) Len() int {
	switch d := t.Data.(type) {
	case []float32:
		return len(d)
	case []float64:
		return len(d)
	case []int8:
		return len(d)
	case []int16:
		return len(d)
	case []int32:
		return len(d)
	case []int64:
		return len(d)
	case []uint8:
		return len(d)
	case []uint16:
		return len(d)
	case []uint32:
		return len(d)
	case []uint64:
		return len(d)
	case []bool:
		return len(d)
	case []string:
		return len(d)
	case []F16:
		return len(d)
	case []BF16:
		return len(d)
	}
	return -1
}

// String describes the tensor's type and shape, e.g. "float32[2,5]"; a
// scalar is "float32[]". It does not print the data.
func (t *Tensor) String() string {
	if t == nil {
		return "<nil tensor>"
	}
	name := t.DType().String()
	if t.DType() == Undefined {
		name = fmt.Sprintf("%T", t.Data)
	}
	return name + formatDims(t.Shape, nil)
}

// Float32s returns Data as []float32, or an error naming the actual type.
func (t *Tensor) Float32s() ([]float32, error) { return dataAs[float32](t) }

// Float64s returns Data as []float64, or an error naming the actual type.
func (t *Tensor) Float64s() ([]float64, error) { return dataAs[float64](t) }

// Int64s returns Data as []int64, or an error naming the actual type.
func (t *Tensor) Int64s() ([]int64, error) { return dataAs[int64](t) }

// Int32s returns Data as []int32, or an error naming the actual type.
func (t *Tensor) Int32s() ([]int32, error) { return dataAs[int32](t) }

// Bools returns Data as []bool, or an error naming the actual type.
func (t *Tensor) Bools() ([]bool, error) { return dataAs[bool](t) }

func dataAs[T Element](t *Tensor) ([]T, error) {
	d, ok := t.Data.([]T)
	if !ok {
		var zero T
		return nil, fmt.Errorf("tensor is %s, not %T", t, zero)
	}
	return d, nil
}

// formatDims writes dims as "[2,5]"; a negative dim prints as its name from
// names, or "?" when it has none.
func formatDims(dims []int64, names []string) string {
	parts := make([]string, len(dims))
	for i, d := range dims {
		switch {
		case d >= 0:
			parts[i] = strconv.FormatInt(d, 10)
		case i < len(names) && names[i] != "":
			parts[i] = names[i]
		default:
			parts[i] = "?"
		}
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// FromBuilder converts a builder tensor (little-endian raw bytes, as
// initializers, checkpoints and export.ReadTensorProto hold them) into a
// Tensor with a typed slice, copying the data. It is the one conversion
// from builder's tensors to runtime's. Complex tensors, which Tensor
// cannot hold, and tensors whose data does not fit their shape are errors
// naming the tensor.
func FromBuilder(t *builder.Tensor) (*Tensor, error) {
	if t == nil {
		return nil, fmt.Errorf("onnxrun: nil builder tensor")
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("onnxrun: %w", err)
	}
	raw := t.Raw
	var data any
	switch t.DType {
	case builder.Float:
		data = fromLE(raw, 4, func(b []byte) float32 { return math.Float32frombits(binary.LittleEndian.Uint32(b)) })
	case builder.Double:
		data = fromLE(raw, 8, func(b []byte) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(b)) })
	case builder.Int8:
		data = fromLE(raw, 1, func(b []byte) int8 { return int8(b[0]) })
	case builder.Uint8:
		data = append([]uint8{}, raw...)
	case builder.Int16:
		data = fromLE(raw, 2, func(b []byte) int16 { return int16(binary.LittleEndian.Uint16(b)) })
	case builder.Uint16:
		data = fromLE(raw, 2, binary.LittleEndian.Uint16)
	case builder.Int32:
		data = fromLE(raw, 4, func(b []byte) int32 { return int32(binary.LittleEndian.Uint32(b)) })
	case builder.Uint32:
		data = fromLE(raw, 4, binary.LittleEndian.Uint32)
	case builder.Int64:
		data = fromLE(raw, 8, func(b []byte) int64 { return int64(binary.LittleEndian.Uint64(b)) })
	case builder.Uint64:
		data = fromLE(raw, 8, binary.LittleEndian.Uint64)
	case builder.Bool:
		data = fromLE(raw, 1, func(b []byte) bool { return b[0] != 0 })
	case builder.Float16:
		data = fromLE(raw, 2, func(b []byte) F16 { return F16(binary.LittleEndian.Uint16(b)) })
	case builder.BFloat16:
		data = fromLE(raw, 2, func(b []byte) BF16 { return BF16(binary.LittleEndian.Uint16(b)) })
	case builder.String:
		s := make([]string, len(t.Strings))
		for i, b := range t.Strings {
			s[i] = string(b)
		}
		data = s
	default:
		return nil, fmt.Errorf("onnxrun: tensor %q: %v tensors cannot be held in a runtime Tensor (supported: %s)", t.Name, t.DType, supportedData)
	}
	return &Tensor{Shape: append([]int64{}, t.Dims...), Data: data}, nil
}

// fromLE decodes raw as consecutive little-endian elements of size bytes.
func fromLE[T any](raw []byte, size int, decode func([]byte) T) []T {
	out := make([]T, len(raw)/size)
	for i := range out {
		out[i] = decode(raw[size*i : size*(i+1)])
	}
	return out
}
