package runtime

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// ORT reports symbolic dimensions as -1 without their names, and reports an
// absent shape like a rank-0 one. graphIO reads both facts straight from the
// ModelProto bytes: only the graph's input and output ValueInfoProtos are
// decoded; everything else (initializers included) is skipped in place.

// ioDecl is what the model file declares for one graph input or output.
type ioDecl struct {
	hasShape bool     // a TensorShapeProto is present (rank is known)
	dims     []string // per dimension: dim_param, or "" (fixed or unnamed)
	seqElem  DType    // element type of a sequence of tensors, if declared
}

// Field numbers from onnx.proto.
const (
	modelGraph        = 7  // ModelProto.graph
	graphInput        = 11 // GraphProto.input
	graphOutput       = 12 // GraphProto.output
	valueInfoName     = 1  // ValueInfoProto.name
	valueInfoType     = 2  // ValueInfoProto.type
	typeTensor        = 1  // TypeProto.tensor_type
	typeSparseTensor  = 8  // TypeProto.sparse_tensor_type
	typeSequence      = 4  // TypeProto.sequence_type
	sequenceElemType  = 1  // TypeProto.Sequence.elem_type
	tensorTypeElem    = 1  // TypeProto.Tensor.elem_type (varint)
	tensorTypeShape   = 2  // TypeProto.Tensor.shape (same number in SparseTensor)
	shapeDim          = 1  // TensorShapeProto.dim
	dimensionDimParam = 2  // TensorShapeProto.Dimension.dim_param
)

var errTruncated = errors.New("malformed protobuf")

// graphIO returns the declarations of the main graph's inputs and outputs,
// by name.
func graphIO(model []byte) (map[string]ioDecl, error) {
	out := map[string]ioDecl{}
	err := fields(model, func(num protowire.Number, b []byte) error {
		if num != modelGraph {
			return nil
		}
		return fields(b, func(num protowire.Number, b []byte) error {
			if num != graphInput && num != graphOutput {
				return nil
			}
			name, d, err := valueInfo(b)
			if err != nil {
				return err
			}
			out[name] = d
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("reading graph inputs/outputs: %w", err)
	}
	return out, nil
}

func valueInfo(b []byte) (string, ioDecl, error) {
	var name string
	var d ioDecl
	err := fields(b, func(num protowire.Number, b []byte) error {
		switch num {
		case valueInfoName:
			name = string(b)
		case valueInfoType:
			return fields(b, func(num protowire.Number, b []byte) error {
				if num == typeSequence {
					return fields(b, func(num protowire.Number, b []byte) error {
						if num != sequenceElemType {
							return nil
						}
						return fields(b, func(num protowire.Number, b []byte) error {
							if num != typeTensor {
								return nil
							}
							v, err := varintField(b, tensorTypeElem)
							d.seqElem = DType(v)
							return err
						})
					})
				}
				if num != typeTensor && num != typeSparseTensor {
					return nil
				}
				return fields(b, func(num protowire.Number, b []byte) error {
					if num != tensorTypeShape {
						return nil
					}
					d.hasShape = true
					return fields(b, func(num protowire.Number, b []byte) error {
						if num != shapeDim {
							return nil
						}
						param := ""
						err := fields(b, func(num protowire.Number, b []byte) error {
							if num == dimensionDimParam {
								param = string(b)
							}
							return nil
						})
						d.dims = append(d.dims, param)
						return err
					})
				})
			})
		}
		return nil
	})
	return name, d, err
}

// fields calls f for every length-delimited field of the message in b, and
// skips fields of other wire types.
func fields(b []byte, f func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
		if typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(b)
			if n < 0 {
				return errTruncated
			}
			if err := f(num, v); err != nil {
				return err
			}
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, b)
		if n < 0 {
			return errTruncated
		}
		b = b[n:]
	}
	return nil
}

// varintField returns the last value of varint field num in the message b,
// or 0 when it is absent.
func varintField(b []byte, num protowire.Number) (uint64, error) {
	var out uint64
	for len(b) > 0 {
		n0, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return 0, errTruncated
		}
		b = b[n:]
		if n0 == num && typ == protowire.VarintType {
			v, n := protowire.ConsumeVarint(b)
			if n < 0 {
				return 0, errTruncated
			}
			out = v
			b = b[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(n0, typ, b)
		if n < 0 {
			return 0, errTruncated
		}
		b = b[n:]
	}
	return out, nil
}
