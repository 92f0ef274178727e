package onnxeval

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"unsafe"

	"github.com/attnx/attnx/builder"
)

// Tensor is a dense tensor in row-major order. Data holds a slice of the Go
// type of DType: []float32 (Float), []float64 (Double), []int64, []int32,
// []int16, []int8, []uint8, []uint16, []uint32, []uint64 or []bool. A
// scalar has an empty Shape and one element.
type Tensor struct {
	DType builder.DataType
	Shape []int64
	Data  any

	owned  bool // the buffer came from a run's arena and returns to it
	hollow bool // a prepared weight's shape and type, without its data
}

// number is every element type the evaluator computes with.
type number interface {
	~float32 | ~float64 | ~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// element is number or bool.
type element interface {
	number | ~bool
}

// New returns a tensor of shape holding data (its element type decides DType).
func New[T element](shape []int64, data []T) *Tensor {
	return &Tensor{DType: dtypeOf[T](), Shape: shape, Data: data}
}

func dtypeOf[T element]() builder.DataType {
	var z T
	switch any(z).(type) {
	case float32:
		return builder.Float
	case float64:
		return builder.Double
	case int8:
		return builder.Int8
	case int16:
		return builder.Int16
	case int32:
		return builder.Int32
	case int64:
		return builder.Int64
	case uint8:
		return builder.Uint8
	case uint16:
		return builder.Uint16
	case uint32:
		return builder.Uint32
	case uint64:
		return builder.Uint64
	case bool:
		return builder.Bool
	}
	return builder.Undefined
}

// supported reports whether the evaluator holds tensors of dt.
func supported(dt builder.DataType) bool {
	switch dt {
	case builder.Float, builder.Double, builder.Int8, builder.Int16, builder.Int32, builder.Int64,
		builder.Uint8, builder.Uint16, builder.Uint32, builder.Uint64, builder.Bool:
		return true
	}
	return false
}

// Len returns the number of elements.
func (t *Tensor) Len() int { return numel(t.Shape) }

func numel(shape []int64) int {
	n, err := elements(shape)
	if err != nil {
		panic(err) // RunContext's recover turns it into the node's error
	}
	return n
}

// MaxElements bounds one tensor's elements. Past it some kernels' int32
// offsets would wrap, and an allocation of that size may end the process
// with an out-of-memory throw, which no recover catches: refused first.
const MaxElements = 1<<31 - 1

// ShapeError is a tensor shape the evaluator refuses: a negative
// dimension, a product past int64, or more than MaxElements elements.
type ShapeError struct {
	Shape []int64
	Err   error
}

// Error says what is wrong with the shape.
func (e *ShapeError) Error() string { return e.Err.Error() }

// elements returns shape's element count, checked with builder's one shape
// arithmetic (no negative dimension, no product that wraps), and within
// MaxElements.
func elements(shape []int64) (int, error) {
	n, err := builder.ElementCount(shape)
	if err != nil {
		return 0, &ShapeError{Shape: slices.Clone(shape), Err: fmt.Errorf("shape %v: %w", shape, err)}
	}
	if n > MaxElements {
		return 0, &ShapeError{Shape: slices.Clone(shape), Err: fmt.Errorf("shape %v has %d elements, more than the native evaluator's limit of %d per tensor", shape, n, MaxElements)}
	}
	return int(n), nil
}

// String describes the tensor as float32[2,3].
func (t *Tensor) String() string {
	var b strings.Builder
	b.WriteString(t.DType.String())
	b.WriteByte('[')
	for i, d := range t.Shape {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, d)
	}
	b.WriteByte(']')
	return b.String()
}

// get returns t's data as []T; the caller has checked DType.
func get[T element](t *Tensor) []T { return t.Data.([]T) }

// makeData returns a zeroed slice of n elements of dt.
func makeData(dt builder.DataType, n int) (any, error) {
	switch dt {
	case builder.Float:
		return make([]float32, n), nil
	case builder.Double:
		return make([]float64, n), nil
	case builder.Int8:
		return make([]int8, n), nil
	case builder.Int16:
		return make([]int16, n), nil
	case builder.Int32:
		return make([]int32, n), nil
	case builder.Int64:
		return make([]int64, n), nil
	case builder.Uint8:
		return make([]uint8, n), nil
	case builder.Uint16:
		return make([]uint16, n), nil
	case builder.Uint32:
		return make([]uint32, n), nil
	case builder.Uint64:
		return make([]uint64, n), nil
	case builder.Bool:
		return make([]bool, n), nil
	}
	return nil, fmt.Errorf("element type %v is not supported by the native evaluator", dt)
}

// littleEndian reports whether this machine stores numbers as ONNX does.
var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

// FromBuilder decodes a constant tensor (an initializer or attribute). A
// float32 tensor on a little-endian machine views c.Raw in place.
func FromBuilder(c *builder.Tensor) (*Tensor, error) {
	if !supported(c.DType) {
		return nil, fmt.Errorf("tensor %q: element type %v is not supported by the native evaluator", c.Name, c.DType)
	}
	n64, err := builder.ElementCount(c.Dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", c.Name, err)
	}
	n := int(n64)
	size := c.DType.Size()
	if len(c.Raw) != n*size {
		return nil, fmt.Errorf("tensor %q: %d bytes of data for %d elements of %v", c.Name, len(c.Raw), n, c.DType)
	}
	if c.DType == builder.Float && n > 0 && littleEndian && uintptr(unsafe.Pointer(&c.Raw[0]))%4 == 0 {
		// The raw bytes are the float32s already: view them, no copy (the
		// weights are most of a model's memory). c.Raw must not change.
		data := unsafe.Slice((*float32)(unsafe.Pointer(&c.Raw[0])), n)
		return &Tensor{DType: c.DType, Shape: append([]int64{}, c.Dims...), Data: data}, nil
	}
	data, _ := makeData(c.DType, n)
	raw := c.Raw
	le := binary.LittleEndian
	switch d := data.(type) {
	case []float32:
		for i := range d {
			d[i] = math.Float32frombits(le.Uint32(raw[4*i:]))
		}
	case []float64:
		for i := range d {
			d[i] = math.Float64frombits(le.Uint64(raw[8*i:]))
		}
	case []int8:
		for i := range d {
			d[i] = int8(raw[i])
		}
	case []uint8:
		copy(d, raw)
	case []bool:
		for i := range d {
			d[i] = raw[i] != 0
		}
	case []int16:
		for i := range d {
			d[i] = int16(le.Uint16(raw[2*i:]))
		}
	case []uint16:
		for i := range d {
			d[i] = le.Uint16(raw[2*i:])
		}
	case []int32:
		for i := range d {
			d[i] = int32(le.Uint32(raw[4*i:]))
		}
	case []uint32:
		for i := range d {
			d[i] = le.Uint32(raw[4*i:])
		}
	case []int64:
		for i := range d {
			d[i] = int64(le.Uint64(raw[8*i:]))
		}
	case []uint64:
		for i := range d {
			d[i] = le.Uint64(raw[8*i:])
		}
	}
	return &Tensor{DType: c.DType, Shape: append([]int64{}, c.Dims...), Data: data}, nil
}

// ints returns an integer tensor's elements as int64 (shape inputs, axes,
// indices: int64 or int32).
func ints(t *Tensor, what string) ([]int64, error) {
	switch d := t.Data.(type) {
	case []int64:
		return d, nil
	case []int32:
		out := make([]int64, len(d))
		for i, v := range d {
			out[i] = int64(v)
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s must be int64 or int32, got %v", what, t.DType)
}

// strides returns the row-major strides of shape.
func strides(shape []int64) []int {
	s := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		s[i] = n
		n *= int(shape[i])
	}
	return s
}

// sameShape reports whether two shapes are equal.
func sameShape(a, b []int64) bool { return slices.Equal(a, b) }

// normAxis resolves a possibly negative axis against rank.
func normAxis(axis int64, rank int, what string) (int, error) {
	a := axis
	if a < 0 {
		a += int64(rank)
	}
	if a < 0 || a >= int64(rank) {
		return 0, fmt.Errorf("%s %d is out of range for rank %d", what, axis, rank)
	}
	return int(a), nil
}

type dtype = builder.DataType

const (
	dtFloat = builder.Float
	dtInt64 = builder.Int64
	dtBool  = builder.Bool
)
