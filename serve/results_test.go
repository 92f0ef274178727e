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
// with and without max_len.
func TestResultsMatchTranslator(t *testing.T) {
	demo, fixture := demoModel(t), fixtureModel(t)
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}, {Name: "ids", Dir: fixture}}, MaxOutLen: 60})

	want := func(dir string, maxLen int, texts []string, ids [][]int64) []translate.ResultJSON {
		t.Helper()
		tr, err := translate.Open(dir, translate.Options{MaxLen: maxLen})
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
	cases := []struct {
		name, model string
		maxLen      int
		texts       []string
		ids         [][]int64
	}{
		{"texts", "dates", 0, texts[:3], nil},
		{"texts, max_len cuts", "dates", 4, texts[3:6], nil},
		{"texts, max_len above the outputs", "dates", 60, texts[6:9], nil},
		{"ids", "ids", 0, nil, ids},
		{"ids, max_len cuts", "ids", 5, nil, ids},
		// Random weights rarely reach EOS: rows stop at 2n+10 by default,
		// so 60 makes the server decode them again with a longer limit.
		{"ids, max_len above the default limit", "ids", 60, nil, ids},
	}
	longer := false
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := Request{Model: c.model, Inputs: c.texts, IDs: c.ids}
			if c.maxLen > 0 {
				req.MaxLen = &c.maxLen
			}
			body, _ := json.Marshal(req)
			code, ans := post(t, hs.URL+PathTranslate, string(body))
			if code != 200 {
				t.Fatalf("%d %s", code, ans)
			}
			got := decodeResponse(t, ans)
			dir := map[string]string{"dates": demo, "ids": fixture}[c.model]
			w := want(dir, c.maxLen, c.texts, c.ids)
			if got.Model != c.model || !reflect.DeepEqual(got.Results, w) {
				t.Errorf("server:\n%s\nTranslator:\n%s", show(got.Results), show(w))
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
