package translate

import (
	"context"
	"fmt"
	"math"

	"github.com/attnx/attnx/decode"
)

// DefaultLengthPenalty is the length penalty alpha used when
// Options.LengthPenalty is nil: beam search ranks hypotheses by score per
// token.
const DefaultLengthPenalty = 1.0

// checkBeamOptions checks Beam, NBest and LengthPenalty, naming the option
// and the allowed range.
func checkBeamOptions(opt Options) error {
	k := max(opt.Beam, 1)
	switch {
	case opt.Beam < 0:
		return fmt.Errorf("translate: Beam = %d: want the beam width K >= 1 (1 or 0: greedy decoding)", opt.Beam)
	case opt.NBest < 0 || opt.NBest > k:
		return fmt.Errorf("translate: NBest = %d: want 1 <= NBest <= Beam = %d (0: 1)", opt.NBest, k)
	}
	if a := opt.LengthPenalty; a != nil && (math.IsNaN(*a) || math.IsInf(*a, 0) || *a < 0) {
		return fmt.Errorf("translate: LengthPenalty = %v: want a finite value >= 0", *a)
	}
	return nil
}

// beam returns the beam width: 1 for greedy decoding.
func (t *Translator) beam() int { return max(t.opt.Beam, 1) }

// nBest returns how many hypotheses a Result lists.
func (t *Translator) nBest() int { return max(t.opt.NBest, 1) }

// lengthPenalty returns alpha.
func (t *Translator) lengthPenalty() float64 {
	if t.opt.LengthPenalty == nil {
		return DefaultLengthPenalty
	}
	return *t.opt.LengthPenalty
}

// runBeamSteps beam-searches one batch on the decoding core: an executor
// from the pool with room for K slots per row, one decode.Beam per row,
// rows leaving the batch as their searches end.
func (t *Translator) runBeamSteps(ctx context.Context, rows [][]int64) ([]Result, error) {
	K := t.beam()
	sp := t.info.Special
	bs := make([]decode.Beam, len(rows))
	searches := make([]decode.Search, len(rows))
	for r, row := range rows {
		bs[r] = decode.Beam{SOS: sp.SOS, EOS: sp.EOS, K: K, MaxLen: t.limit(len(row)), LengthPenalty: t.lengthPenalty(), KeepAttention: true}
		searches[r] = &bs[r]
	}
	if err := t.decodeSteps(ctx, rows, K, searches); err != nil {
		return nil, err
	}
	res := make([]Result, len(rows))
	for r := range res {
		for _, h := range bs[r].Hypotheses(t.nBest()) {
			res[r].Hypotheses = append(res[r].Hypotheses, Hypothesis{Tokens: h.Tokens, Score: h.Score, NormalizedScore: h.NormalizedScore})
		}
		if len(res[r].Hypotheses) > 0 {
			res[r].Tokens, res[r].Attention = res[r].Hypotheses[0].Tokens, bs[r].Attention(0)
		}
	}
	return res, nil
}
