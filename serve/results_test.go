package serve

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
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

	want := func(dir string, maxLen int, texts []string, ids [][]int64, beam, nBest int, alpha *float64, wu bool, minLen int) []translate.ResultJSON {
		t.Helper()
		tr, err := translate.Open(dir, translate.Options{MaxLen: maxLen, Beam: beam, NBest: nBest, LengthPenalty: alpha, LengthPenaltyWu: wu, MinLen: minLen})
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
		wu            bool // length_penalty_form "wu"
		minLen        int
	}{
		{"texts", "dates", 0, texts[:3], nil, 0, 0, nil, false, 0},
		{"texts, max_len cuts", "dates", 4, texts[3:6], nil, 0, 0, nil, false, 0},
		{"texts, max_len above the outputs", "dates", 60, texts[6:9], nil, 0, 0, nil, false, 0},
		{"ids", "ids", 0, nil, ids, 0, 0, nil, false, 0},
		{"ids, max_len cuts", "ids", 5, nil, ids, 0, 0, nil, false, 0},
		// Random weights rarely reach EOS: rows stop at 2n+10 by default,
		// so 60 makes the server decode them again with a longer limit.
		{"ids, max_len above the default limit", "ids", 60, nil, ids, 0, 0, nil, false, 0},
		{"texts, beam 3, n_best 3", "dates", 0, texts[9:12], nil, 3, 3, nil, false, 0},
		{"texts, beam 4, n_best 2, length_penalty 0.5", "dates", 0, texts[:2], nil, 4, 2, &half, false, 0},
		{"ids, beam 2, max_len 7", "ids", 7, nil, ids, 2, 0, nil, false, 0},
		// Rules a request sets for itself (OpenNMT-py's -length_penalty
		// wu, -min_length; JoeyNMT's beam_alpha, min_output_length).
		{"texts, beam 3, length_penalty_form wu", "dates", 0, texts[2:5], nil, 3, 2, &half, true, 0},
		{"texts, min_len 14", "dates", 20, texts[5:7], nil, 0, 0, nil, false, 14},
		{"ids, beam 2, min_len 4", "ids", 9, nil, ids, 2, 0, nil, false, 4},
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
			if c.wu {
				form := "wu"
				req.LengthPenaltyForm = &form
			}
			if c.minLen > 0 {
				req.MinLen = &c.minLen
			}
			body, _ := json.Marshal(req)
			code, ans := post(t, hs.URL+PathTranslate, string(body))
			if code != 200 {
				t.Fatalf("%d %s", code, ans)
			}
			got := decodeResponse(t, ans)
			dir := map[string]string{"dates": demo, "ids": fixture}[c.model]
			w := want(dir, c.maxLen, c.texts, c.ids, c.beam, c.nBest, c.lengthPenalty, c.wu, c.minLen)
			for i := range w {
				if !attn {
					w[i] = unasked(w[i])
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
				if len(r.Tokens) < c.minLen {
					t.Errorf("result %d has %d tokens, fewer than min_len %d", i, len(r.Tokens), c.minLen)
				}
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

// TestDecodingDefaults: the server's decoding defaults (attnx serve --beam,
// --n-best, --length-penalty-form, --min-len) apply to requests that set
// nothing, each request field overrides them, and bad values are refused
// naming the field.
func TestDecodingDefaults(t *testing.T) {
	demo := demoModel(t)
	for _, batching := range []bool{false, true} {
		t.Run(fmt.Sprintf("batching %v", batching), func(t *testing.T) {
			one, three, two, twelve, wu := 1.0, 3, 2, 12, true
			_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}}, MaxOutLen: 60, Batching: batching,
				Decoding: Decoding{Beam: &three, NBest: &two, LengthPenalty: &one, PenaltyWu: &wu, MinLen: &twelve}})
			in := demoInputs(t)[:2]
			want := loneTranslate(t, demo, translate.Options{Beam: 3, NBest: 2, LengthPenalty: &one, LengthPenaltyWu: true, MinLen: 12}, in)
			body, _ := json.Marshal(map[string]any{"inputs": in})
			code, ans := post(t, hs.URL+PathTranslate, string(body))
			if code != 200 {
				t.Fatalf("%d %s", code, ans)
			}
			got := decodeResponse(t, ans)
			for i, r := range got.Results {
				if len(r.Hypotheses) != 2 || !reflect.DeepEqual(r.Tokens, want[i].Tokens) || len(r.Tokens) < 12 {
					t.Errorf("defaults, result %d: %d hypotheses, tokens %v; the Translator with the same settings: %v", i, len(r.Hypotheses), r.Tokens, want[i].Tokens)
				}
			}
			// A request that sets the beam lists one hypothesis (greedy
			// decoding's, with its tokens' log-probs); min_len 0 lifts the
			// default.
			code, ans = post(t, hs.URL+PathTranslate, `{"inputs": ["3rd of March 2021"], "beam": 1, "min_len": 0}`)
			if r := decodeResponse(t, ans).Results; code != 200 || len(r) != 1 || len(r[0].Hypotheses) != 1 || len(r[0].PositionalScores) != len(r[0].Tokens) || r[0].Text != "2021-03-03" {
				t.Errorf("beam 1, min_len 0: %d %s", code, ans)
			}
			for body, msg := range map[string]string{
				`{"inputs": ["x"], "length_penalty_form": "avg"}`: `length_penalty_form = \"avg\": want \"power\"`,
				`{"inputs": ["x"], "min_len": 60}`:                `min_len = 60: want 0 to 59, below --max-out-len 60`,
				`{"inputs": ["x"], "min_len": 8, "max_len": 8}`:   `min_len = 8: must be below max_len = 8`,
				`{"inputs": ["x"], "min_len": "3"}`:               `field \"min_len\"`,
			} {
				if code, ans := post(t, hs.URL+PathTranslate, body); code != 400 || !strings.Contains(ans, msg) {
					t.Errorf("%s: %d %s, want 400 %q", body, code, ans, msg)
				}
			}
		})
	}
	// replace_unk: served where both vocabularies have the unknown token
	// (the demo model), refused naming the model where not.
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}, {Name: "ids", Dir: fixtureModel(t)}}})
	if code, ans := post(t, hs.URL+PathTranslate, `{"inputs": ["3rd of March 2021"], "replace_unk": true}`); code != 200 || decodeResponse(t, ans).Results[0].Text != "2021-03-03" {
		t.Errorf("replace_unk on the demo model: %d %s", code, ans)
	}
	if code, ans := post(t, hs.URL+PathTranslate, `{"model": "ids", "ids": [[4, 5]], "replace_unk": true}`); code != 400 || !strings.Contains(ans, `replace_unk: model \"ids\" has no unknown token in both its source and target vocabularies`) {
		t.Errorf("replace_unk on a model without vocabularies: %d %s", code, ans)
	}
	three, four := 3, 4
	if _, err := New(Config{Models: []ModelDir{{Name: "m"}}, Decoding: Decoding{Beam: &three, NBest: &four}}); err == nil || !strings.Contains(err.Error(), "the decoding flags: n_best 4: want 1 to beam 3") {
		t.Errorf("n-best above beam: %v", err)
	}
}

// withDefaults copies the model directory dir and writes defaults into its
// attnx.json.
func withDefaults(t *testing.T, dir string, defaults *modeldir.Defaults) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), filepath.Base(dir))
	if err := os.CopyFS(out, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	info, err := modeldir.ReadInfo(filepath.Join(out, modeldir.InfoFile))
	if err != nil {
		t.Fatal(err)
	}
	info.Defaults = defaults
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(out, modeldir.InfoFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestModelDefaults: a model's attnx.json "defaults" decode the requests
// that set nothing; the server's decoding flags, when given, override them
// for every model, and a request's fields override both. Defaults the
// server's limits refuse fail the load, naming the file.
func TestModelDefaults(t *testing.T) {
	one := 1.0
	dir := withDefaults(t, demoModel(t), &modeldir.Defaults{Beam: 3, NBest: 2, LengthPenalty: &one, LengthPenaltyForm: "wu"})
	in := demoInputs(t)[:2]
	want := loneTranslate(t, dir, translate.Options{Beam: 3, NBest: 2, LengthPenalty: &one, LengthPenaltyWu: true}, in)
	body, _ := json.Marshal(map[string]any{"inputs": in})
	greedy := 1
	for _, c := range []struct {
		name       string
		flags      Decoding
		request    string
		hypotheses int
		// greedy: the results carry their tokens' log-probs, as greedy
		// decoding records them and the spec's beam search does not.
		greedy bool
	}{
		{"attnx.json", Decoding{}, string(body), 2, false},
		{"--beam 1 over attnx.json", Decoding{Beam: &greedy}, string(body), 1, true},
		{"the request's beam over attnx.json", Decoding{}, `{"inputs": ["3rd of March 2021"], "beam": 4}`, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: dir}}, Decoding: c.flags})
			code, ans := post(t, hs.URL+PathTranslate, c.request)
			if code != 200 {
				t.Fatalf("%d %s", code, ans)
			}
			res := decodeResponse(t, ans).Results
			for i, r := range res {
				if len(r.Hypotheses) != c.hypotheses || (r.PositionalScores != nil) != c.greedy {
					t.Errorf("result %d lists %d hypotheses, positional scores %v; want %d, greedy %v", i, len(r.Hypotheses), r.PositionalScores, c.hypotheses, c.greedy)
				}
				if c.name == "attnx.json" && !reflect.DeepEqual(r.Tokens, want[i].Tokens) {
					t.Errorf("result %d: %v; the Translator with attnx.json's settings: %v", i, r.Tokens, want[i].Tokens)
				}
			}
		})
	}
	big := withDefaults(t, demoModel(t), &modeldir.Defaults{Beam: 40})
	s, err := New(Config{Models: []ModelDir{{Name: "big", Dir: big}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Load(); err == nil || !strings.Contains(err.Error(), `model "big": the defaults of `+filepath.Join(big, "attnx.json")+` under the decoding flags: beam 40: want 1 (greedy) to 16 (--max-beam)`) {
		t.Errorf("defaults over --max-beam: %v", err)
	}
}

// TestOpenNMTRulesServed: "rules": "opennmt" (and a model whose attnx.json
// defaults to it) decodes as a lone Translator with RulesOpenNMT does,
// batching on and off; OpenNMT-py's penalties are accepted only with its
// rules.
func TestOpenNMTRulesServed(t *testing.T) {
	demo := demoModel(t)
	in := demoInputs(t)[:3]
	want := loneTranslate(t, demo, translate.Options{Beam: 4, NBest: 2, Rules: translate.RulesOpenNMT, OpenNMTPenalty: "none"}, in)
	byDefault := withDefaults(t, demo, &modeldir.Defaults{Beam: 4, NBest: 2, Rules: "opennmt", LengthPenaltyForm: "none"})
	servedAsTranslator(t, in, want, map[string]struct{ dir, body string }{
		"request":    {demo, `{"rules": "opennmt", "length_penalty_form": "none", "beam": 4, "n_best": 2, "inputs": %s}`},
		"attnx.json": {byDefault, `{"inputs": %s}`},
	})
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}}})
	for body, msg := range map[string]string{
		`{"inputs": ["x"], "length_penalty_form": "avg"}`:                       `\"none\" and \"avg\" with \"rules\": \"opennmt\"`,
		`{"inputs": ["x"], "rules": "joey"}`:                                    `rules = \"joey\": want \"spec\"`,
		`{"inputs": ["x"], "rules": "opennmt", "length_penalty_form": "power"}`: `with rules \"opennmt\": want \"none\", \"avg\" or \"wu\"`,
	} {
		if code, ans := post(t, hs.URL+PathTranslate, body); code != 400 || !strings.Contains(ans, msg) {
			t.Errorf("%s: %d %s, want 400 with %q", body, code, ans, msg)
		}
	}
}

// loneTranslate translates texts with a Translator of its own, opened on
// dir with opt: what the server's answers are compared with.
func loneTranslate(t *testing.T, dir string, opt translate.Options, texts []string) []translate.Result {
	t.Helper()
	tr, err := translate.Open(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	res, err := tr.Translate(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestJoeyRulesServed: "rules": "joeynmt" with JoeyNMT's repetition rules
// (and a model whose attnx.json defaults to them) decodes as a lone
// Translator with RulesJoeyNMT and the same rules does, batching on and
// off.
func TestJoeyRulesServed(t *testing.T) {
	demo := demoModel(t)
	in := demoInputs(t)[:3]
	want := loneTranslate(t, demo, translate.Options{Beam: 3, NBest: 2, Rules: translate.RulesJoeyNMT, NoRepeatNgram: 2, RepetitionPenalty: 1.4}, in)
	spec := loneTranslate(t, demo, translate.Options{Beam: 3, NBest: 2}, in)
	differs := false
	for i := range want {
		differs = differs || !reflect.DeepEqual(want[i].Tokens, spec[i].Tokens) || want[i].Hypotheses[1].Text != spec[i].Hypotheses[1].Text
	}
	if !differs {
		t.Fatal("the demo inputs decode the same under attnx's rules: the test would not see the rules lost")
	}
	byDefault := withDefaults(t, demo, &modeldir.Defaults{Beam: 3, NBest: 2, Rules: "joeynmt", NoRepeatNgram: 2, RepetitionPenalty: 1.4})
	servedAsTranslator(t, in, want, map[string]struct{ dir, body string }{
		"request":    {demo, `{"rules": "joeynmt", "no_repeat_ngram": 2, "repetition_penalty": 1.4, "beam": 3, "n_best": 2, "inputs": %s}`},
		"attnx.json": {byDefault, `{"inputs": %s}`},
	})
}

// servedAsTranslator posts in to a server of each case's model directory
// (its body a format with the inputs' JSON), batching off and on, and
// checks that the answers are want's: the tokens, and the second of two
// hypotheses.
func servedAsTranslator(t *testing.T, in []string, want []translate.Result, cases map[string]struct{ dir, body string }) {
	t.Helper()
	for _, batching := range []bool{false, true} {
		for name, c := range cases {
			t.Run(fmt.Sprintf("%s, batching %v", name, batching), func(t *testing.T) {
				_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: c.dir}}, Batching: batching})
				ins, _ := json.Marshal(in)
				code, ans := post(t, hs.URL+PathTranslate, fmt.Sprintf(c.body, ins))
				if code != 200 {
					t.Fatalf("%d %s", code, ans)
				}
				for i, r := range decodeResponse(t, ans).Results {
					if len(r.Hypotheses) != 2 || r.Hypotheses[1].Text != want[i].Hypotheses[1].Text || !reflect.DeepEqual(r.Tokens, want[i].Tokens) {
						t.Errorf("result %d: %+v; the Translator: %+v", i, r.Hypotheses, want[i].Hypotheses)
					}
				}
			})
		}
	}
}

// TestFairseqRulesServed: "rules": "fairseq" (and a model whose attnx.json
// defaults to it, as a fairseq model's does) decodes as a lone Translator
// with RulesFairseq does, batching on and off, greedy included; JoeyNMT's
// repetition rules are refused with it.
func TestFairseqRulesServed(t *testing.T) {
	demo := demoModel(t)
	in := demoInputs(t)[:3]
	two := 2.0
	want := loneTranslate(t, demo, translate.Options{Beam: 3, NBest: 2, Rules: translate.RulesFairseq, LengthPenalty: &two}, in)
	byDefault := withDefaults(t, demo, &modeldir.Defaults{Beam: 3, NBest: 2, Rules: "fairseq", LengthPenalty: &two})
	servedAsTranslator(t, in, want, map[string]struct{ dir, body string }{
		"request":    {demo, `{"rules": "fairseq", "length_penalty": 2, "beam": 3, "n_best": 2, "inputs": %s}`},
		"attnx.json": {byDefault, `{"inputs": %s}`},
	})
	_, hs := startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: byDefault}}})
	if code, ans := post(t, hs.URL+PathTranslate, `{"inputs": ["x"], "no_repeat_ngram": 2}`); code != 400 || !strings.Contains(ans, `no_repeat_ngram and repetition_penalty are JoeyNMT's rules, not fairseq's`) {
		t.Errorf("no_repeat_ngram under fairseq's rules: %d %s, want 400 naming it", code, ans)
	}
	greedy := loneTranslate(t, demo, translate.Options{Rules: translate.RulesFairseq}, in)
	_, hs = startServer(t, Config{Models: []ModelDir{{Name: "dates", Dir: demo}}})
	ins, _ := json.Marshal(in)
	code, ans := post(t, hs.URL+PathTranslate, fmt.Sprintf(`{"rules": "fairseq", "beam": 1, "inputs": %s}`, ins))
	if code != 200 {
		t.Fatalf("%d %s", code, ans)
	}
	for i, r := range decodeResponse(t, ans).Results {
		if !reflect.DeepEqual(r.Tokens, greedy[i].Tokens) {
			t.Errorf("greedy result %d: %v; the Translator: %v", i, r.Tokens, greedy[i].Tokens)
		}
	}
}
