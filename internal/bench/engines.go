package bench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// runner is one engine set up at one configuration, decoding greedily or
// (beam > 1) with beam search.
type runner struct {
	name    string
	weights quant.Precision
	beam    int
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

// job says which engine at which precision and beam width r is.
func (r *runner) job() job { return job{r.name, r.weights, max(r.beam, 1)} }

// beamEngines are the engines that measure beam search too: the decoding
// core, translate's steps engine, its loop engine (on beam.onnx) and
// PyTorch's reference beam search.
var beamEngines = []string{EngineLean, EngineSteps, EngineLoop, EngineLeanGo, EngineLoopGo, EnginePyTorch}

// setup prepares j's engine, on the model of j's precision for the attnx
// engines (the others are float32), decoding greedily (j.beam 1) or with
// beam search of width j.beam, or says why it cannot run here.
func (p *point) setup(j job) (r *runner, na string, err error) {
	e, w, k := j.engine, j.weights, j.beam
	if k > 1 && !slices.Contains(beamEngines, e) {
		return nil, "", fmt.Errorf("engine %s has no beam search", e)
	}
	switch e {
	case EngineLean:
		r, err = p.lean(e, p.m.dirs[w], k, onnxrun.BackendORT)
	case EngineSteps:
		r, err = p.translated(e, p.m.dirs[w], translate.EngineSteps, k, onnxrun.BackendORT)
	case EngineLoop:
		r, err = p.translated(e, p.m.dirs[w], translate.EngineLoop, k, onnxrun.BackendORT)
	case EngineLeanGo:
		r, err = p.lean(e, p.m.dirs[w], k, onnxrun.BackendGo)
	case EngineLoopGo:
		r, err = p.translated(e, p.m.dirs[w], translate.EngineLoop, k, onnxrun.BackendGo)
	case EngineTorchONNX:
		switch {
		case p.m.torchDir == "":
			return nil, "torch.onnx.export failed: " + p.m.torchNA, nil
		case p.B != 1:
			return nil, "torch.onnx.export fixes the decoder's batch at the traced size 1 (LSTM initial state and attention reshapes are specialised), so it runs at batch 1 only", nil
		}
		r, err = p.lean(e, p.m.torchDir, 1, onnxrun.BackendORT)
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
func (p *point) lean(name, dir string, k int, backend string) (*runner, error) {
	l, err := newLeanLoop(dir, backend, p.T, p.rows, p.steps, k)
	if err != nil {
		return nil, err
	}
	r := &runner{name: name, beam: k, close: l.close}
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
func (p *point) translated(name, dir, engine string, k int, backend string) (*runner, error) {
	tr, err := translate.Open(dir, translate.Options{Backend: backend, Threads: p.T, Engine: engine, MaxLen: p.steps, BatchSize: p.B, Beam: k, NoModelDefaults: true})
	if err != nil {
		return nil, err
	}
	r := &runner{name: name, beam: k, withEncoder: true, close: func() { tr.Close() },
		note: "decode = whole TranslateIDs call minus " + EngineLean + "'s fastest encoder run"}
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
	sess, err := openFloor(p.m.arch, H, V, sessionOptions(p.T, onnxrun.BackendORT))
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
