package translate

import (
	"context"
	"fmt"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/onnxrun"
)

// beamSpec is beam.onnx's interface (attention.Beam).
func (t *Translator) beamSpec() graphSpec {
	scalar := func(name string, dt onnxrun.DType) ioSpec { return ioSpec{name: name, dtype: dt, dims: []int64{}} }
	perHyp := func(name string, dt onnxrun.DType) ioSpec {
		return ioSpec{name: name, dtype: dt, dims: []int64{-1, -1}}
	}
	return graphSpec{role: "beam",
		inputs: []ioSpec{
			{name: attention.InSourceIDs, dtype: onnxrun.Int64, dims: []int64{-1, -1}},
			{name: attention.InSourceLengths, dtype: onnxrun.Int64, dims: []int64{-1}},
			scalar(attention.InMaxLen, onnxrun.Int64),
			scalar(attention.InBeamSize, onnxrun.Int64),
			scalar(attention.InLengthPenalty, onnxrun.Float64),
		},
		outputs: []ioSpec{
			{name: attention.OutOutputIDs, dtype: onnxrun.Int64, dims: []int64{-1, -1, -1}},
			perHyp(attention.OutLengths, onnxrun.Int64),
			perHyp(attention.OutScores, onnxrun.Float32),
			perHyp(attention.OutNormalizedScores, onnxrun.Float32),
			{name: attention.OutAttentions, dtype: onnxrun.Float32, dims: []int64{-1, -1, -1}},
		}}
}

// runLoopBeam beam-searches one batch with beam.onnx. The graph takes one
// max_len for its whole batch, and the limit changes a search's outcome
// (hypotheses still live at max_len join the final list), so rows of
// different limits run as separate batches, each at its own limit, as the
// steps engine runs each row to its own.
func (t *Translator) runLoopBeam(ctx context.Context, rows [][]int64, so searchOpts) ([]Result, error) {
	res := make([]Result, len(rows))
	var limits []int
	groups := map[int][]int{}
	for r, row := range rows {
		l := t.rowLimit(so, r, row)
		if groups[l] == nil {
			limits = append(limits, l)
		}
		groups[l] = append(groups[l], r)
	}
	for _, l := range limits {
		idx := groups[l]
		sub := make([][]int64, len(idx))
		for i, r := range idx {
			sub[i] = rows[r]
		}
		out, err := t.runBeamGraph(ctx, sub, l)
		if err != nil {
			return nil, err
		}
		for i, r := range idx {
			res[r] = out[i]
		}
	}
	return res, nil
}

// runBeamGraph runs beam.onnx once on rows with max_len steps and reads
// each row's n-best list and its best hypothesis' attention.
func (t *Translator) runBeamGraph(ctx context.Context, rows [][]int64, steps int) ([]Result, error) {
	B, S, K := len(rows), maxLen(rows), t.beam()
	if need, limit := t.beamGraphBytes(B*K, S, steps), t.maxLiveBytes(); need > limit {
		return nil, &MemoryLimitError{What: fmt.Sprintf("beam.onnx on %d rows times the beam width %d, sources of up to %d tokens and max_len %d", B, K, S, steps),
			Need: need, Limit: limit}
	}
	ids, lens := make([]int64, B*S), make([]int64, B)
	fillSources(ids, lens, rows, S)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := t.beamGraph.RunContext(ctx, map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     onnxrun.NewInt64([]int64{int64(B), int64(S)}, ids),
		attention.InSourceLengths: onnxrun.NewInt64([]int64{int64(B)}, lens),
		attention.InMaxLen:        onnxrun.Scalar(int64(steps)),
		attention.InBeamSize:      onnxrun.Scalar(int64(K)),
		attention.InLengthPenalty: onnxrun.Scalar(t.lengthPenalty()),
	})
	if err != nil {
		return nil, fmt.Errorf("translate: beam: %w", err)
	}
	ot, at := out[attention.OutOutputIDs], out[attention.OutAttentions]
	if len(ot.Shape) != 3 || ot.Shape[0] != int64(B) || ot.Shape[1] != int64(K) || ot.Shape[2] > int64(steps) ||
		len(at.Shape) != 3 || at.Shape[0] != int64(B) || at.Shape[1] != ot.Shape[2] || at.Shape[2] != int64(S) {
		return nil, fmt.Errorf("translate: beam returned %s %s and %s %s for a batch of %d x %d, K = %d, max_len %d; want [%d,%d,out_len <= %d] and [%d,out_len,%d]",
			attention.OutOutputIDs, ot, attention.OutAttentions, at, B, S, K, steps, B, K, steps, B, S)
	}
	T := int(ot.Shape[2])
	tok, err := ot.Int64s()
	if err != nil {
		return nil, fmt.Errorf("translate: beam output %q: %w", attention.OutOutputIDs, err)
	}
	att, err := at.Float32s()
	if err != nil {
		return nil, fmt.Errorf("translate: beam output %q: %w", attention.OutAttentions, err)
	}
	hl, err := perHypothesis[int64](out, attention.OutLengths, B, K)
	if err != nil {
		return nil, err
	}
	scores, err := perHypothesis[float32](out, attention.OutScores, B, K)
	if err != nil {
		return nil, err
	}
	norm, err := perHypothesis[float32](out, attention.OutNormalizedScores, B, K)
	if err != nil {
		return nil, err
	}
	res := make([]Result, B)
	for r := range rows {
		// Missing hypotheses (length 0) come last.
		for j := 0; j < t.nBest() && hl[r*K+j] > 0; j++ {
			i, l := r*K+j, int(hl[r*K+j])
			if l > T {
				return nil, fmt.Errorf("translate: beam output %q: row %d hypothesis %d has length %d, past the %d steps run", attention.OutLengths, r, j, l, T)
			}
			toks := append([]int64(nil), tok[i*T:i*T+l]...)
			res[r].Hypotheses = append(res[r].Hypotheses, Hypothesis{Tokens: toks, Score: scores[i], NormalizedScore: norm[i]})
		}
		if len(res[r].Hypotheses) == 0 {
			continue
		}
		best := res[r].Hypotheses[0].Tokens
		res[r].Tokens = best
		n := int(lens[r])
		for j := range best {
			base := (r*T + j) * S
			res[r].Attention = append(res[r].Attention, append([]float32(nil), att[base:base+n]...))
		}
	}
	return res, nil
}

// perHypothesis reads beam.onnx's output name, [B, K] of element type E.
func perHypothesis[E int64 | float32](out map[string]*onnxrun.Tensor, name string, B, K int) ([]E, error) {
	x := out[name]
	if x == nil || len(x.Shape) != 2 || x.Shape[0] != int64(B) || x.Shape[1] != int64(K) {
		return nil, fmt.Errorf("translate: beam output %q is %v, want [%d,%d]", name, x, B, K)
	}
	v, ok := x.Data.([]E)
	if !ok {
		return nil, fmt.Errorf("translate: beam output %q holds %T, want []%T", name, x.Data, *new(E))
	}
	return v, nil
}

// beamGraphBytes estimates the memory beam.onnx's run takes for slots
// hypotheses (rows times K) of sources of S tokens and max_len steps:
// per slot the encoder outputs, the recurrent state, two vocabulary-sized
// score buffers (log_probs and the candidates TopK ranks), and per step
// its token, parent and attention records. It is the bound
// Options.MaxLiveBytes holds the run to, as it does the steps engine's
// buffers.
func (t *Translator) beamGraphBytes(slots, S, steps int) int64 {
	H, L, V := int64(t.info.Hidden), int64(t.info.Layers), int64(t.info.TgtVocab)
	perSlot := int64(S)*H + 4*L*H + 2*V + int64(steps)*(int64(S)+4)
	return 4 * int64(slots) * perSlot
}
