package decode_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attnx/attnx/decode"
)

// randomTable returns a table of random log-probs over vocab tokens (no
// ties), fixed per prefix, with EOS unlikely enough that rows run for a
// few steps.
func randomTable(seed uint64, vocab int) table {
	return func(prefix []int64) []float32 {
		h := seed
		for _, x := range prefix {
			h = h*1000003 + uint64(x) + 1
		}
		r := rand.New(rand.NewPCG(h, seed))
		lp := make([]float32, vocab)
		for v := range lp {
			lp[v] = -float32(r.ExpFloat64() * 3)
		}
		if len(prefix) < 4 {
			lp[tEOS] -= 6
		}
		return lp
	}
}

// TestGreedyScores: Greedy's Scores are its tokens' log-probs, and their
// float32 sum, normalised by Normalize or OpenNMTScores, is what a beam of
// one gives the same tokens: decode.Beam (K = 1) under every length
// penalty, decode.OpenNMTBeam (K = 1, what onmt_translate -beam_size 1
// runs) under each of OpenNMT-py's penalties.
func TestGreedyScores(t *testing.T) {
	compared := 0
	for seed := range uint64(200) {
		const vocab = 7
		tab := randomTable(seed, vocab)
		maxLen := 1 + int(seed%9)
		alpha := []float64{0, 0.6, 1, 1.4}[seed%4]
		g := &decode.Greedy{SOS: tSOS, EOS: tEOS, MaxLen: maxLen}
		runVocab(t, g, tab, vocab)
		toks, scores := g.Tokens(), g.Scores()
		if len(scores) != len(toks) || len(toks) == 0 {
			t.Fatalf("seed %d: %d scores for %d tokens", seed, len(scores), len(toks))
		}
		var sum float32
		for k, tok := range toks {
			if want := tab(toks[:k])[tok]; scores[k] != want {
				t.Fatalf("seed %d token %d (%d): score %v, its log-prob %v", seed, k, tok, scores[k], want)
			}
			sum += scores[k]
		}
		for _, wu := range []bool{false, true} {
			b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 1, MaxLen: maxLen, LengthPenalty: alpha, PenaltyWu: wu}
			runVocab(t, b, tab, vocab)
			h := b.Hypotheses(1)[0]
			if !slices.Equal(h.Tokens, toks) {
				t.Fatalf("seed %d: beam of one %v, greedy %v", seed, h.Tokens, toks)
			}
			if norm := decode.Normalize(sum, len(toks), alpha, wu); h.Score != sum || h.NormalizedScore != norm {
				t.Errorf("seed %d alpha %v wu %v: beam of one %v / %v, greedy %v / %v", seed, alpha, wu, h.Score, h.NormalizedScore, sum, norm)
			}
			compared++
		}
		for _, pen := range []string{decode.PenaltyNone, decode.PenaltyAvg, decode.PenaltyWu} {
			b := &decode.OpenNMTBeam{SOS: tSOS, EOS: tEOS, UNK: 3, K: 1, NBest: 1, MaxLen: maxLen, Penalty: pen, Alpha: alpha}
			runVocab(t, b, tab, vocab)
			h := b.Hypotheses(1)[0]
			if !slices.Equal(h.Tokens, toks) {
				t.Fatalf("seed %d %s: OpenNMT-py's beam of one %v, greedy %v", seed, pen, h.Tokens, toks)
			}
			raw, norm := decode.OpenNMTScores(pen, alpha, scores)
			if h.Score != raw || h.NormalizedScore != norm {
				t.Errorf("seed %d %s alpha %v: OpenNMT-py's beam of one %v / %v, OpenNMTScores %v / %v", seed, pen, alpha, h.Score, h.NormalizedScore, raw, norm)
			}
			compared++
		}
	}
	t.Logf("%d beams of one compared", compared)
}

// TestOpenNMTScoresByHand: OpenNMT-py's penalties over hand-worked
// dyadic log-probs, whose float32 steps are exact: avg divides the sum by
// the tokens plus the start token, wu by ((5 + that) / 6) ** alpha.
func TestOpenNMTScoresByHand(t *testing.T) {
	lp := []float32{-0.5, -0.25, -1.25} // sum -2, 3 tokens: length 4
	for _, c := range []struct {
		pen   string
		alpha float64
		norm  float64
	}{
		{decode.PenaltyNone, 1, -2},
		{decode.PenaltyAvg, 1, -2.0 / 4},
		{decode.PenaltyAvg, 0, -2},
		{decode.PenaltyWu, 1, -2 / 1.5},
		{decode.PenaltyWu, 2, -2 / 2.25},
	} {
		t.Run(fmt.Sprintf("%s %v", c.pen, c.alpha), func(t *testing.T) {
			raw, norm := decode.OpenNMTScores(c.pen, c.alpha, lp)
			if math.Abs(float64(raw)+2) > 1e-6 || math.Abs(float64(norm)-c.norm) > 1e-6 {
				t.Errorf("raw %v norm %v, want -2 and %v", raw, norm, c.norm)
			}
		})
	}
}
