package decode_test

import (
	"math"
	"slices"
	"testing"

	"github.com/attnx/attnx/decode"
)

// TestPrefixGreedy forces a prefix ahead of greedy decoding on tableT1:
// the output starts with the prefix whatever the argmax, each prefix
// token scores its own log-prob, and greedy decoding goes on from the
// prefix's state.
func TestPrefixGreedy(t *testing.T) {
	for _, c := range []struct {
		name   string
		prefix []int64
		fill   decode.PrefixFill
		tokens []int64
		scores []float32
	}{
		// Unforced, greedy takes [2] -0.5 then EOS -0.25.
		{"none", nil, decode.PrefixInf, []int64{2, tEOS}, []float32{-0.5, -0.25}},
		{"argmax's own", []int64{2}, decode.PrefixInf, []int64{2, tEOS}, []float32{-0.5, -0.25}},
		{"another", []int64{3}, decode.PrefixInf, []int64{3, 2, tEOS}, []float32{-1, -0.5, -0.5}},
		{"two", []int64{3, 3}, decode.PrefixInf, []int64{3, 3, 0, 0, 0, 0}, []float32{-1, -2, tX, tX, tX, tX}},
		{"onmt's fill", []int64{3}, decode.PrefixMinus10000, []int64{3, 2, tEOS}, []float32{-1, -0.5, -0.5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := &decode.Greedy{SOS: tSOS, EOS: tEOS, MaxLen: 6}
			var s decode.Search = g
			if c.prefix != nil {
				s = &decode.Prefix{Search: g, Tokens: c.prefix, Fill: c.fill}
			}
			runTable(t, s, tableT1)
			if !slices.Equal(g.Tokens(), c.tokens) || !slices.Equal(g.Scores(), c.scores) {
				t.Errorf("tokens %v scores %v, want %v %v", g.Tokens(), g.Scores(), c.tokens, c.scores)
			}
		})
	}
}

// TestPrefixFill checks what a forced step leaves of each slot's
// log-probs: the prefix token's own value, the others -inf (fairseq's
// _prefix_tokens) or 10000 lower (OpenNMT-py's target_prefixing).
func TestPrefixFill(t *testing.T) {
	inf := float32(math.Inf(-1))
	for _, c := range []struct {
		fill decode.PrefixFill
		want []float32
	}{
		{decode.PrefixInf, []float32{inf, inf, -2, inf, inf, inf, -5, inf}},
		{decode.PrefixMinus10000, []float32{-10001, -10002, -2, -10003, -10004, -10005, -5, -10006}},
	} {
		// Two slots of four tokens; the prefix token is 2.
		lp := []float32{-1, -2, -2, -3, -4, -5, -5, -6}
		lp[1], lp[2], lp[4], lp[6] = -2, -2, -4, -5
		got := []float32{}
		rec := &recorder{seen: &got}
		p := &decode.Prefix{Search: rec, Tokens: []int64{2}, Fill: c.fill}
		p.Advance(decode.NewSlots(2, 4, lp, 1, 1, []float32{1, 1}), make([]int64, 2), make([]int, 2))
		if !slices.Equal(got, c.want) {
			t.Errorf("fill %d: the search saw %v, want %v", c.fill, got, c.want)
		}
		// After the prefix the log-probs pass untouched.
		got = got[:0]
		lp2 := slices.Clone(lp[:4])
		p.Advance(decode.NewSlots(1, 4, lp2, 1, 1, []float32{1}), make([]int64, 2), make([]int, 2))
		if !slices.Equal(got, lp[:4]) || p.Step() != 2 {
			t.Errorf("fill %d after the prefix: saw %v at step %d, want %v at 2", c.fill, got, p.Step(), lp[:4])
		}
	}
}

// recorder is a Search that keeps the log-probs it is handed.
type recorder struct{ seen *[]float32 }

func (r *recorder) Width() int   { return 2 }
func (r *recorder) First() int64 { return tSOS }
func (r *recorder) Advance(s decode.Slots, inputs []int64, parents []int) int {
	for i := range s.Len() {
		*r.seen = append(*r.seen, s.LogProbs(i)...)
	}
	return 1
}

// TestPrefixFairseqBeam forces a prefix ahead of fairseq's beam search on
// tableT1: every hypothesis starts with it and counts its log-prob, and
// the search widens from it as fairseq's does after prefix_tokens (its
// other beams hold -inf, which never finishes).
func TestPrefixFairseqBeam(t *testing.T) {
	b := &decode.FairseqBeam{SOS: tSOS, EOS: tEOS, UNK: -1, K: 2, NBest: 2, MaxLen: 6, LenPen: 1}
	p := &decode.Prefix{Search: b, Tokens: []int64{3}}
	runTable(t, p, tableT1)
	hs := b.Hypotheses(2)
	if len(hs) == 0 {
		t.Fatal("no hypotheses")
	}
	for _, h := range hs {
		if h.Tokens[0] != 3 || h.Positional[0] != -1 || math.IsInf(float64(h.Score), -1) {
			t.Errorf("hypothesis %v (positional %v, score %v): want it to start with the prefix 3 at -1, finite", h.Tokens, h.Positional, h.Score)
		}
	}
	// [3] -1, then [3 2] -1.5 and [3 EOS] -4; [3 2 EOS] -2 finishes.
	if !slices.Equal(hs[0].Tokens, []int64{3, 2, tEOS}) || hs[0].Score != -2 {
		t.Errorf("best %v score %v, want [3 2 1] -2", hs[0].Tokens, hs[0].Score)
	}
}
