package decode

import (
	"fmt"
	"github.com/attnx/attnx/internal/kernel"
	"math"

	"github.com/attnx/attnx/attention"
)

// Beam is the spec's beam search ("Beam search") of one row: K hypotheses
// per row, the candidates score_i + log_probs_i[v] of every live hypothesis
// i and token v ranked by score descending, then i ascending, then v
// ascending; an EOS candidate at rank r < K finishes its hypothesis and one
// at rank >= K is dropped; the walk stops once K hypotheses live on; the row
// stops when K have finished, no hypothesis lives on or MaxLen tokens have
// been produced; the finished hypotheses (filled up with the live ones, in
// order, when fewer than K finished) are ordered by normalised score
// descending, ties in insertion order. Scores are float32 sums of the
// float32 log_probs in step order. With K = 1 it decodes what Greedy
// decodes, except where adding the score rounds two log_probs to the same
// float32 sum: the spec's order then takes the lower token where Greedy
// takes the larger log_prob, as the reference and beam.onnx do (see
// TestBeamWidthOneFollowsFloat32Sums).
//
// Log_probs are expected to be log-probabilities: finite where a token is
// possible, -inf where it is not, never a whole row of -inf. Outside that
// the spec defines nothing; Beam stays deterministic (a NaN score ranks
// above every number, as torch.topk ranks it, ties among NaNs going by i and
// v) but K = 1 then no longer follows Greedy, whose argmax looks at one
// step's row only.
//
// Set the exported fields, then hand it to a Batch (it is a Search of width
// K); after the row has finished, read the result with Len, Score,
// NormalizedScore, AppendTokens, Attention or Hypotheses. Reset makes it
// ready for another row, keeping its buffers: once warmed up, a step allocates
// nothing. The top of the K*Vt candidates is found in one pass with a
// bounded heap of K+n entries (n live hypotheses; each can lose at most its
// EOS candidate to the finished list), never by sorting all of them.
type Beam struct {
	// SOS is the first input token, EOS the token that finishes a
	// hypothesis.
	SOS, EOS int64
	// K is the beam width, at least 1.
	K int
	// MaxLen is the most tokens a hypothesis may hold, EOS included. A row
	// with MaxLen < 1 takes one step and produces one empty hypothesis of
	// score 0.
	MaxLen int
	// LengthPenalty is alpha of the normalised score score / len ** alpha:
	// 0 ranks by raw score, 1 by score per token. It must be finite and
	// not negative (see Validate).
	LengthPenalty float64
	// PenaltyWu, when set, divides by Wu et al.'s ((5 + len) / 6) ** alpha
	// (GNMT; OpenNMT-py's -length_penalty wu, JoeyNMT's beam_alpha)
	// instead of len ** alpha.
	PenaltyWu bool
	// KeepAttention makes the row record each hypothesis' attention rows.
	KeepAttention bool
	// Rules, when set, are the toolkit's decoding rules (banned tokens, no
	// EOS before a step), applied to each step's log-probs first.
	Rules *attention.Rules
	// Repeats, when set, are JoeyNMT's repetition rules, applied before
	// Rules.
	Repeats *Repeats

	steps int
	live  []beamLive // this step's live hypotheses, in slot order
	next  []beamLive
	tree  tree       // every token ever chosen, linked to its prefix
	heap  []beamCand // the best candidates of a step, worst on top
	fin   []beamLive // finished hypotheses, then the final order
	norm  []float32  // fin's normalised scores
	gap   float32    // see NearestTie
	done  bool
}

// beamLive is a hypothesis: its last token's node (-1: no token yet) and
// its score.
type beamLive struct {
	node  int32
	score float32
}

// beamCand is a candidate: score_i + log_probs_i[v].
type beamCand struct {
	score float32
	i, v  int32
}

// after reports whether a ranks after b: lower score (a NaN above every
// number), then higher hypothesis index, then higher token.
func (a beamCand) after(b beamCand) bool {
	an, bn := a.score != a.score, b.score != b.score
	switch {
	case an != bn:
		return bn
	case !an && a.score != b.score:
		return a.score < b.score
	}
	if a.i != b.i {
		return a.i > b.i
	}
	return a.v > b.v
}

// Validate checks the settings: K >= 1 and a finite, non-negative length
// penalty. The errors name the field and the allowed range.
func (b *Beam) Validate() error {
	if b.K < 1 {
		return fmt.Errorf("decode: beam width K = %d: want at least 1", b.K)
	}
	if err := LengthPenaltyRange(b.LengthPenalty); err != nil {
		return fmt.Errorf("decode: length penalty %v: %w", b.LengthPenalty, err)
	}
	return nil
}

// Width is K.
func (b *Beam) Width() int { return b.K }

// First returns SOS.
func (b *Beam) First() int64 { return b.SOS }

// Advance ranks the candidates of the row's live hypotheses (slot i holds
// hypothesis i), finishes the EOS ones at rank < K, and writes the next
// live hypotheses' last tokens to inputs and their hypotheses' slots to
// parents. It returns 0 when the row is finished.
func (b *Beam) Advance(s Slots, inputs []int64, parents []int) int {
	if b.done {
		return 0
	}
	K := b.K
	if b.steps == 0 {
		b.start(s)
	}
	if b.MaxLen < 1 {
		return b.finish()
	}
	n := len(b.live)
	if s.Len() < n {
		// The executor always hands the slots written last; fewer means a
		// caller broke the contract. Finish with what is known.
		return b.finish()
	}
	if b.Repeats.active() {
		for i := range n {
			b.Repeats.apply(s.LogProbs(i), b.tree.tokens([]int64{b.SOS}, b.live[i].node))
		}
	}
	if b.Rules != nil {
		for i := range n {
			b.Rules.Apply(s.LogProbs(i), b.steps, b.EOS, true)
		}
	}
	b.selectTop(s, K+n)
	b.next = b.next[:0]
	walked := len(b.heap)
	for r, c := range b.heap {
		h := b.live[c.i]
		if int64(c.v) == b.EOS {
			if r < K {
				b.fin = append(b.fin, beamLive{b.tree.add(s, h.node, int(c.i), b.EOS), c.score})
			}
			continue
		}
		b.next = append(b.next, beamLive{b.tree.add(s, h.node, int(c.i), int64(c.v)), c.score})
		inputs[len(b.next)-1], parents[len(b.next)-1] = int64(c.v), int(c.i)
		if len(b.next) == K {
			walked = r + 1
			break
		}
	}
	// The walk's outcome depends on the order of the candidates it looked
	// at and of the first one it did not.
	for r := 1; r <= walked && r < len(b.heap); r++ {
		x, y := b.heap[r-1].score, b.heap[r].score
		d := float32(0) // equal, -inf included
		if x != y {
			d = x - y
		}
		if b.gap == b.gap && (d != d || d < b.gap) {
			b.gap = d
		}
	}
	b.live, b.next = b.next, b.live
	b.steps++
	if len(b.fin) >= K || len(b.live) == 0 || b.steps >= b.MaxLen {
		return b.finish()
	}
	return len(b.live)
}

// start readies the buffers for a row: one live hypothesis without tokens.
func (b *Beam) start(s Slots) {
	K := b.K
	if cap(b.live) < K || cap(b.next) < K {
		b.live, b.next = make([]beamLive, 0, K), make([]beamLive, 0, K)
	}
	b.live = append(b.live[:0], beamLive{node: -1})
	b.gap = float32(math.Inf(1))
	if cap(b.heap) < 2*K {
		b.heap = make([]beamCand, 0, 2*K)
	}
	if cap(b.fin) < 2*K {
		b.fin, b.norm = make([]beamLive, 0, 2*K), make([]float32, 0, 2*K)
	}
	b.tree.start(s, b.KeepAttention, b.MaxLen, K)
}

// selectTop leaves in b.heap the first limit candidates (or all, when there
// are fewer) in the spec's order. Candidates come in (i, v) order, so a new
// one tying the worst kept one ranks after it: only a strictly better score
// (or a NaN over a number) enters a full heap.
func (b *Beam) selectTop(s Slots, limit int) {
	h := b.heap[:0]
	for i, hyp := range b.live {
		lp := s.LogProbs(i)
		base := hyp.score
		v := 0
		// Fill the heap.
		for ; v < len(lp) && len(h) < limit; v++ {
			h = append(h, beamCand{base + lp[v], int32(i), int32(v)})
			heapUp(h, len(h)-1)
		}
		if len(h) < limit {
			continue
		}
		// Only a candidate above the worst kept score can enter (ties rank
		// after the kept one): the vector scan skips the log-probs whose
		// candidates cannot be (while the worst kept one is a number).
		for v < len(lp) {
			if worst := h[0].score; worst == worst {
				v += kernel.FirstAboveOrNaN(lp[v:], rawBound(worst, base, 1, false))
				if v == len(lp) {
					break
				}
			}
			x := base + lp[v]
			if c := (beamCand{x, int32(i), int32(v)}); !(x <= h[0].score) && h[0].after(c) {
				h[0] = c
				heapDown(h, 0)
			}
			v++
		}
	}
	// Sort best first: repeatedly move the worst to the end.
	for n := len(h); n > 1; n-- {
		h[0], h[n-1] = h[n-1], h[0]
		heapDown(h[:n-1], 0)
	}
	b.heap = h
}

// heapUp and heapDown keep h a heap whose top ranks after every other
// entry.
func heapUp(h []beamCand, j int) {
	for j > 0 {
		p := (j - 1) / 2
		if !h[j].after(h[p]) {
			return
		}
		h[j], h[p] = h[p], h[j]
		j = p
	}
}

func heapDown(h []beamCand, j int) {
	for {
		w, l := j, 2*j+1
		if l < len(h) && h[l].after(h[w]) {
			w = l
		}
		if r := l + 1; r < len(h) && h[r].after(h[w]) {
			w = r
		}
		if w == j {
			return
		}
		h[j], h[w] = h[w], h[j]
		j = w
	}
}

// finish makes the final list: the finished hypotheses, filled up with the
// live ones when fewer than K finished, stably ordered by normalised score.
func (b *Beam) finish() int {
	b.done = true
	if len(b.fin) < b.K {
		b.fin = append(b.fin, b.live...)
	}
	b.norm = b.norm[:0]
	for _, h := range b.fin {
		b.norm = append(b.norm, b.normalized(h))
	}
	// Insertion sort, stable: an entry moves before another only with a
	// strictly higher normalised score (a NaN above every number).
	for j := 1; j < len(b.fin); j++ {
		h, x := b.fin[j], b.norm[j]
		k := j
		for ; k > 0 && higher(x, b.norm[k-1]); k-- {
			b.fin[k], b.norm[k] = b.fin[k-1], b.norm[k-1]
		}
		b.fin[k], b.norm[k] = h, x
	}
	return 0
}

func higher(x, y float32) bool {
	if x != x || y != y {
		return x != x && y == y
	}
	return x > y
}

// normalized is hypothesis h's Normalize.
func (b *Beam) normalized(h beamLive) float32 {
	return Normalize(h.score, b.length(h), b.LengthPenalty, b.PenaltyWu)
}

// Normalize is the spec's normalised score of a hypothesis of n tokens
// with score (the float32 sum of their log-probs): float32(score / n **
// alpha) computed in float64, as the reference computes it, or with wu
// score / ((5 + n) / 6) ** alpha; a hypothesis without tokens keeps its
// score. Beam ranks by it, and a greedy row's score is normalised by it
// as a beam of one's would be.
func Normalize(score float32, n int, alpha float64, wu bool) float32 {
	if n == 0 {
		return score
	}
	if wu {
		return float32(float64(score) / math.Pow((5+float64(n))/6, alpha))
	}
	return float32(float64(score) / math.Pow(float64(n), alpha))
}

func (b *Beam) length(h beamLive) int { return b.tree.depth(h.node) }

// Len returns the number of hypotheses of the finished row: K, or fewer when
// the vocabulary ran out, or up to 2K-1 when more than K finished at the
// last step. It is 0 until the row has finished.
func (b *Beam) Len() int {
	if !b.done {
		return 0
	}
	return len(b.fin)
}

// Score returns hypothesis i's raw score, the float32 sum of its tokens'
// log_probs. Hypotheses are numbered in the final order, best first.
func (b *Beam) Score(i int) float32 { return b.fin[i].score }

// NormalizedScore returns hypothesis i's score / len ** LengthPenalty,
// the value the final order ranks by.
func (b *Beam) NormalizedScore(i int) float32 { return b.norm[i] }

// AppendTokens appends hypothesis i's tokens (EOS included when it
// finished) to dst and returns the extended slice.
func (b *Beam) AppendTokens(dst []int64, i int) []int64 { return b.tree.tokens(dst, b.fin[i].node) }

// NearestTie returns the smallest score difference, over the row's steps,
// between two candidates adjacent in rank among those a step's walk looked
// at (and the first it did not): +Inf when there were none, NaN when a
// score was NaN. Where it is below 1e-5, another engine's rounding may rank
// the two the other way, which the spec allows; a comparison of engines
// uses it to tell such a swap from a real difference.
func (b *Beam) NearestTie() float32 { return b.gap }

// Hypothesis is one entry of a finished beam search's n-best list.
type Hypothesis struct {
	// Tokens holds the output token ids, EOS included when the hypothesis
	// finished.
	Tokens []int64
	// Score is the float32 sum of the tokens' log_probs; NormalizedScore
	// is Score / len(Tokens) ** alpha, what the list is ordered by.
	Score, NormalizedScore float32
	// Positional holds each token's score, when the search records them
	// (fairseq's: its positional_scores, the differences of the running
	// scores), else nil.
	Positional []float32
}

// Hypotheses returns the first n hypotheses of the finished row (all of
// them when n < 1 or n > Len), best first, as new slices.
func (b *Beam) Hypotheses(n int) []Hypothesis {
	if n < 1 || n > b.Len() {
		n = b.Len()
	}
	out := make([]Hypothesis, n)
	for i := range out {
		out[i] = Hypothesis{Tokens: b.AppendTokens(nil, i), Score: b.fin[i].score, NormalizedScore: b.norm[i]}
	}
	return out
}

// Attention returns hypothesis i's attention, one row of weights over the
// row's source per token, as new slices; nil unless KeepAttention was set.
func (b *Beam) Attention(i int) [][]float32 { return b.tree.attention(b.fin[i].node) }

// Reset forgets the row, keeping the buffers and the settings.
func (b *Beam) Reset() {
	b.steps, b.done = 0, false
	b.live, b.next, b.heap = b.live[:0], b.next[:0], b.heap[:0]
	b.tree.reset()
	b.fin, b.norm = b.fin[:0], b.norm[:0]
}
