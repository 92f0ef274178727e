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
	sp := t.info.Special
	gs := make([]decode.Greedy, len(rows))
	searches := make([]decode.Search, len(rows))
	for r, row := range rows {
		gs[r] = decode.Greedy{SOS: sp.SOS, EOS: sp.EOS, MaxLen: t.limit(len(row)), KeepAttention: true}
		searches[r] = &gs[r]
	}
	if err := t.decodeSteps(ctx, rows, 1, searches); err != nil {
		return nil, err
	}
	res := make([]Result, len(rows))
	for r := range res {
		res[r].Tokens, res[r].Attention = gs[r].Tokens(), gs[r].Attention()
	}
	return res, nil
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
