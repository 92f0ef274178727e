package translate

import (
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/subword"
)

// vocab is one side's vocabulary (index = id).
type vocab struct {
	tokens  []string
	index   map[string]int64
	chars   bool           // every ordinary token is one character
	special map[int64]bool // ids left out of Text
	unkName string
	// pieces names the subword pieces the tokens look like
	// ("SentencePiece", "subword-nmt BPE"), "" for words or characters:
	// text given to such a vocabulary without its tokenizer cannot match.
	pieces string
	// tok, when set, is the subword tokenizer the model was trained with:
	// it segments input text and joins output pieces.
	tok subword.Tokenizer
	// side names the vocabulary in messages: "source" ("" too) or
	// "target" (a given translation, Score).
	side string
}

func newVocab(tokens []string, sp attention.Special) vocab {
	v := vocab{special: map[int64]bool{}}
	for _, id := range []int64{sp.SOS, sp.EOS, sp.PAD} {
		if id >= 0 {
			v.special[id] = true
		}
	}
	if tokens == nil {
		return v
	}
	v.tokens = tokens
	v.index = make(map[string]int64, len(tokens))
	v.chars = true
	ordinary := 0
	for i, tok := range tokens {
		id := int64(i)
		if _, dup := v.index[tok]; !dup {
			v.index[tok] = id
		}
		if v.special[id] || id == sp.UNK {
			continue
		}
		ordinary++
		if utf8.RuneCountInString(tok) != 1 {
			v.chars = false
		}
	}
	if ordinary == 0 {
		v.chars = false
	}
	v.pieces = pieceKind(tokens, v.special, sp.UNK)
	v.unkName = "UNK"
	if sp.UNK >= 0 && int(sp.UNK) < len(tokens) {
		v.unkName = tokens[sp.UNK]
	}
	return v
}

func (v vocab) known() bool { return v.tokens != nil }

// pieceKind says what subword pieces tokens hold: "SentencePiece" when at
// least a tenth of the ordinary tokens start with U+2581, "subword-nmt BPE"
// when as many end with "@@", else "".
func pieceKind(tokens []string, special map[int64]bool, unk int64) string {
	var ordinary, spm, bpe int
	for i, tok := range tokens {
		if special[int64(i)] || int64(i) == unk {
			continue
		}
		ordinary++
		if strings.HasPrefix(tok, "\u2581") {
			spm++
		}
		if strings.HasSuffix(tok, "@@") && len(tok) > 2 {
			bpe++
		}
	}
	switch {
	case ordinary == 0:
		return ""
	case spm >= 2 && 10*spm >= ordinary:
		return "SentencePiece"
	case bpe >= 2 && 10*bpe >= ordinary:
		return "subword-nmt BPE"
	}
	return ""
}

// encode tokenises one input: with the model's subword tokenizer when it
// has one (pieces outside the vocabulary become UNK, as in the toolkits,
// and are counted in unknown), else characters for a character-level
// vocabulary and white-space separated words otherwise.
//
// pretokenized takes the text as the model's pieces already, separated by
// white space (a test set segmented by the toolkit's own scripts, as
// fairseq-interactive without --bpe reads it): the tokenizer is not run,
// and pieces outside the vocabulary become UNK as the toolkits map them.
//
// oov, when set (a copy-attention model), gives each word outside the
// vocabulary an id of its own above it (rowOOV), never an error.
func (v vocab) encode(row int, s string, toUNK bool, unk int64, unknown *atomic.Int64, pretokenized bool, oov func(string) int64) ([]int64, error) {
	var pieces []string
	what := "word"
	if pretokenized && v.tok != nil {
		pieces, what = strings.Fields(s), "piece"
		if unk >= 0 {
			toUNK = true
		}
	} else if v.tok != nil {
		pieces = v.tok.Encode(s)
		if _, words := v.tok.(subword.ChatbotWords); !words {
			what = "piece"
		}
		if unk >= 0 {
			toUNK = true
		}
	} else if v.chars {
		what = "character"
		for _, r := range s {
			pieces = append(pieces, string(r))
		}
	} else {
		pieces = strings.Fields(s)
	}
	if len(pieces) == 0 {
		return nil, &InputError{Row: row, Position: -1, Msg: "empty input, nothing to translate"}
	}
	ids := make([]int64, len(pieces))
	for j, p := range pieces {
		id, ok := v.index[p]
		if !ok && oov != nil {
			// A copy-attention model's word outside the vocabulary.
			ids[j] = oov(p)
			if unknown != nil {
				unknown.Add(1)
			}
			continue
		}
		if !ok {
			if toUNK && unk >= 0 {
				ids[j] = unk
				if unknown != nil {
					unknown.Add(1)
				}
				continue
			}
			side := v.side
			if side == "" {
				side = "source"
			}
			msg := fmt.Sprintf("%s %s at position %d is not in the %s vocabulary", what, quote(p), j, side)
			if v.tok == nil && v.pieces != "" {
				// Mapping words to UNK would translate garbage: the text
				// was never segmented.
				return nil, &InputError{Row: row, Position: j, Msg: fmt.Sprintf("%s: the model has no source tokenizer, but its vocabulary holds %s pieces, which text must be segmented into first; export the model again with the tokenizers it was trained with (attnx export --src-tokenizer FILE --tgt-tokenizer FILE, or --tokenizer FILE when one serves both sides, as fairseq's BPE does), or give text segmented already with --pretokenized", msg, v.pieces)}
			}
			if unk < 0 {
				return nil, &InputError{Row: row, Position: j, Msg: msg + " (the model has no UNK token)"}
			}
			return nil, &InputError{Row: row, Position: j, Msg: msg, UNK: &UNKHint{What: what, Token: v.unkName, ID: unk}}
		}
		ids[j] = id
	}
	return ids, nil
}

// looksSegmented says why text given to the model's tokenizer looks
// segmented already ("" when it does not): subword-nmt's joiner ending a
// word, or SentencePiece's word mark, both of which the tokenizer would
// split again into garbage.
func (v vocab) looksSegmented(text string) string {
	switch {
	case v.tok == nil:
		return ""
	case v.pieces == "subword-nmt BPE" && (strings.Contains(text, "@@ ") || strings.HasSuffix(text, "@@")):
		return "it holds \"@@ \", subword-nmt's joiner"
	case v.pieces == "SentencePiece" && strings.Contains(text, "\u2581"):
		return "it holds \"\u2581\", SentencePiece's word mark"
	}
	return ""
}

// quote shows a token readably: 'é' (U+00E9) for a character, "word" for a
// word.
func quote(p string) string {
	if utf8.RuneCountInString(p) == 1 {
		r, _ := utf8.DecodeRuneInString(p)
		return fmt.Sprintf("%q (%U)", r, r)
	}
	return strconv.Quote(p)
}

// strings returns the tokens as strings: vocabulary entries, or decimal ids
// when the vocabulary is unknown or an id is outside it.
func (v vocab) strings(ids []int64) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if id >= 0 && id < int64(len(v.tokens)) {
			out[i] = v.tokens[id]
		} else {
			out[i] = strconv.FormatInt(id, 10)
		}
	}
	return out
}

// text joins output tokens into text, leaving out SOS, EOS and PAD; "" when
// the vocabulary is unknown.
func (v vocab) text(ids []int64) string {
	return v.textWith(ids, nil)
}

// textWith is text with some tokens' strings replaced: replace[i], when
// set, stands for ids[i].
func (v vocab) textWith(ids []int64, replace map[int]string) string {
	if !v.known() {
		return ""
	}
	var parts []string
	for i, id := range ids {
		if r, ok := replace[i]; ok {
			parts = append(parts, r)
			continue
		}
		if v.special[id] || id < 0 || id >= int64(len(v.tokens)) {
			continue
		}
		parts = append(parts, v.tokens[id])
	}
	switch {
	case v.tok != nil:
		return v.tok.Decode(parts)
	case v.chars:
		return strings.Join(parts, "")
	}
	return strings.Join(parts, " ")
}

// LooksSegmented returns a note when text, given to the model's
// tokenizer, looks segmented already (it would be split again, and the
// output be garbage), naming what to do; "" otherwise.
func (t *Translator) LooksSegmented(text string) string {
	if t.opt.Pretokenized {
		return ""
	}
	why := t.src.looksSegmented(text)
	if why == "" {
		return ""
	}
	return fmt.Sprintf("the input looks segmented already (%s): the model's tokenizer splits it again; if it is, give it as pieces (attnx translate --pretokenized, \"pretokenized\": true over HTTP)", why)
}
