package onnxrun

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/builder"
)

// Datum is a model input or output value for Session.RunData: a *Tensor
// or a *Sequence.
type Datum interface {
	// String describes the value's type and shape, without its data.
	String() string
	isDatum()
}

func (*Tensor) isDatum()   {}
func (*Sequence) isDatum() {}

// Sequence is an ONNX sequence of tensors, seq(tensor(T)): an ordered list
// of tensors that all have the same element type T and may have different
// shapes. Tensors are read in place when fed, like a Tensor's Data.
//
// onnxruntime_go v1.27.0 cannot create an empty sequence, so an input
// Sequence needs at least one tensor; an output one may be empty. float16
// and bfloat16 elements can be fed, but not read back from an output
// sequence (ORT allocates the elements, and onnxruntime_go v1.27.0
// truncates those; RunData then returns an error saying so).
type Sequence struct {
	Tensors []*Tensor
}

// NewSequence returns a sequence of the given tensors (not copied).
func NewSequence(tensors ...*Tensor) *Sequence {
	return &Sequence{Tensors: tensors}
}

// Len returns the number of tensors.
func (s *Sequence) Len() int { return len(s.Tensors) }

// DType returns the element type of the first tensor, or Undefined for an
// empty sequence.
func (s *Sequence) DType() DType {
	if len(s.Tensors) == 0 || s.Tensors[0] == nil {
		return Undefined
	}
	return s.Tensors[0].DType()
}

// String describes the sequence like "seq(float32)[float32[2],float32[3]]";
// an empty one is "seq[]". It does not print the data.
func (s *Sequence) String() string {
	if s == nil {
		return "<nil sequence>"
	}
	parts := make([]string, len(s.Tensors))
	for i, t := range s.Tensors {
		parts[i] = t.String()
	}
	if len(s.Tensors) == 0 {
		return "seq[]"
	}
	return "seq(" + s.DType().String() + ")[" + strings.Join(parts, ",") + "]"
}

// checkSequence validates a caller sequence against a sequence input's
// declaration: at least one tensor, every tensor valid and of the declared
// element type (when the model file declares it).
func checkSequence(info IOInfo, s *Sequence) error {
	if s == nil {
		return fmt.Errorf("input %q: nil sequence, model expects %s", info.Name, info)
	}
	if len(s.Tensors) == 0 {
		return fmt.Errorf("input %q: empty sequence, model expects %s: onnxruntime_go v1.27.0 cannot create an empty sequence", info.Name, info)
	}
	want := info.Type
	for i, t := range s.Tensors {
		bad := func(format string, a ...any) error {
			return fmt.Errorf("input %q: element %d: got %s, model expects %s: %s", info.Name, i, t, info, fmt.Sprintf(format, a...))
		}
		if t == nil {
			return fmt.Errorf("input %q: element %d is a nil tensor, model expects %s", info.Name, i, info)
		}
		if t.DType() == Undefined {
			return bad("unsupported data type %T (supported: %s)", t.Data, supportedData)
		}
		if want == Undefined {
			want = t.DType() // not declared: all elements must agree with the first
		}
		if t.DType() != want {
			return bad("element type %s, want %s", t.DType(), want)
		}
		n, err := builder.ElementCount(t.Shape)
		if err != nil {
			return bad("%v", err)
		}
		if int64(t.Len()) != n {
			return bad("shape holds %d elements but data has %d", n, t.Len())
		}
	}
	return nil
}
