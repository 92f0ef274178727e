package translate

import (
	"math"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/decode"
)

// DefaultDiverseBeamStrength is fairseq's --diverse-beam-strength
// default, what Options.DiverseBeamStrength nil means.
const DefaultDiverseBeamStrength = 0.5

// checkDiverse checks fairseq's other searches (MatchSourceLen,
// DiverseBeamGroups with DiverseBeamStrength, DiversityRate) as fairseq's
// build_generator and DiverseBeamSearch do: at most one of them, none
// with Sampling, the groups dividing the beam. Under other rules
// checkRules refuses them.
func checkDiverse(opt Options) error {
	if s := opt.DiverseBeamStrength; s != nil && (math.IsNaN(*s) || math.IsInf(*s, 0)) {
		return optionErrorf("DiverseBeamStrength", "translate: DiverseBeamStrength = %v: want a finite value", *s)
	}
	if r := opt.DiversityRate; r != nil && (math.IsNaN(*r) || math.IsInf(*r, 0)) {
		return optionErrorf("DiversityRate", "translate: DiversityRate = %v: want a finite value", *r)
	}
	if opt.Rules != RulesFairseq {
		return nil // checkRules refuses them, with its reason
	}
	if g := opt.DiverseBeamGroups; g < 0 || g > 0 && opt.Beam > 0 && opt.Beam%g != 0 {
		return optionErrorf("DiverseBeamGroups", "translate: DiverseBeamGroups = %d with Beam %d: want groups that divide the beam (fairseq's DiverseBeamSearch requires it)", g, opt.Beam)
	}
	if opt.DiverseBeamStrength != nil && opt.DiverseBeamGroups == 0 {
		return optionErrorf("DiverseBeamStrength", "translate: DiverseBeamStrength = %v without DiverseBeamGroups: it weighs the groups' penalty", *opt.DiverseBeamStrength)
	}
	// fairseq's test counts a diversity rate above 0 only, though its
	// search runs from -1 up; a rate of 0 with another search would be
	// silently dropped there, and is refused here.
	var on []string
	for _, f := range []struct {
		name string
		set  bool
	}{{"Sampling", opt.Sampling}, {"DiverseBeamGroups", opt.DiverseBeamGroups > 0}, {"MatchSourceLen", opt.MatchSourceLen}, {"DiversityRate", opt.DiversityRate != nil}} {
		if f.set {
			on = append(on, f.name)
		}
	}
	if len(on) > 1 {
		return optionErrorf(on[1], "translate: %s with %s: at most one of Sampling, DiverseBeamGroups, MatchSourceLen and DiversityRate (fairseq: \"Provided Search parameters are mutually exclusive\")", on[0], on[1])
	}
	return nil
}

// callDiverse sets in so the call's settings of fairseq's other searches
// (those it gives).
func callDiverse(opt CallOptions, so *searchOpts) {
	if opt.MatchSourceLen != nil {
		so.matchSrc = *opt.MatchSourceLen
	}
	if opt.DiverseBeamGroups != nil {
		so.groups = *opt.DiverseBeamGroups
	}
	if opt.DiverseBeamStrength != nil {
		s := *opt.DiverseBeamStrength
		so.groupStrength = &s
	}
	if opt.DiversityRate != nil {
		r := *opt.DiversityRate
		so.divRate = &r
	}
}

// setDiverse sets b's search (one of rows, the call's, as fairseq's
// batch) to fairseq's other search that so asks for, if any.
func (so searchOpts) setDiverse(b *decode.FairseqBeam, rows [][]int64, row []int64, sp attention.Special) {
	switch {
	case so.matchSrc:
		// The generator's src_lengths: the tokens other than </s> and
		// <pad> (its target's ids); its limit the batch's longest.
		longest := 0
		for _, r := range rows {
			longest = max(longest, sourceLen(r, sp))
		}
		b.MatchSourceLen, b.SrcLen, b.MaxLen = true, sourceLen(row, sp), longest+1
		if so.maxLenCap > 0 {
			b.MaxLen = min(b.MaxLen, so.maxLenCap)
		}
	case so.groups > 0:
		b.Groups, b.GroupStrength = so.groups, DefaultDiverseBeamStrength
		if so.groupStrength != nil {
			b.GroupStrength = *so.groupStrength
		}
	case so.divRate != nil:
		b.Siblings, b.DiversityRate = true, *so.divRate
	}
}

// sourceLen is fairseq's src_lengths of row: its tokens other than EOS
// and PAD.
func sourceLen(row []int64, sp attention.Special) int {
	n := 0
	for _, id := range row {
		if id != sp.EOS && id != sp.PAD {
			n++
		}
	}
	return n
}
