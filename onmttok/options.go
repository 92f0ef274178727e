package onmttok

import (
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/language"
)

// Modes of tokenization.
const (
	ModeConservative = "conservative"
	ModeAggressive   = "aggressive"
	ModeChar         = "char"
	ModeSpace        = "space"
	ModeNone         = "none"
)

// Markers of the Tokenizer.
const (
	JoinerMarker = "￭"
	SpacerMarker = "▁"
	phOpen       = "｟"
	phClose      = "｠"
	escapePrefix = "％"
	featureMark  = "￨"
)

// Options are the Tokenizer's options, as pyonmttok.Tokenizer's keyword
// arguments name them (json tags). The zero value is mode conservative
// with nothing else set, pyonmttok's defaults.
type Options struct {
	Mode                    string   `json:"mode"`
	Lang                    string   `json:"lang,omitempty"`
	NoSubstitution          bool     `json:"no_substitution,omitempty"`
	WithSeparators          bool     `json:"with_separators,omitempty"`
	AllowIsolatedMarks      bool     `json:"allow_isolated_marks,omitempty"`
	CaseMarkup              bool     `json:"case_markup,omitempty"`
	SoftCaseRegions         bool     `json:"soft_case_regions,omitempty"`
	JoinerAnnotate          bool     `json:"joiner_annotate,omitempty"`
	JoinerNew               bool     `json:"joiner_new,omitempty"`
	Joiner                  string   `json:"joiner,omitempty"`
	SpacerAnnotate          bool     `json:"spacer_annotate,omitempty"`
	SpacerNew               bool     `json:"spacer_new,omitempty"`
	PreservePlaceholders    bool     `json:"preserve_placeholders,omitempty"`
	PreserveSegmentedTokens bool     `json:"preserve_segmented_tokens,omitempty"`
	SupportPriorJoiners     bool     `json:"support_prior_joiners,omitempty"`
	SegmentCase             bool     `json:"segment_case,omitempty"`
	SegmentNumbers          bool     `json:"segment_numbers,omitempty"`
	SegmentAlphabetChange   bool     `json:"segment_alphabet_change,omitempty"`
	SegmentAlphabet         []string `json:"segment_alphabet,omitempty"`
}

// boolOptions maps keyword names to the Options fields they set.
func (o *Options) boolOptions() map[string]*bool {
	return map[string]*bool{
		"no_substitution":           &o.NoSubstitution,
		"with_separators":           &o.WithSeparators,
		"allow_isolated_marks":      &o.AllowIsolatedMarks,
		"case_markup":               &o.CaseMarkup,
		"soft_case_regions":         &o.SoftCaseRegions,
		"joiner_annotate":           &o.JoinerAnnotate,
		"joiner_new":                &o.JoinerNew,
		"spacer_annotate":           &o.SpacerAnnotate,
		"spacer_new":                &o.SpacerNew,
		"preserve_placeholders":     &o.PreservePlaceholders,
		"preserve_segmented_tokens": &o.PreserveSegmentedTokens,
		"support_prior_joiners":     &o.SupportPriorJoiners,
		"segment_case":              &o.SegmentCase,
		"segment_numbers":           &o.SegmentNumbers,
		"segment_alphabet_change":   &o.SegmentAlphabetChange,
	}
}

// subwordKeys are pyonmttok keywords for the subword model, which
// OpenNMT-py sets from its own options (src_subword_type and the others)
// rather than from the kwargs dict.
var subwordKeys = map[string]bool{
	"bpe_model_path": true, "bpe_vocab_path": true, "bpe_vocab_threshold": true, "bpe_dropout": true,
	"sp_model_path": true, "sp_nbest_size": true, "sp_alpha": true,
	"vocabulary": true, "vocabulary_path": true, "vocabulary_threshold": true,
}

// FromKwargs reads Options from pyonmttok keyword arguments, as OpenNMT-py's
// src_onmttok_kwargs holds them (a dict: strings, booleans, a list of
// strings for segment_alphabet; Python's 0 and 1 pass for booleans as
// pybind11 takes them). Subword keywords are refused here: the caller
// takes those from their own options. An unknown keyword is an error, as
// it is for pyonmttok.
func FromKwargs(kw map[string]any) (Options, error) {
	o := Options{Mode: ModeConservative}
	bools := o.boolOptions()
	keys := make([]string, 0, len(kw))
	for k := range kw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := kw[k]
		if p, ok := bools[k]; ok {
			b, err := asBool(v)
			if err != nil {
				return o, fmt.Errorf("%s: %w", k, err)
			}
			*p = b
			continue
		}
		switch k {
		case "mode", "lang", "joiner":
			s, ok := v.(string)
			if !ok {
				if v == nil && k == "lang" {
					continue
				}
				return o, fmt.Errorf("%s: want a string, have %v (%T)", k, v, v)
			}
			switch k {
			case "mode":
				o.Mode = s
			case "lang":
				o.Lang = s
			default:
				o.Joiner = s
			}
		case "segment_alphabet":
			if v == nil {
				continue
			}
			l, ok := v.([]any)
			if !ok {
				return o, fmt.Errorf("segment_alphabet: want a list of script names, have %v (%T)", v, v)
			}
			for _, x := range l {
				s, ok := x.(string)
				if !ok {
					return o, fmt.Errorf("segment_alphabet: want script names, have %v (%T)", x, x)
				}
				o.SegmentAlphabet = append(o.SegmentAlphabet, s)
			}
		case "case_feature":
			if b, err := asBool(v); err != nil || b {
				return o, fmt.Errorf("case_feature: not supported: OpenNMT-py keeps a tokenizer's words and drops its features, and the Tokenizer cannot detokenize without them (\"Missing case feature\"); case_markup keeps the case in the text")
			}
		default:
			if subwordKeys[k] {
				return o, fmt.Errorf("%s: a subword option, which OpenNMT-py sets from its own options (src_subword_type, src_subword_model, ...), not from onmttok_kwargs", k)
			}
			return o, fmt.Errorf("unknown option %q (pyonmttok 1.37.1's Tokenizer has no such keyword)", k)
		}
	}
	return o, nil
}

func asBool(v any) (bool, error) {
	switch x := v.(type) {
	case bool:
		return x, nil
	case int64:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	case int:
		if x == 0 || x == 1 {
			return x == 1, nil
		}
	}
	return false, fmt.Errorf("want True or False, have %v (%T)", v, v)
}

// resolved are Options checked and completed, as the Tokenizer's validate
// leaves them.
type resolved struct {
	Options
	mode           int
	segmentScripts map[int]bool
}

const (
	modeConservative = iota
	modeAggressive
	modeChar
	modeSpace
	modeNone
)

// validate checks options as the Tokenizer's Options::validate does (with
// its messages), and sets the defaults it sets.
func (o Options) validate() (resolved, error) {
	r := resolved{Options: o}
	switch o.Mode {
	case ModeConservative, "":
		r.Mode, r.mode = ModeConservative, modeConservative
	case ModeAggressive:
		r.mode = modeAggressive
	case ModeChar:
		r.mode = modeChar
	case ModeSpace:
		r.mode = modeSpace
	case ModeNone:
		r.mode = modeNone
	default:
		return r, fmt.Errorf("invalid tokenization mode: %q (want conservative, aggressive, char, space or none)", o.Mode)
	}
	if r.Joiner == "" {
		r.Joiner = JoinerMarker
	}
	if r.CaseMarkup {
		if r.mode == modeNone || r.mode == modeSpace {
			return r, fmt.Errorf("case_markup also enables segment_case which is not compatible with 'none' and 'space' tokenization modes")
		}
		r.SegmentCase = true
	}
	switch {
	case r.JoinerAnnotate && r.SpacerAnnotate:
		return r, fmt.Errorf("joiner_annotate and spacer_annotate can't be set at the same time")
	case r.SpacerNew && !r.SpacerAnnotate:
		return r, fmt.Errorf("spacer_new requires spacer_annotate")
	case r.JoinerNew && !r.JoinerAnnotate:
		return r, fmt.Errorf("joiner_new requires joiner_annotate")
	case r.SupportPriorJoiners && utf8.RuneCountInString(r.Joiner) != 1:
		return r, fmt.Errorf("support_prior_joiners does not support multi-character joiners")
	case r.WithSeparators && (r.SpacerAnnotate || r.JoinerAnnotate):
		return r, fmt.Errorf("spacer_annotate or joiner_annotate should not be used when with_separators is enabled since the output is already reversible")
	}
	for _, a := range r.SegmentAlphabet {
		c := scriptCode(a)
		if c < 0 {
			return r, fmt.Errorf("invalid Unicode script in segment_alphabet list: %s", a)
		}
		if r.segmentScripts == nil {
			r.segmentScripts = map[int]bool{}
		}
		r.segmentScripts[c] = true
	}
	if r.Lang != "" {
		if !validLanguage(r.Lang) {
			return r, fmt.Errorf("lang is not a valid ISO language code: %s", r.Lang)
		}
	}
	return r, nil
}

// validLanguage is ICU's is_valid_language test: the locale's language has
// an ISO 639 code.
func validLanguage(lang string) bool {
	tag, err := language.Parse(lang)
	if err != nil {
		return false
	}
	base, conf := tag.Base()
	if conf == language.No {
		return false
	}
	return base.ISO3() != "" && !strings.EqualFold(base.String(), "und")
}

// Check checks the options as the Tokenizer does when it is made.
func (o Options) Check() error {
	_, err := o.validate()
	return err
}
