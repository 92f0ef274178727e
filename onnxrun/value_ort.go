//go:build cgo

package onnxrun

import (
	"fmt"

	"github.com/attnx/attnx/builder"

	ort "github.com/yalue/onnxruntime_go"
)

// NewValue makes an ORT value over t's data (not a copy; strings are
// copied into ORT). The caller must Destroy it. It is the bridge to the
// lower-level RunValues and Binding paths.
func NewValue(t *Tensor) (ort.Value, error) {
	if err := Init(); err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("onnxrun: nil tensor")
	}
	n, err := builder.ElementCount(t.Shape)
	if err != nil {
		return nil, fmt.Errorf("onnxrun: tensor %s: %w", t, err)
	}
	if l := t.Len(); l < 0 {
		return nil, fmt.Errorf("onnxrun: unsupported tensor data type %T; supported: %s (complex is not supported)", t.Data, supportedData)
	} else if int64(l) != n {
		return nil, fmt.Errorf("onnxrun: tensor %s needs %d elements, data has %d", t, n, l)
	}
	switch d := t.Data.(type) {
	case []float32:
		return newValue(t.Shape, d)
	case []float64:
		return newValue(t.Shape, d)
	case []int8:
		return newValue(t.Shape, d)
	case []int16:
		return newValue(t.Shape, d)
	case []int32:
		return newValue(t.Shape, d)
	case []int64:
		return newValue(t.Shape, d)
	case []uint8:
		return newValue(t.Shape, d)
	case []uint16:
		return newValue(t.Shape, d)
	case []uint32:
		return newValue(t.Shape, d)
	case []uint64:
		return newValue(t.Shape, d)
	case []bool:
		return newValue(t.Shape, d)
	case []string:
		if len(t.Shape) == 0 {
			return nil, fmt.Errorf("onnxrun: rank-0 string tensors are not supported by onnxruntime_go")
		}
		st, err := ort.NewStringTensor(ort.Shape(t.Shape))
		if err != nil {
			return nil, fmt.Errorf("onnxrun: creating string tensor %s: %w", t, err)
		}
		if err := st.SetContents(d); err != nil {
			st.Destroy()
			return nil, fmt.Errorf("onnxrun: filling string tensor %s: %w", t, err)
		}
		return st, nil
	case []F16:
		v, err := newHalfValue(Float16, t.Shape, d)
		if err != nil {
			return nil, fmt.Errorf("onnxrun: %w", err)
		}
		return v, nil
	case []BF16:
		v, err := newHalfValue(BFloat16, t.Shape, d)
		if err != nil {
			return nil, fmt.Errorf("onnxrun: %w", err)
		}
		return v, nil
	}
	return nil, fmt.Errorf("onnxrun: unsupported tensor data type %T", t.Data)
}

func newValue[T ort.TensorData](shape []int64, data []T) (ort.Value, error) {
	if len(shape) == 0 {
		v, err := ort.NewScalar(data[0])
		if err != nil {
			return nil, fmt.Errorf("onnxrun: creating scalar %T: %w", data[0], err)
		}
		return v, nil
	}
	v, err := ort.NewTensor(ort.Shape(shape), data)
	if err != nil {
		return nil, fmt.Errorf("onnxrun: creating tensor %T%s: %w", data, formatDims(shape, nil), err)
	}
	return v, nil
}

// newEmptyValue allocates a zeroed ORT value of type dt and fully known
// shape, for preallocated outputs.
func newEmptyValue(dt DType, shape []int64) (ort.Value, error) {
	n, err := builder.ElementCount(shape)
	if err != nil {
		return nil, err
	}
	switch dt {
	case Float32:
		return newValue(shape, make([]float32, n))
	case Float64:
		return newValue(shape, make([]float64, n))
	case Int8:
		return newValue(shape, make([]int8, n))
	case Int16:
		return newValue(shape, make([]int16, n))
	case Int32:
		return newValue(shape, make([]int32, n))
	case Int64:
		return newValue(shape, make([]int64, n))
	case Uint8:
		return newValue(shape, make([]uint8, n))
	case Uint16:
		return newValue(shape, make([]uint16, n))
	case Uint32:
		return newValue(shape, make([]uint32, n))
	case Uint64:
		return newValue(shape, make([]uint64, n))
	case Bool:
		return newValue(shape, make([]bool, n))
	case String:
		if len(shape) == 0 {
			return nil, fmt.Errorf("rank-0 string outputs are not supported by onnxruntime_go")
		}
		return ort.NewStringTensor(ort.Shape(shape))
	case Float16:
		return newHalfValue(dt, shape, make([]F16, n))
	case BFloat16:
		return newHalfValue(dt, shape, make([]BF16, n))
	}
	return nil, fmt.Errorf("element type %s is not supported", dt)
}

// FromValue returns a Tensor sharing v's data (for typed tensors, scalars
// and float16/bfloat16 custom-data tensors; string contents are copied). v stays owned by the caller; the
// returned Data slice stays valid after v is destroyed, since it is Go
// memory, but while v lives, writes through either are seen by both.
func FromValue(v ort.Value) (*Tensor, error) {
	switch x := v.(type) {
	case *ort.Tensor[float32]:
		return tensorOf(x), nil
	case *ort.Tensor[float64]:
		return tensorOf(x), nil
	case *ort.Tensor[int8]:
		return tensorOf(x), nil
	case *ort.Tensor[int16]:
		return tensorOf(x), nil
	case *ort.Tensor[int32]:
		return tensorOf(x), nil
	case *ort.Tensor[int64]:
		return tensorOf(x), nil
	case *ort.Tensor[uint8]:
		return tensorOf(x), nil
	case *ort.Tensor[uint16]:
		return tensorOf(x), nil
	case *ort.Tensor[uint32]:
		return tensorOf(x), nil
	case *ort.Tensor[uint64]:
		return tensorOf(x), nil
	case *ort.Tensor[bool]:
		return tensorOf(x), nil
	case *ort.Scalar[float32]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[float64]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[int8]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[int16]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[int32]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[int64]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[uint8]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[uint16]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[uint32]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[uint64]:
		return Scalar(x.GetData()), nil
	case *ort.Scalar[bool]:
		return Scalar(x.GetData()), nil
	case *ort.StringTensor:
		s, err := x.GetContents()
		if err != nil {
			return nil, fmt.Errorf("onnxrun: reading string tensor: %w", err)
		}
		return &Tensor{Shape: []int64(x.GetShape()), Data: s}, nil
	case *ort.CustomDataTensor:
		return fromCustom(x)
	case nil:
		return nil, fmt.Errorf("onnxrun: nil value")
	}
	if v.GetONNXType() != ort.ONNXTypeTensor {
		return nil, fmt.Errorf("onnxrun: %s values are not supported, only tensors", onnxTypeName(v.GetONNXType()))
	}
	return nil, fmt.Errorf("onnxrun: %s tensors are not supported (onnxruntime_go has no typed tensor for them)", DType(v.DataType()))
}

func tensorOf[T ort.TensorData](x *ort.Tensor[T]) *Tensor {
	return &Tensor{Shape: []int64(x.GetShape()), Data: x.GetData()}
}

func onnxTypeName(t ort.ONNXType) string {
	switch t {
	case ort.ONNXTypeTensor:
		return "tensor"
	case ort.ONNXTypeSequence:
		return "sequence"
	case ort.ONNXTypeMap:
		return "map"
	case ort.ONNXTypeOpaque:
		return "opaque"
	case ort.ONNXTypeSparseTensor:
		return "sparse tensor"
	case ort.ONNXTypeOptional:
		return "optional"
	}
	return "unknown-kind"
}

// newHalfValue makes an ORT tensor of element type dt (Float16 or BFloat16)
// over d's memory. onnxruntime_go's custom-data tensors need rank >= 1 and at
// least one element.
func newHalfValue[T F16 | BF16](dt DType, shape []int64, d []T) (ort.Value, error) {
	if len(shape) == 0 {
		return nil, fmt.Errorf("rank-0 %s tensors are not supported (onnxruntime_go's custom-data tensors need rank >= 1)", dt)
	}
	if len(d) == 0 {
		return nil, fmt.Errorf("empty %s tensors (shape %s) are not supported (onnxruntime_go's custom-data tensors need at least one element)", dt, formatDims(shape, nil))
	}
	v, err := ort.NewCustomDataTensor(ort.Shape(append([]int64{}, shape...)), halfBytes(d), ort.TensorElementDataType(dt))
	if err != nil {
		return nil, fmt.Errorf("creating %s tensor %s: %w", dt, formatDims(shape, nil), err)
	}
	return v, nil
}

// fromCustom converts a custom-data ORT tensor (float16 or bfloat16) to a
// Tensor sharing its bytes when they are aligned.
//
// onnxruntime_go v1.27.0 copies outputs that ORT allocated, of the types it
// has no Go type for, at one byte per element (and then fails to wrap them,
// so such outputs must be preallocated, as Session.Run does). A byte count
// that does not fit the shape is reported here rather than read.
func fromCustom(x *ort.CustomDataTensor) (*Tensor, error) {
	dt := DType(x.DataType())
	shape := []int64(x.GetShape())
	b := x.GetData()
	switch dt {
	case Float16, BFloat16:
		want, err := builder.ByteSize(builder.DataType(dt), shape)
		if err != nil {
			return nil, fmt.Errorf("onnxrun: %s tensor: %w", dt, err)
		}
		if int64(len(b)) != want {
			return nil, fmt.Errorf("onnxrun: %s tensor %s holds %d bytes, want %d: an output that ORT allocated has been truncated by onnxruntime_go v1.27.0 (it copies one byte per element); preallocate %s outputs",
				dt, formatDims(shape, nil), len(b), want, dt)
		}
		if dt == Float16 {
			return &Tensor{Shape: shape, Data: halvesOf[F16](b)}, nil
		}
		return &Tensor{Shape: shape, Data: halvesOf[BF16](b)}, nil
	}
	return nil, fmt.Errorf("onnxrun: %s tensors are not supported (onnxruntime_go has no typed tensor for them)", dt)
}

// newSequenceValue makes an ORT sequence over s's tensors. The caller must
// Destroy the returned sequence and, after it, the element values (kept
// alive until the run ends, since onnxruntime_go leaves them to the caller).
func newSequenceValue(s *Sequence) (ort.Value, []ort.Value, error) {
	elems := make([]ort.Value, len(s.Tensors))
	for i, t := range s.Tensors {
		v, err := NewValue(t)
		if err != nil {
			destroyAll(elems)
			return nil, nil, fmt.Errorf("element %d: %w", i, err)
		}
		elems[i] = v
	}
	seq, err := ort.NewSequence(elems)
	if err != nil {
		destroyAll(elems)
		return nil, nil, fmt.Errorf("onnxrun: creating sequence %s: %w", s, err)
	}
	return seq, elems, nil
}

// sequenceFromValue copies an ORT sequence of tensors into a Sequence.
func sequenceFromValue(v *ort.Sequence) (*Sequence, error) {
	vals, err := v.GetValues()
	if err != nil {
		return nil, fmt.Errorf("onnxrun: reading sequence: %w", err)
	}
	s := &Sequence{Tensors: make([]*Tensor, len(vals))}
	for i, e := range vals {
		t, err := FromValue(e)
		if err != nil {
			return nil, fmt.Errorf("sequence element %d: %w", i, err)
		}
		s.Tensors[i] = t
	}
	return s, nil
}
