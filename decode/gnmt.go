package decode

import (
	"fmt"
	"math"
	"slices"
)

// GNMT's decoding defaults: translate.py's --beam-size, --max-seq-len,
// --len-norm-factor, --len-norm-const and --cov-penalty-factor, the same in
// NVIDIA DeepLearningExamples' PyTorch GNMT and in the MLPerf
// rnn_translator.
const (
	GNMTDefaultBeam          = 5
	GNMTDefaultMaxSeqLen     = 80
	GNMTDefaultLenNormFactor = 0.6
	GNMTDefaultLenNormConst  = 5.0
	GNMTDefaultCovPenalty    = 0.1
)

// GNMTBeam is one row's beam search as GNMT's SequenceGenerator.beam_search
// (seq2seq/inference/beam_search.py) runs it:
//
//   - the row always holds K slots; at the first step only slot 0's
//     candidates count (the others start at -inf);
//   - each slot offers its K most likely tokens (the model's generate
//     takes topk(K) of log_softmax, equal values in the order torch.topk
//     leaves them: torchTopK), scored score + log_prob in float32; a
//     slot whose last token is EOS offers EOS alone, at its own score (its
//     other candidates are -inf), so a finished hypothesis stays in the
//     beam only while it ranks among the K best;
//   - the K best of the K*K candidates (torch.topk's order again) are the next
//     slots; a hypothesis' length counts BOS and every token up to and
//     including its EOS;
//   - the attention of each step is summed per slot position, not per
//     hypothesis (accu_attn_scores is never reordered along the beams),
//     a finished slot adding nothing;
//   - at the start of a step at which every slot has ended, the step is
//     still taken (which sorts the finished slots by score; GNMTBeam needs
//     no decoder output for it, and asks for none), then each
//     score is divided by ((LenNormConst + length) / (LenNormConst +
//     1)) ^ LenNormFactor and CovPenaltyFactor times the sum over the
//     source of log(clamp(accumulated attention, 0, 1)), its -inf terms
//     dropped, is added; the row ends;
//   - after MaxSeqLen-1 steps the row ends with its raw scores;
//   - the result is the slot of the highest score, the first on ties.
//
// With K = 1 it is greedy_search (--beam-size 1): one slot, its topk(1)
// each step, ending at EOS or after MaxSeqLen-1 tokens; unlike Greedy's
// argmax, which takes the lowest of equal values, torch.topk(1) takes the
// one std::nth_element leaves first.
type GNMTBeam struct {
	// BOS is the first input token, EOS the token that ends a hypothesis.
	BOS, EOS int64
	// K is --beam-size (at least 1, at most the vocabulary).
	K int
	// MaxSeqLen is --max-seq-len: the translation's length with BOS.
	MaxSeqLen int
	// LenNormFactor, LenNormConst and CovPenaltyFactor are their flags.
	LenNormFactor, LenNormConst, CovPenaltyFactor float64

	steps int
	slots []gnmtSlot
	next  []gnmtSlot
	cands []gnmtCand
	accu  [][]float32 // per slot position, over the source
	done  bool
	best  int
	q     []topkElem
}

type gnmtSlot struct {
	tokens []int64 // after BOS
	length int     // BOS and the tokens up to EOS
	score  float32
}

type gnmtCand struct {
	score float32
	index int // slot*K + rank among the slot's K
	slot  int
	tok   int64
}

// Validate checks the settings, naming the flag at fault and what it takes.
func (b *GNMTBeam) Validate() error {
	switch {
	case b.K < 1:
		return fmt.Errorf("decode: GNMT --beam-size %d: want at least 1", b.K)
	case b.MaxSeqLen < 1:
		return fmt.Errorf("decode: GNMT --max-seq-len %d: want at least 1", b.MaxSeqLen)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"--len-norm-factor", b.LenNormFactor}, {"--len-norm-const", b.LenNormConst}, {"--cov-penalty-factor", b.CovPenaltyFactor}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) {
			return fmt.Errorf("decode: GNMT %s %v: want a finite number", f.name, f.v)
		}
	}
	if b.LenNormConst == -1 {
		return fmt.Errorf("decode: GNMT --len-norm-const -1: the normalization divides by len_norm_const + 1")
	}
	return nil
}

// Width is K.
func (b *GNMTBeam) Width() int { return b.K }

// First returns BOS.
func (b *GNMTBeam) First() int64 { return b.BOS }

// Advance takes one step of beam_search's loop for the row and writes the
// K next slots' tokens and parents; it returns 0 once the row has ended.
func (b *GNMTBeam) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	if b.steps == 0 {
		b.start(s.SourceLength())
		if b.MaxSeqLen <= 1 {
			// range(1, max_seq_len) is empty: the translation is BOS alone.
			b.done, b.best = true, 0
			return 0
		}
	}
	b.step(&s, inputs, parents)
	if b.steps >= b.MaxSeqLen-1 {
		// range(1, max_seq_len) is over: the scores stay raw.
		return b.finish()
	}
	for k := range b.slots {
		if !b.ended(k) {
			return len(b.slots)
		}
	}
	// Every slot has ended: beam_search's next iteration runs the model
	// once more but uses none of its output (each slot offers EOS at its
	// score, its attention masked), sorts the slots by score, then
	// normalizes them. That iteration needs no decoder step.
	b.step(nil, nil, nil)
	b.normalize()
	return b.finish()
}

// step is one iteration of beam_search's loop over the decoder's output s
// for the slots (nil when every slot has ended: none is then read), its
// next slots' tokens and parents written to inputs and parents (when not
// nil).
func (b *GNMTBeam) step(s *Slots, inputs []int64, parents []int) {
	K := b.K
	for k := range b.slots {
		if !b.ended(k) {
			b.slots[k].length++
		}
	}
	b.cands = b.cands[:0]
	ninf := float32(math.Inf(-1))
	for k := range b.slots {
		out := k
		if b.steps == 0 {
			out = 0 // the K slots are one: the same input and context
		}
		sc := b.slots[k].score
		if b.ended(k) {
			for j := 0; j < K; j++ {
				c := gnmtCand{score: ninf, index: k*K + j, slot: k, tok: b.EOS}
				if j == 0 {
					c.score = sc
				}
				b.cands = append(b.cands, c)
			}
			continue
		}
		acc, att := b.accu[k], s.Attention(out)
		for j := range acc {
			acc[j] += att[j]
		}
		lp := s.LogProbs(out)
		b.q = b.q[:0]
		for v, x := range lp {
			b.q = append(b.q, topkElem{v: x, i: v})
		}
		for j, e := range torchTopK(b.q, K) {
			c := gnmtCand{score: sc + e.v, index: k*K + j, slot: k, tok: int64(e.i)}
			if b.steps == 0 && k > 0 {
				c.score = ninf
			}
			b.cands = append(b.cands, c)
		}
	}
	// new_scores.topk(K) over the K*K candidates, in torch.topk's order.
	b.q = b.q[:0]
	for i, c := range b.cands {
		b.q = append(b.q, topkElem{v: c.score, i: i})
	}
	picked := torchTopK(b.q, K)
	b.next = b.next[:0]
	for i, e := range picked {
		c := b.cands[e.i]
		src := b.slots[c.slot]
		toks := append(append(make([]int64, 0, len(src.tokens)+1), src.tokens...), c.tok)
		b.next = append(b.next, gnmtSlot{tokens: toks, length: src.length, score: c.score})
		parent := c.slot
		if b.steps == 0 {
			parent = 0
		}
		if inputs != nil {
			inputs[i], parents[i] = c.tok, parent
		}
	}
	b.slots, b.next = b.next, b.slots
	b.steps++
}

// start sets up the row's K slots over a source of srcLen positions.
func (b *GNMTBeam) start(srcLen int) {
	b.slots, b.next = b.slots[:0], b.next[:0]
	b.accu = b.accu[:0]
	for k := 0; k < b.K; k++ {
		b.slots = append(b.slots, gnmtSlot{length: 1})
		b.accu = append(b.accu, make([]float32, srcLen))
	}
}

// ended reports whether slot k's last token is EOS.
func (b *GNMTBeam) ended(k int) bool {
	t := b.slots[k].tokens
	return len(t) > 0 && t[len(t)-1] == b.EOS
}

// normalize applies the length normalization and the coverage penalty to
// every slot, in float32 as beam_search computes them: the accumulated
// attention is the slot position's.
func (b *GNMTBeam) normalize() {
	c := float32(b.LenNormConst)
	c1 := float32(b.LenNormConst + 1.0)
	f := float32(b.LenNormFactor)
	cov := float32(b.CovPenaltyFactor)
	for k := range b.slots {
		norm := (c + float32(b.slots[k].length)) / c1
		norm = float32(math.Pow(float64(norm), float64(f)))
		sc := b.slots[k].score / norm
		var pen float32
		for _, a := range b.accu[k] {
			a = min(max(a, 0), 1)
			l := float32(math.Log(float64(a)))
			if !math.IsInf(float64(l), -1) {
				pen += l
			}
		}
		b.slots[k].score = sc + cov*pen
	}
}

// finish ends the row: the best slot is the first of the highest score.
func (b *GNMTBeam) finish() int {
	b.done = true
	b.best = 0
	for k, sl := range b.slots {
		if sl.score > b.slots[b.best].score {
			b.best = k
		}
	}
	return 0
}

// Done reports whether the row has ended.
func (b *GNMTBeam) Done() bool { return b.done }

// Tokens returns the chosen translation's tokens after BOS, up to and
// without its first EOS (what translate.py's detokenize keeps: it drops
// the BOS, EOS and padding tokens from the row); nil before the row has
// ended.
func (b *GNMTBeam) Tokens() []int64 {
	if !b.done || len(b.slots) == 0 {
		return nil
	}
	t := b.slots[b.best].tokens
	if i := slices.Index(t, b.EOS); i >= 0 {
		t = t[:i]
	}
	return slices.Clone(t)
}

// Score returns the chosen slot's final score (normalized and penalized
// when the row ended by every slot finishing, raw when it ran out of
// steps).
func (b *GNMTBeam) Score() float32 {
	if !b.done || len(b.slots) == 0 {
		return 0
	}
	return b.slots[b.best].score
}

// Reset forgets the row, keeping the settings.
func (b *GNMTBeam) Reset() {
	b.steps, b.done, b.best = 0, false, 0
	b.slots, b.next, b.accu = b.slots[:0], b.next[:0], b.accu[:0]
}
