package decode

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/attnx/attnx/attention"
)

// TestFairseqBeamMatchesFairseq replays testdata/fairseq/beam.json
// (fairseq 0.12.2's own SequenceGenerator on a table model, written by
// make_beam.py): FairseqBeam may only ask for prefixes fairseq's search
// reached, and must return its finished hypotheses, tokens and normalised
// scores to the bit, in its order.
func TestFairseqBeamMatchesFairseq(t *testing.T) {
	data, err := os.ReadFile("testdata/fairseq/beam.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		PAD, EOS, UNK int64
		Cases         []struct {
			Case struct {
				Name    string
				Beam    int
				Vocab   int
				Batch   int
				LenPen  *float64 `json:"lenpen"`
				UnkPen  float64  `json:"unkpen"`
				MaxLenB *int     `json:"max_len_b"`
				MinLen  *int     `json:"min_len"`
				// fairseq's other searches (make_beam.py's strategies).
				MatchSourceLen bool     `json:"match_source_len"`
				Groups         int      `json:"groups"`
				Strength       *float64 `json:"strength"`
				DiversityRate  *float64 `json:"diversity_rate"`
			}
			SrcLen     []int `json:"src_len"`
			Rows       map[string][]uint32
			Hypotheses [][]struct {
				Tokens []int64
				Score  uint32
			}
		}
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) < 17 {
		t.Fatalf("%d cases; want the 17 make_beam.py writes", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		cs := c.Case
		t.Run(cs.Name, func(t *testing.T) {
			lenpen, maxLen, minLen := 1.0, 201, 1
			if cs.LenPen != nil {
				lenpen = *cs.LenPen
			}
			if cs.MaxLenB != nil {
				maxLen = *cs.MaxLenB + 1
			}
			if cs.MinLen != nil {
				minLen = *cs.MinLen
			}
			rules := &attention.Rules{Greedy: []int64{fx.PAD}, Beam: []int64{fx.PAD}, EOSFromStep: minLen}
			b := &FairseqBeam{SOS: fx.EOS, EOS: fx.EOS, UNK: fx.UNK, K: cs.Beam, NBest: cs.Beam, MaxLen: maxLen, LenPen: lenpen, UnkPen: cs.UnkPen, Rules: rules,
				MatchSourceLen: cs.MatchSourceLen, Groups: cs.Groups, GroupStrength: 0.5}
			if cs.Strength != nil {
				b.GroupStrength = *cs.Strength
			}
			if cs.DiversityRate != nil {
				b.Siblings, b.DiversityRate = true, *cs.DiversityRate
			}
			if cs.MatchSourceLen {
				// The generator's limit: the batch's longest source.
				b.MaxLen = slices.Max(c.SrcLen) + 1
			}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			for sent := range cs.Batch {
				if cs.MatchSourceLen {
					b.SrcLen = c.SrcLen[sent]
				}
				replayTable(t, b, fx.EOS, cs.Vocab, tableRows(c.Rows, sent))
				want, got := c.Hypotheses[sent], b.Hypotheses(0)
				if len(got) != len(want) {
					t.Fatalf("sentence %d: %d hypotheses, fairseq %d", sent, len(got), len(want))
				}
				for k := range want {
					if !slices.Equal(got[k].Tokens, want[k].Tokens) || math.Float32bits(got[k].NormalizedScore) != want[k].Score {
						t.Errorf("sentence %d hypothesis %d: %v (score %v); fairseq %v (score %v)", sent, k, got[k].Tokens, got[k].NormalizedScore,
							want[k].Tokens, math.Float32frombits(want[k].Score))
					}
				}
			}
		})
	}
}

// TestFairseqBeamEdges: the last step admits </s> alone, so a row of
// MaxLen 1 ends at once with </s>; NaN log-probs count as -inf; a bad
// setting is refused naming it.
func TestFairseqBeamEdges(t *testing.T) {
	const V, eos = 5, 2
	nan := float32(math.NaN())
	b := &FairseqBeam{SOS: eos, EOS: eos, UNK: -1, K: 2, NBest: 2, MaxLen: 1, LenPen: 1}
	lp := []float32{-0.1, -0.5, -3, nan, -2}
	inputs, parents := make([]int64, 2), make([]int, 2)
	if n := b.Advance(NewSlots(1, V, slices.Clone(lp), 0, 0, nil), inputs, parents); n != 0 {
		t.Fatalf("MaxLen 1: Advance returned %d, want 0 (done)", n)
	}
	if h := b.Hypotheses(0); len(h) != 1 || !slices.Equal(h[0].Tokens, []int64{eos}) || h[0].NormalizedScore != -3 {
		t.Fatalf("MaxLen 1: %+v, want [</s>] scored -3", h)
	}
	b = &FairseqBeam{SOS: eos, EOS: eos, UNK: -1, K: 2, NBest: 1, MaxLen: 10, LenPen: 1}
	if n := b.Advance(NewSlots(1, V, slices.Clone(lp), 0, 0, nil), inputs, parents); n != 2 || inputs[0] != 0 || inputs[1] != 1 {
		t.Fatalf("first step: %d live, inputs %v; want tokens 0 and 1 (</s> ends one hypothesis only when among the first K; the NaN one never)", n, inputs[:n])
	}
	for _, bad := range []FairseqBeam{{K: 0, NBest: 1}, {K: 2, NBest: 3}, {K: 2, NBest: 1, LenPen: math.NaN()}, {K: 2, NBest: 1, UnkPen: math.Inf(1)}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: Validate accepted it", bad)
		}
	}
}

// TestFairseqDraw: sampling draws in proportion to the probabilities,
// only from the top-k or the nucleus (the tokens while their cumulative
// probability stays below p, and the one that reaches it, as fairseq's
// _sample_topp keeps them), never a token of probability 0.
func TestFairseqDraw(t *testing.T) {
	probs := []float64{0.5, 0.25, 0.15, 0.1, 0}
	lp := make([]float32, len(probs))
	for v, p := range probs {
		lp[v] = float32(math.Log(p))
	}
	for _, c := range []struct {
		name string
		topK int
		topP float64
		want []float64 // expected frequencies
	}{
		{"all", 0, 0, []float64{0.5, 0.25, 0.15, 0.1, 0}},
		{"topk2", 2, 0, []float64{2.0 / 3, 1.0 / 3, 0, 0, 0}},
		{"topp0.6", 0, 0.6, []float64{2.0 / 3, 1.0 / 3, 0, 0, 0}},
		{"topp0.5", 0, 0.5, []float64{1, 0, 0, 0, 0}},
		{"topp0.95", 0, 0.95, []float64{0.5, 0.25, 0.15, 0.1, 0}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := &FairseqBeam{Sampling: true, TopK: c.topK, TopP: c.topP, Rand: rand.New(rand.NewPCG(1, 2))}
			const n = 40000
			count := make([]int, len(lp))
			for range n {
				count[b.draw(lp)]++
			}
			for v, w := range c.want {
				got := float64(count[v]) / n
				if math.Abs(got-w) > 0.015 || (w == 0) != (count[v] == 0) {
					t.Errorf("token %d drawn %.4f of the time, want %.4f", v, got, w)
				}
			}
		})
	}
}
