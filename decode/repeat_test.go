package decode

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// TestRepeatsMatchJoeyNMT checks Repeats against JoeyNMT 2.3's own
// block_repeat_ngrams and penalize_repetition (testdata/joey, written by
// make_fixtures.py), bit for bit.
func TestRepeatsMatchJoeyNMT(t *testing.T) {
	data, err := os.ReadFile("testdata/joey/repeats.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Specials []int64
		Cases    []struct {
			N             int
			Penalty       float64
			Seq, Src      [][]int64
			Before, After [][]uint32
		}
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	if len(fx.Cases) < 8 {
		t.Fatalf("%d cases; want 8", len(fx.Cases))
	}
	changed := 0
	for c, cs := range fx.Cases {
		for h := range cs.Seq {
			lp := make([]float32, len(cs.Before[h]))
			for v, b := range cs.Before[h] {
				lp[v] = math.Float32frombits(b)
			}
			r := &Repeats{NoRepeatNgram: cs.N, Penalty: cs.Penalty, Src: cs.Src[h], Specials: fx.Specials}
			if r.active() {
				r.apply(lp, cs.Seq[h])
			}
			for v, b := range cs.After[h] {
				if math.Float32bits(lp[v]) != b {
					t.Errorf("case %d (n %d, penalty %v), hypothesis %v, source %v: token %d: %v, JoeyNMT %v",
						c, cs.N, cs.Penalty, cs.Seq[h], cs.Src[h], v, lp[v], math.Float32frombits(b))
				}
				if cs.Before[h][v] != b {
					changed++
				}
			}
		}
	}
	if changed < 20 {
		t.Errorf("the rules changed %d log-probs in all the cases; the fixture should exercise them", changed)
	}
}
