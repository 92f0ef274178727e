// Package verify runs exported attention models step by step and compares
// every output of every step with the PyTorch reference's, as recorded by
// reference/reference.py (safetensors with the keys listed in
// testdata/fixtures/manifest.json). Check is what `attnx verify` does: run
// the reference and the model directory's graphs on the same inputs and
// compare the step outputs, the step argmax tokens, free-running greedy
// decoding and, with Options.Beam, beam search's n-best lists (CompareBeam:
// the spec's near-tie swaps are allowed and counted). Run, Compare, Greedy,
// Beam and CompareBeam are its parts, usable on any opened encoder/decoder
// pair. Every run goes through attnx's decoding core
// (package decode), the code that translate and bench run too.
package verify

import (
	"context"
	"fmt"
	"sort"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/runtime"
)

// Tolerance is the spec's float32 tolerance: torch.testing's defaults.
var Tolerance = compare.Options{RTol: 1.3e-6, ATol: 1e-5}

// Step holds one decoder step's outputs. NextCell is nil for models
// without a cell state (GRU).
type Step struct {
	InputIDs                                  []int64
	LogProbs, NextHidden, NextCell, Attention *runtime.Tensor
	// Tokens is the argmax of LogProbs per row.
	Tokens []int64
}

// Trace is the record of an encoder run followed by decoder steps. Cell is
// nil for models without a cell state (GRU).
type Trace struct {
	EncoderOutputs, Hidden, Cell *runtime.Tensor
	Steps                        []Step
}

// sourceRows cuts source_ids [batch, src_len] to each row's length,
// checking 1 <= length <= src_len.
func sourceRows(sourceIDs *runtime.Tensor, sourceLengths []int64) ([][]int64, int, error) {
	if len(sourceIDs.Shape) != 2 || int(sourceIDs.Shape[0]) != len(sourceLengths) {
		return nil, 0, fmt.Errorf("source_ids %s and %d source_lengths: want source_ids [batch, src_len] with one length per row", sourceIDs, len(sourceLengths))
	}
	ids, err := sourceIDs.Int64s()
	if err != nil {
		return nil, 0, fmt.Errorf("source_ids: %w", err)
	}
	S := int(sourceIDs.Shape[1])
	rows := make([][]int64, len(sourceLengths))
	for r, n := range sourceLengths {
		if n < 1 || int(n) > S {
			return nil, 0, fmt.Errorf("source_lengths[%d] = %d: want 1 <= length <= src_len %d", r, n, S)
		}
		rows[r] = ids[r*S : r*S+int(n)]
	}
	return rows, S, nil
}

// executor returns an executor of enc and dec with room for the source
// rows (cut to their lengths) at the given src_len; the caller closes it.
func executor(enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64) (*decode.Executor, [][]int64, int, error) {
	m, err := decode.NewModel(enc, dec, decode.Dims{})
	if err != nil {
		return nil, nil, 0, err
	}
	rows, S, err := sourceRows(sourceIDs, sourceLengths)
	if err != nil {
		return nil, nil, 0, err
	}
	ex, err := m.NewExecutor(len(rows), len(rows)*S)
	if err != nil {
		return nil, nil, 0, err
	}
	return ex, rows, S, nil
}

// floatTensor copies data into a new runtime tensor.
func floatTensor(dims []int64, data []float32) *runtime.Tensor {
	return runtime.NewFloat32(dims, append([]float32(nil), data...))
}

// Run runs the encoder on sourceIDs [batch, srcLen] and sourceLengths, then
// len(stepInputs) decoder steps, feeding stepInputs[t] (one id per row) as
// input_ids and each step's states to the next (the ONNX model's own states,
// so that errors would accumulate as in real use). The encoder runs at the
// given src_len, whatever the lengths.
func Run(enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64, stepInputs [][]int64) (*Trace, error) {
	for t, ids := range stepInputs {
		if len(ids) != len(sourceLengths) {
			return nil, fmt.Errorf("step %d: %d input ids for a batch of %d", t, len(ids), len(sourceLengths))
		}
	}
	ex, rows, S, err := executor(enc, dec, sourceIDs, sourceLengths)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	m, B := ex.Model(), len(rows)
	first := make([]int64, B)
	if len(stepInputs) > 0 {
		copy(first, stepInputs[0])
	}
	if _, err := ex.Join(rows, first, S); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	H, L, V, b, s := int64(m.Hidden()), int64(m.Layers()), m.TgtVocab(), int64(B), int64(S)
	state := func() map[string]*runtime.Tensor {
		out := map[string]*runtime.Tensor{}
		for k, name := range m.States() {
			out[name] = floatTensor([]int64{L, b, H}, ex.State(k))
		}
		return out
	}
	st := state()
	tr := &Trace{EncoderOutputs: floatTensor([]int64{b, s, H}, ex.EncoderOutputs()), Hidden: st[attention.OutHidden], Cell: st[attention.OutCell]}
	for t, ids := range stepInputs {
		copy(ex.Inputs(), ids)
		if err := ex.Step(); err != nil {
			return nil, fmt.Errorf("decoder step %d: %w", t, err)
		}
		lp := ex.LogProbs()
		toks := make([]int64, B)
		for r := range toks {
			toks[r] = decode.Argmax(lp[r*V : (r+1)*V])
		}
		next := state()
		tr.Steps = append(tr.Steps, Step{InputIDs: ids, LogProbs: floatTensor([]int64{b, int64(V)}, lp),
			NextHidden: next[attention.OutHidden], NextCell: next[attention.OutCell],
			Attention: floatTensor([]int64{b, s}, ex.Attention()), Tokens: toks})
	}
	return tr, nil
}

// Row is one line of a verification report: one output at one step.
type Row struct {
	// Step is the decoder step, or -1 for the encoder's outputs.
	Step int `json:"step"`
	// Output is the output's name.
	Output string `json:"output"`
	// MaxAbs and MaxRel are the largest absolute and relative errors.
	MaxAbs float64 `json:"max_abs_err"`
	MaxRel float64 `json:"max_rel_err"`
	// OK reports whether every element is within tolerance (or equal, for
	// tokens).
	OK bool `json:"ok"`
	// Detail describes the worst element.
	Detail string `json:"detail"`
}

// Report is the outcome of comparing a Trace with the reference.
type Report struct {
	Rows []Row `json:"rows"`
	// TokensIdentical reports whether every step's argmax tokens equal the
	// reference's.
	TokensIdentical bool `json:"tokens_identical"`
	// MaxAbs holds the largest absolute error per output over all steps.
	MaxAbs map[string]float64 `json:"max_abs_err"`
	// OK is true when every row is.
	OK bool `json:"ok"`
}

// Compare checks tr against the reference tensors want (keys as written by
// reference.py run: encoder_outputs, hidden, cell, and log_probs,
// next_hidden, next_cell, attention, tokens stacked over steps). cell and
// next_cell are compared when the model has a cell state, and must then be
// in the reference; a model without one must not meet a reference with one.
func Compare(tr *Trace, want map[string]*builder.Tensor, tol compare.Options) (*Report, error) {
	rep := &Report{TokensIdentical: true, OK: true, MaxAbs: map[string]float64{}}
	add := func(step int, name string, got *runtime.Tensor, ref []float32, shape []int64) error {
		g, err := got.Float32s()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		res := compare.Float32(g, ref, shape, tol)
		if res.Err != nil {
			return fmt.Errorf("step %d %s: %w", step, name, res.Err)
		}
		rep.Rows = append(rep.Rows, Row{Step: step, Output: name, MaxAbs: res.MaxAbsErr, MaxRel: res.MaxRelErr, OK: res.OK, Detail: res.String()})
		if prev, seen := rep.MaxAbs[name]; !seen || res.MaxAbsErr > prev {
			rep.MaxAbs[name] = res.MaxAbsErr
		}
		rep.OK = rep.OK && res.OK
		return nil
	}
	get := func(name string) ([]float32, []int64, error) {
		t, ok := want[name]
		if !ok {
			return nil, nil, fmt.Errorf("reference lacks %s", name)
		}
		v, err := t.Float32s()
		if err != nil {
			return nil, nil, fmt.Errorf("reference %s: %w", name, err)
		}
		return v, t.Dims, nil
	}
	hasCell := tr.Cell != nil
	if _, refCell := want["cell"]; refCell && !hasCell {
		return nil, fmt.Errorf("the reference has a cell state, the graphs have none: not the same kind of model (LSTM vs GRU)")
	}
	encOuts := map[string]*runtime.Tensor{"encoder_outputs": tr.EncoderOutputs, "hidden": tr.Hidden, "cell": tr.Cell}
	for _, name := range []string{"encoder_outputs", "hidden", "cell"} {
		if encOuts[name] == nil {
			continue
		}
		ref, dims, err := get(name)
		if err != nil {
			return nil, err
		}
		if err := add(-1, name, encOuts[name], ref, dims); err != nil {
			return nil, err
		}
	}
	if len(tr.Steps) == 0 {
		return rep, nil
	}
	for _, name := range []string{"log_probs", "next_hidden", "next_cell", "attention"} {
		if name == "next_cell" && !hasCell {
			continue
		}
		ref, dims, err := get(name)
		if err != nil {
			return nil, err
		}
		if len(dims) == 0 || int(dims[0]) < len(tr.Steps) {
			return nil, fmt.Errorf("reference %s has shape %v: fewer than the %d steps run", name, dims, len(tr.Steps))
		}
		per := int(builder.NumElements(dims[1:]))
		for t, st := range tr.Steps {
			got := map[string]*runtime.Tensor{"log_probs": st.LogProbs, "next_hidden": st.NextHidden, "next_cell": st.NextCell, "attention": st.Attention}[name]
			if err := add(t, name, got, ref[t*per:(t+1)*per], dims[1:]); err != nil {
				return nil, err
			}
		}
	}
	tokT, ok := want["tokens"]
	if !ok {
		return nil, fmt.Errorf("reference lacks tokens")
	}
	refTokens, err := tokT.Int64s()
	if err != nil {
		return nil, fmt.Errorf("reference tokens: %w", err)
	}
	batch := len(tr.Steps[0].Tokens)
	if len(refTokens) < len(tr.Steps)*batch {
		return nil, fmt.Errorf("reference tokens %v: fewer than the %d steps of %d rows run", tokT.Dims, len(tr.Steps), batch)
	}
	for t, st := range tr.Steps {
		res := compare.Exact(st.Tokens, refTokens[t*batch:(t+1)*batch], []int64{int64(batch)})
		rep.Rows = append(rep.Rows, Row{Step: t, Output: "tokens", OK: res.OK, Detail: res.String()})
		if !res.OK {
			rep.TokensIdentical, rep.OK = false, false
		}
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool { return rep.Rows[i].Step < rep.Rows[j].Step })
	return rep, nil
}

// Decoded is the result of greedy decoding for one batch.
type Decoded struct {
	// Tokens holds each row's output, EOS included when it was emitted.
	Tokens [][]int64
	// Attention holds, per row, one row of weights over the row's own
	// source length per token.
	Attention [][][]float32
}

// Greedy decodes with the encoder and decoder sessions on the decoding
// core, as the spec's "Greedy decoding" says: start from SOS, feed back the
// argmax, a row stops at EOS (which is part of its output) or after maxLen
// tokens.
func Greedy(enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64, sos, eos int64, maxLen int) (*Decoded, error) {
	gs, err := decodeRows(enc, dec, sourceIDs, sourceLengths, func(g *decode.Greedy) {
		*g = decode.Greedy{SOS: sos, EOS: eos, MaxLen: maxLen, KeepAttention: true}
	})
	if err != nil {
		return nil, err
	}
	d := &Decoded{Tokens: make([][]int64, len(gs)), Attention: make([][][]float32, len(gs))}
	for r := range gs {
		d.Tokens[r], d.Attention[r] = gs[r].Tokens(), gs[r].Attention()
	}
	return d, nil
}

// decodeRows decodes the source rows (cut to their lengths) on the
// decoding core, each driven by its own search, which init sets up.
func decodeRows[T any, P interface {
	*T
	decode.Search
}](enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64, init func(P)) ([]T, error) {
	ex, rows, _, err := executor(enc, dec, sourceIDs, sourceLengths)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	ts := make([]T, len(rows))
	searches := make([]decode.Search, len(rows))
	for r := range ts {
		init(&ts[r])
		searches[r] = P(&ts[r])
	}
	if err := decode.Decode(context.Background(), ex, rows, searches); err != nil {
		return nil, err
	}
	return ts, nil
}
