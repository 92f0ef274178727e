package decode

import (
	"encoding/json"
	"math"
	"os"
	"slices"
	"testing"

	"github.com/attnx/attnx/attention"
)

// TestJoeyBeamMatchesJoeyNMT replays testdata/joey/beam.json (JoeyNMT
// 2.3's own beam_search on a table model, written by make_beam.py):
// JoeyBeam may only ask for prefixes JoeyNMT's search reached, and must
// return its n-best lists, tokens and scores to the bit, fillers included.
func TestJoeyBeamMatchesJoeyNMT(t *testing.T) {
	data, err := os.ReadFile("testdata/joey/beam.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Vocab              int
		UNK, PAD, BOS, EOS int64
		Cases              []struct {
			Case       json.RawMessage
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
	if len(fx.Cases) < 6 {
		t.Fatalf("%d cases; want the 6 make_beam.py writes", len(fx.Cases))
	}
	for _, c := range fx.Cases {
		var cs struct {
			Name        string
			Beam        int
			NBest       int `json:"n_best"`
			MaxLen      int `json:"max_len"`
			Batch       int
			Alpha       float64
			GenerateUnk *bool `json:"generate_unk"`
		}
		if err := json.Unmarshal(c.Case, &cs); err != nil {
			t.Fatal(err)
		}
		t.Run(cs.Name, func(t *testing.T) {
			rules := &attention.Rules{Beam: []int64{fx.BOS, fx.PAD}, EOSFromStep: 1}
			if cs.GenerateUnk != nil && !*cs.GenerateUnk {
				rules.Beam = append(rules.Beam, fx.UNK)
			}
			b := &JoeyBeam{SOS: fx.BOS, EOS: fx.EOS, UNK: fx.UNK, K: cs.Beam, NBest: cs.NBest, MaxLen: cs.MaxLen, Alpha: cs.Alpha, Rules: rules}
			if err := b.Validate(); err != nil {
				t.Fatal(err)
			}
			for sent := range cs.Batch {
				replayTable(t, b, fx.BOS, fx.Vocab, tableRows(c.Rows, sent))
				want, got := c.Hypotheses[sent], b.Hypotheses(0)
				if len(got) != len(want) {
					t.Fatalf("sentence %d: %d hypotheses, JoeyNMT %d", sent, len(got), len(want))
				}
				for k := range want {
					if !slices.Equal(got[k].Tokens, want[k].Tokens) || math.Float32bits(got[k].NormalizedScore) != want[k].Score {
						t.Errorf("sentence %d hypothesis %d: %v (score %v); JoeyNMT %v (score %v)", sent, k, got[k].Tokens, got[k].NormalizedScore,
							want[k].Tokens, math.Float32frombits(want[k].Score))
					}
				}
			}
		})
	}
}
