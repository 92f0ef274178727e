package decode

import (
	"cmp"
	"fmt"
	"github.com/attnx/attnx/internal/kernel"
	"math"
	"math/rand/v2"

	"github.com/attnx/attnx/attention"
)

// FairseqBeam is one row's search as fairseq 0.12's SequenceGenerator
// runs it with its BeamSearch (fairseq/sequence_generator.py,
// fairseq/search.py), beam 1 (fairseq's greedy decoding) included:
//
//   - each step's log-probs get NaN as -inf, Rules (fairseq never picks
//     <pad>, and --min-len keeps </s> out of the first steps), UnkPen
//     subtracted from the unknown token's, and at the last step
//     (MaxLen-1, fairseq's max_len) everything but </s> banned;
//   - the candidates are the 2K best (score + log-prob) over the live
//     hypotheses (only the first at the first step), in float32, equal
//     scores in index order;
//   - each </s> candidate with a finite score among the first K finishes
//     its hypothesis, with its score divided by its length (</s>
//     included) ** LenPen, until K have finished;
//   - the row is done once K hypotheses have finished, or at the last
//     step; otherwise the first K candidates that are not such a </s>
//     live on (the beam stays K wide), and where fewer are left, finished
//     ones too, whose places among the next step's first K candidates
//     (fairseq's cands_to_ignore, which marks candidate positions, not
//     hypotheses) then finish nothing;
//   - the finished hypotheses are ordered by that normalised score, and
//     the first NBest are the result.
//
// K is at most the vocabulary's size less one, as fairseq caps it.
// Candidates of equal scores come in index order; torch.topk leaves that
// order open, which matters only for ties, -inf ones included (a
// vocabulary hardly larger than the beam).
type FairseqBeam struct {
	// SOS is the first input token (fairseq's is </s>), EOS the token
	// that finishes a hypothesis, UNK the target's unknown token (-1:
	// none) that UnkPen applies to.
	SOS, EOS, UNK int64
	// K is --beam, NBest --nbest (1 <= NBest <= K).
	K, NBest int
	// MaxLen is the most tokens a hypothesis holds, </s> included:
	// fairseq's max_len + 1.
	MaxLen int
	// LenPen is --lenpen, UnkPen --unkpen.
	LenPen, UnkPen float64
	// Temperature is --temperature: each step's log-probs are those of
	// the logits divided by it (0 or 1: as they are).
	Temperature float64
	// Sampling is --sampling: each hypothesis draws its next token (K
	// draws from the first at the first step) instead of the beam's 2K
	// best, from the TopK (--sampling-topk) or TopP (--sampling-topp)
	// most probable tokens when set, with Rand.
	Sampling bool
	TopK     int
	TopP     float64
	Rand     *rand.Rand
	// KeepAttention makes the row record each hypothesis' attention rows.
	KeepAttention bool
	// Rules are applied to each step's log-probs.
	Rules *attention.Rules
	// The other searches of fairseq's build_generator (decode/diverse.go),
	// at most one of them, none with Sampling: MatchSourceLen
	// (--match-source-len, with SrcLen the source's tokens less </s> and
	// <pad>), Groups (--diverse-beam-groups, with GroupStrength its
	// --diverse-beam-strength) and Siblings (--diversity-rate
	// DiversityRate).
	MatchSourceLen bool
	SrcLen         int
	Groups         int
	GroupStrength  float64
	Siblings       bool
	DiversityRate  float64

	steps int
	div   diverseState
	k     int // K, at most the vocabulary less one (fairseq's cap)
	// mask is the step's eos_mask over its candidates, ignore fairseq's
	// cands_to_ignore: candidate positions (among the first k) whose
	// </s> may not finish a hypothesis.
	mask   []bool
	ignore []bool
	order  []int32 // draw's tokens by probability
	live   []fairseqLive
	next   []fairseqLive
	finished
	tree  tree
	cands []fairseqCand
	sel   topK[fairseqCand]
}

type fairseqLive struct {
	node  int32
	score float32
}

type fairseqCand struct {
	score float32
	i, v  int32
	flat  int64
}

// Validate checks the settings, naming the field and the allowed range.
func (b *FairseqBeam) Validate() error {
	switch {
	case b.K < 1:
		return fmt.Errorf("decode: beam width K = %d: want at least 1", b.K)
	case b.NBest < 1 || b.NBest > b.K:
		return fmt.Errorf("decode: nbest %d: want 1 to K = %d", b.NBest, b.K)
	case LengthPenaltyRange(b.LenPen) != nil:
		return fmt.Errorf("decode: lenpen %v: %w", b.LenPen, LengthPenaltyRange(b.LenPen))
	case math.IsNaN(b.UnkPen) || math.IsInf(b.UnkPen, 0):
		return fmt.Errorf("decode: unkpen %v: want a finite value", b.UnkPen)
	case b.Sampling && b.Rand == nil:
		return fmt.Errorf("decode: sampling needs a random number generator (Rand)")
	case b.TopK < 0 || math.IsNaN(b.TopP) || b.TopP < 0 || b.TopP > 1 || b.TopK > 0 && b.TopP > 0:
		return fmt.Errorf("decode: sampling-topk %d, sampling-topp %v: want one of them (topk >= 1, topp in (0, 1])", b.TopK, b.TopP)
	case TemperatureRange(b.Temperature) != nil:
		return fmt.Errorf("decode: temperature %v: %w", b.Temperature, TemperatureRange(b.Temperature))
	case b.validateDiverse() != nil:
		return b.validateDiverse()
	case b.Rules != nil && b.Rules.EOSFromStep >= b.MaxLen:
		return fmt.Errorf("decode: min_len %d: at or above the output limit of %d tokens, EOS included (fairseq asserts min_len <= max_len)", b.Rules.EOSFromStep, b.MaxLen)
	}
	return nil
}

// Width is K.
func (b *FairseqBeam) Width() int { return b.K }

// First returns SOS.
func (b *FairseqBeam) First() int64 { return b.SOS }

// Advance runs one step of the generator over the row's live hypotheses
// and writes the next ones' tokens and slots to inputs and parents. It
// returns 0 when the row is finished.
func (b *FairseqBeam) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	if b.steps == 0 {
		b.tree.start(s, b.KeepAttention, b.MaxLen, b.K)
		b.live = append(b.live[:0], fairseqLive{node: -1})
		b.finished.reset()
		// "the max beam size is the dictionary size - 1, since we never
		// select pad"
		b.k = max(1, min(b.K, s.Vocab()-1))
		b.ignore = append(b.ignore[:0], make([]bool, b.k)...)
	}
	if b.MaxLen < 1 || s.Len() < len(b.live) {
		return b.finish()
	}
	step, last := b.steps, b.MaxLen-1
	b.cands = b.cands[:0]
	if !b.Sampling {
		// torch.topk of min(2K, candidates - 1): "-1 so we never select
		// pad"; equal scores in index order, the order they are offered in.
		b.sel.reset(min(2*b.k, len(b.live)*s.Vocab()-1), fairseqOrder)
	}
	// The diverse searches gather their own candidates (diverseCands).
	diverse, live := b.Groups > 0 || b.Siblings && step > 0, b.live
	if diverse {
		live = nil
	}
	for i, h := range live {
		lp := b.prepare(s.LogProbs(i), step, last)
		switch {
		case b.Sampling && step == 0:
			// K draws from the first hypothesis (all K are the same).
			for range b.k {
				v := b.draw(lp)
				b.cands = append(b.cands, fairseqCand{score: lp[v] + h.score, i: int32(i), v: int32(v)})
			}
		case b.Sampling:
			v := b.draw(lp)
			b.cands = append(b.cands, fairseqCand{score: lp[v] + h.score, i: int32(i), v: int32(v)})
		default:
			V := len(lp)
			scanRow(lp, h.score, 1, false, func() (float32, bool) {
				thr, ok := b.sel.threshold()
				return thr.score, ok && thr.score == thr.score
			}, func(v int) {
				b.sel.push(fairseqCand{score: lp[v] + h.score, i: int32(i), v: int32(v), flat: int64(i)*int64(V) + int64(v)})
			})
		}
	}
	cands := b.cands
	switch {
	case diverse:
		cands = b.diverseCands(s, step, last)
	case !b.Sampling:
		cands = b.sel.result()
	}
	b.steps++
	// eos_mask: a finite </s> candidate, but not at a position that
	// cands_to_ignore marks among the first K.
	k := b.k
	b.mask = b.mask[:0]
	for j, c := range cands {
		b.mask = append(b.mask, int64(c.v) == b.EOS && !math.IsInf(float64(c.score), -1) && !(j < k && b.ignore[j]))
	}
	pen := float32(math.Pow(float64(step+1), b.LenPen))
	for j, c := range cands[:min(k, len(cands))] {
		if !b.mask[j] || len(b.fin) >= k {
			continue
		}
		node := b.tree.addScored(s, b.live[c.i].node, int(c.i), int64(c.v), c.score)
		norm := c.score / pen
		if b.MatchSourceLen && step > b.SrcLen {
			// finalize_hypos: "-inf" for what ends past the source's length.
			norm = float32(math.Inf(-1))
		}
		b.add(node, c.score, norm)
	}
	if len(b.fin) >= k || step >= last {
		return b.finish()
	}
	// The K candidates that go on: those not masked, in order, then (when
	// too few) masked ones, whose places cands_to_ignore marks for the
	// next step.
	for j := range min(k, len(cands)) {
		b.mask[j] = b.mask[j] || b.ignore[j]
	}
	b.next = b.next[:0]
	for pass := range 2 {
		for j, c := range cands {
			if len(b.next) == k {
				break
			}
			if b.mask[j] != (pass == 1) {
				continue
			}
			b.ignore[len(b.next)] = pass == 1
			node := b.tree.addScored(s, b.live[c.i].node, int(c.i), int64(c.v), c.score)
			b.next = append(b.next, fairseqLive{node: node, score: c.score})
		}
	}
	b.live, b.next = b.next, b.live
	if len(b.live) == 0 {
		return b.finish()
	}
	for j, h := range b.live {
		inputs[j], parents[j] = b.tree.next(h.node)
	}
	return len(b.live)
}

// fairseqOrder ranks candidates as torch.topk does: higher scores first,
// equal scores in index order.
func fairseqOrder(x, y fairseqCand) int {
	return cmp.Or(cmp.Compare(y.score, x.score), cmp.Compare(x.flat, y.flat))
}

// prepare applies the step's rules to a hypothesis' log-probs, in place,
// in the generator's order: --temperature (in the model's forward),
// NaN as -inf, the Rules (<pad>, --min-len), --unkpen, and at the last
// step everything but </s> banned.
func (b *FairseqBeam) prepare(lp []float32, step, last int) []float32 {
	inf := float32(math.Inf(-1))
	if t := b.Temperature; t > 0 && t != 1 {
		tempered(lp, float32(t))
	}
	// NaN to -inf: the vector scan finds each (every number is <= +Inf).
	for j := 0; ; j++ {
		j += kernel.FirstAboveOrNaN(lp[j:], float32(math.Inf(1)))
		if j >= len(lp) {
			break
		}
		lp[j] = inf
	}
	b.Rules.Apply(lp, step, b.EOS, true)
	if b.UNK >= 0 && int(b.UNK) < len(lp) && b.UnkPen != 0 {
		lp[b.UNK] -= float32(b.UnkPen)
	}
	if step >= last {
		for v := range lp {
			if int64(v) != b.EOS {
				lp[v] = inf
			}
		}
	}
	if b.MatchSourceLen {
		matchSourceLen(lp, step, b.SrcLen, b.EOS)
	}
	return lp
}

// draw samples a token from the log-probs as fairseq's Sampling search
// does, with Rand: among the TopP nucleus, else the TopK most probable,
// else all, in proportion to their probabilities. It is fairseq's
// distribution, not its draws: torch's multinomial draws from its own
// generator (MKL's stream or mt19937, depending on the build), which no
// other program reproduces.
func (b *FairseqBeam) draw(lp []float32) int {
	return drawToken(b.Rand, lp, sampleFilter{TopK: b.TopK, TopP: b.TopP}, &b.order)
}

// tempered turns log-probs into those of the logits divided by t, in
// place: log_softmax(lp / t), which is log_softmax(logits / t) since lp
// differs from the logits by a constant.
func tempered(lp []float32, t float32) {
	m := float32(math.Inf(-1))
	for v, x := range lp {
		lp[v] = x / t
		m = max(m, lp[v])
	}
	if math.IsInf(float64(m), 0) || m != m {
		return
	}
	var sum float64
	for _, x := range lp {
		sum += math.Exp(float64(x - m))
	}
	lse := m + float32(math.Log(sum))
	for v := range lp {
		lp[v] -= lse
	}
}

// Len returns the number of hypotheses of the finished row, at most
// NBest; 0 until it has finished.
func (b *FairseqBeam) Len() int { return b.count(b.NBest) }

// Hypotheses returns the first n hypotheses (all when n < 1 or n > Len),
// best first: Score is the sum of the log-probs, NormalizedScore what
// fairseq reports (and ranks by).
func (b *FairseqBeam) Hypotheses(n int) []Hypothesis { return b.list(&b.tree, n, b.NBest) }

// Attention returns hypothesis i's attention rows (nil without
// KeepAttention).
func (b *FairseqBeam) Attention(i int) [][]float32 { return b.tree.attention(b.fin[i].node) }

// Reset forgets the row, keeping the buffers and the settings.
func (b *FairseqBeam) Reset() {
	b.steps = 0
	b.live, b.next, b.cands = b.live[:0], b.next[:0], b.cands[:0]
	b.finished.reset()
	b.tree.reset()
}
