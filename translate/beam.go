package translate

import (
	"fmt"
	"github.com/attnx/attnx/decode"

	"github.com/attnx/attnx/modeldir"
)

// DefaultLengthPenalty is the length penalty alpha used when
// Options.LengthPenalty is nil: beam search ranks hypotheses by score per
// token.
const DefaultLengthPenalty = 1.0

// Beam search rules (Options.Rules).
const (
	RulesSpec    = "spec"
	RulesOpenNMT = "opennmt"
	// RulesJoeyNMT is JoeyNMT 2.3's beam search (decode.JoeyBeam), with
	// LengthPenalty its beam_alpha (> 0: Wu's penalty; else raw scores).
	RulesJoeyNMT = "joeynmt"
	// RulesFairseq is fairseq's SequenceGenerator (decode.FairseqBeam),
	// greedy decoding included (its beam of 1), with LengthPenalty its
	// --lenpen and UnkPenalty its --unkpen.
	RulesFairseq = "fairseq"
)

// rulesList names the rules for messages.
var rulesList = fmt.Sprintf("%q, %q, %q or %q", RulesSpec, RulesOpenNMT, RulesJoeyNMT, RulesFairseq)

// RulesList is the rules' names for messages.
func RulesList() string { return rulesList }

// openNMTMaxLen is onmt_translate's output limit for a source of n tokens
// at its defaults (-max_length 250, -max_length_ratio 1.25).
func openNMTMaxLen(n int) int { return modeldir.OpenNMTTranslate().Limit(n) }

// checkBeamOptions checks Beam, NBest and LengthPenalty, naming the option
// and the allowed range.
func checkBeamOptions(opt Options) error {
	k := max(opt.Beam, 1)
	switch {
	case opt.Beam < 0:
		return optionErrorf("Beam", "translate: Beam = %d: want the beam width K >= 1 (1 or 0: greedy decoding)", opt.Beam)
	case opt.NBest < 0 || opt.NBest > k:
		return optionErrorf("NBest", "translate: NBest = %d: want 1 <= NBest <= Beam = %d (0: 1)", opt.NBest, k)
	}
	if a := opt.LengthPenalty; a != nil {
		if err := decode.LengthPenaltyRange(*a); err != nil {
			return optionErrorf("LengthPenalty", "translate: LengthPenalty = %v: %w", *a, err)
		}
	}
	return nil
}

// beam returns the beam width: 1 for greedy decoding.
func (t *Translator) beam() int { return max(t.opt.Beam, 1) }

// nBest returns how many hypotheses a Result lists.
func (t *Translator) nBest() int { return max(t.opt.NBest, 1) }

// lengthPenalty returns alpha.
func (t *Translator) lengthPenalty() float64 {
	if t.opt.LengthPenalty == nil {
		return DefaultLengthPenalty
	}
	return *t.opt.LengthPenalty
}
