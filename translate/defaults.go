package translate

import (
	"github.com/attnx/attnx/modeldir"
)

// ResolveDecoding returns opt with every decoding setting it leaves at
// its zero value taken from d, the model's decoding defaults (attnx.json's
// "defaults": its toolkit's translate command's, as export writes them),
// in the one place every surface goes through: Open applies it to its
// Options, attnx translate to its flags, attnx serve to its flags and to
// each request, verify --src to both of its sides. The caller's values
// win; zero means "as the model decodes":
//
//   - Beam 0 takes d's beam (1 is greedy decoding, asked for); NBest 0
//     takes d's n_best unless Beam was given (a beam asked for lists one
//     hypothesis unless NBest says otherwise);
//   - LengthPenalty nil and MinLen 0 take d's, NoRepeatNgram 0 and
//     RepetitionPenalty 0 too where the rules resolved implement them
//     (DecodingOptions' Rules);
//   - Rules "" takes d's rules (RulesSpec asks for attnx's own); the
//     length penalty's form (LengthPenaltyWu, OpenNMTPenalty) and BanUNK
//     belong to the model's rules and are taken only under them;
//   - ReplaceUnk false takes d's;
//   - under OpenNMT-py's rules, a MaxLen given without MaxLenRatio keeps
//     the model's ratio, as onmt_translate -max_length N keeps
//     -max_length_ratio.
//
// The output limit itself needs nothing here: without MaxLen and
// MaxLenRatio, Limit uses d's. A nil d returns opt as it is.
func ResolveDecoding(opt Options, d *modeldir.Defaults) Options {
	if d == nil {
		return opt
	}
	beamGiven := opt.Beam != 0
	if opt.Beam == 0 && d.Beam > 0 {
		opt.Beam = d.Beam
	}
	if opt.NBest == 0 && !beamGiven && d.NBest > 0 {
		opt.NBest = d.NBest
	}
	if opt.LengthPenalty == nil && d.LengthPenalty != nil {
		a := *d.LengthPenalty
		opt.LengthPenalty = &a
	}
	sameRules := opt.Rules == "" || opt.Rules == d.Rules || opt.Rules == RulesSpec && d.Rules == ""
	if opt.Rules == "" {
		opt.Rules = d.Rules
	}
	if sameRules {
		switch form := d.LengthPenaltyForm; {
		case opt.Rules == RulesOpenNMT:
			if opt.OpenNMTPenalty == "" {
				opt.OpenNMTPenalty = form
			}
		case form == "wu":
			opt.LengthPenaltyWu = true
		}
		opt.BanUNK = opt.BanUNK || d.BanUNK
	}
	if opt.MinLen == 0 {
		opt.MinLen = d.MinLen
	}
	opt.ReplaceUnk = opt.ReplaceUnk || d.ReplaceUnk
	// The model's repetition rules are its toolkit's search's: rules
	// asked for that lack them decode without, not refused for them.
	if opt.NoRepeatNgram == 0 && RulesTake(opt.Rules, "NoRepeatNgram") {
		opt.NoRepeatNgram = d.NoRepeatNgram
	}
	if opt.RepetitionPenalty == 0 && RulesTake(opt.Rules, "RepetitionPenalty") {
		opt.RepetitionPenalty = d.RepetitionPenalty
	}
	if opt.Rules == RulesOpenNMT && d.Rules == RulesOpenNMT && d.MaxLenFactor > 0 && opt.MaxLen > 0 && opt.MaxLenRatio == nil {
		r := d.MaxLenFactor
		opt.MaxLenRatio = &r
	}
	return opt
}
