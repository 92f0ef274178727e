package verify

import (
	"strings"
	"testing"

	"github.com/attnx/attnx/modeldir"
)

// TestChunkName: line numbers from 1, sorted, six at most.
func TestChunkName(t *testing.T) {
	for _, c := range []struct {
		lines []int
		want  string
	}{
		{[]int{4, 0, 2}, "3 sentences of max_len 12 (lines 1, 3, 5)"},
		{[]int{9, 8, 7, 6, 5, 4, 3}, "7 sentences of max_len 12 (lines 4, 5, 6, 7, 8, 9, ...)"},
	} {
		if got := chunkName(c.lines, 12); got != c.want {
			t.Errorf("chunkName(%v) = %q, want %q", c.lines, got, c.want)
		}
	}
}

// TestModelBeamSearch: the model's rules, penalty form and alpha unless
// given, and nothing of the model's for other rules.
func TestModelBeamSearch(t *testing.T) {
	two := 2.0
	info := &modeldir.Info{Defaults: &modeldir.Defaults{Rules: "opennmt", LengthPenalty: &two, LengthPenaltyForm: "wu"}}
	for _, c := range []struct {
		rules      string
		alphaGiven bool
		want       BeamSearch
		alpha      float64
	}{
		{"", false, BeamSearch{Rules: "opennmt", OpenNMTPenalty: "wu"}, 2},
		{"", true, BeamSearch{Rules: "opennmt", OpenNMTPenalty: "wu"}, 1},
		{"spec", false, BeamSearch{Rules: "spec"}, 1},
		{"joeynmt", false, BeamSearch{Rules: "joeynmt"}, 1},
	} {
		s, alpha := ModelBeamSearch(info, c.rules, 0, 1, c.alphaGiven)
		s.UNK = 0
		if s != c.want || alpha != c.alpha {
			t.Errorf("rules %q, alpha given %v: %+v alpha %g, want %+v alpha %g", c.rules, c.alphaGiven, s, alpha, c.want, c.alpha)
		}
	}
	if s, alpha := ModelBeamSearch(&modeldir.Info{}, "", 3, 0.5, false); s.Rules != "" || s.NBest != 3 || alpha != 0.5 {
		t.Errorf("no defaults: %+v alpha %g", s, alpha)
	}
}

// TestTestSetOutcomeText: the verdict lines of a passing float32 outcome
// with a near tie, and of a failing int8 one.
func TestTestSetOutcomeText(t *testing.T) {
	pass := TestSetOutcome{Source: "t.src", Sentences: 3, Blank: 1, Identical: 1, NearTies: 1, Decoding: "greedy decoding", MinSteps: 10, Steps: 12, Chunks: 2,
		StepsOK: true, OK: true, Weights: "fp32", AttnxVsPyTorch: "BLEU = 80.00"}
	var b strings.Builder
	pass.WriteText(&b, "m.pt")
	for _, want := range []string{
		"verify --src t.src against m.pt: 3 sentences (1 blank, skipped), greedy decoding, max_len 10 to 12 per sentence, as translate --src decodes it, in 2 chunks\n",
		"  sentences  1 of 2 identical to PyTorch's (50.0%); 1 part from it at a near tie, which the tolerance allows\n",
		"OK: on this test set the ONNX graphs translate as PyTorch does, but at 1 near ties\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("missing %q in\n%s", want, b.String())
		}
	}
	fail := TestSetOutcome{Source: "t.src", Sentences: 1, Steps: 5, MinSteps: 5, Chunks: 1, Weights: "int8", Failures: []string{"x: y"}}
	b.Reset()
	fail.WriteText(&b, "m.pt")
	if !strings.Contains(b.String(), "  steps      BELOW the agreement asked for:\n    x: y\n") || !strings.HasSuffix(b.String(), "MISMATCH: see above\n") {
		t.Errorf("failing outcome:\n%s", b.String())
	}
}
