package onnxfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// TensorToProto converts a builder tensor to a TensorProto: numeric data in
// raw_data (little-endian, shared with t.Raw, not copied), strings in
// string_data.
func TensorToProto(t *builder.Tensor) (*onnxpb.TensorProto, error) {
	if t == nil {
		return nil, errors.New("nil tensor")
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	tp := &onnxpb.TensorProto{
		Dims:     append([]int64{}, t.Dims...),
		DataType: proto.Int32(int32(t.DType)),
	}
	if t.Name != "" {
		tp.Name = proto.String(t.Name)
	}
	if t.Doc != "" {
		tp.DocString = proto.String(t.Doc)
	}
	if t.DType == builder.String {
		tp.StringData = make([][]byte, len(t.Strings))
		copy(tp.StringData, t.Strings)
	} else {
		tp.RawData = t.Raw
		if tp.RawData == nil {
			tp.RawData = []byte{}
		}
	}
	return tp, nil
}

// MarshalTensor serializes t as a TensorProto, the format of the ONNX
// backend tests' input_N.pb and output_N.pb files.
func MarshalTensor(t *builder.Tensor) ([]byte, error) {
	tp, err := TensorToProto(t)
	if err != nil {
		return nil, fmt.Errorf("onnxfile: %w", err)
	}
	return proto.MarshalOptions{Deterministic: true}.Marshal(tp)
}

// ReadTensorProto reads a serialized TensorProto file such as the ONNX
// backend tests' input_0.pb into a builder tensor.
func ReadTensorProto(path string) (*builder.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnxfile: %w", err)
	}
	t, err := ReadTensorProtoBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// ReadTensorProtoBytes decodes a serialized TensorProto into a builder
// tensor; see TensorFromProto.
func ReadTensorProtoBytes(data []byte) (*builder.Tensor, error) {
	tp := &onnxpb.TensorProto{}
	if err := proto.Unmarshal(data, tp); err != nil {
		return nil, fmt.Errorf("not a TensorProto: %w", err)
	}
	if tp.DataType == nil {
		return nil, errors.New("not a TensorProto: no data_type")
	}
	return TensorFromProto(tp)
}

// TensorFromProto converts a TensorProto to a builder tensor with raw
// little-endian data. It reads raw_data or any of the typed fields:
// float_data (float, complex64), int32_data (int32 and, as the spec
// prescribes, int8, uint8, int16, uint16, bool, float16 and bfloat16 bit
// patterns), int64_data, double_data (double, complex128), uint64_data
// (uint32, uint64) and string_data. Tensors whose data lies in an external
// file that was not loaded are refused.
func TensorFromProto(tp *onnxpb.TensorProto) (*builder.Tensor, error) {
	return tensorFromProto(tp, false)
}

// tensorFromProto is TensorFromProto; with share, raw_data is not copied:
// the tensor's Raw is the message's (for ReadGraph, whose caller drops the
// message).
func tensorFromProto(tp *onnxpb.TensorProto, share bool) (*builder.Tensor, error) {
	if tp == nil {
		return nil, errors.New("no tensor (a tensor attribute or initializer without its value)")
	}
	name := tp.GetName()
	dt := builder.DataType(tp.GetDataType())
	t := &builder.Tensor{Name: name, DType: dt, Dims: append([]int64{}, tp.GetDims()...), Doc: tp.GetDocString()}
	for i, d := range t.Dims {
		if d < 0 {
			return nil, fmt.Errorf("tensor %q: dimension %d is negative (%d)", name, i, d)
		}
	}
	if tp.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil, fmt.Errorf("tensor %q: data is in an external file that was not loaded (use LoadOptions.LoadExternalData)", name)
	}
	if tp.Segment != nil {
		return nil, fmt.Errorf("tensor %q: segmented tensors are not supported", name)
	}
	n, err := builder.ElementCount(t.Dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	if dt == builder.String {
		if int64(len(tp.StringData)) != n {
			return nil, fmt.Errorf("tensor %q: %d strings for shape %v (want %d)", name, len(tp.StringData), t.Dims, n)
		}
		t.Strings = make([][]byte, len(tp.StringData))
		copy(t.Strings, tp.StringData)
		return t, nil
	}
	if dt.Size() == 0 {
		return nil, fmt.Errorf("tensor %q: unsupported element type %v", name, dt)
	}
	want, err := builder.ByteSize(dt, t.Dims)
	if err != nil {
		return nil, fmt.Errorf("tensor %q: %w", name, err)
	}
	if tp.RawData != nil {
		if int64(len(tp.RawData)) != want {
			return nil, fmt.Errorf("tensor %q: raw_data has %d bytes, want %d for %v%v", name, len(tp.RawData), want, dt, t.Dims)
		}
		t.Raw = tp.RawData
		if !share {
			t.Raw = append([]byte{}, tp.RawData...)
		}
		return t, nil
	}
	// Check the element count before decoding, so that a bogus shape
	// never makes us allocate for it.
	field, count := typedField(tp, dt)
	per := int64(1)
	if dt == builder.Complex64 || dt == builder.Complex128 {
		per = 2
	}
	if field == "" {
		return nil, fmt.Errorf("tensor %q: unsupported element type %v", name, dt)
	}
	if int64(count) != n*per {
		return nil, fmt.Errorf("tensor %q: %s has %d values, want %d for %v%v", name, field, count, n*per, dt, t.Dims)
	}
	raw := make([]byte, 0, want)
	switch dt {
	case builder.Float, builder.Complex64:
		for _, v := range tp.FloatData {
			raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(v))
		}
	case builder.Double, builder.Complex128:
		for _, v := range tp.DoubleData {
			raw = binary.LittleEndian.AppendUint64(raw, math.Float64bits(v))
		}
	case builder.Int64:
		for _, v := range tp.Int64Data {
			raw = binary.LittleEndian.AppendUint64(raw, uint64(v))
		}
	case builder.Uint64:
		for _, v := range tp.Uint64Data {
			raw = binary.LittleEndian.AppendUint64(raw, v)
		}
	case builder.Uint32:
		for _, v := range tp.Uint64Data {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(v))
		}
	case builder.Int32:
		for _, v := range tp.Int32Data {
			raw = binary.LittleEndian.AppendUint32(raw, uint32(v))
		}
	case builder.Int16, builder.Uint16, builder.Float16, builder.BFloat16:
		for _, v := range tp.Int32Data {
			raw = binary.LittleEndian.AppendUint16(raw, uint16(v))
		}
	case builder.Int8, builder.Uint8:
		for _, v := range tp.Int32Data {
			raw = append(raw, byte(v))
		}
	case builder.Bool:
		for _, v := range tp.Int32Data {
			if v != 0 {
				raw = append(raw, 1)
			} else {
				raw = append(raw, 0)
			}
		}
	}
	t.Raw = raw
	return t, nil
}

// typedField names the typed field that holds dt's elements and how many
// values it has; "" when there is none.
func typedField(tp *onnxpb.TensorProto, dt builder.DataType) (string, int) {
	switch dt {
	case builder.Float, builder.Complex64:
		return "float_data", len(tp.FloatData)
	case builder.Double, builder.Complex128:
		return "double_data", len(tp.DoubleData)
	case builder.Int64:
		return "int64_data", len(tp.Int64Data)
	case builder.Uint64, builder.Uint32:
		return "uint64_data", len(tp.Uint64Data)
	case builder.Int32, builder.Int16, builder.Uint16, builder.Float16, builder.BFloat16, builder.Int8, builder.Uint8, builder.Bool:
		return "int32_data", len(tp.Int32Data)
	}
	return "", 0
}
