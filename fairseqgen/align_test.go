package fairseqgen

import (
	"strings"
	"testing"
)

// TestAlignment: fairseq's hard and soft alignments of hand-made attention
// (source ids 5, 6, 7 then </s> 2; the hypothesis 8, 9 then </s>): hard
// pairs leave </s> out on both sides and take the first of equal weights,
// soft rows keep </s> and print six decimals, and a source padded in its
// batch is read as fairseq 0.12.2 reads its LSTM's attention (left-padded
// row, right-padded columns), so the alignment moves by the padding.
func TestAlignment(t *testing.T) {
	src := []int64{5, 6, 7, 2}
	tokens := []int64{8, 9, 2}
	attn := [][]float32{
		{0.1, 0.7, 0.1, 0.1},
		{0.2, 0.2, 0.1, 0.5}, // </s> weighs most: the first of the equal others
		{0.0, 0.0, 0.25, 0.75},
	}
	for _, c := range []struct {
		name   string
		kind   string
		attn   [][]float32
		src    []int64
		tokens []int64
		pad    int
		want   string
	}{
		{"hard", AlignHard, attn, src, tokens, 0, "1-0 0-1"},
		{"soft", AlignSoft, attn, src, tokens, 0, "0.100000,0.700000,0.100000,0.100000 0.200000,0.200000,0.100000,0.500000 0.000000,0.000000,0.250000,0.750000"},
		// Padding 1: fairseq's row is <pad> 5 6 7 </s> and its columns
		// the weights of 5 6 7 </s> then a zero: the columns of 6, 7 and
		// </s> are read as 5's, 6's and 7's, the first (5's) and the
		// last (the zero) masked.
		{"hard padded", AlignHard, attn, src, tokens, 1, "0-0 2-1"},
		{"soft padded", AlignSoft, attn, src, tokens, 1, "0.700000,0.100000,0.100000,0.000000 0.200000,0.100000,0.500000,0.000000 0.000000,0.250000,0.750000,0.000000"},
		// Padding as long as the source: every column fairseq reads is a
		// zero of the padding; torch's max takes the first.
		{"hard all padding", AlignHard, attn, src, tokens, 4, "0-0 0-1"},
		{"empty source", AlignHard, [][]float32{{1}, {1}}, []int64{2}, []int64{8, 2}, 0, ""},
		{"empty hypothesis", AlignHard, [][]float32{{0.5, 0.5}}, []int64{5, 2}, []int64{2}, 0, ""},
		{"soft empty hypothesis", AlignSoft, [][]float32{{0.5, 0.5}}, []int64{5, 2}, []int64{2}, 0, "0.500000,0.500000"},
		// float32(1.5e-6) is 1.50000005e-06 and float32(0.9999985)
		// 0.99999851: both up, as Python's "{:.6f}" rounds them.
		{"rounding", AlignSoft, [][]float32{{0.0000015, 0.9999985}}, []int64{5, 2}, []int64{2}, 0, "0.000002,0.999999"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Alignment(c.kind, c.attn, c.src, c.tokens, c.pad)
			if err != nil || got != c.want {
				t.Errorf("Alignment: %q, %v; want %q", got, err, c.want)
			}
		})
	}
	for _, c := range []struct {
		name, kind string
		attn       [][]float32
		pad        int
		want       string
	}{
		{"no attention", AlignHard, nil, 0, "recorded 0 attention rows for 3 tokens"},
		{"short row", AlignSoft, [][]float32{{1}, {1}, {1}}, 0, "attention row 0 has 1 weights for a source of 4 tokens"},
		{"negative padding", AlignHard, attn, -1, "padding -1"},
		{"unknown kind", "medium", attn, 0, `--print-alignment "medium": expected hard or soft`},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := Alignment(c.kind, c.attn, src, tokens, c.pad)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Alignment: %q, %v; want an error with %q", got, err, c.want)
			}
		})
	}
}
