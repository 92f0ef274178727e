package decode

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/attnx/attnx/attention"
)

// OpenNMT length penalties (-length_penalty).
const (
	PenaltyNone = "none"
	PenaltyAvg  = "avg"
	PenaltyWu   = "wu"
)

// onmtBlocked is the score OpenNMT-py gives a candidate that would repeat
// an n-gram (-10e20, in float32).
const onmtBlocked = float32(-10e20)

// onmtMasked is the score OpenNMT-py gives a banned token's log-prob and a
// finished hypothesis' running score (-65504, float16's lowest).
const onmtMasked = -65504

// OpenNMTBeam is OpenNMT-py's beam search (onmt.translate.beam_search
// .BeamSearch of v3.5.1 with GNMTGlobalScorer) of one row, as
// onmt_translate runs it, not the spec's:
//
//   - a step picks the K best candidates of the live hypotheses, ranked by
//     (score_i + log_probs_i[v]) / penalty(len + 1) in float32, where len
//     counts the tokens so far plus the start token; ties go to the lower
//     slot, then the lower token;
//   - each EOS candidate among the K finishes its hypothesis, with that
//     penalised score, and takes its place among the K: only the others
//     live on, so the beam narrows as hypotheses finish;
//   - the row stops at the first step whose best candidate finishes once
//     NBest hypotheses have finished (not when K have), or when MaxLen
//     tokens are reached, where every pick finishes;
//   - the finished hypotheses are ordered by penalised score (stable), and
//     the first NBest are the result.
//
// The running score of a picked candidate is its penalised score times the
// penalty, in float32, as OpenNMT-py keeps it. MinLen bans EOS while the
// hypothesis holds fewer than MinLen tokens, BanUNK bans UNK (both by a
// log-prob of -65504, as OpenNMT-py does); BlockNgram blocks repeated
// n-grams by a score of -1e21. Ratio (-ratio) changes the stop rule. Not
// implemented: the coverage penalty, which OpenNMT-py 3.5.1 cannot apply
// to RNN decoders (their attention comes time-first and its beam search
// fails indexing it, as with -replace_unk).
type OpenNMTBeam struct {
	// SOS is the first input token, EOS the token that finishes a
	// hypothesis, UNK the unknown token (BanUNK).
	SOS, EOS, UNK int64
	// K is the beam width (-beam_size), NBest the hypotheses kept
	// (-n_best, 1 <= NBest <= K).
	K, NBest int
	// MaxLen is the most tokens a hypothesis holds, EOS included
	// (-max_length), MinLen the fewest before EOS may come
	// (-min_length).
	MaxLen, MinLen int
	// Penalty is -length_penalty (PenaltyNone, PenaltyAvg or PenaltyWu)
	// and Alpha -alpha.
	Penalty string
	Alpha   float64
	// BanUNK is -ban_unk_token.
	BanUNK bool
	// BlockNgram is -block_ngram_repeat: a hypothesis never repeats an
	// n-gram of this many tokens (the start token counts; OpenNMT-py
	// 3.5.1 blocks nothing at 1, nor at 0), except n-grams holding a
	// token of IgnoreWhenBlocking (-ignore_when_blocking).
	BlockNgram         int
	IgnoreWhenBlocking []int64
	// Ratio is -ratio: when above 0, a row stops at a step where some
	// candidate finishes if its best candidate's score / (SrcLen x Ratio)
	// is no better than the best finished score per token so far, or
	// every pick finished, once NBest hypotheses have finished. SrcLen is
	// the source's length (OpenNMT-py 3.5.1 reads it right for the first
	// sentence of a batch only: its src_len is per beam row, indexed by
	// sentence).
	Ratio  float64
	SrcLen int
	// KeepAttention makes the row record each hypothesis' attention rows.
	KeepAttention bool
	// CoveragePenalty is -coverage_penalty (CoverageNone, CoverageWu,
	// CoverageSummary) and Beta -beta: a hypothesis' coverage is the sum
	// of its steps' attention rows; wu's penalty is beta x -sum_s
	// log(min(cov_s, 1)), summary's beta x (sum_s max(cov_s, 1) - S).
	// Without Stepwise it is taken off a finished hypothesis' score;
	// with it (-stepwise_penalty) off the running score at every step
	// from the second, the previous step's given back. As OpenNMT-py 2.3.0
	// computes them (3.5.1 fails indexing an RNN decoder's attention).
	CoveragePenalty string
	Beta            float64
	Stepwise        bool
	// V2 is OpenNMT-py 2.x's stop rule (its BeamSearch up to 2.3.0): a
	// row ends at a step where some hypothesis finishes, once its best
	// pick has finished at any step so far (or, with Ratio, by the ratio
	// test) and K hypotheses have finished, not NBest; and its length
	// penalties, whose avg ignores Alpha (OpenNMTAlpha).
	V2 bool
	// Rules, when set, are further decoding rules applied to each step's
	// log-probs first.
	Rules *attention.Rules
	// Copy is the sentence's dynamic vocabulary, for a copy-attention
	// model (nil otherwise): log-probs then span its extended ids.
	Copy *CopyMap

	steps int
	best  float64 // -ratio's best finished score per token
	top   bool    // V2: the best pick has finished at some step
	// cov and ncov hold the live hypotheses' coverage (CoveragePenalty),
	// S values each, before and after the step's attention; pens the
	// penalty of each ncov.
	cov, ncov []float32
	pens      []float32
	live      []onmtLive
	next      []onmtLive
	tree      tree
	finished
	sel topK[onmtCand]
}

// onmtOrder ranks candidates as torch.topk does: higher scores first,
// equal scores in index order.
func onmtOrder(x, y onmtCand) int {
	return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.flat, y.flat))
}

// onmtLive is a live hypothesis: its last node, its running score and its
// place among the last step's K picks (OpenNMT-py's beam index, which
// breaks ties).
type onmtLive struct {
	node  int32
	score float32
	pos   int32
	// cov is its coverage's row in cov, prev the stepwise penalty its
	// score carries (CoveragePenalty).
	cov  int32
	prev float32
}

// OpenNMT coverage penalties (-coverage_penalty).
const (
	CoverageNone    = "none"
	CoverageWu      = "wu"
	CoverageSummary = "summary"
)

// coveragePenalty is GNMTGlobalScorer's cov_penalty of one coverage row,
// in float32 as torch computes it.
func coveragePenalty(form string, beta float32, cov []float32) float32 {
	// In order: torch's reduction order over a row depends on its length
	// (several vector accumulators), so the last bit may differ.
	var sum float32
	switch form {
	case CoverageWu:
		for _, c := range cov {
			sum += float32(math.Log(float64(min(c, 1))))
		}
		return beta * -sum
	case CoverageSummary:
		for _, c := range cov {
			sum += max(c, 1)
		}
		return beta * (sum - float32(len(cov)))
	}
	return 0
}

type onmtCand struct {
	score float32 // penalised
	i, v  int32   // live index, token
	flat  int64   // pos * V + v: torch.topk's order among equal scores
}

// Validate checks the settings, naming the field and the allowed range.
func (b *OpenNMTBeam) Validate() error {
	switch {
	case b.K < 1:
		return fmt.Errorf("decode: beam width K = %d: want at least 1", b.K)
	case b.NBest < 1 || b.NBest > b.K:
		return fmt.Errorf("decode: n_best %d: want 1 to K = %d", b.NBest, b.K)
	case b.Penalty != PenaltyNone && b.Penalty != PenaltyAvg && b.Penalty != PenaltyWu:
		return fmt.Errorf("decode: length penalty %q: want %s, %s or %s", b.Penalty, PenaltyNone, PenaltyAvg, PenaltyWu)
	case math.IsNaN(b.Alpha) || math.IsInf(b.Alpha, 0):
		return fmt.Errorf("decode: alpha %v: want a finite value", b.Alpha)
	case math.IsNaN(b.Ratio) || math.IsInf(b.Ratio, 0) || b.Ratio < 0:
		return fmt.Errorf("decode: ratio %v: want a finite value >= 0", b.Ratio)
	case b.Ratio > 0 && b.SrcLen < 1:
		return fmt.Errorf("decode: ratio %v needs the source length, SrcLen = %d", b.Ratio, b.SrcLen)
	case b.CoveragePenalty != "" && b.CoveragePenalty != CoverageNone && b.CoveragePenalty != CoverageWu && b.CoveragePenalty != CoverageSummary:
		return fmt.Errorf("decode: coverage penalty %q: want %s, %s or %s", b.CoveragePenalty, CoverageNone, CoverageWu, CoverageSummary)
	case math.IsNaN(b.Beta) || math.IsInf(b.Beta, 0):
		return fmt.Errorf("decode: beta %v: want a finite value", b.Beta)
	}
	return nil
}

// Width is K.
func (b *OpenNMTBeam) Width() int { return b.K }

// First returns SOS.
func (b *OpenNMTBeam) First() int64 { return b.SOS }

// penalty is GNMTGlobalScorer's length penalty of a hypothesis of curLen
// (tokens plus the start token), in float64 as OpenNMT-py computes it.
func (b *OpenNMTBeam) penalty(curLen int) float64 {
	return onmtPenalty(b.Penalty, OpenNMTAlpha(b.Penalty, b.Alpha, b.V2), curLen)
}

// OpenNMTAlpha is the alpha with which the penalties here, 3.x's,
// compute -length_penalty penalty -alpha alpha as OpenNMT-py 2.x (v2) or
// 3.x does. Each release's penalty of a hypothesis of len tokens, the
// start token counted (onmt/translate/penalties.py of 2.3.0 and of 3.0.0
// to 3.5.1):
//
//	         none   avg            wu
//	2.x      1      len            ((5 + len) / 6) ** alpha
//	3.x      1      len ** alpha   ((5 + len) / 6) ** alpha
//
// 2.x's avg takes no alpha (-alpha defaults to 0 there, to 1 in 3.x): it
// is 3.x's avg with alpha 1, so -length_penalty avg -alpha A runs as
// alpha 1 under 2.x's rules and as alpha A under 3.x's.
func OpenNMTAlpha(penalty string, alpha float64, v2 bool) float64 {
	if v2 && penalty == PenaltyAvg {
		return 1
	}
	return alpha
}

// onmtPenalty is OpenNMT-py 3.x's GNMTGlobalScorer length penalty
// (-length_penalty, -alpha) of a hypothesis of curLen (2.x's through
// OpenNMTAlpha).
func onmtPenalty(penalty string, alpha float64, curLen int) float64 {
	switch penalty {
	case PenaltyAvg:
		return math.Pow(float64(curLen), alpha)
	case PenaltyWu:
		return math.Pow((5+float64(curLen))/6, alpha)
	}
	return 1
}

// OpenNMTScores returns the scores OpenNMT-py's BeamSearch gives a beam
// of one (onmt_translate -beam_size 1, which runs BeamSearch, not
// GreedySearch) whose tokens had these log-probs (natural log, one per
// token, EOS included): raw, its running score (Hypothesis.Score), and
// norm, the score divided by the -length_penalty penalty with -alpha
// alpha that it ranks by and prints (PRED SCORE). The float32 steps are
// OpenNMTBeam's: each step divides the running score plus the log-prob by
// the step's penalty, and multiplies it back for the next step. It has no
// coverage penalty.
func OpenNMTScores(penalty string, alpha float64, logProbs []float32) (raw, norm float32) {
	for step, x := range logProbs {
		// OpenNMTBeam's pen at steps = step: penalty(steps + 2).
		pen := onmtPenalty(penalty, alpha, step+2)
		norm = x + raw
		raw = norm
		if pen != 1 {
			norm /= float32(pen)
			raw = norm * float32(pen)
		}
	}
	return raw, norm
}

// Advance picks the step's K candidates, finishes the EOS ones (all of
// them at MaxLen) and writes the live ones' tokens and slots to inputs and
// parents. It returns 0 when the row is finished.
func (b *OpenNMTBeam) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	if b.steps == 0 {
		b.tree.start(s, b.KeepAttention, b.MaxLen, b.K)
		b.live = append(b.live[:0], onmtLive{node: -1})
		b.finished.reset()
		b.best = -1e10
		b.top = false
	}
	if b.MaxLen < 1 || s.Len() < len(b.live) {
		return b.finish()
	}
	length := b.steps + 1 // OpenNMT-py's len(self): the start token and the tokens so far
	pen := b.penalty(length + 1)
	pen32 := float32(pen)
	covered := b.CoveragePenalty == CoverageWu || b.CoveragePenalty == CoverageSummary
	S := s.SourceLength()
	if covered {
		b.ncov = slices.Grow(b.ncov[:0], len(b.live)*S)[:len(b.live)*S]
		b.pens = slices.Grow(b.pens[:0], len(b.live))[:len(b.live)]
	}
	// torch.topk: the K highest, equal scores in index order, kept as
	// they come (a step of a 50k vocabulary and K = 10 offers 500k).
	b.sel.reset(b.K, onmtOrder)
	for i, h := range b.live {
		if covered {
			// The coverage through this step's attention, and its
			// penalty; stepwise, the running score swaps the previous
			// step's penalty for it (from the second step).
			nc, att := b.ncov[i*S:(i+1)*S], s.Attention(i)
			if b.steps == 0 {
				copy(nc, att)
			} else {
				oc := b.cov[int(h.cov)*S : (int(h.cov)+1)*S]
				for j := range nc {
					nc[j] = oc[j] + att[j]
				}
			}
			b.pens[i] = coveragePenalty(b.CoveragePenalty, float32(b.Beta), nc)
			if b.Stepwise && b.steps > 0 {
				h.score = (h.score + h.prev) - b.pens[i]
				b.live[i].score = h.score
			}
		}
		forbidden := b.forbidden(h.node, length)
		lp := s.LogProbs(i)
		if b.Rules != nil {
			b.Rules.Apply(lp, b.steps, b.EOS, true)
		}
		b.pushRow(lp, i, h, length, pen, pen32, forbidden)
	}
	picks := b.sel.result()
	b.steps++
	atMax := b.steps >= b.MaxLen
	b.next = b.next[:0]
	topFinished, anyFinished, allFinished := false, false, true
	for r, c := range picks {
		h := b.live[c.i]
		node := b.tree.add(s, h.node, int(c.i), int64(c.v))
		raw := c.score
		if pen != 1 {
			raw = c.score * pen32
		}
		if covered && !b.Stepwise {
			// The finished score loses the coverage penalty (topk_scores
			// -= cov_penalty), the running one does not.
			c.score -= b.pens[c.i]
		}
		if int64(c.v) == b.EOS || atMax {
			b.add(node, raw, c.score)
			topFinished = topFinished || r == 0
			anyFinished = true
			if b.Ratio > 0 {
				// update_finished's step is alive_seq's length: the start
				// token and b.steps tokens; it divides by one more.
				b.best = max(b.best, float64(c.score)/float64(b.steps+2))
			}
			continue
		}
		allFinished = false
		nl := onmtLive{node: node, score: raw, pos: int32(r), cov: c.i}
		if covered && b.steps > 1 {
			nl.prev = b.pens[c.i]
		}
		b.next = append(b.next, nl)
	}
	if covered {
		// The children's coverage rows are their parents' new ones.
		b.cov = slices.Grow(b.cov[:0], len(b.next)*S)[:len(b.next)*S]
		for j := range b.next {
			p := int(b.next[j].cov)
			copy(b.cov[j*S:(j+1)*S], b.ncov[p*S:(p+1)*S])
			b.next[j].cov = int32(j)
		}
	}
	b.live, b.next = b.next, b.live
	stop, need := topFinished, b.NBest
	if b.V2 {
		// 2.x keeps top_beam_finished from step to step and waits for K
		// hypotheses; it decides only at steps where some finished.
		b.top = b.top || topFinished
		stop, need = anyFinished && b.top, b.K
	}
	if b.Ratio > 0 {
		// In float32, as torch divides the score by the 0-d tensor
		// src_len x ratio and compares with the Python float.
		predLen := float32(b.SrcLen) * float32(b.Ratio)
		top := picks[0].score
		if covered && !b.Stepwise {
			top -= b.pens[picks[0].i]
		}
		stop = anyFinished && (top/predLen <= float32(b.best) || allFinished)
	}
	if stop && len(b.fin) >= need || len(b.live) == 0 {
		return b.finish()
	}
	for j, h := range b.live {
		inputs[j], parents[j] = b.tree.next(h.node)
	}
	return len(b.live)
}

// pushRow offers live hypothesis i's candidates (its running score plus
// each log-prob, masked, divided by the length penalty, blocked) to the
// step's selection. Rows come in torch.topk's index order, so a candidate
// that does not beat the K-th kept score comes after it and cannot enter;
// once K are kept, the vector scan skips every log-prob whose candidate
// cannot beat it (scores only grow with the log-prob, and masking or
// blocking only lowers them), and only the others are scored.
func (b *OpenNMTBeam) pushRow(lp []float32, i int, h onmtLive, length int, pen float64, pen32 float32, forbidden map[int64]bool) {
	V := len(lp)
	score := func(x float32) float32 {
		c := x + h.score
		if pen != 1 {
			c /= pen32
		}
		return c
	}
	exact := func(v int) {
		x := lp[v]
		switch {
		case int64(v) == b.EOS && length <= b.MinLen:
			x = onmtMasked
		case int64(v) == b.UNK && b.BanUNK:
			x = onmtMasked
		}
		c := score(x)
		if forbidden != nil && forbidden[int64(v)] {
			c = onmtBlocked
		}
		b.sel.push(onmtCand{score: c, i: int32(i), v: int32(v), flat: int64(h.pos)*int64(V) + int64(v)})
	}
	scanRow(lp, h.score, pen32, pen != 1, func() (float32, bool) {
		// The scan needs K kept and a kept score that the masked and
		// blocked values do not beat (a NaN one comes after every number).
		thr, ok := b.sel.threshold()
		return thr.score, ok && thr.score == thr.score && thr.score > onmtBlocked && !(score(onmtMasked) > thr.score)
	}, exact)
}

// forbidden is blockedNgrams under the beam's -block_ngram_repeat.
func (b *OpenNMTBeam) forbidden(node int32, length int) map[int64]bool {
	return blockedNgrams(&b.tree, b.SOS, b.BlockNgram, b.IgnoreWhenBlocking, node, length)
}

// blockedNgrams returns the tokens the hypothesis ending at node may not
// take next under -block_ngram_repeat n (nil: none): the last token of
// each n-gram of its sequence (the start token sos first; length tokens
// in all) whose first n-1 tokens are the sequence's last n-1, as
// OpenNMT-py's block_ngram_repeats and maybe_update_forbidden_tokens keep
// them, n-grams holding a token of ignore (-ignore_when_blocking) left
// out.
func blockedNgrams(t *tree, sos int64, n int, ignore []int64, node int32, length int) map[int64]bool {
	if n < 2 || length < n {
		return nil
	}
	seq := t.tokens([]int64{sos}, node)
	cur := seq[len(seq)-(n-1):]
	var out map[int64]bool
	for j := n - 1; j < len(seq); j++ {
		gram := seq[j-n+1 : j+1]
		if !slices.Equal(gram[:n-1], cur) || slices.ContainsFunc(gram, func(t int64) bool { return slices.Contains(ignore, t) }) {
			continue
		}
		if out == nil {
			out = map[int64]bool{}
		}
		out[seq[j]] = true
	}
	return out
}

// Len returns the number of hypotheses of the finished row, at most
// NBest; 0 until it has finished.
func (b *OpenNMTBeam) Len() int { return b.count(b.NBest) }

// Hypotheses returns the first n hypotheses (all when n < 1 or n > Len),
// best first: Score is the running log-prob sum, NormalizedScore the
// penalised score OpenNMT-py reports.
func (b *OpenNMTBeam) Hypotheses(n int) []Hypothesis { return b.list(&b.tree, n, b.NBest) }

// Attention returns hypothesis i's attention rows (nil without
// KeepAttention).
func (b *OpenNMTBeam) Attention(i int) [][]float32 { return b.tree.attention(b.fin[i].node) }

// Reset forgets the row, keeping the buffers and the settings.
func (b *OpenNMTBeam) Reset() {
	b.steps = 0
	b.live, b.next = b.live[:0], b.next[:0]
	b.finished.reset()
	b.tree.reset()
}

func (o *OpenNMTBeam) copyMap() *CopyMap { return o.Copy }
