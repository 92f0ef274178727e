package main

import (
	"path/filepath"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
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
// out to what the model decodes with by default (attnx.json's
// "defaults"), resolved as every surface resolves them:
// translate.ResolveDecoding over the flags the command line gave. An
// attnx.json that cannot be read is left for the command to report.
func applyModelDefaults(fs *pflag.FlagSet, dir string, f decodingFlags) {
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if err != nil || info.Defaults == nil {
		return
	}
	var given translate.Options
	if fs.Changed("beam") {
		given.Beam = *f.beam
	}
	if fs.Changed("n-best") {
		given.NBest = *f.nBest
	}
	if fs.Changed("length-penalty") {
		given.LengthPenalty = f.alpha
	}
	if f.rules != nil && fs.Changed("rules") {
		given.Rules = *f.rules
	}
	if fs.Changed("min-len") {
		given.MinLen = *f.minLen
	}
	if f.noRepeat != nil && fs.Changed("no-repeat-ngram") {
		given.NoRepeatNgram = *f.noRepeat
	}
	if f.repPenalty != nil && fs.Changed("repetition-penalty") {
		given.RepetitionPenalty = *f.repPenalty
	}
	if fs.Changed("max-len") {
		given.MaxLen = 1 // given: its value does not matter here
	}
	if f.maxLenRatio != nil && fs.Changed("max-len-ratio") {
		given.MaxLenRatio = f.maxLenRatio
	}
	r := translate.ResolveDecoding(given, info.Defaults)
	set := func(name string, apply func()) {
		if !fs.Changed(name) {
			apply()
		}
	}
	set("beam", func() {
		if r.Beam > 0 {
			*f.beam = r.Beam
		}
	})
	set("n-best", func() { *f.nBest = max(r.NBest, 1) })
	set("length-penalty", func() {
		if r.LengthPenalty != nil {
			*f.alpha = *r.LengthPenalty
		}
	})
	if f.rules != nil {
		set("rules", func() {
			if r.Rules != "" {
				*f.rules = r.Rules
			}
		})
	}
	set("length-penalty-form", func() {
		switch {
		case r.Rules == translate.RulesOpenNMT && r.OpenNMTPenalty != "":
			*f.penaltyForm = r.OpenNMTPenalty
		case r.Rules != translate.RulesOpenNMT && r.LengthPenaltyWu:
			*f.penaltyForm = "wu"
		}
	})
	set("min-len", func() { *f.minLen = r.MinLen })
	set("replace-unk", func() { *f.replaceUnk = r.ReplaceUnk })
	if f.banUNK != nil {
		set("ban-unk", func() { *f.banUNK = r.BanUNK })
	}
	if f.noRepeat != nil {
		set("no-repeat-ngram", func() { *f.noRepeat = r.NoRepeatNgram })
	}
	if f.repPenalty != nil {
		set("repetition-penalty", func() { *f.repPenalty = r.RepetitionPenalty })
	}
	if f.maxLenRatio != nil && r.MaxLenRatio != nil && !fs.Changed("max-len-ratio") {
		*f.maxLenRatio = *r.MaxLenRatio
		fs.Lookup("max-len-ratio").Changed = true
	}
}
