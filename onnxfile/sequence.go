package onnxfile

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/proto"
)

// ReadSequenceProto reads a serialized onnx SequenceProto of tensors (as
// the ONNX backend test data stores sequence inputs and outputs) and
// returns its tensors in order; see ReadSequenceProtoBytes.
func ReadSequenceProto(path string) ([]*builder.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("onnxfile: %w", err)
	}
	ts, err := ReadSequenceProtoBytes(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ts, nil
}

// ReadSequenceProtoBytes decodes a serialized SequenceProto whose elements
// are tensors (elem_type TENSOR) into builder tensors (see
// TensorFromProto). An empty sequence gives an empty, non-nil slice.
// Sequences of sparse tensors, sequences, maps or optionals are refused, and
// so is data with fields SequenceProto does not have (a TensorProto file,
// for instance).
func ReadSequenceProtoBytes(data []byte) ([]*builder.Tensor, error) {
	sp := &onnxpb.SequenceProto{}
	if err := proto.Unmarshal(data, sp); err != nil {
		return nil, fmt.Errorf("not a SequenceProto: malformed protobuf: %w", err)
	}
	if len(sp.ProtoReflect().GetUnknown()) > 0 {
		return nil, errors.New("not a SequenceProto: it has fields that SequenceProto does not define")
	}
	for _, other := range []struct {
		kind onnxpb.SequenceProto_DataType
		n    int
	}{
		{onnxpb.SequenceProto_SPARSE_TENSOR, len(sp.SparseTensorValues)},
		{onnxpb.SequenceProto_SEQUENCE, len(sp.SequenceValues)},
		{onnxpb.SequenceProto_MAP, len(sp.MapValues)},
		{onnxpb.SequenceProto_OPTIONAL, len(sp.OptionalValues)},
	} {
		if other.n > 0 {
			return nil, fmt.Errorf("sequence holds %s values; only sequences of tensors are supported", seqKind(other.kind))
		}
	}
	// An undeclared elem_type is accepted when the elements are tensors.
	elem := onnxpb.SequenceProto_DataType(sp.GetElemType())
	if elem != onnxpb.SequenceProto_TENSOR && (elem != onnxpb.SequenceProto_UNDEFINED || len(sp.TensorValues) == 0) {
		return nil, fmt.Errorf("not a SequenceProto of tensors: elem_type is %s, want tensor", seqKind(elem))
	}
	ts := make([]*builder.Tensor, len(sp.TensorValues))
	for i, tp := range sp.TensorValues {
		t, err := TensorFromProto(tp)
		if err != nil {
			return nil, fmt.Errorf("sequence element %d: %w", i, err)
		}
		ts[i] = t
	}
	return ts, nil
}

// seqKind names a SequenceProto element kind for errors: "sparse tensor",
// "map", or "unknown (9)".
func seqKind(k onnxpb.SequenceProto_DataType) string {
	name, ok := onnxpb.SequenceProto_DataType_name[int32(k)]
	if !ok {
		return fmt.Sprintf("unknown (%d)", int32(k))
	}
	return strings.ToLower(strings.ReplaceAll(name, "_", " "))
}
