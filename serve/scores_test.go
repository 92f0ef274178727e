package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestGreedyAnswersCarryScores: a greedy request's answer (no "beam", and
// "beam": 1) lists its one hypothesis and the result's score, natural
// log, on the loop engine (the demo model, greedy.onnx) and the steps
// engine (the fixture model), batched or not: positional_scores a
// log-prob per token, score their float32 sum, normalized_score score /
// len ** 1 (the spec's default length penalty, a beam of one's), the
// result's fields the hypothesis'.
func TestGreedyAnswersCarryScores(t *testing.T) {
	demo, fixture := demoModel(t), fixtureModel(t)
	for _, batching := range []bool{false, true} {
		_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}, {Name: "ids", Dir: fixture}}, MaxOutLen: 60, Batching: batching})
		for _, body := range []string{
			`{"model":"dates","inputs":["3rd of March 2021","May 9, 1999"]}`,
			`{"model":"dates","inputs":["3rd of March 2021"],"beam":1}`,
			`{"model":"ids","ids":[[4,5,6],[7]]}`,
		} {
			code, ans := post(t, hs.URL+PathTranslate, body)
			if code != 200 {
				t.Fatalf("%s: %d %s", body, code, ans)
			}
			var raw struct {
				Results []map[string]json.RawMessage `json:"results"`
			}
			if err := json.Unmarshal([]byte(ans), &raw); err != nil {
				t.Fatal(err)
			}
			for i, r := range decodeResponse(t, ans).Results {
				where := fmt.Sprintf("batching %v %s result %d", batching, body, i)
				for _, key := range []string{"score", "normalized_score", "positional_scores", "hypotheses"} {
					if _, ok := raw.Results[i][key]; !ok {
						t.Errorf("%s: no %q in %s", where, key, ans)
					}
				}
				if len(r.Hypotheses) != 1 || r.Score == nil || r.NormalizedScore == nil {
					t.Fatalf("%s: %d hypotheses, score %v, normalized_score %v", where, len(r.Hypotheses), r.Score, r.NormalizedScore)
				}
				h := r.Hypotheses[0]
				if len(r.PositionalScores) != len(r.Tokens) || !slices.Equal(h.Tokens, r.Tokens) {
					t.Fatalf("%s: %d positional scores for tokens %v, hypothesis %v", where, len(r.PositionalScores), r.Tokens, h.Tokens)
				}
				var sum float32
				for _, p := range r.PositionalScores {
					sum += p
				}
				norm := float32(float64(sum) / float64(len(r.Tokens)))
				if *r.Score != sum || h.Score != sum || *r.NormalizedScore != norm || h.NormalizedScore != norm || sum >= 0 {
					t.Errorf("%s: score %v (hypothesis %v), normalized %v (%v); the log-probs' sum %v, over %d tokens %v",
						where, *r.Score, h.Score, *r.NormalizedScore, h.NormalizedScore, sum, len(r.Tokens), norm)
				}
				if !slices.Equal(h.PositionalScores, r.PositionalScores) || r.ScoreBase != "e" || math.IsNaN(float64(sum)) {
					t.Errorf("%s: hypothesis positional %v, result's %v, score_base %q", where, h.PositionalScores, r.PositionalScores, r.ScoreBase)
				}
			}
		}
	}
}
