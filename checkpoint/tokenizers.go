package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
)

// Subword tokenizer kinds a toolkit's configuration can name (the values
// of package subword's kinds).
const (
	TokenizerSentencePiece = "sentencepiece"
	TokenizerSubwordNMT    = "subword-nmt"
)

// TokenizerRef is a subword tokenizer a toolkit's configuration names for
// one side of the model.
type TokenizerRef struct {
	// Kind is TokenizerSentencePiece or TokenizerSubwordNMT.
	Kind string
	// Option names the configuration entry ("opt.src_subword_model",
	// "data.src.tokenizer_cfg.model_file") and Named is its value.
	Option, Named string
	// Path is the file found, "" when none of Tried exists.
	Path  string
	Tried []string
	// Separator, Lowercase, Restricted and Pretokenizer are the options
	// of package subword's Spec.
	Separator    string
	Lowercase    bool
	Restricted   bool
	Pretokenizer string
	// Lang is the language (JoeyNMT's data.src.lang), for the Moses
	// pretokenizer.
	Lang string
	// Trim: the toolkit strips the decoded text (JoeyNMT's SentencePiece).
	Trim bool
	// MosesDashSplits, MosesNoEscape and Decode are as in Spec (fairseq's
	// --tokenizer moses and --bpe sentencepiece).
	MosesDashSplits, MosesNoEscape bool
	Decode                         string
}

// isFile reports whether p names a regular file.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// findBeside looks for a file a checkpoint or configuration names, by one
// rule for every toolkit: beside it first (the toolkits copy tokenizers and
// vocabularies into their model directories, and a path recorded at
// training time may name another machine's file): named relative to dir,
// its base name in dir, then each of fallbacks (base names in dir), and
// only then named as written (absolute, or relative to the working
// directory). It returns the file found ("" for none) and every path
// tried, in order.
func findBeside(named, dir string, fallbacks ...string) (string, []string) {
	var tried []string
	if named != "" {
		if !filepath.IsAbs(named) {
			tried = append(tried, filepath.Join(dir, named))
		}
		tried = append(tried, filepath.Join(dir, filepath.Base(named)))
	}
	for _, f := range fallbacks {
		tried = append(tried, filepath.Join(dir, f))
	}
	if named != "" {
		tried = append(tried, named)
	}
	tried = uniqueStrings(tried)
	for _, p := range tried {
		if isFile(p) {
			return p, tried
		}
	}
	return "", tried
}

// OpenNMTTokenizers returns the subword tokenizers an OpenNMT-py
// checkpoint's options name (transforms sentencepiece or bpe, with
// src_subword_model and tgt_subword_model; the target side shares the
// source's model when it names none), looked for beside the checkpoint
// at path. Other tokenizing transforms are described in notes.
func (o *OpenNMT) Tokenizers(path string) (refs [2]*TokenizerRef, notes []string) {
	kind := ""
	for _, t := range anyStrings(o.Opt["transforms"]) {
		switch t {
		case "sentencepiece":
			kind = TokenizerSentencePiece
		case "bpe":
			kind = TokenizerSubwordNMT
		case "onmt_tokenize":
			notes = append(notes, "the checkpoint's transforms include onmt_tokenize (OpenNMT's Tokenizer), which attnx does not apply: give text tokenised as in training, or --src-tokenizer/--tgt-tokenizer")
		}
	}
	if kind == "" {
		return refs, notes
	}
	src, _ := o.Opt["src_subword_model"].(string)
	tgt, _ := o.Opt["tgt_subword_model"].(string)
	if tgt == "" {
		tgt = src
	}
	for i, side := range []struct{ option, named string }{{"opt.src_subword_model", src}, {"opt.tgt_subword_model", tgt}} {
		if side.named == "" {
			continue
		}
		r := &TokenizerRef{Kind: kind, Option: side.option, Named: side.named}
		r.Path, r.Tried = findBeside(side.named, filepath.Dir(path))
		refs[i] = r
	}
	return refs, notes
}

func anyStrings(v any) []string {
	var out []string
	if l, ok := v.([]any); ok {
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
	}
	return out
}

// joeyTokenizer reads one side's tokenizer from a JoeyNMT data section:
// level bpe with tokenizer_type (or 1.x's bpe_type) sentencepiece
// (tokenizer_cfg.model_file) or subword-nmt (tokenizer_cfg.codes). JoeyNMT
// keeps both to the model's vocabulary (its set_vocab).
func joeyTokenizer(s joeySide, side, dir string) (*TokenizerRef, error) {
	if s.Level != "bpe" {
		return nil, nil
	}
	kind := firstNonEmpty(s.TokenizerType, s.BPEType, TokenizerSentencePiece)
	r := &TokenizerRef{Lowercase: s.Lowercase, Restricted: true, Pretokenizer: s.TokenizerCfg.Pretokenizer, Separator: s.TokenizerCfg.Separator, Lang: s.Lang}
	switch kind {
	case TokenizerSentencePiece:
		r.Kind, r.Option, r.Named = kind, "data."+side+".tokenizer_cfg.model_file", s.TokenizerCfg.ModelFile
		r.Trim = true // post_process: spm.decode(...).strip()
	case TokenizerSubwordNMT:
		r.Kind, r.Option, r.Named = kind, "data."+side+".tokenizer_cfg.codes", s.TokenizerCfg.Codes
	default:
		return nil, fmt.Errorf("data.%s.tokenizer_type %q: want sentencepiece or subword-nmt", side, kind)
	}
	if r.Named == "" {
		return nil, fmt.Errorf("data.%s: level bpe with %s names no file (%s)", side, kind, r.Option)
	}
	r.Path, r.Tried = findBeside(r.Named, dir)
	return r, nil
}
