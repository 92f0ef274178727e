package subword

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/onmttok"
)

// KindOpenNMT is the OpenNMT Tokenizer as OpenNMT-py's onmt_tokenize
// transform applies it (package onmttok), with its subword model.
const KindOpenNMT = "onmt_tokenize"

// OpenOpenNMT makes the tokenizer of an onmt_tokenize configuration; its
// subword model and vocabulary are read from dir (or as they are when dir
// is "").
func OpenOpenNMT(c onmttok.Config, dir string) (Tokenizer, error) {
	if err := c.Check(); err != nil {
		return nil, err
	}
	at := func(p string) string {
		if dir == "" {
			return p
		}
		return filepath.Join(dir, p)
	}
	var vocab []string
	if c.Vocabulary != "" {
		v, err := onmttok.ReadVocabulary(at(c.Vocabulary), c.VocabularyThreshold)
		if err != nil {
			return nil, err
		}
		vocab = v
	}
	var sw onmttok.Subword
	switch c.SubwordType {
	case onmttok.SubwordBPE:
		b, err := onmttok.LoadBPE(at(c.SubwordModel))
		if err != nil {
			return nil, err
		}
		if c.Vocabulary != "" {
			b.SetVocabulary(vocab)
		}
		sw = b
	case onmttok.SubwordSentencePiece:
		sp, err := LoadSentencePiece(at(c.SubwordModel))
		if err != nil {
			return nil, err
		}
		if c.Vocabulary != "" {
			if c.Options.JoinerAnnotate || c.Options.SpacerNew {
				return nil, errors.New("SentencePiece vocabulary restriction requires the tokenization to use \"spacer_annotate\" (same as spm_encode)")
			}
			if err := sp.SetVocabulary(vocab); err != nil {
				return nil, err
			}
		}
		sw = onmttok.SentencePiece(sp, func(p string) bool { return Produces(sp, p) })
	}
	t, err := onmttok.New(c.Options, sw)
	if err != nil {
		return nil, err
	}
	if c.NewlinePlaceholder {
		return newlines{t}, nil
	}
	return t, nil
}

// newlinePlaceholder is OpenNMT-py's placeholder of a line break
// (DefaultTokens.SEP).
const newlinePlaceholder = "｟newline｠"

// newlines turns OpenNMT-py's newline placeholder into a line break before
// tokenization, and line breaks into it after detokenization.
type newlines struct{ *onmttok.Tokenizer }

func (n newlines) Encode(text string) []string {
	return n.Tokenizer.Tokenize(strings.ReplaceAll(text, newlinePlaceholder, "\n"))
}

func (n newlines) Decode(pieces []string) string {
	return strings.ReplaceAll(n.Tokenizer.Detokenize(pieces), "\n", newlinePlaceholder)
}

// checkOpenNMT checks an onmt_tokenize Spec: its configuration, and its
// files plain names inside the model directory.
func checkOpenNMT(s Spec) error {
	if s.OpenNMT == nil {
		return fmt.Errorf("kind %s needs its onmttok configuration", KindOpenNMT)
	}
	if s.File != "" || s.Separator != "" || len(s.Glossaries) > 0 || s.Pretokenizer != "" || s.Lang != "" || s.Restricted || s.Lowercase || s.Decode != "" || s.Trim {
		return fmt.Errorf("kind %s takes its options from onmttok only", KindOpenNMT)
	}
	if err := s.OpenNMT.Check(); err != nil {
		return err
	}
	for _, f := range []string{s.OpenNMT.SubwordModel, s.OpenNMT.Vocabulary} {
		if f != "" && !plainName(f) {
			return fmt.Errorf("file %q: must be a plain file name inside the model directory", f)
		}
	}
	return nil
}

func plainName(f string) bool {
	return f != "" && !strings.ContainsAny(f, "/\\\x00") && f != "." && f != ".."
}
