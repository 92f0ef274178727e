package verify

import (
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
)

// TestAgreementOfReducedModels measures a fixture model's int8 and int4
// graphs against the decodes of its float32 graphs (standing in for
// PyTorch's, which they equal): the float32 graphs agree with themselves
// exactly; the reduced ones are measured (log-probabilities compared on
// every step up to the first divergence, with a deviation that is finite
// and not zero); a reference decode altered at one step shows up as that
// sentence's first divergence and fails a threshold of 1. The int8 graphs
// pass onnx.checker.
func TestAgreementOfReducedModels(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	var f fixtures.Fixture
	for _, x := range fixtures.List(t) {
		if x.Arch == "luong-general" && x.Batch > 1 {
			f = x
		}
	}
	if f.Name == "" {
		t.Fatal("no luong-general fixture of several rows")
	}
	w := fixtures.Weights(t, f.Path(t, "checkpoint.pt"))
	d := fixtures.Load(t, f.Path(t, ""))
	rows, _, err := sourceRows(sourceTensor(t, d), d.Lengths)
	if err != nil {
		t.Fatal(err)
	}
	open := func(p quant.Precision) (enc, dec *onnxrun.Session) {
		var s []*onnxrun.Session
		for _, build := range []func(*attention.Weights, attention.BuildOptions) (*builder.Model, error){attention.Encoder, attention.Decoder} {
			m, err := build(w, attention.BuildOptions{Weights: p})
			if err != nil {
				t.Fatal(err)
			}
			s = append(s, openChecked(t, m))
		}
		return s[0], s[1]
	}
	const maxLen = 8
	enc, dec := open(quant.PrecisionFP32)
	ref, err := decodeAlone(enc, dec, rows, f.SOS, f.EOS, maxLen)
	if err != nil {
		t.Fatal(err)
	}
	checks, err := agreement(enc, dec, nil, "", rows, ref, f.SOS, f.EOS, maxLen, 1)
	if err != nil {
		t.Fatal(err)
	}
	if c := checks[0]; len(checks) != 1 || !c.OK || c.SentencesIdentical != len(rows) || c.MaxLogProbDev == nil || *c.MaxLogProbDev != 0 || c.LogProbSteps != c.Tokens {
		t.Errorf("float32 against itself: %+v", checks)
	}

	for _, p := range []quant.Precision{quant.PrecisionInt8, quant.PrecisionInt4} {
		qe, qd := open(p)
		checks, err := agreement(qe, qd, nil, "", rows, ref, f.SOS, f.EOS, maxLen, 0.01)
		if err != nil {
			t.Fatal(err)
		}
		c := checks[0]
		if c.Sentences != len(rows) || c.LogProbSteps == 0 || c.MaxLogProbDev == nil || !(*c.MaxLogProbDev > 0) || c.NonFinite {
			t.Errorf("%s: %+v", p, c)
		}
		if c.OK != (c.SentenceRate >= 0.01) || c.DivergentSentences != c.Sentences-c.SentencesIdentical {
			t.Errorf("%s: verdict and counts disagree: %+v", p, c)
		}
	}

	// The reference's sentence 1 takes another token at step 1.
	alt := slices.Clone(ref)
	alt[1].Tokens = slices.Clone(ref[1].Tokens)
	if len(alt[1].Tokens) < 2 {
		t.Fatalf("sentence 1 decodes %v: too short to alter", ref[1].Tokens)
	}
	orig := alt[1].Tokens[1]
	alt[1].Tokens[1] = (orig + 1) % int64(w.Config.TgtVocab)
	checks, err = agreement(enc, dec, nil, "", rows, alt, f.SOS, f.EOS, maxLen, 1)
	if err != nil {
		t.Fatal(err)
	}
	c := checks[0]
	want := quant.Divergence{Sentence: 1, Step: 1, Ref: alt[1].Tokens[1], Got: orig}
	if c.OK || c.SentencesIdentical != len(rows)-1 || len(c.Divergences) != 1 || c.Divergences[0] != want ||
		!strings.Contains(c.Detail, "below the threshold 100.00%") {
		t.Errorf("altered reference: %+v, want one divergence %+v and a failed threshold", c, want)
	}
}

// TestReferenceDecodes: PyTorch's greedy decode of each row takes the
// log_probs rows of its own steps, and a decode longer than the steps run
// is an error.
func TestReferenceDecodes(t *testing.T) {
	// log_probs [T=3, B=2, V=2]: value = 100*t + 10*b + v.
	var lp []float32
	for s := 0; s < 3; s++ {
		for b := 0; b < 2; b++ {
			lp = append(lp, float32(100*s+10*b), float32(100*s+10*b+1))
		}
	}
	want := map[string]*builder.Tensor{"log_probs": builder.FloatTensor([]int64{3, 2, 2}, lp)}
	got, err := referenceDecodes(want, [][]int64{{1, 0}, {1, 1, 0}})
	if err != nil {
		t.Fatal(err)
	}
	if len(got[0].LogProbs) != 2 || len(got[1].LogProbs) != 3 || got[0].LogProbs[1][1] != 101 || got[1].LogProbs[2][0] != 210 {
		t.Errorf("decodes %+v", got)
	}
	if _, err := referenceDecodes(want, [][]int64{{1}, {1, 1, 1, 1}}); err == nil || !strings.Contains(err.Error(), "row 1 has 4 tokens, its log_probs 3 steps") {
		t.Errorf("too long a decode: %v", err)
	}
	if _, err := referenceDecodes(want, [][]int64{{1}}); err == nil || !strings.Contains(err.Error(), "lacks log_probs [steps, 1, Vt]") {
		t.Errorf("batch mismatch: %v", err)
	}
}
