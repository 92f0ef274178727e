package modeldir

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/onmttok"
	"github.com/attnx/attnx/subword"
)

// Tokenizer file names inside a model directory, by kind: one per side, or
// one shared by both sides when they name the same file.
var tokenizerFiles = map[string][3]string{
	subword.KindSentencePiece: {"source.model", "target.model", "sentencepiece.model"},
	subword.KindSubwordNMT:    {"source.codes", "target.codes", "bpe.codes"},
	onmttok.SubwordBPE:        {"source.bpe", "target.bpe", "bpe.model"},
}

// subwordVocabFiles are the names of the OpenNMT Tokenizer's subword
// vocabularies (onmt_tokenize's subword_vocab).
var subwordVocabFiles = [3]string{"source.subword-vocab", "target.subword-vocab", "subword-vocab"}

// sameOrNone: both paths empty, or the same file.
func sameOrNone(a, b string) bool {
	return (a == "" && b == "") || sameFile(a, b)
}

// configTokenizers fills in opt's tokenizers from those the toolkit's
// configuration names, for each side the flags leave open. A named file
// that cannot be found or used is a note, not an error: the model still
// runs on text tokenised as in training.
func configTokenizers(opt *Options, refs [2]*checkpoint.TokenizerRef) []string {
	var notes []string
	for i, dst := range []**subword.Spec{&opt.SrcTokenizer, &opt.TgtTokenizer} {
		r := refs[i]
		if r == nil || *dst != nil {
			continue
		}
		side := [2]string{"source", "target"}[i]
		flag := [2]string{"--src-tokenizer", "--tgt-tokenizer"}[i]
		switch {
		case r.Kind == checkpoint.TokenizerOpenNMT:
			if m := r.Missing(); m != "" {
				notes = append(notes, fmt.Sprintf("%s tokenizer: the onmt_tokenize transform's %s: pass %s FILE (its subword model) with --onmttok KWARGS to translate raw text",
					side, m, flag))
				continue
			}
			c := *r.OpenNMT
			*dst = &subword.Spec{Kind: subword.KindOpenNMT, OpenNMT: &c}
			opt.fromConfig[i] = true
			from := r.Option
			if c.SubwordModel != "" {
				from = c.SubwordModel + " from " + r.Option
			}
			notes = append(notes, fmt.Sprintf("%s tokenizer: the OpenNMT Tokenizer (onmt_tokenize), %s", side, from))
		case r.Kind == subword.KindChatbot:
			*dst = &subword.Spec{Kind: r.Kind}
			opt.fromConfig[i] = true
			notes = append(notes, fmt.Sprintf("%s tokenizer: %s", side, r.Option))
		case r.Path == "":
			notes = append(notes, fmt.Sprintf("%s tokenizer: %s: pass %s FILE to translate raw text", side, r.Missing(), flag))
		case r.Pretokenizer != "" && r.Pretokenizer != subword.PretokenizeNone && r.Pretokenizer != subword.PretokenizeMoses:
			notes = append(notes, fmt.Sprintf("%s tokenizer: %s's pretokenizer %q is not implemented in attnx, so the tokenizer is not recorded: pass %s %s to apply it to text you pretokenise yourself",
				side, r.Option, r.Pretokenizer, flag, r.Path))
		default:
			*dst = &subword.Spec{Kind: r.Kind, File: r.Path, Separator: r.Separator, Lowercase: r.Lowercase, Restricted: r.Restricted, Trim: r.Trim, Decode: r.Decode}
			if r.Pretokenizer == subword.PretokenizeMoses {
				(*dst).Pretokenizer, (*dst).Lang = r.Pretokenizer, r.Lang
				(*dst).MosesDashSplits, (*dst).MosesNoEscape = r.MosesDashSplits, r.MosesNoEscape
			}
			opt.fromConfig[i] = true
			notes = append(notes, fmt.Sprintf("%s tokenizer: %s from %s", side, r.Path, r.Option))
		}
	}
	return notes
}

// tokenizerCopy is a tokenizer file Export copies into the directory.
type tokenizerCopy struct{ from, name string }

// addTokenizers checks the tokenizers of opt (their File a path on disk)
// against the model's vocabularies, records them in info under the names
// they get in the model directory, and returns the files to copy there
// and notes on how well the vocabularies fit.
func addTokenizers(info *Info, opt Options) ([]tokenizerCopy, []string, error) {
	var copies []tokenizerCopy
	var notes []string
	same := opt.SrcTokenizer != nil && opt.TgtTokenizer != nil && opt.SrcTokenizer.Kind == opt.TgtTokenizer.Kind &&
		sameFile(opt.SrcTokenizer.File, opt.TgtTokenizer.File)
	if opt.SrcTokenizer != nil && opt.TgtTokenizer != nil && opt.SrcTokenizer.OpenNMT != nil && opt.TgtTokenizer.OpenNMT != nil {
		s, t := opt.SrcTokenizer.OpenNMT, opt.TgtTokenizer.OpenNMT
		same = s.SubwordType == t.SubwordType && sameOrNone(s.SubwordModel, t.SubwordModel) && sameOrNone(s.Vocabulary, t.Vocabulary)
	}
	for i, side := range []struct {
		spec            *subword.Spec
		flag, vocabFlag string
		name            string
		vocab           []string
		dst             **subword.Spec
	}{
		{opt.SrcTokenizer, "--src-tokenizer", "--src-vocab", "source", info.SrcTokens, &info.SrcTokenizer},
		{opt.TgtTokenizer, "--tgt-tokenizer", "--tgt-vocab", "target", info.TgtTokens, &info.TgtTokenizer},
	} {
		if side.spec == nil {
			continue
		}
		spec := *side.spec
		if side.vocab == nil {
			return nil, nil, fmt.Errorf("%s %s: the model has no %s vocabulary to map its pieces to; pass %s too", side.flag, spec.File, side.name, side.vocabFlag)
		}
		tok, err := subword.Open(spec, "", side.vocab)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", side.flag, err)
		}
		special := map[string]bool{}
		for _, id := range []int64{info.Special.SOS, info.Special.EOS, info.Special.PAD, info.Special.UNK} {
			if id >= 0 && id < int64(len(side.vocab)) {
				special[side.vocab[id]] = true
			}
		}
		// The toolkits' control symbols, which no tokenizer produces and
		// no one expects it to: fairseq's <s> (its SOS is </s>) and the
		// madeupwordNNNN it pads a dictionary with to a multiple of 8.
		for _, v := range side.vocab {
			if controlSymbol(v) {
				special[v] = true
			}
		}
		missing, total, examples := subword.Fit(tok, side.vocab, special)
		switch {
		case total > 0 && 2*missing > total && opt.fromConfig[i]:
			// The configuration names it, but the vocabulary says otherwise:
			// keep the model usable on tokenised text.
			notes = append(notes, fmt.Sprintf("%s tokenizer %s not recorded: %d of the %d %s vocabulary tokens are not pieces it produces (e.g. %q); text must come tokenised as in training",
				side.name, subword.Describe(tok), missing, total, side.name, examples))
			continue
		case total > 0 && 2*missing > total:
			return nil, nil, fmt.Errorf("%s %s (%s) does not fit the %s vocabulary: %d of its %d tokens are not pieces this tokenizer produces (e.g. %q); is it the tokenizer this model was trained with?",
				side.flag, spec.File, subword.Describe(tok), side.name, missing, total, examples)
		case missing > 0:
			what := "no input text can reach them"
			if side.name == "target" {
				what = "the decoder may still output them, and they are joined into the text as they are"
			}
			notes = append(notes, fmt.Sprintf("%s tokenizer: %d of the %d %s vocabulary tokens are not pieces it produces (e.g. %q); %s",
				side.name, missing, total, side.name, examples, what))
		}
		if spec.OpenNMT != nil {
			c := *spec.OpenNMT
			for _, f := range []struct {
				path  *string
				names [3]string
			}{{&c.SubwordModel, tokenizerFiles[c.SubwordType]}, {&c.Vocabulary, subwordVocabFiles}} {
				if *f.path == "" {
					continue
				}
				name := f.names[i]
				if same {
					name = f.names[2]
				}
				if !same || i == 0 {
					copies = append(copies, tokenizerCopy{from: *f.path, name: name})
				}
				*f.path = name
			}
			spec.OpenNMT = &c
		}
		if spec.File != "" { // the chatbot's normalisation has no file
			names := tokenizerFiles[spec.Kind]
			name := names[i]
			if same {
				name = names[2]
			}
			if !same || i == 0 {
				copies = append(copies, tokenizerCopy{from: spec.File, name: name})
			}
			spec.File = name
		}
		*side.dst = &spec
	}
	return copies, notes, nil
}

func sameFile(a, b string) bool {
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// copyTokenizers copies the tokenizer files into the directory being
// written.
func copyTokenizers(dir string, copies []tokenizerCopy) ([]FileInfo, error) {
	var out []FileInfo
	for _, c := range copies {
		data, err := os.ReadFile(c.from)
		if err != nil {
			return nil, err
		}
		if len(data) == 0 {
			return nil, errors.New(c.from + ": empty file")
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, c.name), data, 0o644); err != nil {
			return nil, err
		}
		out = append(out, FileInfo{Role: "tokenizer", Name: c.name, Bytes: int64(len(data)), From: c.from})
	}
	return out, nil
}

// Tokenizers opens a model directory's tokenizers (nil for a side without
// one).
func (m *Info) Tokenizers(dir string) (src, tgt subword.Tokenizer, err error) {
	if m.SrcTokenizer != nil {
		if src, err = subword.Open(*m.SrcTokenizer, dir, m.SrcTokens); err != nil {
			return nil, nil, fmt.Errorf("src_tokenizer: %w", err)
		}
	}
	if m.TgtTokenizer != nil {
		if tgt, err = subword.Open(*m.TgtTokenizer, dir, m.TgtTokens); err != nil {
			return nil, nil, fmt.Errorf("tgt_tokenizer: %w", err)
		}
	}
	return src, tgt, nil
}

// controlSymbol reports a vocabulary entry that is a toolkit's control
// symbol, never a tokenizer's piece: <s>, </s>, <pad>, <unk>, <blank>,
// fairseq's madeupwordNNNN dictionary padding and OpenNMT-py's
// averyunlikelytokenNNNN vocabulary padding (-vocab_size_multiple).
func controlSymbol(v string) bool {
	switch v {
	case "<s>", "</s>", "<pad>", "<unk>", "<blank>":
		return true
	}
	for _, pad := range []string{"madeupword", "averyunlikelytoken"} {
		if digits, ok := strings.CutPrefix(v, pad); ok && digits != "" && strings.Trim(digits, "0123456789") == "" {
			return true
		}
	}
	return false
}
