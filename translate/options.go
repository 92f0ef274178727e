package translate

import (
	"cmp"
	"fmt"
	"reflect"
	"strings"

	"github.com/attnx/attnx/decode"
)

// DecodingOption is one decoding setting as each surface names it: the
// field of Options (and of CallOptions, for a call), attnx translate's
// flag, attnx serve's request field, and the key of attnx.json's
// "defaults" that sets the model's own (empty where a surface has none).
type DecodingOption struct {
	Go, Flag, Field, Default string
	// Rules lists the rules whose search implements the setting ("all"
	// for every one); under the others it is refused (checkRules), never
	// ignored.
	Rules string
	// Doc says what it does, and as which toolkit option.
	Doc string
	// Lacks says why the rules outside Rules do not implement it ("" for
	// "all"): what the refusal gives as its reason.
	Lacks string
}

// Takes reports whether the search of rules ("" for RulesSpec)
// implements o.
func (o DecodingOption) Takes(rules string) bool {
	if o.Rules == "all" {
		return true
	}
	rules = cmp.Or(rules, RulesSpec)
	for r := range strings.SplitSeq(o.Rules, ", ") {
		if r == rules {
			return true
		}
	}
	return false
}

// RulesTake reports whether the search of rules implements the setting
// whose Options field is goField (DecodingOptions' Rules); a field the
// table does not hold is taken by every rules.
func RulesTake(rules, goField string) bool {
	for _, o := range DecodingOptions {
		if o.Go == goField {
			return o.Takes(rules)
		}
	}
	return true
}

// RulesError is the refusal of a setting that the rules chosen do not
// implement (DecodingOptions' Rules): Option is its row, Rules the rules
// asked for, Value the setting's value. Its message names the Options
// field; a surface names it its own way with OptionNames.
type RulesError struct {
	Option DecodingOption
	Rules  string
	Value  any
}

// Error names the option, its value, the rules and the rules it goes with.
func (e *RulesError) Error() string {
	return fmt.Sprintf("translate: %s = %v: Rules %q do not implement it: %s (it goes with Rules %s)", e.Option.Go, e.Value, e.Rules, e.Option.Lacks, e.Option.Rules)
}

// checkRules refuses a setting of opt that opt.Rules' search does not
// implement, with DecodingOptions' reason (a *RulesError): one table
// decides it for every setting, so that none is silently ignored under
// the rules chosen.
func checkRules(opt Options) error {
	v := reflect.ValueOf(opt)
	for _, o := range DecodingOptions {
		f := v.FieldByName(o.Go)
		// CoveragePenalty "none" is the penalty off, as "" is.
		if o.Takes(opt.Rules) || f.IsZero() || o.Go == "CoveragePenalty" && f.String() == decode.CoverageNone {
			continue
		}
		if f.Kind() == reflect.Pointer {
			f = f.Elem()
		}
		return &RulesError{Option: o, Rules: cmp.Or(opt.Rules, RulesSpec), Value: f.Interface()}
	}
	return nil
}

// DecodingOptions is the one table of decoding settings: docs/decoding.md
// is generated from it (DecodingOptionsMarkdown), and tests check it
// against the three parsers (translate's flags, serve's request fields,
// attnx.json's defaults), so that a setting one surface takes the others
// take too, under the same name in each surface's style.
var DecodingOptions = []DecodingOption{
	{"Beam", "--beam", "beam", "beam", "all", "beam width K (1: greedy decoding); fairseq's --beam, OpenNMT-py's -beam_size, JoeyNMT's beam_size", ""},
	{"NBest", "--n-best", "n_best", "n_best", "all", "hypotheses listed per input (1 to K); fairseq's --nbest, OpenNMT-py's -n_best", ""},
	{"LengthPenalty", "--length-penalty", "length_penalty", "length_penalty", "all", "alpha, 0 to 10; fairseq's --lenpen, OpenNMT-py's -alpha, JoeyNMT's beam_alpha", ""},
	{"LengthPenaltyWu", "--length-penalty-form", "length_penalty_form", "length_penalty_form", "spec, joeynmt", "the penalty's form: power or wu (JoeyNMT's beam_alpha is wu's)", "fairseq ranks by score / len ** lenpen only (its --lenpen), and OpenNMT-py's form is OpenNMTPenalty (-length_penalty)"},
	{"OpenNMTPenalty", "--length-penalty-form", "length_penalty_form", "length_penalty_form", "opennmt", "under OpenNMT-py's rules, its -length_penalty: none, avg or wu", "it is OpenNMT-py's -length_penalty (the others' form is LengthPenaltyWu)"},
	{"Rules", "--rules", "rules", "rules", "all", "whose search: spec (attnx's), opennmt, joeynmt or fairseq", ""},
	{"MaxLen", "--max-len", "max_len", "max_len", "all", "most output tokens, EOS included; OpenNMT-py's -max_length, JoeyNMT's max_output_length, fairseq's --max-len-b + 1", ""},
	{"MinLen", "--min-len", "min_len", "min_len", "all", "no EOS before this many tokens; OpenNMT-py's -min_length, JoeyNMT's min_output_length, fairseq's --min-len", ""},
	{"ReplaceUnk", "--replace-unk", "replace_unk", "replace_unk", "all", "each <unk> out becomes the source token it attends to most; OpenNMT-py's -replace_unk", ""},
	{"ReplaceUnkDict", "--replace-unk-dict, --phrase-table", "", "", "all", "with ReplaceUnk, that source token's entry in a dictionary where it has one; fairseq's --replace-unk DICT, OpenNMT-py's -phrase_table", ""},
	{"BanUNK", "--ban-unk", "ban_unk", "ban_unk", "all", "never output the unknown token; OpenNMT-py's -ban_unk_token, JoeyNMT's generate_unk: false", ""},
	{"NoRepeatNgram", "--no-repeat-ngram", "no_repeat_ngram", "no_repeat_ngram", "spec, joeynmt", "JoeyNMT's no_repeat_ngram_size", "OpenNMT-py has no such option (its -block_ngram_repeat is BlockNgram, which bans a repeated n-gram of the hypothesis, not of the source), and fairseq 0.12.2's --no-repeat-ngram-size blocks nothing on a CPU"},
	{"RepetitionPenalty", "--repetition-penalty", "repetition_penalty", "repetition_penalty", "spec, joeynmt", "JoeyNMT's repetition_penalty", "neither OpenNMT-py nor fairseq has a repetition penalty"},
	{"MaxLenRatio", "--max-len-ratio", "max_len_ratio", "max_len_factor", "all", "OpenNMT-py's -max_length_ratio: at most min(max_len, R x n + 5) tokens (under any rules)", ""},
	{"BlockNgram", "--block-ngram-repeat", "block_ngram_repeat", "", "opennmt", "OpenNMT-py's -block_ngram_repeat", "it is OpenNMT-py's -block_ngram_repeat (JoeyNMT's rules take NoRepeatNgram)"},
	{"IgnoreWhenBlocking", "--ignore-when-blocking", "ignore_when_blocking", "", "opennmt", "OpenNMT-py's -ignore_when_blocking (target tokens)", "it goes with OpenNMT-py's -block_ngram_repeat"},
	{"Ratio", "--ratio", "ratio", "", "opennmt", "OpenNMT-py's -ratio", "it is OpenNMT-py's -ratio stopping rule"},
	{"CoveragePenalty", "--coverage-penalty", "coverage_penalty", "", "opennmt", "OpenNMT-py's -coverage_penalty: none, wu or summary (as 2.3.0 computes it; 3.5.1 fails on RNN decoders)", "the coverage penalty is OpenNMT-py's"},
	{"Beta", "--beta", "beta", "", "opennmt", "OpenNMT-py's -beta, the coverage penalty's weight", "it weighs OpenNMT-py's coverage penalty"},
	{"StepwisePenalty", "--stepwise-penalty", "stepwise_penalty", "", "opennmt", "OpenNMT-py's -stepwise_penalty: the coverage penalty at every step", "it applies OpenNMT-py's coverage penalty"},
	{"UnkPenalty", "--unk-penalty", "unk_penalty", "", "fairseq", "fairseq's --unkpen", "it is fairseq's --unkpen"},
	{"Temperature", "--temperature", "temperature", "", "fairseq, opennmt", "fairseq's --temperature; with sampling, OpenNMT-py's -random_sampling_temp; 0, or 0.001 to 1000", "it is fairseq's --temperature, or OpenNMT-py's -random_sampling_temp"},
	{"MaxLenA", "--max-len-a", "max_len_a", "", "fairseq", "fairseq's --max-len-a", "it is fairseq's --max-len-a"},
	{"Sampling", "--sampling", "sampling", "", "fairseq, opennmt", "draw tokens instead of searching: fairseq's --sampling, OpenNMT-py's -random_sampling_topk -1", "attnx's and JoeyNMT's searches draw nothing"},
	{"SamplingTopK", "--sampling-topk", "sampling_topk", "", "fairseq, opennmt", "draw from the K most probable tokens", "it goes with Sampling"},
	{"SamplingTopP", "--sampling-topp", "sampling_topp", "", "fairseq, opennmt", "draw from the tokens up to cumulative probability P", "it goes with Sampling"},
	{"Seed", "--seed", "seed", "", "fairseq, opennmt", "the draws' seed (with each sentence's source)", "it seeds Sampling's draws"},
	{"MatchSourceLen", "--match-source-len", "match_source_len", "", "fairseq", "fairseq's --match-source-len: each output exactly as long as its source, ending past it scored -inf (LengthConstrainedBeamSearch)", "it is fairseq's --match-source-len"},
	{"DiverseBeamGroups", "--diverse-beam-groups", "diverse_beam_groups", "", "fairseq", "fairseq's --diverse-beam-groups: the beam as G groups, each penalised for the tokens the earlier ones chose (DiverseBeamSearch; G divides the beam)", "it is fairseq's DiverseBeamSearch"},
	{"DiverseBeamStrength", "--diverse-beam-strength", "diverse_beam_strength", "", "fairseq", "fairseq's --diverse-beam-strength, the groups' penalty per earlier choice (default 0.5)", "it weighs fairseq's DiverseBeamSearch"},
	{"DiversityRate", "--diversity-rate", "diversity_rate", "", "fairseq", "fairseq's --diversity-rate: each hypothesis' j-th best continuation less j x R (DiverseSiblingsSearch)", "it is fairseq's DiverseSiblingsSearch"},
}

// DecodingOptionsMarkdown returns the table of DecodingOptions as
// docs/decoding.md shows it.
func DecodingOptionsMarkdown() string {
	var b strings.Builder
	b.WriteString("# Decoding options\n\n")
	b.WriteString("Generated from `translate.DecodingOptions` (a test fails when this file is stale;\n")
	b.WriteString("`ATTNX_UPDATE_DOCS=1 go test ./translate -run TestDecodingOptionsDoc` writes it).\n")
	b.WriteString("Each setting is one of `translate.Options` (and `CallOptions`), a flag of\n")
	b.WriteString("`attnx translate`, a field of `attnx serve`'s request, and where the model\n")
	b.WriteString("can carry its own, a key of attnx.json's `\"defaults\"`. Left out, a setting\n")
	b.WriteString("takes the model's default, as `translate.ResolveDecoding` resolves it on\n")
	b.WriteString("every surface. A setting the chosen rules do not implement is refused\n")
	b.WriteString("with the reason below, on every surface, never ignored.\n\n")
	b.WriteString("| Go | attnx translate | HTTP field | attnx.json default | rules | what |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	or := func(s string) string {
		if s == "" {
			return "-"
		}
		return "`" + s + "`"
	}
	for _, o := range DecodingOptions {
		doc := o.Doc
		if o.Lacks != "" {
			doc += "; not under the other rules: " + o.Lacks
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s |\n", or(o.Go), or(o.Flag), or(o.Field), or(o.Default), o.Rules, doc)
	}
	return b.String()
}

// OptionNames rewrites an error message of this package for a surface
// that names the settings otherwise: each Options field it mentions
// becomes name(option) (its flag, or its request field), and the
// package's "translate: " prefix goes.
func OptionNames(msg string, name func(DecodingOption) string) string {
	msg = strings.TrimPrefix(msg, "translate: ")
	for _, o := range DecodingOptions {
		if n := name(o); n != "" {
			msg = replaceWord(msg, o.Go, n)
		}
	}
	msg = replaceWord(msg, "CallOptions.", "")
	return msg
}

// replaceWord replaces old where it stands as a word of s (not inside
// another identifier: Beam in BeamSearch stays).
func replaceWord(s, old, new string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, old)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len(old)
		word := func(c byte) bool {
			return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		}
		if (i > 0 && word(s[i-1])) || (j < len(s) && word(s[j]) && !strings.HasSuffix(old, ".")) {
			b.WriteString(s[:j])
		} else {
			b.WriteString(s[:i])
			b.WriteString(new)
		}
		s = s[j:]
	}
}
