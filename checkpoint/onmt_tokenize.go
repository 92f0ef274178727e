package checkpoint

import (
	"fmt"
	"path/filepath"

	"github.com/attnx/attnx/onmttok"
)

// onmtTokenizers reads the onmt_tokenize transform's tokenizers from an
// OpenNMT-py checkpoint's options, as the transform's warm_up builds them:
// for each side its subword_type, subword_model, onmttok_kwargs (a dict,
// or the string of one as the command line gives it) and, when
// vocab_threshold is above 0, subword_vocab; with share_vocab and the
// same vocabulary options, the target side takes the source's tokenizer.
// What cannot be used is a note, and that side has no tokenizer.
func (o *OpenNMT) onmtTokenizers(path string) (refs [2]*TokenizerRef, notes []string) {
	if b, _ := o.Opt["gpt2_pretok"].(bool); b {
		return refs, []string{"the checkpoint's onmt_tokenize runs with gpt2_pretok (GPT-2's byte-level mapping before the Tokenizer), which attnx does not implement: give text tokenised as in training"}
	}
	dir := filepath.Dir(path)
	side := func(s string) (*TokenizerRef, error) {
		typ, _ := o.Opt[s+"_subword_type"].(string)
		if typ == "" {
			typ = onmttok.SubwordNone
		}
		model, _ := o.Opt[s+"_subword_model"].(string)
		kw, err := onmtKwargs(o.Opt[s+"_onmttok_kwargs"])
		if err != nil {
			return nil, fmt.Errorf("opt.%s_onmttok_kwargs: %w", s, err)
		}
		opts, err := onmttok.FromKwargs(kw)
		if err != nil {
			return nil, fmt.Errorf("opt.%s_onmttok_kwargs: %w", s, err)
		}
		c := &onmttok.Config{Options: opts, SubwordType: typ}
		r := &TokenizerRef{Kind: TokenizerOpenNMT, Option: "opt." + s + "_onmttok_kwargs", OpenNMT: c}
		if typ != onmttok.SubwordNone {
			if model == "" {
				return nil, fmt.Errorf("opt.%s_subword_type is %s but opt.%s_subword_model names no model", s, typ, s)
			}
			r.Option, r.Named = "opt."+s+"_subword_model", model
			r.find(dir)
			c.SubwordModel = r.Path
			if threshold := optInt(o.Opt[s+"_vocab_threshold"]); threshold > 0 {
				if v, _ := o.Opt[s+"_subword_vocab"].(string); v != "" {
					c.VocabularyThreshold = threshold
					r.VocabOption, r.VocabNamed = "opt."+s+"_subword_vocab", v
					l := findBeside(v, dir)
					c.Vocabulary, r.VocabTried, r.VocabOutside = l.path, l.tried, l.outside
				}
			}
		}
		if err := c.Options.Check(); err != nil {
			return nil, fmt.Errorf("opt.%s_onmttok_kwargs: %w", s, err)
		}
		return r, nil
	}
	src, err := side("src")
	if err != nil {
		return refs, []string{fmt.Sprintf("the checkpoint's onmt_tokenize transform: %v; give text tokenised as in training", err)}
	}
	tgt := src
	share, _ := o.Opt["share_vocab"].(bool)
	vocab := func(s string) [2]any { // the vocabulary options the transform passes
		v, _ := o.Opt[s+"_subword_vocab"].(string)
		if t := optInt(o.Opt[s+"_vocab_threshold"]); t > 0 && v != "" {
			return [2]any{v, t}
		}
		return [2]any{"", 0}
	}
	sameVocab := vocab("src") == vocab("tgt")
	if !share || !sameVocab {
		if tgt, err = side("tgt"); err != nil {
			return [2]*TokenizerRef{src, nil}, []string{fmt.Sprintf("the checkpoint's onmt_tokenize transform: %v; the target side's text is left as the model's tokens", err)}
		}
	}
	// OpenNMT-py turns its newline placeholder into a line break before
	// tokenizing when the source's subword model is SentencePiece and the
	// target's options do not preserve placeholders.
	nl := src.OpenNMT.SubwordType == onmttok.SubwordSentencePiece && !tgt.OpenNMT.Options.PreservePlaceholders
	for i, r := range []*TokenizerRef{src, tgt} {
		c := *r.OpenNMT
		c.NewlinePlaceholder = nl
		rr := *r
		rr.OpenNMT = &c
		refs[i] = &rr
	}
	for _, s := range []string{"src", "tgt"} {
		nbest := optInt(o.Opt[s+"_subword_nbest"])
		alpha, _ := o.Opt[s+"_subword_alpha"].(float64)
		if alpha != 0 || (nbest != 0 && nbest != 1) {
			notes = append(notes, fmt.Sprintf("opt.%s_subword_alpha %g, %s_subword_nbest %d: subword regularization, which onmt_translate applies at inference too (pyonmttok tokenizes in training mode); attnx segments deterministically, as with none", s, alpha, s, nbest))
		}
	}
	return refs, notes
}

// onmtKwargs reads an onmttok_kwargs option: the dict OpenNMT-py's
// option check leaves, or the string of one.
func onmtKwargs(v any) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return map[string]any{"mode": "none"}, nil // the option's default
	case map[string]any:
		return x, nil
	case string:
		return onmttok.ParseKwargs(x)
	}
	return nil, fmt.Errorf("%v (%T) is not a dict", v, v)
}

func optInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case int:
		return x
	case float64:
		return int(x)
	}
	return 0
}
