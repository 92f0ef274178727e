package subword

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer kinds, as attnx.json records them.
const (
	KindSentencePiece = "sentencepiece"
	KindSubwordNMT    = "subword-nmt"
)

// Pretokenizers of subword-nmt tokenizers: what splits text into the words
// BPE segments.
const (
	// PretokenizeNone splits at spaces only: text must come tokenised the
	// way the training data was.
	PretokenizeNone = "none"
)

// Tokenizer turns raw text into a model's subword pieces and pieces back
// into text.
type Tokenizer interface {
	// Encode segments text into pieces.
	Encode(text string) []string
	// Decode joins pieces into text.
	Decode(pieces []string) string
}

// Spec describes a tokenizer of a model directory (attnx.json's
// src_tokenizer and tgt_tokenizer).
type Spec struct {
	// Kind is "sentencepiece" or "subword-nmt".
	Kind string `json:"kind"`
	// File is the tokenizer's file: a SentencePiece .model or subword-nmt
	// codes. In attnx.json it is a file name inside the model directory.
	File string `json:"file"`
	// Separator is subword-nmt's joiner ("" means "@@").
	Separator string `json:"separator,omitempty"`
	// Glossaries are subword-nmt's glossaries (regular expressions of words
	// never split).
	Glossaries []string `json:"glossaries,omitempty"`
	// Pretokenizer is how text is split into words before subword-nmt BPE:
	// "none" (at spaces). "" means "none".
	Pretokenizer string `json:"pretokenizer,omitempty"`
	// Lowercase lowercases text before segmentation (JoeyNMT's
	// data.src.lowercase).
	Lowercase bool `json:"lowercase,omitempty"`
	// Restricted limits the output to pieces in the model's vocabulary, as
	// JoeyNMT does (its tokenizers' set_vocab: SentencePiece's
	// SetVocabulary, apply_bpe's vocabulary filter).
	Restricted bool `json:"vocabulary_restricted,omitempty"`
}

// Check checks a Spec read from attnx.json: a known kind, a plain file
// name inside the model directory, options that fit the kind.
func (s Spec) Check() error {
	switch s.Kind {
	case KindSentencePiece:
		if s.Separator != "" || len(s.Glossaries) > 0 || s.Pretokenizer != "" {
			return errors.New("separator, glossaries and pretokenizer are subword-nmt options, not SentencePiece's")
		}
	case KindSubwordNMT:
		if s.Pretokenizer != "" && s.Pretokenizer != PretokenizeNone {
			return fmt.Errorf("pretokenizer %q: attnx applies subword-nmt BPE to text split at spaces (\"none\"); tokenise the text with %s first", s.Pretokenizer, s.Pretokenizer)
		}
	case KindChatbot:
		if s.File != "" || s.Separator != "" || len(s.Glossaries) > 0 || s.Pretokenizer != "" || s.Restricted {
			return errors.New("the chatbot tutorial's normalizeString has no file and no options")
		}
		return nil
	default:
		return fmt.Errorf("kind %q: want %q, %q or %q", s.Kind, KindSentencePiece, KindSubwordNMT, KindChatbot)
	}
	if s.File == "" || strings.ContainsAny(s.File, "/\\\x00") || s.File == "." || s.File == ".." {
		return fmt.Errorf("file %q: must be a plain file name inside the model directory", s.File)
	}
	return nil
}

// Open loads the tokenizer a Spec describes; its File is read from dir
// (or as it is when dir is ""). vocab is the model's vocabulary on this
// side, specials included: a Restricted tokenizer keeps to it.
func Open(s Spec, dir string, vocab []string) (Tokenizer, error) {
	path := s.File
	if dir != "" && s.File != "" {
		path = filepath.Join(dir, s.File)
	}
	var t Tokenizer
	switch s.Kind {
	case KindSentencePiece:
		sp, err := LoadSentencePiece(path)
		if err != nil {
			return nil, err
		}
		if s.Restricted {
			if err := sp.SetVocabulary(vocab); err != nil {
				return nil, err
			}
		}
		t = sp
	case KindSubwordNMT:
		if s.Pretokenizer != "" && s.Pretokenizer != PretokenizeNone {
			return nil, fmt.Errorf("pretokenizer %q: attnx applies subword-nmt BPE to text split at spaces (\"none\")", s.Pretokenizer)
		}
		opts := BPEOptions{Separator: s.Separator, Glossaries: s.Glossaries}
		if s.Restricted {
			opts.Vocabulary = map[string]bool{}
			for _, v := range vocab {
				opts.Vocabulary[v] = true
			}
		}
		b, err := LoadBPE(path, opts)
		if err != nil {
			return nil, err
		}
		t = b
	case KindChatbot:
		t = ChatbotWords{}
	default:
		return nil, fmt.Errorf("tokenizer kind %q: want %q, %q or %q", s.Kind, KindSentencePiece, KindSubwordNMT, KindChatbot)
	}
	if s.Lowercase {
		t = lowercased{t}
	}
	return t, nil
}

// lowercased lowercases text before segmenting it.
type lowercased struct{ Tokenizer }

func (l lowercased) Encode(text string) []string { return l.Tokenizer.Encode(strings.ToLower(text)) }

// Describe says what a tokenizer is in a few words, for inspect.
func Describe(t Tokenizer) string {
	switch t := t.(type) {
	case lowercased:
		return Describe(t.Tokenizer) + ", lowercased input"
	case *SentencePiece:
		return fmt.Sprintf("SentencePiece %s model, %d pieces", t.ModelType(), t.Size())
	case *BPE:
		return fmt.Sprintf("subword-nmt BPE, %d merges, joiner %q", len(t.ranks), t.sep)
	case ChatbotWords:
		return "the PyTorch chatbot tutorial's normalizeString, then words"
	}
	return fmt.Sprintf("%T", t)
}

// Fit measures how a model's vocabulary fits a tokenizer: of the
// vocabulary's tokens (specials left out), how many are not pieces the
// tokenizer can produce. A tokenizer for another model's vocabulary leaves
// most of them out.
func Fit(t Tokenizer, vocab []string, special map[string]bool) (missing, total int, examples []string) {
	for _, tok := range vocab {
		if special[tok] {
			continue
		}
		total++
		if !Produces(t, tok) {
			missing++
			if len(examples) < 5 {
				examples = append(examples, tok)
			}
		}
	}
	return missing, total, examples
}

// Produces reports whether piece is one the tokenizer can output: a
// SentencePiece piece, or for BPE a single character or a merge's result,
// with or without the joiner.
func Produces(t Tokenizer, piece string) bool {
	switch t := t.(type) {
	case lowercased:
		return Produces(t.Tokenizer, piece)
	case *SentencePiece:
		_, ok := t.pieces[piece]
		if !ok {
			id, r := t.reserved[piece]
			ok = r && t.typ(id) == pieceByte
		}
		return ok
	case *BPE:
		p := strings.TrimSuffix(piece, t.sep)
		if p == "" {
			return false
		}
		if len([]rune(p)) == 1 {
			return true
		}
		if _, ok := t.reverse[p]; ok {
			return true
		}
		_, ok := t.reverse[p+endOfWord]
		return ok
	case ChatbotWords:
		return chatbotWord.MatchString(piece)
	}
	return false
}

// Detect tells a SentencePiece model from subword-nmt codes by content and
// returns the Spec of the file at path: SentencePiece models are binary
// protobuf messages, codes files are text with two symbols a line.
func Detect(path string) (Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return Spec{}, err
	}
	_, spErr := ParseSentencePiece(data)
	if spErr == nil {
		return Spec{Kind: KindSentencePiece, File: path}, nil
	}
	_, bpeErr := ParseBPE(data, BPEOptions{})
	if bpeErr == nil {
		return Spec{Kind: KindSubwordNMT, File: path}, nil
	}
	return Spec{}, fmt.Errorf("%s is neither a SentencePiece model (%v) nor subword-nmt BPE codes (%v)", path, spErr, bpeErr)
}
