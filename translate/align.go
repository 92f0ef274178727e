package translate

import "github.com/attnx/attnx/internal/align"

// AlignmentLink is one link of a hard alignment: Src is a source
// position, Tgt an output position (Result.Alignment says which positions
// count).
type AlignmentLink = align.Pair

// alignment is the hard alignment of an output (tokens) to the encoder's
// row enc from the attention the search recorded for it, nil when it
// recorded none (CallOptions.WithoutAttention) or not one row per token
// (the loop engine's beam hypotheses). Under fairseq's rules it is
// fairseq-generate --print-alignment hard's (utils.extract_hard_alignment:
// neither side's </s> nor padding counts, positions numbered among the
// others, as fairseqgen.Alignment of a batch of one). Under any other
// rules it is the attention's own alignment, not a toolkit's: each output
// token but EOS to the position in enc (Result.Source) it attends to
// most, positions counted from 0 over every source token and every
// output token before it. OpenNMT-py's -report_align is not this: it
// aligns with a transformer's guided-alignment heads, which the models
// attnx exports do not have.
func (t *Translator) alignment(tokens []int64, attention [][]float32, enc []int64, so searchOpts) []AlignmentLink {
	if len(attention) != len(tokens) || len(tokens) == 0 {
		return nil
	}
	for _, row := range attention {
		if len(row) != len(enc) {
			return nil
		}
	}
	sp := t.info.Special
	skipSrc := make([]bool, len(enc))
	if so.fairseq {
		skipSrc = t.fairseqUnaligned(enc)
	}
	skipTgt := make([]bool, len(tokens))
	for i, id := range tokens {
		skipTgt[i] = id == sp.EOS || (so.fairseq && id == sp.PAD)
	}
	pairs, err := align.Hard(attention, skipSrc, skipTgt)
	if err != nil {
		return nil // not reached: skipTgt has one mark per row
	}
	return pairs
}

// alignmentJSON is links as JSON pairs [src, tgt]; nil stays nil.
func alignmentJSON(links []AlignmentLink) [][2]int {
	if links == nil {
		return nil
	}
	out := make([][2]int, len(links))
	for i, l := range links {
		out[i] = [2]int{l.Src, l.Tgt}
	}
	return out
}
