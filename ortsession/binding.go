package ortsession

import (
	"fmt"
	"sync"

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
		return fmt.Errorf("ortsession: %s: RunValues got %d inputs and %d outputs, the model has %d inputs (%s) and %d outputs",
			s.name, len(inputs), len(outputs), len(s.inputs), s.describeInputs(), len(s.outputs))
	}
	if len(inputs) == 0 {
		return fmt.Errorf("ortsession: %s has no inputs; onnxruntime_go cannot run it with RunValues, use NewBinding", s.name)
	}
	for i, v := range inputs {
		if v == nil {
			return fmt.Errorf("ortsession: %s: input %q is nil", s.name, s.inputs[i].Name)
		}
		if err := checkValue("input", s.inputs[i], v); err != nil {
			return fmt.Errorf("ortsession: %s: %w", s.name, err)
		}
	}
	for i, v := range outputs {
		if v != nil {
			if err := checkValue("output", s.outputs[i], v); err != nil {
				return fmt.Errorf("ortsession: %s: %w", s.name, err)
			}
		}
	}
	if err := s.sess.Run(inputs, outputs); err != nil {
		return fmt.Errorf("ortsession: running %s: %w", s.name, err)
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

// Binding is a reusable set of caller-owned ORT values bound to a session's
// inputs and outputs (an ORT IoBinding), for step loops that run the same
// shapes many times: bind once, then change the input values' data in place
// (e.g. through ort.Tensor.GetData) and call Run; results appear in the bound
// output values. Nothing is allocated per Run.
//
// The bound values stay owned by the caller, who must keep them alive while
// bound and Destroy them after Close. A Binding is for one goroutine at a
// time; different Bindings of one Session may run concurrently. Closing the
// Session closes its Bindings.
type Binding struct {
	s      *Session
	mu     sync.Mutex
	b      *ort.IoBinding
	bound  map[string]bool
	closed bool
}

// NewBinding returns an empty Binding for the session.
func (s *Session) NewBinding() (*Binding, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	b, err := s.sess.CreateIoBinding()
	if err != nil {
		return nil, fmt.Errorf("ortsession: %s: creating IoBinding: %w", s.name, err)
	}
	nb := &Binding{s: s, b: b, bound: map[string]bool{}}
	s.bmu.Lock()
	s.bindings[nb] = struct{}{}
	s.bmu.Unlock()
	return nb, nil
}

// BindInput binds v to the named input, after checking its element type and
// shape against the model. Rebinding a name replaces the earlier value.
func (b *Binding) BindInput(name string, v ort.Value) error {
	return b.bind("input", name, v)
}

// BindOutput binds v to the named output, where Run will write the result.
// Its shape must be the one the model will produce.
func (b *Binding) BindOutput(name string, v ort.Value) error {
	return b.bind("output", name, v)
}

func (b *Binding) bind(what, name string, v ort.Value) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	s := b.s
	var infos []IOInfo
	var i int
	if what == "input" {
		infos, i = s.inputs, s.inputIndex(name)
	} else {
		infos, i = s.outputs, s.outputIndex(name)
	}
	if i < 0 {
		all := make([]string, len(infos))
		for j, in := range infos {
			all[j] = fmt.Sprintf("%q %s", in.Name, in)
		}
		return fmt.Errorf("ortsession: %s: unknown %s %q; the model's %ss are %v", s.name, what, name, what, all)
	}
	if v == nil {
		return fmt.Errorf("ortsession: %s: %s %q: nil value", s.name, what, name)
	}
	if err := checkValue(what, infos[i], v); err != nil {
		return fmt.Errorf("ortsession: %s: %w", s.name, err)
	}
	var err error
	if what == "input" {
		err = b.b.BindInput(name, v)
	} else {
		err = b.b.BindOutput(name, v)
	}
	if err != nil {
		return fmt.Errorf("ortsession: %s: binding %s %q: %w", s.name, what, name, err)
	}
	b.bound[what+"\x00"+name] = true
	return nil
}

// Run runs the session with the bound values. Every input and every output
// must be bound.
func (b *Binding) Run() error {
	// Lock order everywhere: Session.mu, then Session.bmu, then Binding.mu.
	s := b.s
	s.mu.RLock()
	defer s.mu.RUnlock()
	b.mu.Lock()
	defer b.mu.Unlock()
	if s.closed || b.closed {
		return ErrClosed
	}
	for _, in := range s.inputs {
		if !b.bound["input\x00"+in.Name] {
			return fmt.Errorf("ortsession: %s: Binding.Run: input %q (%s) is not bound", s.name, in.Name, in)
		}
	}
	for _, o := range s.outputs {
		if !b.bound["output\x00"+o.Name] {
			return fmt.Errorf("ortsession: %s: Binding.Run: output %q (%s) is not bound", s.name, o.Name, o)
		}
	}
	if err := s.sess.RunWithBinding(b.b); err != nil {
		return fmt.Errorf("ortsession: running %s: %w", s.name, err)
	}
	return nil
}

// Close releases the IoBinding (not the bound values). Calling it again, or
// after the Session is closed, does nothing.
func (b *Binding) Close() error {
	s := b.s
	s.bmu.Lock()
	if s.bindings != nil {
		delete(s.bindings, b)
	}
	s.bmu.Unlock()
	b.release()
	return nil
}

// release destroys the IoBinding once.
func (b *Binding) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.b.Destroy()
	}
}
