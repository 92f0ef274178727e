package onnxrun

import (
	"fmt"
	"sync"
)

// Binding is a reusable set of caller-owned tensors bound to a session's
// inputs and outputs, for step loops that run the same shapes many times:
// bind once, then change the input tensors' data in place and call Run;
// results appear in the bound output tensors' data. On ONNX Runtime it is
// an IoBinding over views of the tensors' slices (nothing is copied or
// allocated per Run); on the native evaluator the bound input slices are
// read in place and the outputs copied into the bound ones.
//
// The bound tensors stay owned by the caller, who must keep them unchanged
// in shape while bound. A Binding is for one goroutine at a time; different
// Bindings of one Session may run concurrently. Closing the Session closes
// its Bindings.
type Binding struct {
	s       *Session
	mu      sync.Mutex
	ob      ortBinding // the IoBinding (backend "ort")
	in, out []*Tensor  // the bound tensors by input and output index
	bound   map[string]bool
	closed  bool
}

// NewBinding returns an empty Binding for the session.
func (s *Session) NewBinding() (*Binding, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, ErrClosed
	}
	nb := &Binding{s: s, bound: map[string]bool{}, in: make([]*Tensor, len(s.inputs)), out: make([]*Tensor, len(s.outputs))}
	if s.native == nil {
		if err := nb.newORT(); err != nil {
			return nil, err
		}
	}
	s.bmu.Lock()
	s.bindings[nb] = struct{}{}
	s.bmu.Unlock()
	return nb, nil
}

// BindInputTensor binds t to the named input, after checking its element
// type and shape against the model. t's data is read in place by every Run
// (not copied). Rebinding a name replaces the earlier tensor.
func (b *Binding) BindInputTensor(name string, t *Tensor) error {
	return b.bindTensor("input", name, t)
}

// BindOutputTensor binds t to the named output: every Run writes the result
// into t's data, whose shape must be the one the model produces.
func (b *Binding) BindOutputTensor(name string, t *Tensor) error {
	return b.bindTensor("output", name, t)
}

// lookup finds the input or output called name.
func (b *Binding) lookup(what, name string) (IOInfo, int, error) {
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
		return IOInfo{}, -1, fmt.Errorf("onnxrun: %s: unknown %s %q; the model's %ss are %v", s.name, what, name, what, all)
	}
	return infos[i], i, nil
}

func (b *Binding) bindTensor(what, name string, t *Tensor) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return ErrClosed
	}
	info, i, err := b.lookup(what, name)
	if err != nil {
		return err
	}
	if err := checkTensor(info, t); err != nil {
		return fmt.Errorf("onnxrun: %s: binding %s: %w", b.s.name, what, err)
	}
	if b.s.native == nil {
		if err := b.ob.bindTensor(b.s, what, name, t); err != nil {
			return err
		}
	}
	if what == "input" {
		b.in[i] = t
	} else {
		b.out[i] = t
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
			return fmt.Errorf("onnxrun: %s: Binding.Run: input %q (%s) is not bound", s.name, in.Name, in)
		}
	}
	for _, o := range s.outputs {
		if !b.bound["output\x00"+o.Name] {
			return fmt.Errorf("onnxrun: %s: Binding.Run: output %q (%s) is not bound", s.name, o.Name, o)
		}
	}
	if s.native != nil {
		return b.runNative()
	}
	return b.ob.run(s)
}

// Close releases the binding (not the bound tensors). Calling it again, or
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

// release frees the binding's resources once.
func (b *Binding) release() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.closed {
		b.closed = true
		b.ob.destroy()
		clear(b.in)
		clear(b.out)
	}
}
