package decode

// Forced scores a given output for one row by teacher forcing: no search,
// each step feeds the reference's previous token (SOS first) and records
// the log-prob that step's log_probs give the reference's next token, as
// the toolkits score a given translation (OpenNMT-py's -tgt gold score,
// fairseq-generate --score-reference, JoeyNMT's return_prob: ref). No
// decoding rules apply: the toolkits score the reference on the model's
// distribution as it is. The row takes len(Tokens) steps and then leaves
// the batch.
//
// For a copy-attention model (Copy set) the log-probs are those of the
// sentence's extended vocabulary (CopyMap.Extend), and a reference token
// is a target-vocabulary id: OpenNMT-py scores the reference's target
// field, where a word of the source outside the target vocabulary is
// <unk>, on the distribution its copy generator collapsed into the
// target vocabulary.
type Forced struct {
	// SOS is the first input token.
	SOS int64
	// Tokens is the reference, EOS included where the toolkit scores it;
	// at least one token. Every id must be below the log_probs' width.
	Tokens []int64
	// Copy is the sentence's dynamic vocabulary, for a copy-attention
	// model (nil otherwise).
	Copy *CopyMap

	scores []float32
}

// Width is 1: one slot follows the reference.
func (f *Forced) Width() int { return 1 }

// First returns SOS.
func (f *Forced) First() int64 { return f.SOS }

// Advance records the log-prob of the reference's next token and feeds
// it, or finishes the row after its last token.
func (f *Forced) Advance(s Slots, inputs []int64, parents []int) int {
	i := len(f.scores)
	if i >= len(f.Tokens) {
		return 0
	}
	if f.scores == nil {
		f.scores = make([]float32, 0, len(f.Tokens))
	}
	tok := f.Tokens[i]
	f.scores = append(f.scores, s.LogProbs(0)[tok])
	if i+1 == len(f.Tokens) {
		return 0
	}
	inputs[0], parents[0] = tok, 0
	return 1
}

// Scores returns each reference token's log-prob (natural log), one per
// token of Tokens once the row has finished (a view).
func (f *Forced) Scores() []float32 { return f.scores }

// Reset forgets the scores, keeping the settings, for another decode of
// the same row.
func (f *Forced) Reset() { f.scores = f.scores[:0] }

func (f *Forced) copyMap() *CopyMap { return f.Copy }
