package fairseqgen

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/attnx/attnx/fairseqdata"
	"github.com/attnx/attnx/internal/align"
)

// Kinds of --print-alignment.
const (
	AlignHard = "hard"
	AlignSoft = "soft"
)

// Alignment is the text of fairseq-generate's A- line for a hypothesis
// (tokens, EOS included) of the source src (ids then </s>, as decoded),
// from the search's attention (one row per token of tokens, one weight
// per token of src), as fairseq 0.12.2's SequenceGeneratorWithAlignment
// and utils.extract_hard_alignment / extract_soft_alignment make it:
//
//   - hard: for each target token that is neither </s> nor padding, in
//     order, "s-t": t its position among those tokens, s the position
//     (among the source tokens that are neither </s> nor padding) of the
//     one it attends to most, the first of equal weights as torch's max
//     takes it; pairs joined by spaces, empty when either side has no
//     such token.
//   - soft: for each target token but padding (</s> included), its
//     weights on the source tokens but padding (</s> included), each
//     with six decimals, joined by commas; rows joined by spaces.
//
// pad is the padding fairseq's collater put left of the source in its
// batch (the batch's longest source less this one). fairseq reads the
// attention's columns against that left-padded row, but its LSTM encoder
// turned the batch to right padding (convert_padding_direction) before
// the attention saw it: column k is source token k, then the padding's
// zero weights. So in fairseq 0.12.2 a source shorter than its batch's
// longest is aligned pad positions off: hard alignments name the source
// token pad places after the one attended to (its first pad tokens are
// never named), soft rows drop the first pad weights and end with pad
// zeros. Alignment does the same with the same columns, so that its lines
// are fairseq-generate's; with pad 0 (a source as long as its batch's
// longest, or a batch of one) the alignment is the attention's own.
func Alignment(kind string, attn [][]float32, src, tokens []int64, pad int) (string, error) {
	if len(attn) != len(tokens) {
		return "", fmt.Errorf("the search recorded %d attention rows for %d tokens: --print-alignment needs one per token", len(attn), len(tokens))
	}
	for i, row := range attn {
		if len(row) != len(src) {
			return "", fmt.Errorf("attention row %d has %d weights for a source of %d tokens", i, len(row), len(src))
		}
	}
	if pad < 0 {
		return "", fmt.Errorf("padding %d: expected 0 or more", pad)
	}
	// fairseq's rows: the source left-padded, the attention right-padded.
	padded := make([]int64, pad+len(src))
	for k := range padded {
		if k < pad {
			padded[k] = fairseqdata.Pad
		} else {
			padded[k] = src[k-pad]
		}
	}
	src = padded
	weight := func(i, k int) float32 {
		if k < len(attn[i]) {
			return attn[i][k]
		}
		return 0
	}
	invalid := func(id int64, eos bool) bool {
		return id == fairseqdata.Pad || (eos && id == fairseqdata.EOS)
	}
	var b strings.Builder
	switch kind {
	case AlignHard:
		skipSrc := make([]bool, len(src))
		for k, id := range src {
			skipSrc[k] = invalid(id, true)
		}
		skipTgt := make([]bool, len(tokens))
		for i, id := range tokens {
			skipTgt[i] = invalid(id, true)
		}
		pairs, err := align.Hard(attn, skipSrc, skipTgt)
		if err != nil {
			return "", err
		}
		for _, p := range pairs {
			if b.Len() > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%d-%d", p.Src, p.Tgt)
		}
	case AlignSoft:
		first := true
		for i, id := range tokens {
			if invalid(id, false) {
				continue
			}
			if !first {
				b.WriteByte(' ')
			}
			first = false
			sep := false
			for k := range src {
				if invalid(src[k], false) {
					continue
				}
				w := weight(i, k)
				if sep {
					b.WriteByte(',')
				}
				sep = true
				// "{:.6f}" of the float32 weight as a Python float.
				b.WriteString(strconv.FormatFloat(float64(w), 'f', 6, 64))
			}
		}
	default:
		return "", fmt.Errorf("--print-alignment %q: expected %s or %s", kind, AlignHard, AlignSoft)
	}
	return b.String(), nil
}
