//go:build cgo

package onnxrun

import (
	"fmt"

	ort "github.com/yalue/onnxruntime_go"
)

// RunValues runs the model on caller-made ORT values, with no checks beyond
// ORT's own and no copies: the low-level path for loops that reuse tensors.
// inputs and outputs follow the order of Inputs() and Outputs(). An output
// left nil is allocated by ORT and stored into outputs; the caller must
// Destroy it (as well as its own values). Rank-0 outputs must be
// preallocated (e.g. with ort.NewEmptyScalar), and so must float16 and
// bfloat16 ones (e.g. with NewValue over a Tensor of []F16 or []BF16):
// onnxruntime_go v1.27.0 keeps only half the bytes of those that ORT
// allocates, which FromValue reports as an error. Models without inputs cannot
// use RunValues; use a Binding.
func (s *Session) RunValues(inputs, outputs []ort.Value) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	if len(inputs) != len(s.inputs) || len(outputs) != len(s.outputs) {
		return fmt.Errorf("onnxrun: %s: RunValues got %d inputs and %d outputs, the model has %d inputs (%s) and %d outputs",
			s.name, len(inputs), len(outputs), len(s.inputs), s.describeInputs(), len(s.outputs))
	}
	if len(inputs) == 0 {
		return fmt.Errorf("onnxrun: %s has no inputs; onnxruntime_go cannot run it with RunValues, use NewBinding", s.name)
	}
	for i, v := range inputs {
		if v == nil {
			return fmt.Errorf("onnxrun: %s: input %q is nil", s.name, s.inputs[i].Name)
		}
		if err := checkValue("input", s.inputs[i], v); err != nil {
			return fmt.Errorf("onnxrun: %s: %w", s.name, err)
		}
	}
	for i, v := range outputs {
		if v != nil {
			if err := checkValue("output", s.outputs[i], v); err != nil {
				return fmt.Errorf("onnxrun: %s: %w", s.name, err)
			}
		}
	}
	if err := s.ort.sess.Run(inputs, outputs); err != nil {
		return fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	return nil
}

// checkValue checks an ORT value's element type and shape against a
// declaration (a cheap check: no data is touched).
func checkValue(what string, info IOInfo, v ort.Value) error {
	if info.Kind != "tensor" {
		return fmt.Errorf("%s %q: model declares a %s; only tensors are supported", what, info.Name, info.Kind)
	}
	dt := DType(v.DataType())
	shape := []int64(v.GetShape())
	got := dt.String() + formatDims(shape, nil)
	if dt != info.Type {
		return fmt.Errorf("%s %q: got %s, model expects %s: element type %s, want %s", what, info.Name, got, info, dt, info.Type)
	}
	if !info.RankKnown {
		return nil
	}
	if len(shape) != len(info.Shape) {
		return fmt.Errorf("%s %q: got %s, model expects %s: rank %d, want %d", what, info.Name, got, info, len(shape), len(info.Shape))
	}
	for j, d := range info.Shape {
		if d >= 0 && shape[j] != d {
			return fmt.Errorf("%s %q: got %s, model expects %s: dimension %d is %d, want %d", what, info.Name, got, info, j, shape[j], d)
		}
	}
	return nil
}

// ortBinding is a Binding's ONNX Runtime IoBinding and the values it made
// over bound tensors (by "input\x00name" or "output\x00name").
type ortBinding struct {
	b      *ort.IoBinding
	values map[string]ort.Value
}

func (b *Binding) newORT() error {
	ib, err := b.s.ort.sess.CreateIoBinding()
	if err != nil {
		return fmt.Errorf("onnxrun: %s: creating IoBinding: %w", b.s.name, err)
	}
	b.ob = ortBinding{b: ib, values: map[string]ort.Value{}}
	return nil
}

// bindTensor binds an ORT value over t's data (a view, not a copy).
func (ob *ortBinding) bindTensor(s *Session, what, name string, t *Tensor) error {
	v, err := NewValue(t)
	if err != nil {
		return fmt.Errorf("onnxrun: %s: %s %q: %w", s.name, what, name, err)
	}
	if err := ob.bindValue(s, what, name, v); err != nil {
		v.Destroy()
		return err
	}
	key := what + "\x00" + name
	if old := ob.values[key]; old != nil {
		old.Destroy()
	}
	ob.values[key] = v
	return nil
}

func (ob *ortBinding) bindValue(s *Session, what, name string, v ort.Value) error {
	var err error
	if what == "input" {
		err = ob.b.BindInput(name, v)
	} else {
		err = ob.b.BindOutput(name, v)
	}
	if err != nil {
		return fmt.Errorf("onnxrun: %s: binding %s %q: %w", s.name, what, name, err)
	}
	return nil
}

func (ob *ortBinding) run(s *Session) error {
	if err := s.ort.sess.RunWithBinding(ob.b); err != nil {
		return fmt.Errorf("onnxrun: running %s: %w", s.name, err)
	}
	return nil
}

func (ob *ortBinding) destroy() {
	if ob.b != nil {
		ob.b.Destroy()
		ob.b = nil
	}
	for k, v := range ob.values {
		v.Destroy()
		delete(ob.values, k)
	}
}

// BindInput binds a caller-made ORT value to the named input, after
// checking its element type and shape against the model (ONNX Runtime
// sessions only; BindInputTensor works on every backend). The caller keeps
// v alive while bound and destroys it after Close.
func (b *Binding) BindInput(name string, v ort.Value) error {
	return b.bindORT("input", name, v)
}

// BindOutput binds a caller-made ORT value to the named output, where Run
// writes the result (ONNX Runtime sessions only).
func (b *Binding) BindOutput(name string, v ort.Value) error {
	return b.bindORT("output", name, v)
}

func (b *Binding) bindORT(what, name string, v ort.Value) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	s := b.s
	if s.native != nil {
		return fmt.Errorf("onnxrun: %s: binding an ORT value to %s %q: the session runs on the native backend; use Bind%sTensor", s.name, what, name, map[string]string{"input": "Input", "output": "Output"}[what])
	}
	info, _, err := b.lookup(what, name)
	if err != nil {
		return err
	}
	if v == nil {
		return fmt.Errorf("onnxrun: %s: %s %q: nil value", s.name, what, name)
	}
	if err := checkValue(what, info, v); err != nil {
		return fmt.Errorf("onnxrun: %s: %w", s.name, err)
	}
	if err := b.ob.bindValue(s, what, name, v); err != nil {
		return err
	}
	b.bound[what+"\x00"+name] = true
	return nil
}
