package onmttok

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
)

// Subword model types, as OpenNMT-py's src_subword_type names them.
const (
	SubwordNone          = "none"
	SubwordBPE           = "bpe"
	SubwordSentencePiece = "sentencepiece"
)

// Config is a tokenizer as OpenNMT-py's onmt_tokenize transform makes one
// for a side: the Tokenizer's options (its onmttok_kwargs), the subword
// model (subword_type and subword_model) and the vocabulary the pieces
// are kept to (subword_vocab and vocab_threshold, which it passes when
// the threshold is above 0).
type Config struct {
	Options      Options `json:"options"`
	SubwordType  string  `json:"subword_type,omitempty"`
	SubwordModel string  `json:"subword_model,omitempty"`
	// Vocabulary is a file of "piece count" lines (or pieces alone, each
	// counted 1); the pieces counted at least VocabularyThreshold times
	// are kept.
	Vocabulary          string `json:"vocabulary,omitempty"`
	VocabularyThreshold int    `json:"vocabulary_threshold,omitempty"`
	// NewlinePlaceholder: OpenNMT-py turns "｟newline｠" into a line break
	// before tokenizing when the subword model is SentencePiece and the
	// target options do not preserve placeholders, and a line break in the
	// detokenized output into "｟newline｠".
	NewlinePlaceholder bool `json:"newline_placeholder,omitempty"`
}

// Check checks a Config's options and subword type (not its files).
func (c Config) Check() error {
	if _, err := c.Options.validate(); err != nil {
		return err
	}
	switch c.SubwordType {
	case "", SubwordNone:
		if c.SubwordModel != "" {
			return fmt.Errorf("subword model %q without a subword type (want bpe or sentencepiece)", c.SubwordModel)
		}
	case SubwordBPE, SubwordSentencePiece:
		if c.SubwordModel == "" {
			return fmt.Errorf("subword type %s names no model", c.SubwordType)
		}
	default:
		return fmt.Errorf("subword type %q: want none, bpe or sentencepiece", c.SubwordType)
	}
	if c.Vocabulary != "" && c.SubwordType != SubwordBPE && c.SubwordType != SubwordSentencePiece {
		return fmt.Errorf("vocabulary %q goes with a subword model", c.Vocabulary)
	}
	return nil
}

// ReadVocabulary reads a vocabulary file as the Tokenizer's
// load_vocabulary: one piece per line, its count after the first space
// (or tab), 1 when it has none; the pieces counted at least threshold
// times, in order.
func ReadVocabulary(path string, threshold int) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("vocabulary: %w", err)
	}
	defer f.Close()
	var vocab []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		sep := strings.IndexByte(line, ' ')
		if sep < 0 {
			sep = strings.IndexByte(line, '\t')
		}
		piece, count := line, 1
		if sep >= 0 {
			piece = line[:sep]
			c, err := leadingInt(line[sep+1:])
			if err != nil {
				return nil, fmt.Errorf("vocabulary %s line %d: cannot convert token frequency %q to an integer value", path, n, line[sep+1:])
			}
			count = c
		}
		if count >= threshold {
			vocab = append(vocab, piece)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("vocabulary %s: %w", path, err)
	}
	return vocab, nil
}

// leadingInt reads an integer as std::stoi: leading white space, a sign,
// digits, anything after them ignored; a value out of range is the
// largest int (as the Tokenizer takes it).
func leadingInt(s string) (int, error) {
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	end := 0
	if end < len(s) && (s[end] == '+' || s[end] == '-') {
		end++
	}
	digits := end
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	if end == digits {
		return 0, fmt.Errorf("no digits")
	}
	v, err := strconv.ParseInt(s[:end], 10, 32)
	if err != nil {
		return math.MaxInt32, nil
	}
	return int(v), nil
}

// Encode is Tokenize (package subword's Tokenizer).
func (t *Tokenizer) Encode(text string) []string { return t.Tokenize(text) }

// Decode is Detokenize (package subword's Tokenizer).
func (t *Tokenizer) Decode(pieces []string) string { return t.Detokenize(pieces) }
