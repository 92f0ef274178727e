package decode

import (
	"math"
	"slices"
)

// Repeats are JoeyNMT 2.3's repetition rules for beam search (search.py's
// block_repeat_ngrams, after fairseq's NGramRepeatBlock, and
// penalize_repetition, after Hugging Face's RepetitionPenaltyLogitsProcessor),
// applied to a hypothesis' log-probs before its other rules. JoeyNMT
// applies them in beam search only; its greedy search for RNN decoders
// ignores them.
type Repeats struct {
	// NoRepeatNgram (no_repeat_ngram_size, >= 2 to act) bans every token
	// that would complete an n-gram already in the hypothesis (its start
	// token left out) or in the source row Src, except the target's
	// special tokens Specials.
	NoRepeatNgram int
	// Penalty (repetition_penalty, > 1 to act) multiplies the log-prob of
	// each token of the hypothesis (its start token included), and then of
	// each id of Src, by Penalty (divides it when positive). Src holds
	// source-vocabulary ids, compared and penalised as target ids, as
	// JoeyNMT does; a token in both is penalised twice. JoeyNMT means to
	// spare the special tokens but does not (its copy of the scores is the
	// scores), so neither does this.
	Penalty float64
	// Src is the source row (with its </s>).
	Src []int64
	// Specials are the target's special tokens, never banned by
	// NoRepeatNgram.
	Specials []int64
}

// active reports whether r changes anything.
func (r *Repeats) active() bool { return r != nil && (r.NoRepeatNgram >= 2 || r.Penalty > 1) }

// apply changes lp, the log-probs after seq (the hypothesis, start token
// first), in place.
func (r *Repeats) apply(lp []float32, seq []int64) {
	if n := r.NoRepeatNgram; n >= 2 && len(seq) > n {
		off := n - 1
		suffix := seq[len(seq)-off:]
		ban := func(id int64) {
			if id >= 0 && int(id) < len(lp) && !slices.Contains(r.Specials, id) {
				lp[id] = float32(math.Inf(-1))
			}
		}
		// Positions from 1: the start token begins no n-gram; the last
		// one checked ends just before the suffix's last token.
		for i := 1; i < len(seq)+1-n; i++ {
			if slices.Equal(seq[i:i+off], suffix) {
				ban(seq[i+off])
			}
		}
		for i := 0; i < len(r.Src)+1-n; i++ {
			if slices.Equal(r.Src[i:i+off], suffix) {
				ban(r.Src[i+off])
			}
		}
	}
	if r.Penalty > 1 {
		p := float32(r.Penalty)
		penalize := func(ids []int64) {
			done := map[int64]bool{}
			for _, id := range ids {
				if id < 0 || int(id) >= len(lp) || done[id] {
					continue
				}
				done[id] = true
				if lp[id] < 0 {
					lp[id] *= p
				} else {
					lp[id] /= p
				}
			}
		}
		penalize(seq)
		penalize(r.Src)
	}
}
