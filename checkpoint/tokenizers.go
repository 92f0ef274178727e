package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/attnx/attnx/onmttok"
)

// Subword tokenizer kinds a toolkit's configuration can name (the values
// of package subword's kinds).
const (
	TokenizerSentencePiece = "sentencepiece"
	TokenizerSubwordNMT    = "subword-nmt"
	TokenizerOpenNMT       = "onmt_tokenize"
)

// TokenizerRef is a subword tokenizer a toolkit's configuration names for
// one side of the model.
type TokenizerRef struct {
	// Kind is TokenizerSentencePiece or TokenizerSubwordNMT.
	Kind string
	// Option names the configuration entry ("opt.src_subword_model",
	// "data.src.tokenizer_cfg.model_file") and Named is its value.
	Option, Named string
	// Path is the file found, "" when none of Tried exists; Outside says
	// where the name led out of the checkpoint's folder (findBeside):
	// nothing there is read.
	Path    string
	Tried   []string
	Outside []string
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
	// OpenNMT is the onmt_tokenize transform's tokenizer (Kind
	// TokenizerOpenNMT): its options, and its subword model and
	// vocabulary as found (Path is the subword model, "" when it has none
	// or it was not found; VocabOption names the option of the
	// vocabulary, VocabNamed its value, VocabTried and VocabOutside are
	// as Tried and Outside).
	OpenNMT                  *onmttok.Config
	VocabOption, VocabNamed  string
	VocabTried, VocabOutside []string
}

// isFile reports whether p names a regular file.
func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
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
			kind = TokenizerOpenNMT
		default:
			if why, ok := unappliedTransforms[t]; ok {
				notes = append(notes, fmt.Sprintf("the checkpoint's transforms include %s, which attnx does not apply: %s", t, why))
			}
		}
	}
	if kind == TokenizerOpenNMT {
		refs, more := o.onmtTokenizers(path)
		return refs, append(notes, more...)
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
		r.find(filepath.Dir(path))
		refs[i] = r
	}
	return refs, notes
}

// unappliedTransforms are OpenNMT-py 3.x transforms that change the text
// onmt_translate reads or writes and that attnx does not apply, with what
// a user must do instead.
var unappliedTransforms = map[string]string{
	"prefix":      "onmt_translate adds -src_prefix's tokens before each source and forces -tgt_prefix's at the start of each translation (removing them after); put the source prefix in the text yourself (a forced target prefix has no equivalent)",
	"suffix":      "onmt_translate adds -src_suffix's tokens after each source (and -tgt_suffix's to targets); put them in the text yourself",
	"normalize":   "onmt_translate normalizes the source's punctuation first (sacremoses' normalizer and its -src_lang, -norm_quote_commas, -norm_numbers, -pre_replace_unicode_punct, -post_remove_control_chars options); normalize the text the same way before attnx",
	"uppercase":   "onmt_translate uppercases a random -upper_corpus_ratio of the sentences and strips their accents (it does so at inference too); attnx translates the text as it is, as onmt_translate does for the other sentences",
	"inlinetags":  "onmt_translate inserts tags around random dictionary matches in a -tags_corpus_ratio of the sentences (at inference too); attnx translates the text as it is, as onmt_translate does for the other sentences",
	"docify":      "onmt_translate joins sentences into documents (-doc_length, -max_context) and splits its output at ｟newline｠; translate documents as one line each",
	"terminology": "onmt_translate adds the target terms of -termbase_path matches to the source; give sources with the terms already added",
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
	r.find(dir)
	return r, nil
}

// find looks for the file r names in the folder dir (findBeside),
// setting Path, Tried and Outside.
func (r *TokenizerRef) find(dir string) {
	l := findBeside(r.Named, dir)
	r.Path, r.Tried, r.Outside = l.path, l.tried, l.outside
}

// Missing describes what of a tokenizer could not be found (for an
// onmt_tokenize one, its subword model or vocabulary), or was not read
// because its name leads out of the checkpoint's folder; "" when
// nothing is missing.
func (r *TokenizerRef) Missing() string {
	c := r.OpenNMT
	if c == nil {
		if r.Path == "" {
			return fmt.Sprintf("%s names %s %q%s", r.Option, r.Kind, r.Named, notFound(r.Tried, r.Outside))
		}
		return ""
	}
	if c.SubwordType != onmttok.SubwordNone && c.SubwordModel == "" {
		return fmt.Sprintf("%s names %s model %q%s", r.Option, c.SubwordType, r.Named, notFound(r.Tried, r.Outside))
	}
	if r.VocabNamed != "" && c.Vocabulary == "" {
		return fmt.Sprintf("%s names subword vocabulary %q%s", r.VocabOption, r.VocabNamed, notFound(r.VocabTried, r.VocabOutside))
	}
	return ""
}
