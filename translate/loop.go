package translate

import (
	"context"
	"fmt"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/onnxrun"
)

// runLoop decodes one batch with greedy.onnx in one session run. max_len is
// the largest row limit; each row is then cut at its EOS and its own limit,
// which gives the tokens the step engine gives.
func (t *Translator) runLoop(ctx context.Context, rows [][]int64, so searchOpts) ([]Result, error) {
	B, S := len(rows), maxLen(rows)
	ids, lens := make([]int64, B*S), make([]int64, B)
	fillSources(ids, lens, rows, S)
	limits := make([]int, B)
	steps := 0
	for r, row := range rows {
		limits[r] = t.rowLimit(so, r, row)
		steps = max(steps, limits[r])
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := t.greedy.RunContext(ctx, map[string]*onnxrun.Tensor{
		attention.InSourceIDs:     onnxrun.NewInt64([]int64{int64(B), int64(S)}, ids),
		attention.InSourceLengths: onnxrun.NewInt64([]int64{int64(B)}, lens),
		inMaxLen:                  onnxrun.Scalar(int64(steps)),
	})
	if err != nil {
		return nil, fmt.Errorf("translate: greedy: %w", err)
	}
	ot, at := out[outOutputIDs], out[outGreedyAtt]
	tok, err := ot.Int64s()
	if err != nil {
		return nil, fmt.Errorf("translate: greedy output %q: %w", outOutputIDs, err)
	}
	att, err := at.Float32s()
	if err != nil {
		return nil, fmt.Errorf("translate: greedy output %q: %w", outGreedyAtt, err)
	}
	if len(ot.Shape) != 2 || ot.Shape[0] != int64(B) || len(at.Shape) != 3 || at.Shape[0] != int64(B) ||
		at.Shape[1] != ot.Shape[1] || at.Shape[2] != int64(S) {
		return nil, fmt.Errorf("translate: greedy returned %s %s and %s %s for a batch of %d x %d; want [%d,out_len] and [%d,out_len,%d]",
			outOutputIDs, ot, outGreedyAtt, at, B, S, B, B, S)
	}
	T := int(ot.Shape[1])
	lt := out[attention.OutTokenLogProbs]
	lp, err := lt.Float32s()
	if err != nil {
		return nil, fmt.Errorf("translate: greedy output %q: %w", attention.OutTokenLogProbs, err)
	}
	if len(lt.Shape) != 2 || lt.Shape[0] != int64(B) || lt.Shape[1] != int64(T) {
		return nil, fmt.Errorf("translate: greedy returned %s %s for %s %s; want [%d,%d]", attention.OutTokenLogProbs, lt, outOutputIDs, ot, B, T)
	}
	eos := t.info.Special.EOS
	res := make([]Result, B)
	for r := range rows {
		n := int(lens[r])
		var scores []float32
		for j := 0; j < T && j < limits[r]; j++ {
			id := tok[r*T+j]
			res[r].Tokens = append(res[r].Tokens, id)
			scores = append(scores, lp[r*T+j])
			base := (r*T + j) * S
			res[r].Attention = append(res[r].Attention, append([]float32(nil), att[base:base+n]...))
			if id == eos {
				break
			}
		}
		res[r].Hypotheses = []Hypothesis{greedyHypothesis(so, res[r].Tokens, scores)}
	}
	return res, nil
}
