package export

import (
	"errors"
	"fmt"
	"os"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxpb"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// SequenceProto (onnx-data.proto, which internal/onnxpb does not bind) is
// decoded field by field. Its field numbers:
const (
	seqName         = 1 // string name
	seqElemType     = 2 // int32 elem_type (DataType below)
	seqTensorValues = 3 // repeated TensorProto tensor_values
)

// SequenceProto.DataType values.
const (
	seqElemUndefined = 0
	seqElemTensor    = 1
)

// seqElemNames names the SequenceProto element kinds, for errors.
var seqElemNames = map[uint64]string{0: "undefined", 1: "tensor", 2: "sparse tensor", 3: "sequence", 4: "map", 5: "optional"}

// ReadSequenceProto reads a serialized onnx SequenceProto of tensors (as
// the ONNX backend test data stores sequence inputs and outputs) and
// returns its tensors in order; see ReadSequenceProtoBytes.
func ReadSequenceProto(path string) ([]*builder.Tensor, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("export: %w", err)
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
// Sequences of sparse tensors, sequences, maps or optionals are refused.
func ReadSequenceProtoBytes(data []byte) ([]*builder.Tensor, error) {
	elemType := uint64(seqElemUndefined)
	ts := []*builder.Tensor{}
	b := data
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, errors.New("not a SequenceProto: malformed protobuf")
		}
		b = b[n:]
		switch {
		case num == seqElemType && typ == protowire.VarintType:
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return nil, errors.New("not a SequenceProto: malformed elem_type")
			}
			elemType = v
			b = b[n:]
			continue
		case num == seqTensorValues && typ == protowire.BytesType:
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return nil, errors.New("not a SequenceProto: malformed tensor_values")
			}
			tp := &onnxpb.TensorProto{}
			if err := proto.Unmarshal(v, tp); err != nil {
				return nil, fmt.Errorf("sequence element %d: not a TensorProto: %w", len(ts), err)
			}
			t, err := TensorFromProto(tp)
			if err != nil {
				return nil, fmt.Errorf("sequence element %d: %w", len(ts), err)
			}
			ts = append(ts, t)
			b = b[n:]
			continue
		case num > seqTensorValues && num <= 7 && typ == protowire.BytesType:
			return nil, fmt.Errorf("sequence holds %s values (field %d); only sequences of tensors are supported", seqElemNames[uint64(num)-2], num)
		case num == seqName && typ == protowire.BytesType:
		case num > 7 || num < 1:
			return nil, fmt.Errorf("not a SequenceProto: unknown field %d", num)
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return nil, errors.New("not a SequenceProto: malformed protobuf")
		}
		b = b[n:]
	}
	if elemType != seqElemTensor {
		name, ok := seqElemNames[elemType]
		if !ok {
			name = fmt.Sprintf("unknown (%d)", elemType)
		}
		if elemType != seqElemUndefined || len(ts) == 0 {
			return nil, fmt.Errorf("not a SequenceProto of tensors: elem_type is %s, want tensor", name)
		}
	}
	return ts, nil
}
