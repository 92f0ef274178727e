package bench

import (
	"fmt"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/runtime"
	ort "github.com/yalue/onnxruntime_go"
)

// stepLoop is the leanest step loop over an encoder.onnx / decoder.onnx
// pair of the spec's interface (attnx's graphs or torch.onnx.export's):
// every tensor is allocated and bound once, hidden and cell ping-pong
// between two buffers through two IoBindings, argmax runs in Go on the
// bound log_probs, and nothing is allocated per step.
type stepLoop struct {
	B, S, V  int
	srcIDs   *ort.Tensor[int64]
	srcLens  *ort.Tensor[int64]
	inputIDs *ort.Tensor[int64]
	logProbs *ort.Tensor[float32]
	encB     *runtime.Binding
	decB     [2]*runtime.Binding
	values   []ort.Value
	bindings []*runtime.Binding
}

// newStepLoop allocates and binds the tensors of one batch shape.
func newStepLoop(enc, dec *runtime.Session, B, S, H, L, V int) (l *stepLoop, err error) {
	l = &stepLoop{B: B, S: S, V: V}
	defer func() {
		if err != nil {
			l.close()
			l = nil
		}
	}()
	i64 := func(dims ...int64) *ort.Tensor[int64] {
		if err != nil {
			return nil
		}
		var x *ort.Tensor[int64]
		if x, err = ort.NewEmptyTensor[int64](ort.NewShape(dims...)); x != nil {
			l.values = append(l.values, x)
		}
		return x
	}
	f32 := func(dims ...int64) *ort.Tensor[float32] {
		if err != nil {
			return nil
		}
		var x *ort.Tensor[float32]
		if x, err = ort.NewEmptyTensor[float32](ort.NewShape(dims...)); x != nil {
			l.values = append(l.values, x)
		}
		return x
	}
	b, s, h, ll, v := int64(B), int64(S), int64(H), int64(L), int64(V)
	l.srcIDs, l.srcLens, l.inputIDs = i64(b, s), i64(b), i64(b)
	encOut := f32(b, s, h)
	hidden := [2]*ort.Tensor[float32]{f32(ll, b, h), f32(ll, b, h)}
	cell := [2]*ort.Tensor[float32]{f32(ll, b, h), f32(ll, b, h)}
	l.logProbs = f32(b, v)
	attn := f32(b, s)
	if err != nil {
		return nil, fmt.Errorf("bench: allocating step loop tensors: %w", err)
	}
	type bind struct {
		in   bool
		name string
		v    ort.Value
	}
	mk := func(s *runtime.Session, bs []bind) (*runtime.Binding, error) {
		bd, err := s.NewBinding()
		if err != nil {
			return nil, err
		}
		l.bindings = append(l.bindings, bd)
		for _, x := range bs {
			if x.in {
				err = bd.BindInput(x.name, x.v)
			} else {
				err = bd.BindOutput(x.name, x.v)
			}
			if err != nil {
				return nil, err
			}
		}
		return bd, nil
	}
	if l.encB, err = mk(enc, []bind{
		{true, attention.InSourceIDs, l.srcIDs}, {true, attention.InSourceLengths, l.srcLens},
		{false, attention.OutEncoder, encOut}, {false, attention.OutHidden, hidden[0]}, {false, attention.OutCell, cell[0]},
	}); err != nil {
		return nil, fmt.Errorf("bench: binding the encoder: %w", err)
	}
	for p := 0; p < 2; p++ {
		if l.decB[p], err = mk(dec, []bind{
			{true, attention.InInputIDs, l.inputIDs},
			{true, attention.InHidden, hidden[p]}, {true, attention.InCell, cell[p]},
			{true, attention.InEncoderOutputs, encOut}, {true, attention.InSourceLengths, l.srcLens},
			{false, attention.OutLogProbs, l.logProbs},
			{false, attention.OutNextHidden, hidden[1-p]}, {false, attention.OutNextCell, cell[1-p]},
			{false, attention.OutAttention, attn},
		}); err != nil {
			return nil, fmt.Errorf("bench: binding the decoder: %w", err)
		}
	}
	return l, nil
}

// setSources copies source ids [B*S] and lengths [B] into the bound inputs.
func (l *stepLoop) setSources(ids, lens []int64) {
	copy(l.srcIDs.GetData(), ids)
	copy(l.srcLens.GetData(), lens)
}

// run encodes, then decodes steps steps from sos, writing the tokens
// [steps*B] (step-major) into toks when it is not nil.
func (l *stepLoop) run(steps int, sos int64, toks []int64) (encT, decT time.Duration, err error) {
	t0 := time.Now()
	if err := l.encB.Run(); err != nil {
		return 0, 0, fmt.Errorf("bench: encoder: %w", err)
	}
	t1 := time.Now()
	in, lp, V := l.inputIDs.GetData(), l.logProbs.GetData(), l.V
	for r := range in {
		in[r] = sos
	}
	for step := 0; step < steps; step++ {
		if err := l.decB[step&1].Run(); err != nil {
			return 0, 0, fmt.Errorf("bench: decoder step %d: %w", step, err)
		}
		for r := range in {
			in[r] = argmax(lp[r*V : (r+1)*V])
		}
		if toks != nil {
			copy(toks[step*l.B:], in)
		}
	}
	return t1.Sub(t0), time.Since(t1), nil
}

func (l *stepLoop) close() {
	for _, b := range l.bindings {
		b.Close()
	}
	for _, v := range l.values {
		v.Destroy()
	}
	l.bindings, l.values = nil, nil
}

// argmax returns the index of the largest value, the first on ties (as
// torch.argmax on CPU).
func argmax(row []float32) int64 {
	best, bv := 0, row[0]
	for i, x := range row {
		if x > bv {
			best, bv = i, x
		}
	}
	return int64(best)
}
