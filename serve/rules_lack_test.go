package serve

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/translate"
)

// TestRequestRulesLack: a request setting what its rules do not implement
// gets 400 naming the field and the reason, with the continuous-batching
// backend and without; before, "rules": "opennmt" with no_repeat_ngram or
// repetition_penalty decoded as without them. The same settings under
// attnx's rules decode.
func TestRequestRulesLack(t *testing.T) {
	dir := demoModel(t)
	in := strconv.Quote(demoInputs(t)[0])
	for _, batching := range []bool{true, false} {
		_, hs := startServer(t, Config{Models: []ModelDir{{Name: "demo", Dir: dir}}, Batching: batching})
		for _, c := range []struct{ body, want string }{
			{`{"inputs": [%s], "rules": "opennmt", "beam": 3, "no_repeat_ngram": 2}`,
				`no_repeat_ngram = 2: rules \"opennmt\" do not implement it: OpenNMT-py has no such option (its -block_ngram_repeat is block_ngram_repeat`},
			{`{"inputs": [%s], "rules": "opennmt", "beam": 3, "repetition_penalty": 1.5}`,
				`repetition_penalty = 1.5: rules \"opennmt\" do not implement it: neither OpenNMT-py nor fairseq has a repetition penalty`},
			{`{"inputs": [%s], "rules": "fairseq", "beam": 3, "length_penalty_form": "wu"}`,
				`length_penalty_form = \"wu\" with rules \"fairseq\": fairseq ranks by score / len ** lenpen only`},
			{`{"inputs": [%s], "rules": "joeynmt", "beam": 3, "length_penalty_form": "power"}`,
				`length_penalty_form = \"power\" with rules \"joeynmt\": JoeyNMT's beam_alpha is Wu's penalty only`},
		} {
			body := fmt.Sprintf(c.body, in)
			if code, ans := post(t, hs.URL+PathTranslate, body); code != 400 || !strings.Contains(ans, c.want) {
				t.Errorf("batching %v, %s: %d %s; want 400 with %s", batching, body, code, ans, c.want)
			}
		}
		body := `{"inputs": [` + in + `], "rules": "spec", "beam": 3, "no_repeat_ngram": 2, "repetition_penalty": 1.5}`
		if code, ans := post(t, hs.URL+PathTranslate, body); code != 200 {
			t.Errorf("batching %v, repetition rules under spec: %d %s", batching, code, ans)
		}
	}
}

// TestRulesChangeDropsModelRepeats: a model's own repetition settings
// (JoeyNMT's) do not follow a request into rules that lack them, where
// they would be refused unasked.
func TestRulesChangeDropsModelRepeats(t *testing.T) {
	s := &Server{cfg: Config{MaxBeam: 8, MaxOutLen: 100, MaxInputs: 10}}
	m := &servedModel{defaults: Job{Rules: translate.RulesJoeyNMT, Beam: 5, PenaltyWu: true, NoRepeatNgram: 3, RepetitionPenalty: 1.2}}
	for _, c := range []struct {
		rules    string
		noRepeat int
		wu       bool
	}{{translate.RulesOpenNMT, 0, false}, {translate.RulesFairseq, 0, false}, {translate.RulesSpec, 3, true}} {
		r := c.rules
		job, msg := s.checkBeam(&Request{Rules: &r}, m)
		if msg != "" || job.NoRepeatNgram != c.noRepeat || job.PenaltyWu != c.wu {
			t.Errorf("rules %q over JoeyNMT's defaults: %+v %q", r, job, msg)
		}
	}
}
