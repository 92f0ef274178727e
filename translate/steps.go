package translate

import (
	"context"
	"errors"

	"github.com/attnx/attnx/decode"
)

// runSteps decodes one batch with encoder.onnx and decoder.onnx on the
// decoding core: an executor from the pool, one greedy search per row, rows
// leaving the batch as they finish.
func (t *Translator) runSteps(ctx context.Context, rows [][]int64) ([]Result, error) {
	searches := t.searches(rows, 0)
	if err := t.decodeSteps(ctx, rows, 1, searches); err != nil {
		return nil, err
	}
	return searchResults(searches), nil
}

// searches returns one search per row: greedy decoding limited to maxLen
// tokens, or to the Translator's limit when maxLen is 0.
func (t *Translator) searches(rows [][]int64, maxLen int) []decode.Search {
	sp := t.info.Special
	gs := make([]decode.Greedy, len(rows))
	ss := make([]decode.Search, len(rows))
	for r, row := range rows {
		limit := maxLen
		if limit == 0 {
			limit = t.limit(len(row))
		}
		gs[r] = decode.Greedy{SOS: sp.SOS, EOS: sp.EOS, MaxLen: limit, KeepAttention: true}
		ss[r] = &gs[r]
	}
	return ss
}

// searchResults reads the results of finished searches made by searches.
func searchResults(ss []decode.Search) []Result {
	res := make([]Result, len(ss))
	for r, s := range ss {
		g := s.(*decode.Greedy)
		res[r].Tokens, res[r].Attention = g.Tokens(), g.Attention()
	}
	return res
}

// decodeSteps decodes rows with their searches on an executor from the
// pool, sized for width slots per row.
func (t *Translator) decodeSteps(ctx context.Context, rows [][]int64, width int, searches []decode.Search) error {
	ex, err := t.pool.get(ctx, width*len(rows), width*len(rows)*maxLen(rows))
	if err != nil {
		return err
	}
	err = decode.Decode(ctx, ex, rows, searches)
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
		// Do not keep buffers ONNX Runtime has complained about.
		t.pool.discard(ex)
		return err
	}
	t.pool.put(ex)
	return err
}
