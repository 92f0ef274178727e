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
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/compare"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/onnxrun"
)

// Tolerance is the spec's float32 tolerance: torch.testing's defaults.
var Tolerance = compare.Options{RTol: 1.3e-6, ATol: 1e-5}

// Step holds one decoder step's outputs.
type Step struct {
	InputIDs            []int64
	LogProbs, Attention *onnxrun.Tensor
	// CopyProbs is a copy-attention model's copy_probs (nil for the
	// others).
	CopyProbs *onnxrun.Tensor
	// NextStates holds the step's next value of each recurrent state, by
	// the state's name (hidden, cell, ...: the decoder's next_NAME).
	NextStates map[string]*onnxrun.Tensor
	// Tokens is the argmax of LogProbs per row.
	Tokens []int64
}

// Trace is the record of an encoder run followed by decoder steps. The
// recurrent states are whatever the decoder carries (hidden; cell for an
// LSTM; ...), named as its inputs are, in their order: Trace knows nothing
// of what they mean.
type Trace struct {
	EncoderOutputs *onnxrun.Tensor
	// StateNames lists the recurrent states in the decoder's input order;
	// States holds the encoder's value of each, by name.
	StateNames []string
	States     map[string]*onnxrun.Tensor
	Steps      []Step
}

// sourceRows cuts source_ids [batch, src_len] to each row's length,
// checking 1 <= length <= src_len.
func sourceRows(sourceIDs *onnxrun.Tensor, sourceLengths []int64) ([][]int64, int, error) {
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
func executor(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64) (*decode.Executor, [][]int64, int, error) {
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
func floatTensor(dims []int64, data []float32) *onnxrun.Tensor {
	return onnxrun.NewFloat32(dims, append([]float32(nil), data...))
}

// Run runs the encoder on sourceIDs [batch, srcLen] and sourceLengths, then
// len(stepInputs) decoder steps, feeding stepInputs[t] (one id per row) as
// input_ids and each step's states to the next (the ONNX model's own states,
// so that rounding accumulates as in real use: free-running). The encoder
// runs at the given src_len, whatever the lengths. Its differences from the
// reference are drift (FreeRunning), not a verdict: RunIsolated's are.
func Run(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, stepInputs [][]int64) (*Trace, error) {
	return run(enc, dec, sourceIDs, sourceLengths, stepInputs, nil)
}

// RunIsolated runs the encoder as Run does, then every decoder step on the
// reference's own inputs for that step (spec "Tolerances"): input_ids
// stepInputs[t], the reference's encoder_outputs, and as states the
// reference's encoder states at step 0 and its next_STATE of step t-1
// after. want holds the reference's tensors as `reference.py run` writes
// them. Each step is then one graph run on identical inputs, whose outputs
// Compare judges within the float32 tolerance whatever the sequence length
// or the CPU.
func RunIsolated(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, stepInputs [][]int64, want map[string]*builder.Tensor) (*Trace, error) {
	return run(enc, dec, sourceIDs, sourceLengths, stepInputs, isolatedFeed(want))
}

// isolatedFeed is RunIsolated's feed: before step t it writes the
// reference's inputs for that step into the executor.
func isolatedFeed(want map[string]*builder.Tensor) func(t int, ex *decode.Executor) error {
	ref := func(name string, n int, t int) ([]float32, error) {
		x, ok := want[name]
		if !ok {
			return nil, fmt.Errorf("the reference lacks %s, which the step-isolated run feeds", name)
		}
		v, err := x.Float32s()
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", name, err)
		}
		if len(v) < (t+1)*n {
			return nil, fmt.Errorf("reference %s has shape %v: want %d values for step %d", name, x.Dims, n, t)
		}
		return v[t*n : (t+1)*n], nil
	}
	return func(t int, ex *decode.Executor) error {
		states := ex.Model().States()
		if t == 0 {
			eo := ex.EncoderOutputs()
			v, err := ref(attention.OutEncoder, len(eo), 0)
			if err != nil {
				return err
			}
			if n := builder.NumElements(want[attention.OutEncoder].Dims); int(n) != len(eo) {
				return fmt.Errorf("reference %s has shape %v, the encoder's has %d values", attention.OutEncoder, want[attention.OutEncoder].Dims, len(eo))
			}
			copy(eo, v)
		}
		for k, name := range states {
			st := ex.State(k)
			src, step := name, 0
			if t > 0 {
				src, step = decode.NextPrefix+name, t-1
			}
			v, err := ref(src, len(st), step)
			if err != nil {
				return err
			}
			copy(st, v)
		}
		return nil
	}
}

// RoundingSlack is how many times PyTorch's own float32 rounding in an
// element's row (the largest along the last axis, measured against
// float64 on the same inputs) widens the element's bound: two float32
// implementations of one computation may each be that far from the exact
// value, on opposite sides, and ONNX Runtime's kernels (its vectorised
// activations) round other elements of a row than PyTorch's do. Measured
// on the demo's trained OpenNMT-py model: one log_prob of PyTorch 6.8e-6
// above the exact value and ONNX Runtime's 1.15e-5 below it (atol +
// rtol*|b| is 1.1e-5); another where PyTorch is 7e-7 from exact, ONNX
// Runtime 1.8e-5, and PyTorch's largest error in that row 3.8e-6.
const RoundingSlack = 2

// roundingPrefix names the reference's own rounding error of an output
// (reference.py run --rounding): rounding_log_probs.
const roundingPrefix = "rounding_"

// run is Run and RunIsolated: feed, when set, overwrites the executor's
// encoder outputs and states before step t.
func run(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, stepInputs [][]int64, feed func(t int, ex *decode.Executor) error) (*Trace, error) {
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
	C, V, b, s := int64(m.EncoderWidth()), m.TgtVocab(), int64(B), int64(S)
	shapes := m.StateShapes()
	state := func() map[string]*onnxrun.Tensor {
		out := map[string]*onnxrun.Tensor{}
		for k, name := range m.States() {
			out[name] = floatTensor([]int64{int64(shapes[k].Rows), b, int64(shapes[k].Width)}, ex.State(k))
		}
		return out
	}
	tr := &Trace{EncoderOutputs: floatTensor([]int64{b, s, C}, ex.EncoderOutputs()), StateNames: m.States(), States: state()}
	for t, ids := range stepInputs {
		if feed != nil {
			if err := feed(t, ex); err != nil {
				return nil, fmt.Errorf("decoder step %d: %w", t, err)
			}
		}
		copy(ex.Inputs(), ids)
		if err := ex.Step(); err != nil {
			return nil, fmt.Errorf("decoder step %d: %w", t, err)
		}
		lp := ex.LogProbs()
		toks := make([]int64, B)
		for r := range toks {
			toks[r] = decode.Argmax(lp[r*V : (r+1)*V])
		}
		st := Step{InputIDs: ids, LogProbs: floatTensor([]int64{b, int64(V)}, lp),
			NextStates: state(), Attention: floatTensor([]int64{b, s}, ex.Attention()), Tokens: toks}
		if cp := ex.CopyProbs(); cp != nil {
			st.CopyProbs = floatTensor([]int64{b, s}, cp)
		}
		tr.Steps = append(tr.Steps, st)
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
	// tokens, up to near ties).
	OK bool `json:"ok"`
	// Detail describes the worst element.
	Detail string `json:"detail"`
}

// NearTie is a step's argmax token that differs from the reference's where
// the reference's two best log-probs are closer (Gap) than the two graphs'
// log-probs can move apart: twice the largest difference between the
// row's log_probs and the reference's at that step (Drift), since each of
// the two competing entries may move by that much. Such a token is counted
// and shown, never a mismatch (spec "Tolerances").
type NearTie struct {
	Step  int     `json:"step"`
	Row   int     `json:"row"`
	Got   int64   `json:"got"`
	Want  int64   `json:"want"`
	Gap   float64 `json:"gap"`
	Drift float64 `json:"drift"`
}

// MarshalJSON writes a gap or drift that is not finite (a row with no
// possible token; an infinity against a finite log-prob) as null, which
// JSON has in place of infinities.
func (n NearTie) MarshalJSON() ([]byte, error) {
	finite := func(x float64) *float64 {
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return nil
		}
		return &x
	}
	return json.Marshal(struct {
		Step  int      `json:"step"`
		Row   int      `json:"row"`
		Got   int64    `json:"got"`
		Want  int64    `json:"want"`
		Gap   *float64 `json:"gap"`
		Drift *float64 `json:"drift"`
	}{n.Step, n.Row, n.Got, n.Want, finite(n.Gap), finite(n.Drift)})
}

// String says where the tokens differ and how near PyTorch's best two were.
func (n NearTie) String() string {
	return fmt.Sprintf("step %d row %d: token %d, PyTorch %d (PyTorch's best two log-probs %.2e apart, log_probs drift %.2e)", n.Step, n.Row, n.Got, n.Want, n.Gap, n.Drift)
}

// Report is the outcome of comparing a Trace with the reference.
type Report struct {
	Rows []Row `json:"rows"`
	// TokensIdentical reports whether every step's argmax tokens equal the
	// reference's, except at the near ties listed in NearTies.
	TokensIdentical bool      `json:"tokens_identical"`
	NearTies        []NearTie `json:"near_ties,omitempty"`
	// MaxAbs holds the largest absolute error per output over all steps.
	MaxAbs map[string]float64 `json:"max_abs_err"`
	// OK is true when every row is.
	OK bool `json:"ok"`

	// gap[t][r] is the reference's best-two log-prob gap at step t, row
	// r; drift[t][r] the largest log_probs difference there.
	gap, drift [][]float64
}

// NearTieAt reports whether the reference's best two log-probs at step t,
// row r are closer than twice the log_probs drift measured there: whether
// a graph's token may differ from the reference's at that step without a
// bug. It is false outside the compared steps and rows.
func (r *Report) NearTieAt(t, row int) (NearTie, bool) {
	if t < 0 || t >= len(r.gap) || row < 0 || row >= len(r.gap[t]) {
		return NearTie{}, false
	}
	n := NearTie{Step: t, Row: row, Gap: r.gap[t][row], Drift: r.drift[t][row]}
	return n, n.Gap <= 2*n.Drift
}

// ScoreDrift is how far a sum of log-probs over the compared steps may
// move between the graphs and the reference: the sum over the steps of
// the largest log_probs difference at each. Beam search's scores are such
// sums.
func (r *Report) ScoreDrift() float64 {
	var d float64
	for _, row := range r.drift {
		d += slices.Max(append([]float64{0}, row...))
	}
	return d
}

// Compare checks tr against the reference tensors want (keys as written by
// reference.py run: encoder_outputs and each recurrent state by its name
// (hidden, cell, ...), and log_probs, next_NAME of each state, attention,
// tokens stacked over steps) within tol, and every step's argmax tokens, a
// differing token being a near tie (NearTie) or a mismatch. Every state of
// tr must be in the reference, and every state of the reference in tr (a
// reference with a cell state against graphs without one is an error).
//
// For a trace of RunIsolated the rows are the verdict. For one of Run
// (free-running) they are drift, which Parity reports without judging.
func Compare(tr *Trace, want map[string]*builder.Tensor, tol compare.Options) (*Report, error) {
	rep := &Report{TokensIdentical: true, OK: true, MaxAbs: map[string]float64{}}
	// The reference's own rounding (reference.py run --rounding), when
	// present, widens each element's bound by the two implementations'
	// float32 rounding in its row, each estimated by PyTorch's largest
	// measured error against float64 along the row's last axis
	// (RoundingSlack times it): the elements of a row share their error's
	// sources (a row of log_probs its features and normalizer), and ONNX
	// Runtime's float32 result may be as far from the exact value as
	// PyTorch's is, in the other direction.
	slack := func(name string, step, n int, shape []int64) ([]float32, error) {
		x, ok := want[roundingPrefix+name]
		if !ok {
			return nil, nil
		}
		v, err := x.Float32s()
		if err != nil {
			return nil, fmt.Errorf("reference %s: %w", roundingPrefix+name, err)
		}
		lo := max(step, 0) * n
		if len(v) < lo+n {
			return nil, fmt.Errorf("reference %s has shape %v: want %d values for step %d", roundingPrefix+name, x.Dims, n, step)
		}
		row := n
		if len(shape) > 0 && shape[len(shape)-1] > 0 {
			row = int(shape[len(shape)-1])
		}
		s := make([]float32, n)
		for i := 0; i < n; i += row {
			end := min(i+row, n)
			m := slices.Max(v[lo+i : lo+end])
			for j := i; j < end; j++ {
				s[j] = RoundingSlack * m
			}
		}
		return s, nil
	}
	add := func(step int, name string, got *onnxrun.Tensor, ref []float32, shape []int64) error {
		g, err := got.Float32s()
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		opt := tol
		if opt.Slack, err = slack(name, step, len(ref), shape); err != nil {
			return err
		}
		res := compare.Float32(g, ref, shape, opt)
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
	// Every state the reference carries must be one the graphs carry: a
	// reference with a cell state against graphs without one is an LSTM
	// against a GRU, not rounding.
	for name := range want {
		base, isNext := strings.CutPrefix(name, decode.NextPrefix)
		if _, isState := want[base]; isNext && isState && tr.States[base] == nil {
			return nil, fmt.Errorf("the reference has a %s state, the graphs have none: not the same kind of model (LSTM vs GRU, or another decoder)", base)
		}
	}
	ref, dims, err := get(attention.OutEncoder)
	if err != nil {
		return nil, err
	}
	if err := add(-1, attention.OutEncoder, tr.EncoderOutputs, ref, dims); err != nil {
		return nil, err
	}
	for _, name := range tr.StateNames {
		ref, dims, err := get(name)
		if err != nil {
			return nil, err
		}
		if err := add(-1, name, tr.States[name], ref, dims); err != nil {
			return nil, err
		}
	}
	if len(tr.Steps) == 0 {
		return rep, nil
	}
	var refLP []float32
	stepOutputs := []string{attention.OutLogProbs}
	for _, name := range tr.StateNames {
		stepOutputs = append(stepOutputs, decode.NextPrefix+name)
	}
	stepOutputs = append(stepOutputs, attention.OutAttention)
	if tr.Steps[0].CopyProbs != nil {
		stepOutputs = append(stepOutputs, attention.OutCopyProbs)
	}
	for _, name := range stepOutputs {
		ref, dims, err := get(name)
		if err != nil {
			return nil, err
		}
		if len(dims) == 0 || int(dims[0]) < len(tr.Steps) {
			return nil, fmt.Errorf("reference %s has shape %v: fewer than the %d steps run", name, dims, len(tr.Steps))
		}
		if name == attention.OutLogProbs {
			refLP = ref
		}
		per := int(builder.NumElements(dims[1:]))
		for t, st := range tr.Steps {
			got := st.NextStates[strings.TrimPrefix(name, decode.NextPrefix)]
			switch name {
			case attention.OutLogProbs:
				got = st.LogProbs
			case attention.OutAttention:
				got = st.Attention
			case attention.OutCopyProbs:
				got = st.CopyProbs
			}
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
		got, err := st.LogProbs.Float32s()
		if err != nil {
			return nil, fmt.Errorf("step %d log_probs: %w", t, err)
		}
		V := len(got) / batch
		ref := refLP[t*batch*V : (t+1)*batch*V]
		gaps, drifts := make([]float64, batch), make([]float64, batch)
		row := Row{Step: t, Output: "tokens", OK: true}
		var ties, bad []string
		for r := range batch {
			gaps[r] = bestTwoGap(ref[r*V : (r+1)*V])
			drifts[r] = maxAbsDiff(got[r*V:(r+1)*V], ref[r*V:(r+1)*V])
			g, w := st.Tokens[r], refTokens[t*batch+r]
			if g == w {
				continue
			}
			n := NearTie{Step: t, Row: r, Got: g, Want: w, Gap: gaps[r], Drift: drifts[r]}
			if n.Gap <= 2*n.Drift {
				rep.NearTies = append(rep.NearTies, n)
				ties = append(ties, n.String())
				continue
			}
			row.OK = false
			bad = append(bad, fmt.Sprintf("row %d: token %d, PyTorch %d (PyTorch's best two log-probs %.2e apart, log_probs differ by %.2e: not a near tie)", r, g, w, n.Gap, n.Drift))
		}
		rep.gap, rep.drift = append(rep.gap, gaps), append(rep.drift, drifts)
		switch {
		case len(bad) > 0:
			row.Detail = strings.Join(bad, "; ")
		case len(ties) > 0:
			row.Detail = fmt.Sprintf("%d near ties: %s", len(ties), strings.Join(ties, "; "))
		default:
			row.Detail = fmt.Sprintf("%d tokens identical", batch)
		}
		rep.Rows = append(rep.Rows, row)
		if !row.OK {
			rep.TokensIdentical, rep.OK = false, false
		}
	}
	sort.SliceStable(rep.Rows, func(i, j int) bool { return rep.Rows[i].Step < rep.Rows[j].Step })
	return rep, nil
}

// bestTwoGap is the difference between the largest and the second largest
// of v (+Inf when v has one element), 0 when every value is -Inf: a row
// with no possible token (a copy model's generator share when p_copy
// rounds to 1, as PyTorch's sigmoid may where another's stops an ulp
// short) ties all its tokens.
func bestTwoGap(v []float32) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, x := range v {
		f := float64(x)
		switch {
		case f > a:
			a, b = f, a
		case f > b:
			b = f
		}
	}
	if math.IsInf(a, -1) && len(v) > 1 {
		return 0
	}
	return a - b
}

// maxAbsDiff is the largest |a[i] - b[i]|.
func maxAbsDiff(a, b []float32) float64 {
	var m float64
	for i := range a {
		if a[i] != b[i] { // equal infinities differ by nothing
			m = max(m, math.Abs(float64(a[i])-float64(b[i])))
		}
	}
	return m
}

// Parity is a graph pair's comparison with the reference by the spec's
// "Tolerances": Isolated, every step on the reference's own inputs, is the
// per-step verdict within the float32 tolerance; Free, the graphs fed their
// own states, reports the drift per step and is judged on its tokens,
// identical up to counted near ties.
type Parity struct {
	Isolated *Report `json:"step_isolated"`
	Free     *Report `json:"free_running"`
	// OK: every isolated output within tolerance, and isolated and
	// free-running tokens identical up to near ties.
	OK bool `json:"ok"`
}

// CheckParity runs the graphs both ways on the reference's inputs
// (source_ids, source_lengths and stepInputs, the step_input_ids it was
// fed) and compares each with want, the reference's outputs.
func CheckParity(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, stepInputs [][]int64, want map[string]*builder.Tensor) (*Parity, error) {
	iso, err := RunIsolated(enc, dec, sourceIDs, sourceLengths, stepInputs, want)
	if err != nil {
		return nil, fmt.Errorf("step-isolated run: %w", err)
	}
	free, err := Run(enc, dec, sourceIDs, sourceLengths, stepInputs)
	if err != nil {
		return nil, fmt.Errorf("free-running run: %w", err)
	}
	p := &Parity{}
	if p.Isolated, err = Compare(iso, want, Tolerance); err != nil {
		return nil, err
	}
	if p.Free, err = Compare(free, want, Tolerance); err != nil {
		return nil, err
	}
	p.OK = p.Isolated.OK && p.Free.TokensIdentical
	return p, nil
}

// Failures lists what failed: isolated rows outside the tolerance or with
// tokens that are not near ties, and free-running token mismatches.
func (p *Parity) Failures() []string {
	var out []string
	for _, r := range p.Isolated.Rows {
		if !r.OK {
			out = append(out, fmt.Sprintf("step-isolated step %d %s: %s", r.Step, r.Output, r.Detail))
		}
	}
	for _, r := range p.Free.Rows {
		if r.Output == "tokens" && !r.OK {
			out = append(out, fmt.Sprintf("free-running step %d tokens: %s", r.Step, r.Detail))
		}
	}
	return out
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
func Greedy(enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, sos, eos int64, maxLen int, rules *attention.Rules) (*Decoded, error) {
	gs, err := decodeRows(enc, dec, sourceIDs, sourceLengths, func(g *decode.Greedy) {
		*g = decode.Greedy{SOS: sos, EOS: eos, MaxLen: maxLen, KeepAttention: true, Rules: rules}
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
}](enc, dec *onnxrun.Session, sourceIDs *onnxrun.Tensor, sourceLengths []int64, init func(P)) ([]T, error) {
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
