package decode

import (
	"fmt"
	"github.com/attnx/attnx/internal/kernel"
	"math"
	"math/rand/v2"

	"github.com/attnx/attnx/attention"
)

// onmtRemoved is the log-prob OpenNMT-py's decode strategies give a token
// -min_length or -ban_unk_token rules out (-1e20), and onmtFiltered the
// score its sampling gives a token outside the top-k or top-p (-10000).
const (
	onmtRemoved  = float32(-1e20)
	onmtFiltered = float32(-10000)
)

// OpenNMTSample is OpenNMT-py 3.5.1's random sampling of one row
// (onmt.translate.greedy_search.GreedySearch with -random_sampling_topk
// or -random_sampling_topp, as onmt_translate runs it): K independent
// paths (-beam_size), each drawing its next token from softmax(log_probs
// / Temp) narrowed to the TopP nucleus, then to the TopK highest (ties
// kept), after -min_length, -ban_unk_token and -block_ngram_repeat;
// with Temp 0 or TopK 1 each takes the argmax instead. A path's score is
// the sum of its tokens' log_probs / Temp; it finishes at EOS or at
// MaxLen tokens, scored sum / penalty(tokens + 1) (-length_penalty,
// -alpha), and the row's NBest best finished paths are the result.
//
// The draws are attnx's own (Rand): OpenNMT-py's come from torch's
// generator, whose stream depends on the torch build, so only the
// distribution and the deterministic cases (Temp 0, TopK 1, a nucleus of
// one token) are the same.
type OpenNMTSample struct {
	// SOS is the first input token, EOS the token that finishes a path,
	// UNK the unknown token (BanUNK).
	SOS, EOS, UNK int64
	// K is the number of paths (-beam_size), NBest the hypotheses kept.
	K, NBest int
	// MaxLen is the most tokens a path holds (-max_length), MinLen the
	// fewest before EOS may come (-min_length).
	MaxLen, MinLen int
	// Penalty and Alpha are -length_penalty and -alpha.
	Penalty string
	Alpha   float64
	// BanUNK is -ban_unk_token; BlockNgram and IgnoreWhenBlocking are
	// -block_ngram_repeat and -ignore_when_blocking.
	BanUNK             bool
	BlockNgram         int
	IgnoreWhenBlocking []int64
	// Temp, TopK and TopP are -random_sampling_temp, -random_sampling_topk
	// (0 or -1: no top-k) and -random_sampling_topp.
	Temp float64
	TopK int
	TopP float64
	Rand *rand.Rand
	// KeepAttention makes the row record each path's attention rows.
	KeepAttention bool
	// Rules are further decoding rules applied to each step's log-probs
	// first.
	Rules *attention.Rules
	// Copy is the sentence's dynamic vocabulary (copy models).
	Copy *CopyMap

	steps int
	live  []onmtLive
	next  []onmtLive
	finished
	tree   tree
	order  []int32
	scores []float32
}

// Validate checks the settings, naming the field and the allowed range.
func (b *OpenNMTSample) Validate() error {
	switch {
	case b.K < 1:
		return fmt.Errorf("decode: paths K = %d: want at least 1", b.K)
	case b.NBest < 1 || b.NBest > b.K:
		return fmt.Errorf("decode: n_best %d: want 1 to K = %d", b.NBest, b.K)
	case b.Penalty != PenaltyNone && b.Penalty != PenaltyAvg && b.Penalty != PenaltyWu:
		return fmt.Errorf("decode: length penalty %q: want %s, %s or %s", b.Penalty, PenaltyNone, PenaltyAvg, PenaltyWu)
	case math.IsNaN(b.Temp) || math.IsInf(b.Temp, 0) || b.Temp < 0:
		return fmt.Errorf("decode: random_sampling_temp %v: want a finite value >= 0", b.Temp)
	case math.IsNaN(b.TopP) || b.TopP < 0 || b.TopP > 1:
		return fmt.Errorf("decode: random_sampling_topp %v: want a value in [0, 1]", b.TopP)
	case b.TopK < -1:
		return fmt.Errorf("decode: random_sampling_topk %d: want -1, 0 or more", b.TopK)
	case b.Rand == nil:
		return fmt.Errorf("decode: sampling needs a random number generator (Rand)")
	}
	return nil
}

// Width is K.
func (b *OpenNMTSample) Width() int { return b.K }

// First returns SOS.
func (b *OpenNMTSample) First() int64 { return b.SOS }

// Advance draws each live path's next token, finishes those that end (all
// at MaxLen) and writes the others' tokens and slots to inputs and
// parents. It returns 0 when every path has finished.
func (b *OpenNMTSample) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	if b.steps == 0 {
		b.tree.start(s, b.KeepAttention, b.MaxLen, b.K)
		b.finished.reset()
		// K paths, all from the row's one slot.
		b.live = b.live[:0]
		for range b.K {
			b.live = append(b.live, onmtLive{node: -1})
		}
	}
	if b.MaxLen < 1 {
		return b.finish()
	}
	length := b.steps + 1 // OpenNMT-py's len(self): the start token and the tokens so far
	b.steps++
	atMax := b.steps >= b.MaxLen
	pen := float32(onmtPenalty(b.Penalty, b.Alpha, length+1))
	b.next = b.next[:0]
	for i, h := range b.live {
		slot := i
		if length == 1 {
			slot = 0
		}
		if slot >= s.Len() {
			return b.finish()
		}
		// One path works on its slot's log-probs in place (a Search may);
		// K paths copy them, as at the first step they all read slot 0.
		lp := s.LogProbs(slot)
		if b.K > 1 {
			lp = append(b.scores[:0], lp...)
			b.scores = lp
		}
		if b.Rules != nil {
			b.Rules.Apply(lp, length-1, b.EOS, false)
		}
		if length <= b.MinLen && int(b.EOS) < len(lp) {
			lp[b.EOS] = onmtRemoved
		}
		if b.BanUNK && b.UNK >= 0 && int(b.UNK) < len(lp) {
			lp[b.UNK] = onmtRemoved
		}
		for v := range blockedNgrams(&b.tree, b.SOS, b.BlockNgram, b.IgnoreWhenBlocking, h.node, length) {
			lp[v] = onmtBlocked
		}
		v, score := b.pick(lp)
		node := b.tree.add(s, h.node, slot, int64(v))
		total := h.score + score
		if int64(v) == b.EOS || atMax {
			b.add(node, total, total/pen)
			continue
		}
		b.next = append(b.next, onmtLive{node: node, score: total})
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

// pick is sample_with_temperature: the argmax (its log-prob / Temp) when
// Temp is 0 or TopK 1, else a draw from softmax(lp / Temp) narrowed to
// TopP, then TopK, with its score lp / Temp.
func (b *OpenNMTSample) pick(lp []float32) (int, float32) {
	if b.Temp == 0 || b.TopK == 1 {
		// The first largest value, a NaN never taken over a number (the
		// vector scan from each best so far to the next value above it).
		best := 0
		for j := 1; j < len(lp); {
			i := j + kernel.FirstBeyond(lp[j:], lp[best], false)
			if i >= len(lp) {
				break
			}
			best, j = i, i+1
		}
		if b.Temp > 0 {
			return best, lp[best] / float32(b.Temp)
		}
		return best, lp[best]
	}
	t := float32(b.Temp)
	for v := range lp {
		lp[v] /= t
	}
	v := drawToken(b.Rand, lp, sampleFilter{TopK: max(b.TopK, 0), TopP: b.TopP, KeepTies: true, Both: true}, &b.order)
	return v, lp[v]
}

// Len returns the number of hypotheses of the finished row, at most
// NBest; 0 until it has finished.
func (b *OpenNMTSample) Len() int { return b.count(b.NBest) }

// Hypotheses returns the first n hypotheses (all when n < 1 or n > Len),
// best first: Score is the path's summed score, NormalizedScore that over
// the length penalty, what OpenNMT-py reports (and ranks by, stably).
func (b *OpenNMTSample) Hypotheses(n int) []Hypothesis { return b.list(&b.tree, n, b.NBest) }

// Attention returns hypothesis i's attention rows (nil without
// KeepAttention).
func (b *OpenNMTSample) Attention(i int) [][]float32 { return b.tree.attention(b.fin[i].node) }

// Reset forgets the row, keeping the buffers and the settings.
func (b *OpenNMTSample) Reset() {
	b.steps = 0
	b.live, b.next = b.live[:0], b.next[:0]
	b.finished.reset()
	b.tree.reset()
}

func (b *OpenNMTSample) copyMap() *CopyMap { return b.Copy }
