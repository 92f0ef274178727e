package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/translate"
)

// TestResultsMatchTranslator: the server answers what a lone Translator
// call gives, as `attnx translate --json` writes it, for texts and ids,
// with and without max_len, greedy and beam search (n-best lists, length
// penalty), with batching off (exactly) and on (attention and scores
// within 1e-5).
func TestResultsMatchTranslator(t *testing.T) {
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching %v", batching), func(t *testing.T) { resultsMatchTranslator(t, batching) })
	}
}

func resultsMatchTranslator(t *testing.T, batching bool) {
	demo, fixture := demoModel(t), fixtureModel(t)
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}, {Name: "ids", Dir: fixture}}, MaxOutLen: 60, Batching: batching})

	want := func(dir string, maxLen int, texts []string, ids [][]int64, beam, nBest int, alpha *float64) []translate.ResultJSON {
		t.Helper()
		tr, err := translate.Open(dir, translate.Options{MaxLen: maxLen, Beam: beam, NBest: nBest, LengthPenalty: alpha})
		if err != nil {
			t.Fatal(err)
		}
		defer tr.Close()
		var res []translate.Result
		if ids != nil {
			res, err = tr.TranslateIDs(context.Background(), ids)
		} else {
			res, err = tr.Translate(context.Background(), texts)
		}
		if err != nil {
			t.Fatal(err)
		}
		out := make([]translate.ResultJSON, len(res))
		for i, r := range res {
			in := ""
			if ids != nil {
				in = joinIDs(ids[i])
			} else {
				in = texts[i]
			}
			out[i] = r.JSON(in)
		}
		return out
	}
	texts := demoInputs(t)[:12]
	ids := [][]int64{{4, 5, 6}, {7}, {18, 17, 16, 15, 14, 13, 12, 11}, {9, 9}}
	half := 0.5
	cases := []struct {
		name, model   string
		maxLen        int
		texts         []string
		ids           [][]int64
		beam, nBest   int
		lengthPenalty *float64
	}{
		{"texts", "dates", 0, texts[:3], nil, 0, 0, nil},
		{"texts, max_len cuts", "dates", 4, texts[3:6], nil, 0, 0, nil},
		{"texts, max_len above the outputs", "dates", 60, texts[6:9], nil, 0, 0, nil},
		{"ids", "ids", 0, nil, ids, 0, 0, nil},
		{"ids, max_len cuts", "ids", 5, nil, ids, 0, 0, nil},
		// Random weights rarely reach EOS: rows stop at 2n+10 by default,
		// so 60 makes the server decode them again with a longer limit.
		{"ids, max_len above the default limit", "ids", 60, nil, ids, 0, 0, nil},
		{"texts, beam 3, n_best 3", "dates", 0, texts[9:12], nil, 3, 3, nil},
		{"texts, beam 4, n_best 2, length_penalty 0.5", "dates", 0, texts[:2], nil, 4, 2, &half},
		{"ids, beam 2, max_len 7", "ids", 7, nil, ids, 2, 0, nil},
	}
	longer := false
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// Every case but one asks for the attention weights.
			attn := c.name != "ids, max_len cuts"
			req := Request{Model: c.model, Inputs: c.texts, IDs: c.ids, LengthPenalty: c.lengthPenalty, Attention: &attn}
			if c.maxLen > 0 {
				req.MaxLen = &c.maxLen
			}
			if c.beam > 0 {
				req.Beam = &c.beam
			}
			if c.nBest > 0 {
				req.NBest = &c.nBest
			}
			body, _ := json.Marshal(req)
			code, ans := post(t, hs.URL+PathTranslate, string(body))
			if code != 200 {
				t.Fatalf("%d %s", code, ans)
			}
			got := decodeResponse(t, ans)
			dir := map[string]string{"dates": demo, "ids": fixture}[c.model]
			w := want(dir, c.maxLen, c.texts, c.ids, c.beam, c.nBest, c.lengthPenalty)
			for i := range w {
				if !attn {
					w[i].Attention = nil
				}
			}
			if got.Model != c.model || len(got.Results) != len(w) {
				t.Fatalf("server:\n%s\nTranslator:\n%s", show(got.Results), show(w))
			}
			for i := range w {
				// Batching off decodes the request alone, as the Translator
				// does: the same numbers. Batching on decodes its rows beside
				// others: the same tokens, numbers within 1e-5.
				if d := jsonDiff(got.Results[i], w[i]); d != "" || (!batching && !reflect.DeepEqual(got.Results[i], w[i])) {
					t.Errorf("result %d: %s\nserver:\n%s\nTranslator:\n%s", i, d, show(got.Results), show(w))
				}
				if n := max(c.nBest, 1); c.beam > 1 && len(got.Results[i].Hypotheses) != n {
					t.Errorf("result %d lists %d hypotheses, want n_best = %d", i, len(got.Results[i].Hypotheses), n)
				}
			}
			for i, r := range got.Results {
				if c.maxLen > 0 && len(r.Tokens) > c.maxLen {
					t.Errorf("result %d has %d tokens, more than max_len %d", i, len(r.Tokens), c.maxLen)
				}
				if len(r.Tokens) > 2*len(r.SourceIDs)+10 {
					longer = true
				}
			}
		})
	}
	if !longer {
		t.Error("no result went past the default limit 2n+10: the max_len-above-the-default case tested nothing")
	}
}

func show(rs []translate.ResultJSON) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "  %q -> %v %q (%d attention rows)\n", r.Input, r.Tokens, r.Text, len(r.Attention))
	}
	return b.String()
}
