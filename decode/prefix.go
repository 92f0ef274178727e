package decode

import "math"

// PrefixFill says what a Prefix does to the log-probs of the tokens other
// than the prefix's at a forced step.
type PrefixFill int

const (
	// PrefixInf sets them to -Inf: fairseq's SequenceGenerator
	// (_prefix_tokens, for prefix_tokens and --prefix-size) and the spec's
	// and JoeyNMT's searches.
	PrefixInf PrefixFill = iota
	// PrefixMinus10000 subtracts 10000 from them, as OpenNMT-py's
	// DecodeStrategy.target_prefixing does (3.5.1's -tgt_file_prefix,
	// 2.3.0's -tgt_prefix): the other tokens stay finite, so a beam's
	// other slots live on far below the prefix's.
	PrefixMinus10000
)

// Prefix forces the first tokens of a row's output and then lets the
// search it wraps go on from that state. At each of the first
// len(Tokens) steps it rewrites every slot's log-probs (Fill) so that the
// prefix token is the only one worth taking, keeping that token's own
// log-prob, and hands them to the wrapped Search, which takes the token
// as any other: its score counts the prefix tokens' log-probs, its output
// starts with them, and its step counts (output limit, minimum length)
// include them. A beam search therefore keeps one hypothesis worth
// having through the prefix (all its slots share it) and widens from it
// at the first free step, as the toolkits' searches do.
//
// Rules the wrapped search applies after the rewrite still apply: a
// banned prefix token loses to the others as it does in the toolkits.
// The prefix must not hold EOS.
type Prefix struct {
	// Search is the wrapped search (Greedy, Beam, FairseqBeam,
	// OpenNMTBeam, ...).
	Search
	// Tokens are the forced target ids, EOS excluded.
	Tokens []int64
	// Fill is what the other tokens' log-probs become at a forced step.
	Fill PrefixFill

	step int
}

// Advance rewrites the slots' log-probs at a forced step, then advances
// the wrapped search.
func (p *Prefix) Advance(s Slots, inputs []int64, parents []int) int {
	if p.step < len(p.Tokens) {
		tok := p.Tokens[p.step]
		for i := range s.Len() {
			forceToken(s.LogProbs(i), tok, p.Fill)
		}
	}
	p.step++
	return p.Search.Advance(s, inputs, parents)
}

// Step returns the steps the row has taken.
func (p *Prefix) Step() int { return p.step }

// Reset makes the Prefix force its tokens again from the first step; the
// wrapped search is reset by its owner.
func (p *Prefix) Reset() { p.step = 0 }

// copyMap is the wrapped search's sentence vocabulary, for a copy model.
func (p *Prefix) copyMap() *CopyMap {
	if c, ok := p.Search.(copier); ok {
		return c.copyMap()
	}
	return nil
}

// forceToken rewrites lp so that tok keeps its log-prob and every other
// token gets fill's value. A tok outside lp leaves every token rewritten.
func forceToken(lp []float32, tok int64, fill PrefixFill) {
	inf := float32(math.Inf(-1))
	for v := range lp {
		if int64(v) == tok {
			continue
		}
		if fill == PrefixMinus10000 {
			lp[v] -= 10000
		} else {
			lp[v] = inf
		}
	}
}
