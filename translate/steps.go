package translate

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/runtime"
	ort "github.com/yalue/onnxruntime_go"
)

// wsKey is the batch shape a workspace serves.
type wsKey struct{ batch, srcLen int }

// workspace holds everything one decode of one batch shape needs: the
// preallocated ORT tensors and the IoBindings over them. It belongs to one
// call at a time.
type workspace struct {
	key      wsKey
	srcIDs   *ort.Tensor[int64]   // [B, S]
	srcLens  *ort.Tensor[int64]   // [B]
	encOut   *ort.Tensor[float32] // [B, S, H]
	hidden   [2]*ort.Tensor[float32]
	cell     [2]*ort.Tensor[float32] // [L, B, H]; step t reads [t%2], writes [1-t%2]
	inputIDs *ort.Tensor[int64]      // [B]
	logProbs *ort.Tensor[float32]    // [B, Vt]
	attn     *ort.Tensor[float32]    // [B, S]
	encB     *runtime.Binding
	decB     [2]*runtime.Binding
	values   []ort.Value
}

// newWorkspace allocates and binds the tensors of one batch shape.
func (t *Translator) newWorkspace(key wsKey) (ws *workspace, err error) {
	B, S := int64(key.batch), int64(key.srcLen)
	H, L, Vt := int64(t.info.Hidden), int64(t.info.Layers), int64(t.info.TgtVocab)
	ws = &workspace{key: key}
	defer func() {
		if err != nil {
			ws.destroy()
			ws = nil
		}
	}()
	i64 := func(dims ...int64) *ort.Tensor[int64] {
		if err != nil {
			return nil
		}
		var x *ort.Tensor[int64]
		x, err = ort.NewEmptyTensor[int64](ort.NewShape(dims...))
		if x != nil {
			ws.values = append(ws.values, x)
		}
		return x
	}
	f32 := func(dims ...int64) *ort.Tensor[float32] {
		if err != nil {
			return nil
		}
		var x *ort.Tensor[float32]
		x, err = ort.NewEmptyTensor[float32](ort.NewShape(dims...))
		if x != nil {
			ws.values = append(ws.values, x)
		}
		return x
	}
	ws.srcIDs, ws.srcLens = i64(B, S), i64(B)
	ws.encOut = f32(B, S, H)
	ws.hidden = [2]*ort.Tensor[float32]{f32(L, B, H), f32(L, B, H)}
	ws.cell = [2]*ort.Tensor[float32]{f32(L, B, H), f32(L, B, H)}
	ws.inputIDs, ws.logProbs, ws.attn = i64(B), f32(B, Vt), f32(B, S)
	if err != nil {
		return nil, fmt.Errorf("translate: allocating tensors for batch %d x %d: %w", B, S, err)
	}
	type bind struct {
		input bool
		name  string
		v     ort.Value
	}
	binding := func(s *runtime.Session, binds []bind) (*runtime.Binding, error) {
		b, err := s.NewBinding()
		if err != nil {
			return nil, err
		}
		for _, x := range binds {
			if x.input {
				err = b.BindInput(x.name, x.v)
			} else {
				err = b.BindOutput(x.name, x.v)
			}
			if err != nil {
				b.Close()
				return nil, err
			}
		}
		return b, nil
	}
	ws.encB, err = binding(t.enc, []bind{
		{true, attention.InSourceIDs, ws.srcIDs}, {true, attention.InSourceLengths, ws.srcLens},
		{false, attention.OutEncoder, ws.encOut}, {false, attention.OutHidden, ws.hidden[0]}, {false, attention.OutCell, ws.cell[0]},
	})
	if err != nil {
		return nil, fmt.Errorf("translate: binding the encoder: %w", err)
	}
	for p := 0; p < 2; p++ {
		ws.decB[p], err = binding(t.dec, []bind{
			{true, attention.InInputIDs, ws.inputIDs},
			{true, attention.InHidden, ws.hidden[p]}, {true, attention.InCell, ws.cell[p]},
			{true, attention.InEncoderOutputs, ws.encOut}, {true, attention.InSourceLengths, ws.srcLens},
			{false, attention.OutLogProbs, ws.logProbs},
			{false, attention.OutNextHidden, ws.hidden[1-p]}, {false, attention.OutNextCell, ws.cell[1-p]},
			{false, attention.OutAttention, ws.attn},
		})
		if err != nil {
			return nil, fmt.Errorf("translate: binding the decoder: %w", err)
		}
	}
	return ws, nil
}

// destroy releases the bindings, then the tensors.
func (ws *workspace) destroy() {
	for _, b := range []*runtime.Binding{ws.encB, ws.decB[0], ws.decB[1]} {
		if b != nil {
			b.Close()
		}
	}
	for _, v := range ws.values {
		v.Destroy()
	}
	ws.values = nil
}

// wsPool is a bounded free list of idle workspaces.
type wsPool struct {
	mu   sync.Mutex
	idle []*workspace // oldest first
	max  int
}

// get removes and returns the most recently returned idle workspace of
// key, or nil.
func (p *wsPool) get(key wsKey) *workspace {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.idle) - 1; i >= 0; i-- {
		if ws := p.idle[i]; ws.key == key {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			return ws
		}
	}
	return nil
}

// put returns a workspace, releasing the oldest idle one when the list is
// full.
func (p *wsPool) put(ws *workspace) {
	p.mu.Lock()
	p.idle = append(p.idle, ws)
	var evict *workspace
	if len(p.idle) > p.max {
		evict = p.idle[0]
		p.idle = p.idle[1:]
	}
	p.mu.Unlock()
	if evict != nil {
		evict.destroy()
	}
}

// size returns the number of idle workspaces.
func (p *wsPool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.idle)
}

func (p *wsPool) close() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, ws := range idle {
		ws.destroy()
	}
}

// runSteps decodes one batch with encoder.onnx and decoder.onnx.
func (t *Translator) runSteps(ctx context.Context, rows [][]int64) ([]Result, error) {
	key := wsKey{batch: len(rows), srcLen: maxLen(rows)}
	ws := t.pool.get(key)
	if ws == nil {
		var err error
		if ws, err = t.newWorkspace(key); err != nil {
			return nil, err
		}
	}
	res, err := t.decodeSteps(ctx, ws, rows)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// A failed run may leave the buffers in any state; they are
		// rewritten by the next use anyway, but do not keep a workspace
		// that ORT has complained about.
		ws.destroy()
		return nil, err
	}
	t.pool.put(ws)
	return res, err
}

func (t *Translator) decodeSteps(ctx context.Context, ws *workspace, rows [][]int64) ([]Result, error) {
	B, S := ws.key.batch, ws.key.srcLen
	Vt := t.info.TgtVocab
	sp := t.info.Special
	lens := ws.srcLens.GetData()
	t.fillSources(ws.srcIDs.GetData(), lens, rows, S)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := ws.encB.Run(); err != nil {
		return nil, fmt.Errorf("translate: encoder: %w", err)
	}
	in := ws.inputIDs.GetData()
	for r := range in {
		in[r] = sp.SOS
	}
	res := make([]Result, B)
	limits := make([]int, B)
	done := make([]bool, B)
	steps := 0
	for r, row := range rows {
		limits[r] = t.limit(len(row))
		steps = max(steps, limits[r])
		res[r].Tokens = make([]int64, 0, min(limits[r], 64))
		res[r].Attention = make([][]float32, 0, min(limits[r], 64))
	}
	lp, at := ws.logProbs.GetData(), ws.attn.GetData()
	for step := 0; step < steps; step++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := ws.decB[step%2].Run(); err != nil {
			return nil, fmt.Errorf("translate: decoder step %d: %w", step, err)
		}
		running := false
		for r := 0; r < B; r++ {
			if done[r] {
				continue
			}
			tok := argmax(lp[r*Vt : (r+1)*Vt])
			n := int(lens[r])
			res[r].Tokens = append(res[r].Tokens, tok)
			res[r].Attention = append(res[r].Attention, append([]float32(nil), at[r*S:r*S+n]...))
			if tok == sp.EOS || len(res[r].Tokens) >= limits[r] {
				done[r] = true
			} else {
				running = true
			}
			in[r] = tok
		}
		if !running {
			break
		}
	}
	return res, nil
}

// argmax returns the index of the largest value; ties go to the first, as
// torch.argmax does on CPU.
func argmax(row []float32) int64 {
	best := 0
	bv := row[0]
	for i, x := range row {
		if x > bv {
			best, bv = i, x
		}
	}
	return int64(best)
}
