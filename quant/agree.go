package quant

import (
	"fmt"
	"math"
	"strings"
)

// Decode is one greedy decode of one input sentence, by the reference
// (float32) model or by a reduced one.
type Decode struct {
	// Tokens are the ids chosen, step after step (EOS included when it was
	// produced).
	Tokens []int64
	// LogProbs holds, when known, one row per step: the step's
	// log-probabilities over the vocabulary, or any fixed selection of them
	// (such as the chosen token's alone), the same for both decodes compared.
	// Nil when not recorded.
	LogProbs [][]float32
}

// Divergence is where a reduced decode first leaves the reference.
type Divergence struct {
	// Sentence is the input's index, in the order Add was called.
	Sentence int `json:"sentence"`
	// Step is the first step whose token differs.
	Step int `json:"step"`
	// Ref and Got are the tokens chosen at that step, -1 where that decode
	// had already ended.
	Ref int64 `json:"ref"`
	Got int64 `json:"got"`
}

// Agreement accumulates how far reduced decodes are from the reference's:
// sentences and tokens identical, the largest log-probability deviation
// and where each differing sentence first diverges.
//
// Tokens are compared position by position: a sentence of length n against
// one of length m counts max(n, m) positions, identical where both have the
// same token. Log-probabilities are compared only on the steps whose inputs
// are the same for both decodes: every step up to and including the first
// divergent one (after it, the two decoders are fed different tokens).
// The zero value is ready to use.
type Agreement struct {
	// Sentences and SentencesIdentical count the decodes added and those
	// equal to the reference token for token.
	Sentences, SentencesIdentical int
	// Tokens and TokensIdentical count the positions compared and those
	// holding the same token.
	Tokens, TokensIdentical int
	// Steps is the number of steps whose log-probabilities were compared.
	Steps int
	// MaxLogProbDev is the largest |reference - reduced| log-probability
	// over the compared steps (+Inf when one side is infinite or NaN and the
	// other is not the same), and MaxDevSentence, MaxDevStep where it is
	// (meaningful when Steps > 0).
	MaxLogProbDev              float64
	MaxDevSentence, MaxDevStep int
	// Divergences lists the first divergent step of each differing
	// sentence, in order.
	Divergences []Divergence
}

// Add compares one reduced decode with the reference decode of the same
// input. Log-probability rows of different lengths are an error; a decode
// without rows is compared on tokens only.
func (a *Agreement) Add(ref, got Decode) error {
	sentence := a.Sentences
	div := firstDivergence(ref.Tokens, got.Tokens)
	n := max(len(ref.Tokens), len(got.Tokens))
	same := 0
	for i := 0; i < min(len(ref.Tokens), len(got.Tokens)); i++ {
		if ref.Tokens[i] == got.Tokens[i] {
			same++
		}
	}
	// Steps with the same inputs: all of them when identical, else up to
	// and including the first divergent one.
	steps := min(len(ref.LogProbs), len(got.LogProbs))
	if div >= 0 {
		steps = min(steps, div+1)
	}
	for s := 0; s < steps; s++ {
		r, g := ref.LogProbs[s], got.LogProbs[s]
		if len(r) != len(g) {
			return fmt.Errorf("quant: sentence %d step %d: reference log-prob row has %d values, reduced %d", sentence, s, len(r), len(g))
		}
		if d := maxDeviation(r, g); d > a.MaxLogProbDev || (a.Steps == 0 && s == 0) {
			a.MaxLogProbDev, a.MaxDevSentence, a.MaxDevStep = d, sentence, s
		}
	}
	a.Sentences++
	a.Tokens += n
	a.TokensIdentical += same
	a.Steps += steps
	if div < 0 {
		a.SentencesIdentical++
		return nil
	}
	d := Divergence{Sentence: sentence, Step: div, Ref: -1, Got: -1}
	if div < len(ref.Tokens) {
		d.Ref = ref.Tokens[div]
	}
	if div < len(got.Tokens) {
		d.Got = got.Tokens[div]
	}
	a.Divergences = append(a.Divergences, d)
	return nil
}

// firstDivergence returns the first position where the token sequences
// differ (one ending before the other counts), or -1 when they are equal.
func firstDivergence(ref, got []int64) int {
	for i := 0; i < max(len(ref), len(got)); i++ {
		if i >= len(ref) || i >= len(got) || ref[i] != got[i] {
			return i
		}
	}
	return -1
}

// maxDeviation returns max |r[i] - g[i]|: 0 where both are the same
// infinity, +Inf where only one is infinite or either is NaN.
func maxDeviation(r, g []float32) float64 {
	worst := 0.0
	for i := range r {
		x, y := float64(r[i]), float64(g[i])
		var d float64
		switch {
		case x == y:
			continue
		case math.IsNaN(x) || math.IsNaN(y) || math.IsInf(x, 0) || math.IsInf(y, 0):
			d = math.Inf(1)
		default:
			d = math.Abs(x - y)
		}
		worst = max(worst, d)
	}
	return worst
}

// SentenceRate returns the fraction of sentences identical to the
// reference (1 when none were added).
func (a *Agreement) SentenceRate() float64 { return rate(a.SentencesIdentical, a.Sentences) }

// TokenRate returns the fraction of token positions identical to the
// reference (1 when none were compared).
func (a *Agreement) TokenRate() float64 { return rate(a.TokensIdentical, a.Tokens) }

func rate(n, d int) float64 {
	if d == 0 {
		return 1
	}
	return float64(n) / float64(d)
}

// Check returns an error when fewer than minSentenceRate of the sentences
// (a fraction in [0, 1]) are identical to the reference.
func (a *Agreement) Check(minSentenceRate float64) error {
	if minSentenceRate < 0 || minSentenceRate > 1 || math.IsNaN(minSentenceRate) {
		return fmt.Errorf("quant: agreement threshold %v is not a fraction in [0, 1]", minSentenceRate)
	}
	if a.SentenceRate() < minSentenceRate {
		return fmt.Errorf("quant: %d of %d sentences (%.2f%%) identical to the reference, below the threshold %.2f%%%s",
			a.SentencesIdentical, a.Sentences, 100*a.SentenceRate(), 100*minSentenceRate, a.firstDivergenceText())
	}
	return nil
}

func (a *Agreement) firstDivergenceText() string {
	if len(a.Divergences) == 0 {
		return ""
	}
	d := a.Divergences[0]
	return fmt.Sprintf("; first: sentence %d diverges at step %d (reference %s, reduced %s)", d.Sentence, d.Step, tokenText(d.Ref), tokenText(d.Got))
}

func tokenText(t int64) string {
	if t < 0 {
		return "ended"
	}
	return fmt.Sprintf("token %d", t)
}

// String summarises the agreement on a few lines.
func (a *Agreement) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "sentences identical: %d/%d (%.2f%%)\n", a.SentencesIdentical, a.Sentences, 100*a.SentenceRate())
	fmt.Fprintf(&b, "tokens identical:    %d/%d (%.2f%%)\n", a.TokensIdentical, a.Tokens, 100*a.TokenRate())
	if a.Steps > 0 {
		fmt.Fprintf(&b, "max log-prob deviation: %.4g (sentence %d, step %d; %d steps compared)\n", a.MaxLogProbDev, a.MaxDevSentence, a.MaxDevStep, a.Steps)
	}
	if t := a.firstDivergenceText(); t != "" {
		b.WriteString(strings.TrimPrefix(t, "; first: ") + "\n")
	}
	return b.String()
}
