package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/attnx/attnx/translate"
)

// TestScoreEndpoint: POST /v1/score answers each pair's scores as
// translate.Translator.Score gives them, with batching on and off, and
// refuses bad requests with 4xx naming what is wrong.
func TestScoreEndpoint(t *testing.T) {
	src := []string{"3rd of March 2021", "Mar 3, 21"}
	ref := []string{"2021-03-03", "2021-03-30"}
	tr, err := translate.Open(demoModel(t), translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	want, err := tr.Score(context.Background(), src, ref)
	if err != nil {
		t.Fatal(err)
	}
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching %v", batching), func(t *testing.T) {
			_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demoModel(t)}, {Name: "ids", Dir: fixtureModel(t)}},
				MaxInputs: 3, Batching: batching})
			body, _ := json.Marshal(ScoreRequest{Inputs: src, References: ref})
			code, out := post(t, hs.URL+PathScore, string(body))
			if code != 200 {
				t.Fatalf("POST %s: %d %s", PathScore, code, out)
			}
			var resp ScoreResponse
			if err := json.Unmarshal([]byte(out), &resp); err != nil {
				t.Fatal(err)
			}
			if resp.Model != "dates" || len(resp.Scores) != 2 {
				t.Fatalf("answer %s: want model dates and 2 scores", out)
			}
			for i, p := range resp.Scores {
				if p.Score != want[i].Score || len(p.PositionalScores) != len(want[i].PositionalScores) || p.Score >= 0 {
					t.Errorf("pair %d: score %v (%d tokens), Translator.Score's %v (%d)", i, p.Score, len(p.PositionalScores), want[i].Score, len(want[i].PositionalScores))
				}
			}
			if resp.Scores[0].Score <= resp.Scores[1].Score {
				t.Errorf("the right date scores %v, a wrong one %v: want the right one higher", resp.Scores[0].Score, resp.Scores[1].Score)
			}
			for _, c := range []struct{ body, err string }{
				{`{"inputs": ["a"], "references": []}`, "1 inputs and 0 references"},
				{`{"inputs": [], "references": []}`, "no inputs"},
				{`{"inputs": ["a","b","c","d"], "references": ["a","b","c","d"]}`, "limit of 3 per request"},
				{`{"inputs": ["a"], "refs": ["a"]}`, `unknown field "refs" (the fields are model, inputs, references, pretokenized)`},
				{`{"model": "nope", "inputs": ["a"], "references": ["a"]}`, `unknown model "nope"`},
				{`{"model": "ids", "inputs": ["a"], "references": ["a"]}`, "has no target vocabulary to read references with"},
			} {
				code, out := post(t, hs.URL+PathScore, c.body)
				var e ErrorResponse
				json.Unmarshal([]byte(out), &e)
				if code < 400 || code >= 500 || !strings.Contains(e.Error, c.err) {
					t.Errorf("%s: %d %s, want a 4xx saying %q", c.body, code, out, c.err)
				}
			}
			if code, out := get(t, hs.URL+PathScore); code != 405 {
				t.Errorf("GET %s: %d %s, want 405", PathScore, code, out)
			}
		})
	}
}
