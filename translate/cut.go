package translate

// CutGreedy cuts the greedy result r to its first n tokens, as a decode
// with the output limit n gives it: greedy decoding is prefix-stable (a
// row's first n tokens do not depend on its limit), so its tokens, their
// strings, attention rows and log-probs are the first n, its text is made
// again from those tokens, and its scores are recomputed from those
// log-probs under the Translator's rules (the first n tokens' sum,
// normalised as greedyHypothesis does). A result of n tokens or fewer is
// left as it is. n must be at least 1.
func (t *Translator) CutGreedy(r *Result, n int) {
	if n < 1 || len(r.Tokens) <= n {
		return
	}
	r.Tokens = r.Tokens[:n]
	if len(r.OutputTokens) > n {
		r.OutputTokens = r.OutputTokens[:n]
	}
	if len(r.Attention) > n {
		r.Attention = r.Attention[:n]
	}
	// The first n tokens hold no EOS (the cut one ends the row) and no
	// padding (no search emits it): each has its link, the first n.
	if len(r.Alignment) > n {
		r.Alignment = r.Alignment[:n]
	}
	r.Text = t.TargetText(r.Tokens)
	if len(r.Hypotheses) == 0 {
		return
	}
	lp := r.Hypotheses[0].PositionalScores
	h := greedyHypothesis(t.searchOptions(), r.Tokens, lp[:min(n, len(lp))])
	h.OutputTokens, h.Text, h.Attention, h.Alignment = r.OutputTokens, r.Text, r.Attention, r.Alignment
	r.Hypotheses = []Hypothesis{h}
	r.Score, r.NormalizedScore, r.PositionalScores = h.Score, h.NormalizedScore, h.PositionalScores
}
