package decode

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/attnx/attnx/attention"
)

// JoeyBeam is one row's beam search as JoeyNMT 2.3's beam_search
// (joeynmt/search.py) runs it, which differs from Beam's:
//
//   - the K beam positions stay K: a hypothesis that ends is recorded and
//     stays in its position, extended past its </s> like any other, so its
//     continuations compete for the K places; such continuations are never
//     recorded (they hold a </s> not at the end);
//   - a position once finished counts as finished for the rest of the
//     search, whatever hypothesis holds it later, and the row stops when
//     every position has finished once (or at MaxLen, where all do);
//   - a hypothesis is recorded with its score divided by Wu's ((5 + t) /
//     6) ** Alpha at its step t (when Alpha > 0), the running score kept as
//     that quotient times the penalty, in float32, as JoeyNMT keeps it;
//   - the result is the recorded hypotheses in order of score (stably),
//     NBest of them, filled up with [UNK] scored -1 when fewer were
//     recorded.
//
// Rules (JoeyNMT's banned tokens and first step for </s>) and Repeats
// apply to each position's log-probs as in Beam.
type JoeyBeam struct {
	// SOS is the first input token, EOS the token that ends a hypothesis,
	// UNK the filler of a short n-best list.
	SOS, EOS, UNK int64
	// K is beam_size, NBest n_best (1 <= NBest <= K).
	K, NBest int
	// MaxLen is max_output_length: the steps the search may take.
	MaxLen int
	// Alpha is beam_alpha (> 0: Wu's length penalty; else raw scores).
	Alpha float64
	// KeepAttention makes the row record each hypothesis' attention rows.
	KeepAttention bool
	// Rules and Repeats are applied to each step's log-probs.
	Rules   *attention.Rules
	Repeats *Repeats

	steps int
	pos   []joeyPos // the K positions (one before the first step)
	next  []joeyPos
	fin   []bool // a position has finished once
	tree  tree
	hyps  []joeyHyp
	sel   topK[joeyCand]
	done  bool
}

type joeyPos struct {
	node  int32
	score float32 // topk_log_probs
	eos   int32   // </s> tokens in the hypothesis
}

type joeyHyp struct {
	node  int32
	score float32 // the penalised score JoeyNMT records
}

type joeyCand struct {
	score float32 // penalised when Alpha > 0
	p, v  int32
}

// Validate checks the settings, naming the field and the allowed range.
func (b *JoeyBeam) Validate() error {
	switch {
	case b.K < 1:
		return fmt.Errorf("decode: beam width K = %d: want at least 1", b.K)
	case b.NBest < 1 || b.NBest > b.K:
		return fmt.Errorf("decode: n_best %d: want 1 to K = %d", b.NBest, b.K)
	case math.IsNaN(b.Alpha) || math.IsInf(b.Alpha, 0):
		return fmt.Errorf("decode: beam_alpha %v: want a finite value", b.Alpha)
	}
	return nil
}

// Width is K.
func (b *JoeyBeam) Width() int { return b.K }

// First returns SOS.
func (b *JoeyBeam) First() int64 { return b.SOS }

// Advance runs one step of JoeyNMT's search over the row's positions and
// writes the next positions' tokens and slots to inputs and parents. It
// returns 0 when the row is finished.
func (b *JoeyBeam) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	if b.steps == 0 {
		b.tree.start(s, b.KeepAttention, b.MaxLen, b.K)
		// Positions 1..K-1 start at -inf: only the first one's candidates
		// can be picked, and they come first in torch.topk's order.
		b.pos = append(b.pos[:0], joeyPos{node: -1})
		b.fin = append(b.fin[:0], make([]bool, b.K)...)
		b.hyps = b.hyps[:0]
	}
	if b.MaxLen < 1 || s.Len() < len(b.pos) {
		return b.finish()
	}
	pen := 1.0
	if b.Alpha > 0 {
		pen = math.Pow((5.0+float64(b.steps+1))/6.0, b.Alpha)
	}
	pen32 := float32(pen)
	// torch.topk over the flattened positions x vocabulary: the K highest,
	// equal scores in index order, the order they are offered in.
	b.sel.reset(b.K, joeyOrder)
	for p, h := range b.pos {
		lp := s.LogProbs(p)
		if b.Repeats.active() {
			b.Repeats.apply(lp, b.tree.tokens([]int64{b.SOS}, h.node))
		}
		if b.Rules != nil {
			b.Rules.Apply(lp, b.steps, b.EOS, true)
		}
		scanRow(lp, h.score, pen32, b.Alpha > 0, func() (float32, bool) {
			thr, ok := b.sel.threshold()
			return thr.score, ok && thr.score == thr.score
		}, func(v int) {
			c := lp[v] + h.score
			if b.Alpha > 0 {
				c /= pen32
			}
			b.sel.push(joeyCand{score: c, p: int32(p), v: int32(v)})
		})
	}
	picks := b.sel.result()
	b.steps++
	atMax := b.steps >= b.MaxLen
	b.next = b.next[:0]
	for j, c := range picks {
		h := b.pos[c.p]
		node := b.tree.add(s, h.node, int(c.p), int64(c.v))
		raw := c.score
		if b.Alpha > 0 {
			raw = c.score * pen32
		}
		n := joeyPos{node: node, score: raw, eos: h.eos}
		if int64(c.v) == b.EOS {
			n.eos++
		}
		b.next = append(b.next, n)
		if int64(c.v) == b.EOS || math.IsInf(float64(c.score), -1) || atMax {
			b.fin[j] = true
		}
	}
	b.pos, b.next = b.next, b.pos
	all := true
	for j := range b.pos {
		if !b.fin[j] {
			all = false
			continue
		}
		// A finished position's hypothesis is recorded when it has just
		// ended, or at MaxLen when it never did.
		h := b.pos[j]
		if h.eos == 1 && b.tree.nodes[h.node].tok == b.EOS || h.eos == 0 && atMax {
			b.hyps = append(b.hyps, joeyHyp{node: h.node, score: picks[j].score})
		}
	}
	if all {
		return b.finish()
	}
	for j, h := range b.pos {
		inputs[j], parents[j] = b.tree.next(h.node)
	}
	return len(b.pos)
}

// joeyOrder ranks candidates as torch.topk does: higher scores first,
// equal scores in index order (position, then token).
func joeyOrder(x, y joeyCand) int {
	return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.p, y.p), cmp.Compare(x.v, y.v))
}

// finish orders the recorded hypotheses by score, stably, as sorted()
// does.
func (b *JoeyBeam) finish() int {
	b.done = true
	slices.SortStableFunc(b.hyps, func(x, y joeyHyp) int { return cmp.Compare(y.score, x.score) })
	return 0
}

// Len returns NBest once the row has finished (JoeyNMT fills a short list
// up), 0 before.
func (b *JoeyBeam) Len() int {
	if !b.done {
		return 0
	}
	return b.NBest
}

// Hypotheses returns the first n of the n-best list (all when n < 1 or n >
// Len), best first: NormalizedScore is the score JoeyNMT reports (divided
// by the length penalty when Alpha > 0), Score the same times the penalty
// at the hypothesis' length. Fillers are [UNK] scored -1.
func (b *JoeyBeam) Hypotheses(n int) []Hypothesis {
	if n < 1 || n > b.Len() {
		n = b.Len()
	}
	out := make([]Hypothesis, n)
	for i := range out {
		if i >= len(b.hyps) {
			out[i] = Hypothesis{Tokens: []int64{b.UNK}, Score: -1, NormalizedScore: -1}
			continue
		}
		h := b.hyps[i]
		toks := b.tree.tokens(nil, h.node)
		raw := h.score
		if b.Alpha > 0 {
			raw = h.score * float32(math.Pow((5.0+float64(len(toks)))/6.0, b.Alpha))
		}
		out[i] = Hypothesis{Tokens: toks, Score: raw, NormalizedScore: h.score}
	}
	return out
}

// Attention returns hypothesis i's attention rows (nil without
// KeepAttention, and for a filler).
func (b *JoeyBeam) Attention(i int) [][]float32 {
	if i >= len(b.hyps) {
		return nil
	}
	return b.tree.attention(b.hyps[i].node)
}

// Reset forgets the row, keeping the buffers and the settings.
func (b *JoeyBeam) Reset() {
	b.steps, b.done = 0, false
	b.pos, b.next, b.hyps = b.pos[:0], b.next[:0], b.hyps[:0]
	b.tree.reset()
}
