package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/onnxrun"
)

// leanLoop is the leanest greedy decode (or beam search) of an
// encoder.onnx / decoder.onnx pair of the spec's interface (attnx's graphs
// or torch.onnx.export's): attnx's decoding core (package decode), the code
// translate's steps engine runs, without translate's per-call work (input
// checks, pooling, result strings, attention copies). Once warmed up
// nothing is allocated per run.
type leanLoop struct {
	enc, dec *onnxrun.Session
	ex       *decode.Executor
	batch    *decode.Batch
	rows     [][]int64
	gs       []decode.Greedy
	bs       []decode.Beam
	searches []decode.Search
}

// newLeanLoop opens dir's encoder.onnx and decoder.onnx with threads
// intra-op threads, for decoding rows for exactly steps steps (EOS is
// suppressed in the benchmarked weights), greedily (k = 1) or with beam
// search of width k.
func newLeanLoop(dir, backend string, threads int, rows [][]int64, steps, k int) (l *leanLoop, err error) {
	l = &leanLoop{rows: rows}
	defer func() {
		if err != nil {
			l.close()
			l = nil
		}
	}()
	if l.enc, err = onnxrun.Open(filepath.Join(dir, "encoder.onnx"), sessionOptions(threads, backend)); err != nil {
		return nil, err
	}
	if l.dec, err = onnxrun.Open(filepath.Join(dir, "decoder.onnx"), sessionOptions(threads, backend)); err != nil {
		return nil, err
	}
	m, err := decode.NewModel(l.enc, l.dec, decode.Dims{})
	if err != nil {
		return nil, err
	}
	cells := 0
	for _, r := range rows {
		cells = max(cells, len(r))
	}
	if l.ex, err = m.NewExecutor(k*len(rows), k*len(rows)*cells); err != nil {
		return nil, err
	}
	l.batch = decode.NewBatch(l.ex)
	l.searches = make([]decode.Search, len(rows))
	sos, eos := attention.DefaultSpecial.SOS, attention.DefaultSpecial.EOS
	if k > 1 {
		l.bs = make([]decode.Beam, len(rows))
		for i := range l.bs {
			l.bs[i] = decode.Beam{SOS: sos, EOS: eos, K: k, MaxLen: steps, LengthPenalty: 1}
			l.searches[i] = &l.bs[i]
		}
		return l, nil
	}
	l.gs = make([]decode.Greedy, len(rows))
	for i := range l.gs {
		l.gs[i] = decode.Greedy{SOS: sos, EOS: eos, MaxLen: steps}
		l.searches[i] = &l.gs[i]
	}
	return l, nil
}

// run encodes and decodes the rows, writing the tokens step-major
// ([steps*B]) into toks when it is not nil.
func (l *leanLoop) run(ctx context.Context, toks []int64) (encT, decT time.Duration, err error) {
	l.batch.Reset()
	for i := range l.gs {
		l.gs[i].Reset()
	}
	for i := range l.bs {
		l.bs[i].Reset()
	}
	t0 := time.Now()
	if err := l.batch.Add(l.rows, l.searches); err != nil {
		return 0, 0, fmt.Errorf("bench: encoder: %w", err)
	}
	t1 := time.Now()
	if err := l.batch.Run(ctx); err != nil {
		return 0, 0, fmt.Errorf("bench: decoding: %w", err)
	}
	decT = time.Since(t1)
	if toks != nil {
		B := len(l.rows)
		for b := range l.rows {
			var tk []int64
			if l.bs != nil {
				tk = l.bs[b].AppendTokens(nil, 0)
			} else {
				tk = l.gs[b].Tokens()
			}
			if len(tk)*B != len(toks) {
				return 0, 0, fmt.Errorf("bench: row %d decoded %d tokens, want %d (EOS suppression failed?)", b, len(tk), len(toks)/B)
			}
			for s, t := range tk {
				toks[s*B+b] = t
			}
		}
	}
	return t1.Sub(t0), decT, nil
}

func (l *leanLoop) close() {
	if l.ex != nil {
		l.ex.Close()
	}
	for _, s := range []*onnxrun.Session{l.enc, l.dec} {
		if s != nil {
			s.Close()
		}
	}
}
