package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// runner is one engine set up at one configuration.
type runner struct {
	name    string
	weights quant.Precision
	// run decodes one batch. withEncoder means dec includes the encoder
	// (translate's engines time them together); enc is then 0.
	run         func() (enc, dec time.Duration, err error)
	withEncoder bool
	close       func()
	tokens      []int64 // step-major [steps*B], filled by the first run
	note        string
}

// point is one configuration being measured: a model at source length S,
// batch B and T threads, with its inputs.
type point struct {
	ctx     context.Context
	m       *model
	S, B, T int
	steps   int
	ids     []int64 // [B*S]
	lens    []int64
	rows    [][]int64 // views of ids
}

// job says which engine at which precision r is.
func (r *runner) job() job { return job{r.name, r.weights} }

// setup prepares engine e, on the model of precision w for the attnx
// engines (the others are float32), or says why it cannot run here.
func (p *point) setup(e string, w quant.Precision) (r *runner, na string, err error) {
	switch e {
	case EngineLean:
		r, err = p.lean(e, p.m.dirs[w])
	case EngineSteps:
		r, err = p.translated(e, p.m.dirs[w], translate.EngineSteps)
	case EngineLoop:
		r, err = p.translated(e, p.m.dirs[w], translate.EngineLoop)
	case EngineTorchONNX:
		switch {
		case p.m.torchDir == "":
			return nil, "torch.onnx.export failed: " + p.m.torchNA, nil
		case p.B != 1:
			return nil, "torch.onnx.export fixes the decoder's batch at the traced size 1 (LSTM initial state and attention reshapes are specialised), so it runs at batch 1 only", nil
		}
		r, err = p.lean(e, p.m.torchDir)
	case EngineFloor:
		r, err = p.floor(e)
	default:
		err = fmt.Errorf("unknown engine %q", e)
	}
	if r != nil {
		r.weights = w
	}
	return r, "", err
}

// lean runs dir's graphs on the decoding core alone (see leanLoop).
func (p *point) lean(name, dir string) (*runner, error) {
	l, err := newLeanLoop(dir, p.T, p.rows, p.steps)
	if err != nil {
		return nil, err
	}
	r := &runner{name: name, close: l.close}
	r.run = func() (time.Duration, time.Duration, error) {
		var toks []int64
		if r.tokens == nil {
			r.tokens = make([]int64, p.steps*p.B)
			toks = r.tokens
		}
		return l.run(p.ctx, toks)
	}
	return r, nil
}

// translated runs package translate's engine over the model directory.
func (p *point) translated(name, dir, engine string) (*runner, error) {
	tr, err := translate.Open(dir, translate.Options{Threads: p.T, Engine: engine, MaxLen: p.steps, BatchSize: p.B})
	if err != nil {
		return nil, err
	}
	r := &runner{name: name, withEncoder: true, close: func() { tr.Close() },
		note: "decode = whole TranslateIDs call minus " + EngineLean + "'s encoder median"}
	r.run = func() (time.Duration, time.Duration, error) {
		t0 := time.Now()
		res, err := tr.TranslateIDs(p.ctx, p.rows)
		if err != nil {
			return 0, 0, err
		}
		d := time.Since(t0)
		if r.tokens == nil {
			r.tokens = make([]int64, p.steps*p.B)
			for b, x := range res {
				if len(x.Tokens) != p.steps {
					return 0, 0, fmt.Errorf("row %d decoded %d tokens, want %d (EOS suppression failed?)", b, len(x.Tokens), p.steps)
				}
				for s, t := range x.Tokens {
					r.tokens[s*p.B+b] = t
				}
			}
		}
		return 0, d, nil
	}
	return r, nil
}

// floor runs the floor graph (see floorModel).
func (p *point) floor(name string) (*runner, error) {
	H, V := p.m.cfg.Hidden, p.m.cfg.TgtVocab
	sess, err := openFloor(p.m.arch, H, V, sessionOptions(p.T))
	if err != nil {
		return nil, err
	}
	fl, err := newFloorLoop(sess, p.m.arch, p.B, H, V)
	if err != nil {
		sess.Close()
		return nil, err
	}
	return &runner{name: name, close: func() { fl.close(); sess.Close() }, run: func() (time.Duration, time.Duration, error) {
		d, err := fl.run(p.steps)
		return 0, d, err
	}}, nil
}
