package main

import (
	"github.com/spf13/pflag"

	"github.com/attnx/attnx/translate"
)

// fairseqSearchFlags are attnx translate's flags for fairseq's other
// searches (translate.Options' MatchSourceLen, DiverseBeamGroups,
// DiverseBeamStrength, DiversityRate), by fairseq's names; translate
// refuses them under rules other than fairseq's.
type fairseqSearchFlags struct {
	matchSrc *bool
	groups   *int
	strength *float64
	rate     *float64
}

// add defines the flags on fs.
func (f *fairseqSearchFlags) add(fs *pflag.FlagSet) {
	f.matchSrc = fs.Bool("match-source-len", false, "with --rules fairseq: each output exactly as long as its source (fairseq's --match-source-len, LengthConstrainedBeamSearch)")
	f.groups = fs.Int("diverse-beam-groups", 0, "with --rules fairseq: diverse beam search, the beam as `G` groups (G divides --beam; fairseq's --diverse-beam-groups; 0: none)")
	f.strength = fs.Float64("diverse-beam-strength", translate.DefaultDiverseBeamStrength, "with --diverse-beam-groups: the penalty `S` per earlier group's choice of a token (fairseq's --diverse-beam-strength)")
	f.rate = fs.Float64("diversity-rate", 0, "with --rules fairseq: diverse siblings search, each hypothesis' j-th best continuation less j x `R` (fairseq's --diversity-rate; 0 searches as the beam does)")
}

// set sets topt's fields for the flags given.
func (f *fairseqSearchFlags) set(fs *pflag.FlagSet, topt *translate.Options) {
	topt.MatchSourceLen, topt.DiverseBeamGroups = *f.matchSrc, *f.groups
	if fs.Changed("diverse-beam-strength") {
		topt.DiverseBeamStrength = f.strength
	}
	if fs.Changed("diversity-rate") {
		topt.DiversityRate = f.rate
	}
}
