package onnxrun

import (
	"context"
	"fmt"
	"slices"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
)

// Backend returns the engine the session runs on: BackendORT or BackendGo.
func (s *Session) Backend() string { return s.backend }

// openNative loads the model into attnx's native evaluator: the file at
// path, or data when path is "". Its inputs and
// outputs must be declared tensors of known element types (every model
// attnx writes declares them).
func openNative(name, path string, data []byte, opt Options) (*Session, error) {
	switch opt.Device {
	case "", DeviceCPU, DeviceAuto:
	case DeviceCUDA:
		return nil, fmt.Errorf("onnxrun: %s: the native backend runs on the CPU only; device %q needs the ONNX Runtime backend", name, opt.Device)
	default:
		return nil, fmt.Errorf("onnxrun: %s: unknown device %q: want %q, %q or %q", name, opt.Device, DeviceCPU, DeviceCUDA, DeviceAuto)
	}
	if opt.IntraOpThreads < 0 {
		return nil, fmt.Errorf("onnxrun: %s: IntraOpThreads=%d: want >= 0", name, opt.IntraOpThreads)
	}
	eopt := onnxeval.Options{Threads: opt.IntraOpThreads}
	var m *onnxeval.Model
	var err error
	if path != "" {
		if m, err = onnxeval.Open(path, eopt); err != nil { // external data relative to the file
			return nil, fmt.Errorf("onnxrun: %w", err) // the evaluator's error names the file
		}
	} else if m, err = onnxeval.OpenBytes(data, eopt); err != nil {
		return nil, fmt.Errorf("onnxrun: %s: %w", name, err)
	}
	ins, ok1 := fromDecls(m.Inputs())
	outs, ok2 := fromDecls(m.Outputs())
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("onnxrun: %s: the native backend needs every input and output declared as a tensor of a known element type", name)
	}
	return &Session{name: name, backend: BackendGo, native: m, inputs: ins, outputs: outs, device: DeviceCPU, bindings: map[*Binding]struct{}{}}, nil
}

// toEval views t as an evaluator tensor (the same slice, no copy).
func toEval(t *Tensor) (*onnxeval.Tensor, error) {
	switch t.Data.(type) {
	case []float32, []float64, []int8, []int16, []int32, []int64, []uint8, []uint16, []uint32, []uint64, []bool:
		return &onnxeval.Tensor{DType: builder.DataType(t.DType()), Shape: t.Shape, Data: t.Data}, nil
	}
	return nil, fmt.Errorf("%s tensors are not supported by the native backend", t.DType())
}

// runNative is RunData on the native evaluator, the inputs checked.
func (s *Session) runNative(ctx context.Context, inputs map[string]Datum) (map[string]Datum, error) {
	in := make([]*onnxeval.Tensor, len(s.inputs))
	for i, info := range s.inputs {
		t, ok := inputs[info.Name].(*Tensor)
		if !ok {
			return nil, fmt.Errorf("onnxrun: %s: input %q: the native backend takes tensors only", s.name, info.Name)
		}
		et, err := toEval(t)
		if err != nil {
			return nil, fmt.Errorf("onnxrun: %s: input %q: %w", s.name, info.Name, err)
		}
		in[i] = et
	}
	out, err := s.native.RunContext(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	res := make(map[string]Datum, len(out))
	for i, info := range s.outputs {
		res[info.Name] = &Tensor{Shape: out[i].Shape, Data: out[i].Data}
	}
	return res, nil
}

// runNative runs a Binding on the native evaluator: the bound inputs are
// read in place and each output is copied into its bound tensor, whose
// shape must be the one computed.
func (b *Binding) runNative() error {
	s := b.s
	in := make([]*onnxeval.Tensor, len(b.in))
	for i, t := range b.in {
		et, err := toEval(t)
		if err != nil {
			return fmt.Errorf("onnxrun: %s: input %q: %w", s.name, s.inputs[i].Name, err)
		}
		in[i] = et
	}
	// float32 outputs may be written straight into their bound tensors.
	dsts := make([][]float32, len(b.out))
	for i, t := range b.out {
		dsts[i], _ = t.Data.([]float32)
	}
	out, err := s.native.RunInto(in, dsts)
	if err != nil {
		return fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	for i, o := range out {
		dst := b.out[i]
		if !slices.Equal(dst.Shape, o.Shape) || dst.DType() != DType(o.DType) {
			return fmt.Errorf("onnxrun: running %s: output %q is %v%s, the bound tensor %s", s.name, s.outputs[i].Name, o.DType, formatDims(o.Shape, nil), dst)
		}
		if dsts[i] != nil && onnxeval.OutputIn(o, dsts[i]) {
			continue // computed in place
		}
		if !copySame(dst.Data, o.Data) {
			return fmt.Errorf("onnxrun: running %s: output %q: cannot copy %T into %T", s.name, s.outputs[i].Name, o.Data, dst.Data)
		}
	}
	s.native.Recycle(out...) // copied: their buffers serve the next run
	return nil
}

// copySame copies src into dst when both are slices of one element type.
func copySame(dst, src any) bool {
	switch d := dst.(type) {
	case []float32:
		s, ok := src.([]float32)
		return ok && copy(d, s) >= 0
	case []int64:
		s, ok := src.([]int64)
		return ok && copy(d, s) >= 0
	case []float64:
		s, ok := src.([]float64)
		return ok && copy(d, s) >= 0
	case []int32:
		s, ok := src.([]int32)
		return ok && copy(d, s) >= 0
	case []bool:
		s, ok := src.([]bool)
		return ok && copy(d, s) >= 0
	case []uint8:
		s, ok := src.([]uint8)
		return ok && copy(d, s) >= 0
	case []int8:
		s, ok := src.([]int8)
		return ok && copy(d, s) >= 0
	}
	return false
}
