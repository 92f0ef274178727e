// Package verify runs exported attention models step by step and compares
// every output of every step with the PyTorch reference's, as recorded by
// reference/reference.py (safetensors with the keys listed in
// testdata/fixtures/manifest.json).
package verify

import (
	"fmt"
	"sort"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/runtime"
)

// Tolerance is the spec's float32 tolerance: torch.testing's defaults.
var Tolerance = compare.Options{RTol: 1.3e-6, ATol: 1e-5}

// Step holds one decoder step's outputs.
type Step struct {
	InputIDs                                  []int64
	LogProbs, NextHidden, NextCell, Attention *runtime.Tensor
	// Tokens is the argmax of LogProbs per row.
	Tokens []int64
}

// Trace is the record of an encoder run followed by decoder steps.
type Trace struct {
	EncoderOutputs, Hidden, Cell *runtime.Tensor
	Steps                        []Step
}

// Run runs the encoder on sourceIDs [batch, srcLen] and sourceLengths, then
// len(stepInputs) decoder steps, feeding stepInputs[t] (one id per row) as
// input_ids and each step's states to the next (the ONNX model's own states,
// so that errors would accumulate as in real use).
func Run(enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64, stepInputs [][]int64) (*Trace, error) {
	batch := int64(len(sourceLengths))
	lens := runtime.NewInt64([]int64{batch}, sourceLengths)
	out, err := enc.Run(map[string]*runtime.Tensor{attention.InSourceIDs: sourceIDs, attention.InSourceLengths: lens})
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	tr := &Trace{EncoderOutputs: out[attention.OutEncoder], Hidden: out[attention.OutHidden], Cell: out[attention.OutCell]}
	hidden, cell := tr.Hidden, tr.Cell
	for t, ids := range stepInputs {
		if int64(len(ids)) != batch {
			return nil, fmt.Errorf("step %d: %d input ids for a batch of %d", t, len(ids), batch)
		}
		res, err := dec.Run(map[string]*runtime.Tensor{
			attention.InInputIDs:       runtime.NewInt64([]int64{batch}, ids),
			attention.InHidden:         hidden,
			attention.InCell:           cell,
			attention.InEncoderOutputs: tr.EncoderOutputs,
			attention.InSourceLengths:  lens,
		})
		if err != nil {
			return nil, fmt.Errorf("decoder step %d: %w", t, err)
		}
		lp := res[attention.OutLogProbs]
		v, err := lp.Float32s()
		if err != nil {
			return nil, fmt.Errorf("decoder step %d: log_probs: %w", t, err)
		}
		st := Step{InputIDs: ids, LogProbs: lp, NextHidden: res[attention.OutNextHidden],
			NextCell: res[attention.OutNextCell], Attention: res[attention.OutAttention],
			Tokens: Argmax(v, int(batch))}
		tr.Steps = append(tr.Steps, st)
		hidden, cell = st.NextHidden, st.NextCell
	}
	return tr, nil
}

// Argmax returns the index of the largest value in each of rows equal
// slices of v; ties go to the first, as torch.argmax does on CPU.
func Argmax(v []float32, rows int) []int64 {
	out := make([]int64, rows)
	n := len(v) / rows
	for r := 0; r < rows; r++ {
		row := v[r*n : (r+1)*n]
		best := 0
		for i, x := range row {
			if x > row[best] {
				best = i
			}
		}
		out[r] = int64(best)
	}
	return out
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
// next_hidden, next_cell, attention, tokens stacked over steps).
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
		return v, t.Dims, err
	}
	for _, name := range []string{"encoder_outputs", "hidden", "cell"} {
		ref, dims, err := get(name)
		if err != nil {
			return nil, err
		}
		got := map[string]*runtime.Tensor{"encoder_outputs": tr.EncoderOutputs, "hidden": tr.Hidden, "cell": tr.Cell}[name]
		if err := add(-1, name, got, ref, dims); err != nil {
			return nil, err
		}
	}
	tokT, ok := want["tokens"]
	if !ok {
		return nil, fmt.Errorf("reference lacks tokens")
	}
	refTokens, err := tokT.Int64s()
	if err != nil {
		return nil, err
	}
	for _, name := range []string{"log_probs", "next_hidden", "next_cell", "attention"} {
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
	batch := len(tr.Steps[0].Tokens)
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
	// Attention holds, per row, one [src_len] row of weights per token.
	Attention [][][]float32
}

// Greedy decodes step by step with the encoder and decoder sessions, as
// the spec's "Greedy decoding" says: start from SOS, feed back the argmax,
// a row stops at EOS (which is part of its output), and decoding stops when
// every row has stopped or after maxLen steps.
func Greedy(enc, dec *runtime.Session, sourceIDs *runtime.Tensor, sourceLengths []int64, sos, eos int64, maxLen int) (*Decoded, error) {
	batch := len(sourceLengths)
	lens := runtime.NewInt64([]int64{int64(batch)}, sourceLengths)
	out, err := enc.Run(map[string]*runtime.Tensor{attention.InSourceIDs: sourceIDs, attention.InSourceLengths: lens})
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	encOut, hidden, cell := out[attention.OutEncoder], out[attention.OutHidden], out[attention.OutCell]
	d := &Decoded{Tokens: make([][]int64, batch), Attention: make([][][]float32, batch)}
	ids := make([]int64, batch)
	for i := range ids {
		ids[i] = sos
	}
	done := make([]bool, batch)
	srcLen := int(sourceIDs.Shape[1])
	for step := 0; step < maxLen; step++ {
		res, err := dec.Run(map[string]*runtime.Tensor{
			attention.InInputIDs:       runtime.NewInt64([]int64{int64(batch)}, ids),
			attention.InHidden:         hidden,
			attention.InCell:           cell,
			attention.InEncoderOutputs: encOut,
			attention.InSourceLengths:  lens,
		})
		if err != nil {
			return nil, fmt.Errorf("decoder step %d: %w", step, err)
		}
		lp, _ := res[attention.OutLogProbs].Float32s()
		attn, _ := res[attention.OutAttention].Float32s()
		next := Argmax(lp, batch)
		running := false
		for b := 0; b < batch; b++ {
			if done[b] {
				continue
			}
			d.Tokens[b] = append(d.Tokens[b], next[b])
			d.Attention[b] = append(d.Attention[b], attn[b*srcLen:(b+1)*srcLen])
			done[b] = next[b] == eos
			running = running || !done[b]
		}
		if !running {
			break
		}
		ids, hidden, cell = next, res[attention.OutNextHidden], res[attention.OutNextCell]
	}
	return d, nil
}
