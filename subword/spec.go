package subword

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/moses"
	"github.com/attnx/attnx/onmttok"
)

// Tokenizer kinds, as attnx.json records them.
const (
	KindSentencePiece = "sentencepiece"
	KindSubwordNMT    = "subword-nmt"
)

// Pretokenizers: what splits text into words before the subword tokenizer
// (and joins them after it).
const (
	// PretokenizeNone splits at spaces only (subword-nmt) or leaves the text
	// to the model (SentencePiece).
	PretokenizeNone = "none"
	// PretokenizeMoses is the Moses tokenizer of Spec.Lang before, and its
	// detokenizer after (package moses; JoeyNMT's pretokenizer: moses).
	PretokenizeMoses = "moses"
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
	// Kind is "sentencepiece", "subword-nmt", "chatbot-normalize" or
	// "onmt_tokenize".
	Kind string `json:"kind"`
	// File is the tokenizer's file: a SentencePiece .model or subword-nmt
	// codes ("" for chatbot-normalize, which has none). In attnx.json it is
	// a file name inside the model directory.
	File string `json:"file"`
	// Separator is subword-nmt's joiner ("" means "@@").
	Separator string `json:"separator,omitempty"`
	// Glossaries are subword-nmt's glossaries (regular expressions of words
	// never split).
	Glossaries []string `json:"glossaries,omitempty"`
	// Pretokenizer is how text is split into words before the subword
	// tokenizer: "none" (or "") or "moses" (the Moses tokenizer of Lang,
	// and its detokenizer on the output).
	Pretokenizer string `json:"pretokenizer,omitempty"`
	// Lang is the Moses tokenizer's language ("" means "en").
	Lang string `json:"lang,omitempty"`
	// Lowercase lowercases text before segmentation (JoeyNMT's
	// data.src.lowercase).
	Lowercase bool `json:"lowercase,omitempty"`
	// Restricted limits the output to pieces in the model's vocabulary, as
	// JoeyNMT does (its tokenizers' set_vocab: SentencePiece's
	// SetVocabulary, apply_bpe's vocabulary filter).
	Restricted bool `json:"vocabulary_restricted,omitempty"`
	// MosesDashSplits splits hyphens between letters and digits ("e @-@
	// mail"), and MosesNoEscape leaves & | < > ' " [ ] unescaped: the
	// Moses pretokenizer's aggressive_dash_splits and escape=False
	// (fairseq's --tokenizer moses splits and escapes by default; JoeyNMT's
	// does neither split).
	MosesDashSplits bool `json:"moses_dash_splits,omitempty"`
	MosesNoEscape   bool `json:"moses_no_escape,omitempty"`
	// Decode is how pieces become text: "" the tokenizer's own decoding
	// (spm_decode's: the unknown piece becomes " ⁇ "), or "fairseq",
	// fairseq's sentencepiece decode: the pieces joined, "▁" a space, the
	// ends stripped, an <unk> left as it is.
	Decode string `json:"decode,omitempty"`
	// Trim removes white space around the decoded text, as JoeyNMT's
	// SentencePiece detokenizer does (its post_process strips what
	// sentencepiece's decode leaves, such as the space of a final "▁").
	Trim bool `json:"trim,omitempty"`
	// OpenNMT is the configuration of kind onmt_tokenize (the OpenNMT
	// Tokenizer's options, subword model and vocabulary; its files are
	// plain names inside the model directory). File is empty for it.
	OpenNMT *onmttok.Config `json:"onmttok,omitempty"`
}

// Check checks a Spec read from attnx.json: a known kind, a plain file
// name inside the model directory, options that fit the kind.
func (s Spec) Check() error {
	if s.OpenNMT != nil && s.Kind != KindOpenNMT {
		return fmt.Errorf("onmttok goes with kind %s", KindOpenNMT)
	}
	switch s.Kind {
	case KindOpenNMT:
		return checkOpenNMT(s)
	case KindSentencePiece:
		if s.Separator != "" || len(s.Glossaries) > 0 {
			return errors.New("separator and glossaries are subword-nmt options, not SentencePiece's")
		}
		if err := checkPretokenizer(s); err != nil {
			return err
		}
	case KindSubwordNMT:
		if err := checkPretokenizer(s); err != nil {
			return err
		}
	case KindChatbot:
		if s.File != "" || s.Separator != "" || len(s.Glossaries) > 0 || s.Pretokenizer != "" || s.Lang != "" || s.Restricted {
			return errors.New("the chatbot tutorial's normalizeString has no file and no options")
		}
		return nil
	default:
		return fmt.Errorf("kind %q: want %q, %q, %q or %q", s.Kind, KindSentencePiece, KindSubwordNMT, KindChatbot, KindOpenNMT)
	}
	if !plainName(s.File) {
		return fmt.Errorf("file %q: must be a plain file name inside the model directory", s.File)
	}
	return nil
}

// Open loads the tokenizer a Spec describes; its File is read from dir
// (or as it is when dir is ""). vocab is the model's vocabulary on this
// side, specials included: a Restricted tokenizer keeps to it.
func Open(s Spec, dir string, vocab []string) (Tokenizer, error) {
	if s.Kind == KindOpenNMT {
		if s.OpenNMT == nil {
			return nil, fmt.Errorf("kind %s needs its onmttok configuration", KindOpenNMT)
		}
		return OpenOpenNMT(*s.OpenNMT, dir)
	}
	if err := checkPretokenizer(s); err != nil {
		return nil, err
	}
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
		return nil, fmt.Errorf("tokenizer kind %q: want %q, %q, %q or %q", s.Kind, KindSentencePiece, KindSubwordNMT, KindChatbot, KindOpenNMT)
	}
	if s.Decode == DecodeFairseq {
		t = fairseqDecoded{t}
	}
	if s.Lowercase {
		t = lowercased{t}
	}
	if s.Trim {
		t = trimmed{t}
	}
	if s.Pretokenizer == PretokenizeMoses {
		lang := s.Lang
		if lang == "" {
			lang = "en"
		}
		tok := moses.NewTokenizer(lang)
		tok.AggressiveDash, tok.NoEscape = s.MosesDashSplits, s.MosesNoEscape
		t = mosesWrapped{t, tok, moses.NewDetokenizer(lang)}
	}
	return t, nil
}

func checkPretokenizer(s Spec) error {
	if s.Decode != "" && (s.Decode != DecodeFairseq || s.Kind != KindSentencePiece) {
		return fmt.Errorf("decode %q: want \"\" or %q (with a SentencePiece model)", s.Decode, DecodeFairseq)
	}
	switch s.Pretokenizer {
	case "", PretokenizeNone:
		if s.Lang != "" {
			return fmt.Errorf("lang %q goes with the moses pretokenizer", s.Lang)
		}
		if s.MosesDashSplits || s.MosesNoEscape {
			return fmt.Errorf("moses_dash_splits and moses_no_escape go with the moses pretokenizer")
		}
	case PretokenizeMoses:
	default:
		return fmt.Errorf("pretokenizer %q: want none or moses", s.Pretokenizer)
	}
	return nil
}

// mosesWrapped runs the Moses tokenizer before a subword tokenizer and the
// detokenizer after it, as JoeyNMT's moses pretokenizer does (lowercasing,
// when set, comes after the Moses tokenizer).
type mosesWrapped struct {
	Tokenizer
	tok   *moses.Tokenizer
	detok *moses.Detokenizer
}

func (m mosesWrapped) Encode(text string) []string { return m.Tokenizer.Encode(m.tok.Tokenize(text)) }

func (m mosesWrapped) Decode(pieces []string) string {
	return m.detok.Detokenize(strings.Fields(m.Tokenizer.Decode(pieces)))
}

// DecodeFairseq is Spec.Decode's fairseq decoding of SentencePiece pieces.
const DecodeFairseq = "fairseq"

// fairseqDecoded joins pieces as fairseq's SentencepieceBPE.decode does:
// the pieces concatenated, U+2581 a space, white space stripped at both
// ends; no piece is special, so an unknown token stays "<unk>" (spm_decode
// writes " ⁇ ").
type fairseqDecoded struct{ Tokenizer }

func (f fairseqDecoded) Decode(pieces []string) string {
	return strings.TrimSpace(strings.ReplaceAll(strings.Join(pieces, ""), spaceSymbol, " "))
}

// CacheStats are the wrapped tokenizer's.
func (f fairseqDecoded) CacheStats() CacheStats { return cacheStats(f.Tokenizer) }

// trimmed removes the white space around decoded text.
type trimmed struct{ Tokenizer }

func (t trimmed) Decode(pieces []string) string { return strings.TrimSpace(t.Tokenizer.Decode(pieces)) }

// lowercased lowercases text before segmenting it.
type lowercased struct{ Tokenizer }

func (l lowercased) Encode(text string) []string { return l.Tokenizer.Encode(strings.ToLower(text)) }

// Describe says what a tokenizer is in a few words, for inspect.
func Describe(t Tokenizer) string {
	switch t := t.(type) {
	case lowercased:
		return Describe(t.Tokenizer) + ", lowercased input"
	case fairseqDecoded:
		return Describe(t.Tokenizer) + ", decoded as fairseq does (<unk> kept)"
	case trimmed:
		return Describe(t.Tokenizer) + ", output trimmed"
	case mosesWrapped:
		var opts []string
		if t.tok.AggressiveDash {
			opts = append(opts, "dashes split")
		}
		if !t.tok.NoEscape {
			opts = append(opts, "escaped")
		}
		return Describe(t.Tokenizer) + ", after the Moses tokenizer (" + strings.Join(append([]string{t.tok.Lang()}, opts...), ", ") + ")"
	case *SentencePiece:
		return fmt.Sprintf("SentencePiece %s model, %d pieces", t.ModelType(), t.Size())
	case *BPE:
		return fmt.Sprintf("subword-nmt BPE, %d merges, joiner %q", len(t.ranks), t.sep)
	case ChatbotWords:
		return "the PyTorch chatbot tutorial's normalizeString, then words"
	case newlines:
		return Describe(t.Tokenizer)
	case *onmttok.Tokenizer:
		return t.Describe()
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
	case trimmed:
		return Produces(t.Tokenizer, piece)
	case fairseqDecoded:
		return Produces(t.Tokenizer, piece)
	case mosesWrapped:
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
	case newlines:
		return t.Produces(piece)
	case *onmttok.Tokenizer:
		return t.Produces(piece)
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

// cacheStats is the cache counts of t, or of the tokenizer it wraps (zero
// for one without a cache).
func cacheStats(t Tokenizer) CacheStats {
	if c, ok := t.(interface{ CacheStats() CacheStats }); ok {
		return c.CacheStats()
	}
	return CacheStats{}
}

// CacheStats are the wrapped tokenizer's.
func (t trimmed) CacheStats() CacheStats { return cacheStats(t.Tokenizer) }

// CacheStats are the wrapped tokenizer's.
func (l lowercased) CacheStats() CacheStats { return cacheStats(l.Tokenizer) }

// CacheStats are the wrapped tokenizer's.
func (m mosesWrapped) CacheStats() CacheStats { return cacheStats(m.Tokenizer) }
