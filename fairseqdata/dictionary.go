package fairseqdata

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/attnx/attnx/checkpoint"
)

// The ids fairseq's Dictionary gives its special symbols.
const (
	BOS = 0 // <s>
	Pad = 1 // <pad>
	EOS = 2 // </s>
	Unk = 3 // <unk>
)

// Dictionary is a fairseq Dictionary read from a dict.LANG.txt file: its
// symbols by id, and the id of each symbol (the last one listed, as a
// #fairseq:overwrite line leaves it). Encode with AddIfNotExist adds
// symbols, as fairseq-generate's scoring does to its target dictionary.
type Dictionary struct {
	Symbols []string
	index   map[string]int64
}

// ReadDictionary reads a fairseq dictionary file (checkpoint.ReadFairseqDict
// says how).
func ReadDictionary(path string) (*Dictionary, error) {
	syms, err := checkpoint.ReadFairseqDict(path)
	if err != nil {
		return nil, err
	}
	return NewDictionary(syms), nil
}

// NewDictionary is the Dictionary of symbols, listed by id.
func NewDictionary(symbols []string) *Dictionary {
	d := &Dictionary{Symbols: append([]string(nil), symbols...), index: make(map[string]int64, len(symbols))}
	for i, s := range d.Symbols {
		d.index[s] = int64(i)
	}
	return d
}

// Len is the number of symbols.
func (d *Dictionary) Len() int { return len(d.Symbols) }

// Clone returns a copy that Encode may add symbols to without changing d.
func (d *Dictionary) Clone() *Dictionary { return NewDictionary(d.Symbols) }

// Symbol is the symbol of id, or <unk> for an id past the last, as
// Dictionary.__getitem__ answers.
func (d *Dictionary) Symbol(id int64) string {
	if id >= 0 && id < int64(len(d.Symbols)) {
		return d.Symbols[id]
	}
	return d.unkWord()
}

func (d *Dictionary) unkWord() string {
	if len(d.Symbols) > Unk {
		return d.Symbols[Unk]
	}
	return "<unk>"
}

// Index is the id of sym, or Unk when the dictionary lacks it.
func (d *Dictionary) Index(sym string) int64 {
	if id, ok := d.index[sym]; ok {
		return id
	}
	return Unk
}

// StringOptions are Dictionary.string's arguments.
type StringOptions struct {
	// PostProcess is --post-process / --remove-bpe's symbol ("" for none;
	// see PostProcess).
	PostProcess string
	// EscapeUnk writes <unk> as <<unk>> (fairseq-generate's T- lines).
	EscapeUnk bool
	// Ignore are ids left out beside <s> and </s>, which are always left
	// out.
	Ignore []int64
}

// String joins the symbols of ids with spaces as Dictionary.string does
// for one sentence: <s>, </s> and opt.Ignore left out, <unk> escaped when
// asked, then PostProcess applied.
func (d *Dictionary) String(ids []int64, opt StringOptions) (string, error) {
	words := make([]string, 0, len(ids))
	for _, id := range ids {
		if id == BOS || id == EOS || containsID(opt.Ignore, id) {
			continue
		}
		switch {
		case id == Unk && opt.EscapeUnk:
			words = append(words, "<"+d.unkWord()+">")
		case id == Unk:
			words = append(words, d.unkWord())
		default:
			words = append(words, d.Symbol(id))
		}
	}
	return PostProcess(strings.Join(words, " "), opt.PostProcess)
}

func containsID(ids []int64, id int64) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

// Encode turns a line into ids as Dictionary.encode_line does with its
// default tokenizer (runs of white space are one separator, the ends
// trimmed): each word's id, <unk> for a word not in the dictionary unless
// addIfNotExist, which adds it; then </s> when appendEOS.
func (d *Dictionary) Encode(line string, addIfNotExist, appendEOS bool) []int64 {
	words := SplitLine(line)
	ids := make([]int64, 0, len(words)+1)
	for _, w := range words {
		id, ok := d.index[w]
		switch {
		case ok:
		case addIfNotExist:
			id = int64(len(d.Symbols))
			d.Symbols = append(d.Symbols, w)
			d.index[w] = id
		default:
			id = Unk
		}
		ids = append(ids, id)
	}
	if appendEOS {
		ids = append(ids, EOS)
	}
	return ids
}

// SplitLine splits a line at white space as fairseq's tokenize_line does
// (Python's str.split(): Unicode white space and the separators
// U+001C..U+001F).
func SplitLine(line string) []string {
	return strings.FieldsFunc(line, pythonSpace)
}

// pythonSpace is Python's str.isspace for one character.
func pythonSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// PostProcess removes subword markers from a sentence as fairseq's
// data_utils.post_process does for --post-process SYMBOL (--remove-bpe
// alone is subword_nmt): "subword_nmt" and "@@ " remove "@@ " and "@@"
// removes "@@" (from the sentence with a space added, trailing white space
// then trimmed); "sentencepiece", "wordpiece", "letter" and "_EOW" remove
// the spaces and turn "▁", "_", "|" or "_EOW" into them; "silence"
// removes "<SIL>" and runs of spaces; "none" and "" change nothing.
// Another symbol is an error, as fairseq raises NotImplementedError.
func PostProcess(s, symbol string) (string, error) {
	trim := func(s string) string { return strings.TrimFunc(s, pythonSpace) }
	spaced := func(mark string) string { return trim(strings.ReplaceAll(strings.ReplaceAll(s, " ", ""), mark, " ")) }
	switch symbol {
	case "", "none":
		return s, nil
	case "subword_nmt", "@@ ", "@@":
		mark := symbol
		if mark == "subword_nmt" {
			mark = "@@ "
		}
		return strings.TrimRightFunc(strings.ReplaceAll(s+" ", mark, ""), pythonSpace), nil
	case "sentencepiece":
		return spaced("\u2581"), nil
	case "wordpiece":
		return spaced("_"), nil
	case "letter":
		return spaced("|"), nil
	case "_EOW":
		return spaced("_EOW"), nil
	case "silence":
		s = strings.ReplaceAll(s, "<SIL>", "")
		for strings.Contains(s, "  ") {
			s = strings.ReplaceAll(s, "  ", " ")
		}
		return trim(s), nil
	}
	return "", fmt.Errorf("fairseqdata: --post-process %q: fairseq 0.12.2 knows subword_nmt, \"@@ \", @@, sentencepiece, wordpiece, letter, silence, _EOW and none", symbol)
}
