package verify

import (
	"context"
	"fmt"
	"io"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// A model exported with reduced-precision weights (attnx export --weights
// int8|int4) cannot meet the float32 tolerance, by design. Check then
// reports how far its decoding is from the float32 PyTorch model's instead:
// its greedy decodes are compared with PyTorch's greedy decodes of the same
// inputs (quant.Agreement), and it fails only when fewer sentences than
// Options.MinAgreement are identical.
//
// Each sentence is decoded alone (batch 1), as one request is: the int8
// graphs quantize their activations per tensor at run time, so a row's
// result can depend, slightly, on the rows decoded with it.

// DefaultMinAgreement is the fraction of sentences a reduced-precision
// model must decode exactly as the float32 PyTorch model does for Check to
// pass, unless Options.MinAgreement says otherwise. Check's inputs are
// random token sequences, far from what a model was trained on, where its
// top tokens are often nearly tied: the demo models, which decode their
// held-out set at int8 exactly as at float32, agree on 93-100% of random
// sentences at int8 and 85-93% at int4 (docs/quantization.md). Below 90%,
// quantization changes the model's outputs often enough to look at.
const DefaultMinAgreement = 0.9

// maxDivergencesShown bounds the divergences an AgreementCheck lists.
const maxDivergencesShown = 10

// AgreementCheck is how far one graph's greedy decodes of a
// reduced-precision model are from the float32 PyTorch model's.
type AgreementCheck struct {
	// Graph names the graph and how it was run.
	Graph string `json:"graph"`
	// Sentences and SentencesIdentical count the decodes and those equal to
	// PyTorch's token for token; SentenceRate is their ratio.
	Sentences          int     `json:"sentences"`
	SentencesIdentical int     `json:"sentences_identical"`
	SentenceRate       float64 `json:"sentence_rate"`
	// Tokens and TokensIdentical count the token positions compared and
	// those holding the same token; TokenRate is their ratio.
	Tokens          int     `json:"tokens"`
	TokensIdentical int     `json:"tokens_identical"`
	TokenRate       float64 `json:"token_rate"`
	// LogProbSteps is the number of steps whose log-probabilities were
	// compared (those whose inputs agree: every step up to and including a
	// sentence's first divergent one); 0 for a graph whose log-probabilities
	// are not seen (greedy.onnx).
	LogProbSteps int `json:"log_prob_steps"`
	// MaxLogProbDev is the largest |PyTorch - reduced| log-probability over
	// those steps, at MaxDevSentence, MaxDevStep; nil when none were compared
	// or when it is not finite (NonFinite: one side is infinite or NaN where
	// the other is not).
	MaxLogProbDev  *float64 `json:"max_log_prob_dev,omitempty"`
	NonFinite      bool     `json:"log_prob_non_finite,omitempty"`
	MaxDevSentence int      `json:"max_dev_sentence"`
	MaxDevStep     int      `json:"max_dev_step"`
	// Divergences lists where differing sentences first diverge (the first
	// maxDivergencesShown of them); DivergentSentences counts them all.
	Divergences        []quant.Divergence `json:"divergences,omitempty"`
	DivergentSentences int                `json:"divergent_sentences"`
	// OK is SentenceRate >= the threshold.
	OK bool `json:"ok"`
	// Detail says why not.
	Detail string `json:"detail,omitempty"`
}

// newAgreementCheck summarises a for graph against the threshold minRate.
func newAgreementCheck(graph string, a *quant.Agreement, minRate float64) AgreementCheck {
	c := AgreementCheck{Graph: graph, Sentences: a.Sentences, SentencesIdentical: a.SentencesIdentical, SentenceRate: a.SentenceRate(),
		Tokens: a.Tokens, TokensIdentical: a.TokensIdentical, TokenRate: a.TokenRate(), LogProbSteps: a.Steps,
		DivergentSentences: len(a.Divergences)}
	if a.Steps > 0 {
		c.MaxDevSentence, c.MaxDevStep = a.MaxDevSentence, a.MaxDevStep
		if math.IsInf(a.MaxLogProbDev, 0) || math.IsNaN(a.MaxLogProbDev) {
			c.NonFinite = true
		} else {
			d := a.MaxLogProbDev
			c.MaxLogProbDev = &d
		}
	}
	c.Divergences = a.Divergences[:min(len(a.Divergences), maxDivergencesShown)]
	c.OK = true
	if err := a.Check(minRate); err != nil {
		c.OK, c.Detail = false, err.Error()
	}
	return c
}

// recordingGreedy is greedy decoding that keeps each step's log_probs.
type recordingGreedy struct {
	decode.Greedy
	rows [][]float32
}

func (r *recordingGreedy) Advance(s decode.Slots, inputs []int64, parents []int) int {
	r.rows = append(r.rows, append([]float32(nil), s.LogProbs(0)...))
	return r.Greedy.Advance(s, inputs, parents)
}

// referenceDecodes returns PyTorch's greedy decode of each row with the
// log_probs of its steps: the reference's run feeds SOS and then each
// step's argmax without stopping at EOS, so its first len(tokens) steps
// are the greedy decode's.
func referenceDecodes(want map[string]*builder.Tensor, tokens [][]int64) ([]quant.Decode, error) {
	lp, ok := want["log_probs"]
	if !ok || len(lp.Dims) != 3 || int(lp.Dims[1]) != len(tokens) {
		return nil, fmt.Errorf("the reference's output lacks log_probs [steps, %d, Vt]", len(tokens))
	}
	v, err := lp.Float32s()
	if err != nil {
		return nil, fmt.Errorf("reference log_probs: %w", err)
	}
	T, B, V := int(lp.Dims[0]), int(lp.Dims[1]), int(lp.Dims[2])
	out := make([]quant.Decode, B)
	for r, toks := range tokens {
		if len(toks) > T {
			return nil, fmt.Errorf("the reference's greedy decode of row %d has %d tokens, its log_probs %d steps", r, len(toks), T)
		}
		out[r].Tokens = toks
		for t := range toks {
			out[r].LogProbs = append(out[r].LogProbs, v[(t*B+r)*V:(t*B+r+1)*V])
		}
	}
	return out, nil
}

// decodeAlone greedy-decodes each row alone (batch 1) with enc and dec,
// recording each step's log_probs.
func decodeAlone(enc, dec *onnxrun.Session, rows [][]int64, sos, eos int64, maxLen int) ([]quant.Decode, error) {
	m, err := decode.NewModel(enc, dec, decode.Dims{})
	if err != nil {
		return nil, err
	}
	S := 0
	for _, r := range rows {
		S = max(S, len(r))
	}
	ex, err := m.NewExecutor(1, S)
	if err != nil {
		return nil, err
	}
	defer ex.Close()
	out := make([]quant.Decode, len(rows))
	for r, row := range rows {
		g := &recordingGreedy{Greedy: decode.Greedy{SOS: sos, EOS: eos, MaxLen: maxLen}}
		if err := decode.Decode(context.Background(), ex, [][]int64{row}, []decode.Search{g}); err != nil {
			return nil, fmt.Errorf("row %d: %w", r, err)
		}
		out[r] = quant.Decode{Tokens: g.Tokens(), LogProbs: g.rows}
	}
	return out, nil
}

// agreement decodes every row of rows alone with the reduced model's
// encoder and decoder (and, when loop is not nil, with greedy.onnx) and
// compares each decode with ref, PyTorch's: one AgreementCheck per graph.
func agreement(enc, dec *onnxrun.Session, loop *translate.Translator, loopName string, rows [][]int64, ref []quant.Decode,
	sos, eos int64, maxLen int, minRate float64) ([]AgreementCheck, error) {
	got, err := decodeAlone(enc, dec, rows, sos, eos, maxLen)
	if err != nil {
		return nil, err
	}
	var steps quant.Agreement
	for r := range rows {
		if err := steps.Add(ref[r], got[r]); err != nil {
			return nil, err
		}
	}
	out := []AgreementCheck{newAgreementCheck("decoder.onnx (step by step, one sentence at a time)", &steps, minRate)}
	if loop == nil {
		return out, nil
	}
	var whole quant.Agreement
	for r, row := range rows {
		res, err := loop.TranslateIDs(context.Background(), [][]int64{row})
		if err != nil {
			return nil, fmt.Errorf("%s: row %d: %w", loopName, r, err)
		}
		if err := whole.Add(ref[r], quant.Decode{Tokens: res[0].Tokens}); err != nil {
			return nil, err
		}
	}
	return append(out, newAgreementCheck(loopName+" (one sentence at a time)", &whole, minRate)), nil
}

// checkReduced fills out for a reduced-precision model: the agreement of
// its greedy decodes of the rows of ids with PyTorch's (want: the
// reference's run output, refTokens its greedy tokens), and out.OK from it.
// When the inputs file fed the reference's steps (forced: step_input_ids),
// its log_probs are not those of its greedy decode, and only tokens are
// compared.
func (o Options) checkReduced(out *Outcome, enc, dec *onnxrun.Session, loop *translate.Translator, ids *onnxrun.Tensor, lens []int64,
	want map[string]*builder.Tensor, refTokens [][]int64, steps int, forced bool) error {
	minRate := o.MinAgreement
	if minRate == 0 {
		minRate = DefaultMinAgreement
	}
	if minRate < 0 || minRate > 1 || math.IsNaN(minRate) {
		return fmt.Errorf("minimum agreement %v: want a fraction in (0, 1]", minRate)
	}
	rows, _, err := sourceRows(ids, lens)
	if err != nil {
		return err
	}
	ref, err := referenceDecodes(want, refTokens)
	if err != nil {
		return err
	}
	if forced {
		for r := range ref {
			ref[r].LogProbs = nil
		}
	}
	sp := o.Info.Special
	checks, err := agreement(enc, dec, loop, o.Info.Files["greedy"], rows, ref, sp.SOS, sp.EOS, steps, minRate)
	if err != nil {
		return err
	}
	out.Weights, out.MinAgreement, out.Agreement, out.OK = o.Info.Weights, minRate, checks, true
	for _, c := range checks {
		out.OK = out.OK && c.OK
	}
	return nil
}

// writeAgreement prints one AgreementCheck for WriteText.
func writeAgreement(w io.Writer, c AgreementCheck) {
	fmt.Fprintf(w, "  greedy decoding, %s:\n", c.Graph)
	fmt.Fprintf(w, "    sentences identical to PyTorch's %d/%d (%.2f%%), tokens identical %d/%d (%.2f%%)\n",
		c.SentencesIdentical, c.Sentences, 100*c.SentenceRate, c.TokensIdentical, c.Tokens, 100*c.TokenRate)
	switch {
	case c.NonFinite:
		fmt.Fprintf(w, "    largest log-prob deviation: not finite (sentence %d, step %d; %d steps compared)\n", c.MaxDevSentence, c.MaxDevStep, c.LogProbSteps)
	case c.MaxLogProbDev != nil:
		fmt.Fprintf(w, "    largest log-prob deviation %.4g (sentence %d, step %d; %d steps compared)\n", *c.MaxLogProbDev, c.MaxDevSentence, c.MaxDevStep, c.LogProbSteps)
	}
	for _, d := range c.Divergences {
		fmt.Fprintf(w, "    sentence %d first diverges at step %d: PyTorch %s, this model %s\n", d.Sentence, d.Step, tokenName(d.Ref), tokenName(d.Got))
	}
	if more := c.DivergentSentences - len(c.Divergences); more > 0 {
		fmt.Fprintf(w, "    ... and %d more divergent sentences\n", more)
	}
}

func tokenName(t int64) string {
	if t < 0 {
		return "had ended"
	}
	return fmt.Sprintf("token %d", t)
}
