package decode

import (
	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/kernel"
)

// Slots is what one decoder step produced for one row: the log_probs and the
// attention of each of the row's current slots. It is a view over the
// executor's output buffers (or, in tests, over any slices), valid until the
// next step; a Search copies what it keeps.
type Slots struct {
	logProbs  []float32 // n rows of vocab values, back to back
	attention []float32 // n rows at stride attStride, srcLen of each used
	n, vocab  int
	attStride int
	srcLen    int
}

// NewSlots returns a view of n slots over plain slices: logProbs holds n rows
// of vocab values back to back; attention holds n rows of stride values, of
// which the first srcLen belong to the row (the rest is padding of the
// batch's longer sources).
func NewSlots(n, vocab int, logProbs []float32, srcLen, stride int, attention []float32) Slots {
	return Slots{logProbs: logProbs, attention: attention, n: n, vocab: vocab, attStride: stride, srcLen: srcLen}
}

// Len returns the number of slots.
func (s Slots) Len() int { return s.n }

// Vocab returns the target vocabulary size Vt, the length of each
// LogProbs row.
func (s Slots) Vocab() int { return s.vocab }

// SourceLength returns the row's own source length, the length of each
// Attention row.
func (s Slots) SourceLength() int { return s.srcLen }

// LogProbs returns slot i's log_probs [Vt].
func (s Slots) LogProbs(i int) []float32 {
	return s.logProbs[i*s.vocab : (i+1)*s.vocab : (i+1)*s.vocab]
}

// Attention returns slot i's attention over the row's own source positions.
func (s Slots) Attention(i int) []float32 {
	start := i * s.attStride
	return s.attention[start : start+s.srcLen : start+s.srcLen]
}

// Search decides, for one row (one source sentence), what its slots feed to
// the next decoder step. It is pure Go: it sees log_probs and attention as
// plain float32 slices and knows nothing of ONNX Runtime.
//
// A row starts with one slot whose input is First() and whose state is the
// encoder's. After every step Advance receives that row's current slots
// (Slots.Len() of them) and writes the next step's slots: for next slot j,
// inputs[j] is its input token and parents[j] the index, among the current
// slots, of the slot whose state it continues (next_hidden, next_cell). It
// returns how many next slots there are, at most Width(); 0 means the row is
// finished and leaves the batch. The executor gathers the states along
// parents, so slots may be dropped, duplicated and reordered freely.
//
// Greedy decoding is Width 1 with parents always {0}. Beam search (spec
// "Beam search") fits the same contract: Width is K; at the first step the
// row has one slot and Advance returns up to K children of slot 0 (the
// executor then copies the row's encoder outputs to its K slots, once);
// afterwards Advance ranks the K*Vt candidates score_i + LogProbs(i)[v],
// moves EOS candidates to its finished list, writes the surviving K
// hypotheses' tokens to inputs and their origins i to parents, keeps each
// hypothesis' tokens (and Attention rows) itself, and returns 0 once K
// hypotheses have finished or max_len is reached. Its n-best list is read
// from the Search after decoding, as Greedy's tokens are.
type Search interface {
	// Width is the most slots the row holds at once (1 for greedy, K for a
	// beam of K). The executor reserves that many for the row when it joins.
	Width() int
	// First returns the input token of the row's first step (SOS).
	First() int64
	// Advance consumes one step's output for the row's slots and writes the
	// next step's inputs and parents (each with room for Width entries). It
	// returns the number of next slots, 0 when the row is finished.
	Advance(s Slots, inputs []int64, parents []int) int
}

// Argmax returns the index of the largest value of row, the lowest index on
// ties, and the index of the first NaN if there is one: what torch.argmax
// returns on CPU. It returns -1 for an empty row.
func Argmax(row []float32) int64 {
	if len(row) == 0 {
		return -1
	}
	best, bv := 0, row[0]
	if bv != bv {
		return 0
	}
	// From each best so far, the vector scan finds the next value that is
	// not <= it: a larger one, or a NaN (which ends the search).
	for j := 1; j < len(row); {
		i := j + kernel.FirstAboveOrNaN(row[j:], bv)
		if i >= len(row) {
			break
		}
		if x := row[i]; x != x {
			return int64(i)
		} else {
			best, bv = i, x
		}
		j = i + 1
	}
	return int64(best)
}

// Greedy is the spec's greedy decoding of one row: each step feeds back the
// argmax of log_probs; the row stops after EOS (which is part of its
// output) or after MaxLen tokens. Set the exported fields, then hand it to a
// Batch; read Tokens, Scores and Attention when the row is finished. Reset
// makes it ready for another row without allocating.
type Greedy struct {
	// SOS is the first input token, EOS the token that ends the row.
	SOS, EOS int64
	// MaxLen is the most tokens the row may produce, EOS included; a row
	// with MaxLen < 1 produces none (it still takes one step).
	MaxLen int
	// KeepAttention makes the row record each step's attention row.
	KeepAttention bool
	// Rules, when set, are the toolkit's decoding rules (banned tokens, no
	// EOS before a step), applied to each step's log-probs first.
	Rules *attention.Rules
	// Copy is the sentence's dynamic vocabulary, for a copy-attention
	// model (nil otherwise): log-probs then span its extended ids.
	Copy *CopyMap

	tokens []int64
	scores []float32 // each token's log-prob, after the rules
	attn   []float32 // len(tokens) rows of srcLen weights, back to back
	srcLen int
}

// Width is 1: greedy decoding keeps one hypothesis.
func (g *Greedy) Width() int { return 1 }

// First returns SOS.
func (g *Greedy) First() int64 { return g.SOS }

// Advance records the argmax of the row's one slot and feeds it back, or
// finishes the row at EOS or MaxLen.
func (g *Greedy) Advance(s Slots, inputs []int64, parents []int) int {
	if g.MaxLen < 1 {
		return 0
	}
	if g.tokens == nil {
		g.tokens = make([]int64, 0, min(g.MaxLen, 256))
		g.scores = make([]float32, 0, cap(g.tokens))
	}
	lp := s.LogProbs(0)
	g.Rules.Apply(lp, len(g.tokens), g.EOS, false)
	tok := Argmax(lp)
	g.tokens = append(g.tokens, tok)
	g.scores = append(g.scores, lp[tok])
	if g.KeepAttention {
		g.srcLen = s.SourceLength()
		g.attn = append(g.attn, s.Attention(0)...)
	}
	if tok == g.EOS || len(g.tokens) >= g.MaxLen {
		return 0
	}
	inputs[0], parents[0] = tok, 0
	return 1
}

// Tokens returns the tokens produced so far (a view; copy it to keep it
// past Reset).
func (g *Greedy) Tokens() []int64 { return g.tokens }

// Scores returns each token's log-prob (natural log), as the step's
// log_probs gave it after the rules' bans, one per token of Tokens (a
// view, as Tokens is). Their float32 sum is the row's score, a beam of
// one's (Beam with K = 1).
func (g *Greedy) Scores() []float32 { return g.scores }

// Attention returns one row of weights over the row's source per token,
// as new slices. It is empty unless KeepAttention was set.
func (g *Greedy) Attention() [][]float32 {
	if !g.KeepAttention || g.srcLen == 0 {
		return nil
	}
	n := len(g.attn) / g.srcLen
	out := make([][]float32, n)
	flat := append([]float32(nil), g.attn...)
	for i := range out {
		out[i] = flat[i*g.srcLen : (i+1)*g.srcLen : (i+1)*g.srcLen]
	}
	return out
}

// Reset forgets the row's output, keeping the buffers and the settings.
func (g *Greedy) Reset() {
	g.tokens, g.scores, g.attn, g.srcLen = g.tokens[:0], g.scores[:0], g.attn[:0], 0
}

func (g *Greedy) copyMap() *CopyMap { return g.Copy }
