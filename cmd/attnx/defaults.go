package main

import (
	"path/filepath"

	"github.com/attnx/attnx/modeldir"
	"github.com/spf13/pflag"
)

// decodingFlags are the decoding flags of translate and serve, by name.
type decodingFlags struct {
	beam, nBest, minLen *int
	alpha               *float64
	// maxLenRatio is translate's --max-len-ratio, noRepeat and repPenalty
	// its --no-repeat-ngram and --repetition-penalty (nil for serve).
	maxLenRatio        *float64
	noRepeat           *int
	repPenalty         *float64
	penaltyForm, rules *string
	replaceUnk, banUNK *bool
}

// applyModelDefaults sets each decoding flag that the command line left
// out to the model directory's default (attnx.json's "defaults"), when it
// has one. An attnx.json that cannot be read is left for the command to
// report.
func applyModelDefaults(fs *pflag.FlagSet, dir string, f decodingFlags) {
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if err != nil || info.Defaults == nil {
		return
	}
	d := info.Defaults
	set := func(name string, apply func()) {
		if !fs.Changed(name) {
			apply()
		}
	}
	if d.Beam > 0 {
		set("beam", func() { *f.beam = d.Beam })
	}
	if d.NBest > 0 {
		set("n-best", func() { *f.nBest = d.NBest })
	}
	if d.LengthPenalty != nil {
		set("length-penalty", func() { *f.alpha = *d.LengthPenalty })
	}
	// The form and ban_unk belong to the model's rules: a command line
	// that chooses other rules leaves them.
	sameRules := f.rules == nil || !fs.Changed("rules") || *f.rules == d.Rules || *f.rules == "spec" && d.Rules == ""
	if d.LengthPenaltyForm != "" && sameRules {
		set("length-penalty-form", func() { *f.penaltyForm = d.LengthPenaltyForm })
	}
	if d.MinLen > 0 {
		set("min-len", func() { *f.minLen = d.MinLen })
	}
	if d.ReplaceUnk {
		set("replace-unk", func() { *f.replaceUnk = true })
	}
	if d.Rules != "" && f.rules != nil {
		set("rules", func() { *f.rules = d.Rules })
	}
	if d.BanUNK && f.banUNK != nil && sameRules {
		set("ban-unk", func() { *f.banUNK = true })
	}
	if d.NoRepeatNgram > 0 && f.noRepeat != nil {
		set("no-repeat-ngram", func() { *f.noRepeat = d.NoRepeatNgram })
	}
	if d.RepetitionPenalty > 0 && f.repPenalty != nil {
		set("repetition-penalty", func() { *f.repPenalty = d.RepetitionPenalty })
	}
	// OpenNMT-py's -max_length caps its ratio's limit rather than
	// replacing it: --max-len alone keeps the model's ratio, as
	// onmt_translate -max_length N keeps -max_length_ratio 1.25.
	if f.maxLenRatio != nil && d.Rules == "opennmt" && d.MaxLenFactor > 0 && fs.Changed("max-len") {
		set("max-len-ratio", func() {
			*f.maxLenRatio = d.MaxLenFactor
			fs.Lookup("max-len-ratio").Changed = true
		})
	}
	// A beam set on the command line lists one hypothesis unless
	// --n-best says otherwise, as a request that sets "beam" does.
	if fs.Changed("beam") && !fs.Changed("n-best") {
		*f.nBest = 1
	}
}
