package builder

import (
	"encoding/binary"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DataType is an ONNX tensor element type. The numeric values are those of
// onnx.TensorProto.DataType, so they convert to and from protobuf unchanged.
type DataType int32

// The ONNX element types (onnx.proto, IR version 8).
const (
	Undefined  DataType = 0
	Float      DataType = 1
	Uint8      DataType = 2
	Int8       DataType = 3
	Uint16     DataType = 4
	Int16      DataType = 5
	Int32      DataType = 6
	Int64      DataType = 7
	String     DataType = 8
	Bool       DataType = 9
	Float16    DataType = 10
	Double     DataType = 11
	Uint32     DataType = 12
	Uint64     DataType = 13
	Complex64  DataType = 14
	Complex128 DataType = 15
	BFloat16   DataType = 16
)

var dataTypeNames = map[DataType]string{
	Undefined: "undefined", Float: "float32", Uint8: "uint8", Int8: "int8",
	Uint16: "uint16", Int16: "int16", Int32: "int32", Int64: "int64",
	String: "string", Bool: "bool", Float16: "float16", Double: "float64",
	Uint32: "uint32", Uint64: "uint64", Complex64: "complex64",
	Complex128: "complex128", BFloat16: "bfloat16",
}

// String returns the numpy-style name of the type, such as "float32".
func (d DataType) String() string {
	if s, ok := dataTypeNames[d]; ok {
		return s
	}
	return "dtype(" + strconv.Itoa(int(d)) + ")"
}

// Size returns the size of one element in bytes, or 0 for strings and
// unknown types.
func (d DataType) Size() int {
	switch d {
	case Uint8, Int8, Bool:
		return 1
	case Uint16, Int16, Float16, BFloat16:
		return 2
	case Float, Int32, Uint32:
		return 4
	case Int64, Uint64, Double, Complex64:
		return 8
	case Complex128:
		return 16
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DataType) IsFloat() bool {
	return d == Float || d == Double || d == Float16 || d == BFloat16
}

// IsInteger reports whether d is a signed or unsigned integer type.
func (d DataType) IsInteger() bool {
	switch d {
	case Uint8, Int8, Uint16, Int16, Int32, Int64, Uint32, Uint64:
		return true
	}
	return false
}

// Dim is one dimension of a shape: a fixed size, a symbolic name such as
// "batch", or unknown (neither).
type Dim struct {
	// Value is the size when the dimension is fixed, -1 otherwise.
	Value int64
	// Param is the symbolic name when the dimension is symbolic.
	Param string
}

// D returns a fixed dimension of size n.
func D(n int64) Dim { return Dim{Value: n} }

// Sym returns a symbolic dimension called name.
func Sym(name string) Dim { return Dim{Value: -1, Param: name} }

// UnknownDim returns a dimension about which nothing is known.
func UnknownDim() Dim { return Dim{Value: -1} }

// Known reports whether the dimension has a fixed size.
func (d Dim) Known() bool { return d.Param == "" && d.Value >= 0 }

// String formats the dimension as its size, its name, or "?".
func (d Dim) String() string {
	switch {
	case d.Param != "":
		return d.Param
	case d.Value >= 0:
		return strconv.FormatInt(d.Value, 10)
	}
	return "?"
}

// Same reports whether two dimensions are provably equal: both fixed with the
// same size, or both symbolic with the same name.
func (d Dim) Same(o Dim) bool {
	if d.Param != "" || o.Param != "" {
		return d.Param == o.Param
	}
	return d.Value >= 0 && d.Value == o.Value
}

// Conflicts reports whether two dimensions are provably different: both
// fixed with different sizes.
func (d Dim) Conflicts(o Dim) bool {
	return d.Known() && o.Known() && d.Value != o.Value
}

// Shape is a list of dimensions. A nil Shape means the rank is unknown; an
// empty non-nil Shape is a scalar.
type Shape []Dim

// Dims builds a shape from a mix of int, int64 and string (symbolic)
// dimensions: Dims("batch", 7) is [batch, 7].
func Dims(dims ...any) Shape {
	s := Shape{}
	for _, d := range dims {
		switch v := d.(type) {
		case int:
			s = append(s, D(int64(v)))
		case int64:
			s = append(s, D(v))
		case string:
			s = append(s, Sym(v))
		case Dim:
			s = append(s, v)
		default:
			panic(fmt.Sprintf("builder.Dims: unsupported dimension %T", d))
		}
	}
	return s
}

// Scalar returns the shape of a rank-0 tensor.
func Scalar() Shape { return Shape{} }

// Rank returns the number of dimensions, or -1 when the rank is unknown.
func (s Shape) Rank() int {
	if s == nil {
		return -1
	}
	return len(s)
}

// String formats the shape as [batch,7,?], or "[*]" when the rank is unknown.
func (s Shape) String() string {
	if s == nil {
		return "[*]"
	}
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = d.String()
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// Clone returns a copy of s that shares no memory with it.
func (s Shape) Clone() Shape {
	if s == nil {
		return nil
	}
	return append(Shape{}, s...)
}

// Static returns the sizes of a fully known shape, and false when any
// dimension is symbolic or unknown or the rank is unknown.
func (s Shape) Static() ([]int64, bool) {
	if s == nil {
		return nil, false
	}
	out := make([]int64, len(s))
	for i, d := range s {
		if !d.Known() {
			return nil, false
		}
		out[i] = d.Value
	}
	return out, true
}

// Type is the type of a tensor value: element type and shape.
type Type struct {
	Elem  DataType
	Shape Shape
}

// TensorType returns the Type with element type elem and the given shape.
func TensorType(elem DataType, shape Shape) Type { return Type{Elem: elem, Shape: shape} }

// String formats the type as float32[batch,7].
func (t Type) String() string { return t.Elem.String() + t.Shape.String() }

// Tensor is a constant tensor: an initializer, a Constant's value or a tensor
// attribute. Numeric data is kept as raw little-endian bytes, as ONNX stores
// it in raw_data.
type Tensor struct {
	// Name is the initializer name; empty for attribute values.
	Name string
	// DType is the element type.
	DType DataType
	// Dims is the shape; empty for a scalar.
	Dims []int64
	// Raw holds the elements, little-endian, for every type but String.
	Raw []byte
	// Strings holds the elements of a String tensor.
	Strings [][]byte
	// Doc is an optional doc string.
	Doc string
}

// NumElements returns the product of the dimensions (1 for a scalar).
func (t *Tensor) NumElements() int64 { return NumElements(t.Dims) }

// NumElements returns the product of dims (1 for a scalar), or -1 when
// ElementCount refuses dims (a negative dimension, or a product beyond
// int64). Code that reads dims from a file or a caller uses ElementCount,
// whose error says which.
func NumElements(dims []int64) int64 {
	n, err := ElementCount(dims)
	if err != nil {
		return -1
	}
	return n
}

// ElementCount returns the number of elements of a tensor shaped dims: their
// product, 1 for a scalar. A negative dimension, or a product that does not
// fit in int64, is an error naming the shape; the product is computed
// without ever overflowing, so no shape can wrap around to a small count.
func ElementCount(dims []int64) (int64, error) {
	empty := false
	for i, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is negative (%d)", i, d)
		}
		empty = empty || d == 0
	}
	if empty {
		return 0, nil // whatever the other dimensions are
	}
	n := int64(1)
	for _, d := range dims {
		if n > math.MaxInt64/d {
			return 0, fmt.Errorf("shape %v has more than %d elements", dims, int64(math.MaxInt64))
		}
		n *= d
	}
	return n, nil
}

// ByteSize returns the number of bytes a tensor of element type dt shaped
// dims holds: ElementCount(dims) times dt.Size(). It is an error when dt has
// no fixed size (strings, undefined), or when the count or the byte size
// does not fit in int64.
func ByteSize(dt DataType, dims []int64) (int64, error) {
	size := int64(dt.Size())
	if size == 0 {
		return 0, fmt.Errorf("element type %v has no fixed size", dt)
	}
	n, err := ElementCount(dims)
	if err != nil {
		return 0, err
	}
	if n > math.MaxInt64/size {
		return 0, fmt.Errorf("%v %v needs more than %d bytes", dt, dims, int64(math.MaxInt64))
	}
	return n * size, nil
}

// Type returns the tensor's static Type.
func (t *Tensor) Type() Type {
	s := make(Shape, len(t.Dims))
	for i, d := range t.Dims {
		s[i] = D(d)
	}
	return Type{Elem: t.DType, Shape: s}
}

// Validate checks that the data length agrees with the type and shape.
func (t *Tensor) Validate() error {
	if t.DType == String {
		n, err := ElementCount(t.Dims)
		if err != nil {
			return fmt.Errorf("tensor %q: %w", t.Name, err)
		}
		if int64(len(t.Strings)) != n {
			return fmt.Errorf("tensor %q: %d strings for shape %v (want %d)", t.Name, len(t.Strings), t.Dims, n)
		}
		return nil
	}
	if t.DType.Size() == 0 {
		return fmt.Errorf("tensor %q: unsupported element type %v", t.Name, t.DType)
	}
	want, err := ByteSize(t.DType, t.Dims)
	if err != nil {
		return fmt.Errorf("tensor %q: %w", t.Name, err)
	}
	if int64(len(t.Raw)) != want {
		return fmt.Errorf("tensor %q: %d bytes of %v data for shape %v (want %d)", t.Name, len(t.Raw), t.DType, t.Dims, want)
	}
	return nil
}

// FloatTensor returns a float32 tensor of the given shape holding data.
func FloatTensor(dims []int64, data []float32) *Tensor {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(v))
	}
	return &Tensor{DType: Float, Dims: append([]int64{}, dims...), Raw: raw}
}

// Int64Tensor returns an int64 tensor of the given shape holding data.
func Int64Tensor(dims []int64, data []int64) *Tensor {
	raw := make([]byte, 8*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(v))
	}
	return &Tensor{DType: Int64, Dims: append([]int64{}, dims...), Raw: raw}
}

// Int32Tensor returns an int32 tensor of the given shape holding data.
func Int32Tensor(dims []int64, data []int32) *Tensor {
	raw := make([]byte, 4*len(data))
	for i, v := range data {
		binary.LittleEndian.PutUint32(raw[4*i:], uint32(v))
	}
	return &Tensor{DType: Int32, Dims: append([]int64{}, dims...), Raw: raw}
}

// BoolTensor returns a bool tensor of the given shape holding data.
func BoolTensor(dims []int64, data []bool) *Tensor {
	raw := make([]byte, len(data))
	for i, v := range data {
		if v {
			raw[i] = 1
		}
	}
	return &Tensor{DType: Bool, Dims: append([]int64{}, dims...), Raw: raw}
}

// ScalarInt64 returns a rank-0 int64 tensor.
func ScalarInt64(v int64) *Tensor { return Int64Tensor(nil, []int64{v}) }

// ScalarFloat returns a rank-0 float32 tensor.
func ScalarFloat(v float32) *Tensor { return FloatTensor(nil, []float32{v}) }

// Float32s decodes a float32 tensor's data.
func (t *Tensor) Float32s() ([]float32, error) {
	if t.DType != Float {
		return nil, fmt.Errorf("tensor %q is %v, not float32", t.Name, t.DType)
	}
	if len(t.Raw)%4 != 0 {
		return nil, fmt.Errorf("tensor %q: %d bytes is not a whole number of float32s", t.Name, len(t.Raw))
	}
	out := make([]float32, len(t.Raw)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(t.Raw[4*i:]))
	}
	return out, nil
}

// Int64s decodes an int64 tensor's data.
func (t *Tensor) Int64s() ([]int64, error) {
	if t.DType != Int64 {
		return nil, fmt.Errorf("tensor %q is %v, not int64", t.Name, t.DType)
	}
	if len(t.Raw)%8 != 0 {
		return nil, fmt.Errorf("tensor %q: %d bytes is not a whole number of int64s", t.Name, len(t.Raw))
	}
	out := make([]int64, len(t.Raw)/8)
	for i := range out {
		out[i] = int64(binary.LittleEndian.Uint64(t.Raw[8*i:]))
	}
	return out, nil
}

// WithFloat32At returns a float32 copy of the tensor (its name kept)
// whose element i is v, leaving the tensor itself as it is; ok is false
// when i is outside its n elements.
func (t *Tensor) WithFloat32At(i int64, v float32) (out *Tensor, n int, ok bool, err error) {
	vals, err := t.ToFloat32()
	if err != nil {
		return nil, 0, false, err
	}
	if i < 0 || i >= int64(len(vals)) {
		return nil, len(vals), false, nil
	}
	vals[i] = v
	out = FloatTensor(t.Dims, vals)
	out.Name = t.Name
	return out, len(vals), true, nil
}

// ToFloat32 returns the tensor's elements as float32, converting float16,
// bfloat16 and float64 data. Other element types are an error.
func (t *Tensor) ToFloat32() ([]float32, error) {
	switch t.DType {
	case Float:
		return t.Float32s()
	case Double:
		if len(t.Raw)%8 != 0 {
			return nil, fmt.Errorf("tensor %q: %d bytes is not a whole number of float64s", t.Name, len(t.Raw))
		}
		out := make([]float32, len(t.Raw)/8)
		for i := range out {
			out[i] = float32(math.Float64frombits(binary.LittleEndian.Uint64(t.Raw[8*i:])))
		}
		return out, nil
	case Float16, BFloat16:
		if len(t.Raw)%2 != 0 {
			return nil, fmt.Errorf("tensor %q: %d bytes is not a whole number of %v values", t.Name, len(t.Raw), t.DType)
		}
		out := make([]float32, len(t.Raw)/2)
		for i := range out {
			h := binary.LittleEndian.Uint16(t.Raw[2*i:])
			if t.DType == BFloat16 {
				out[i] = math.Float32frombits(uint32(h) << 16)
			} else {
				out[i] = HalfToFloat32(h)
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("tensor %q is %v, not a floating-point type", t.Name, t.DType)
}

// HalfToFloat32 converts an IEEE 754 half-precision value to float32.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	frac := uint32(h) & 0x3ff
	switch {
	case exp == 0 && frac == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: normalise
		e := uint32(127 - 15 + 1)
		for frac&0x400 == 0 {
			frac <<= 1
			e--
		}
		frac &= 0x3ff
		return math.Float32frombits(sign | e<<23 | frac<<13)
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0xff<<23 | frac<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | frac<<13)
}
