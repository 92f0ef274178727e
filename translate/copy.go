package translate

import (
	"fmt"

	"github.com/attnx/attnx/decode"
)

// Sources are inputs tokenised for decoding (Translator.Tokenize): a row of
// source token ids each and, for a copy-attention model, each row's own
// words outside the source vocabulary.
//
// A copy-attention model copies source words into its output, those its
// source vocabulary lacks too: its encoder sees them as the unknown token,
// while the sentence's dynamic vocabulary (decode.CopyMap) and the output
// text use the words. In a row of such a model, id Vs + k (Vs: the source
// vocabulary's size, attnx.json's src_vocab_size) stands for Words[r][k],
// the k-th distinct word of that row outside the vocabulary: ids above
// the vocabulary are numbered per row and mean nothing outside it, so no
// call can read another's words. A row without Words has no ids from Vs
// up: they are refused.
type Sources struct {
	// Rows are the source rows, one per input.
	Rows [][]int64
	// Words are, per row, its words outside the source vocabulary, by
	// id - Vs; nil when no row has any (and always for a model without
	// copy attention).
	Words [][]string
}

// rowWords returns row i's words outside the vocabulary (nil: none).
func (s Sources) rowWords(i int) []string {
	if i < len(s.Words) {
		return s.Words[i]
	}
	return nil
}

// part is the sources of rows [start, end).
func (s Sources) part(start, end int) Sources {
	p := Sources{Rows: s.Rows[start:end]}
	if s.Words != nil {
		p.Words = s.Words[start:end]
	}
	return p
}

// rowOOV returns an oov function for vocab.encode that numbers a row's
// words outside the vocabulary from base up, in the order they first
// occur, appending each to *words once.
func rowOOV(base int64, words *[]string) func(string) int64 {
	ids := map[string]int64{}
	return func(w string) int64 {
		if id, ok := ids[w]; ok {
			return id
		}
		id := base + int64(len(*words))
		ids[w] = id
		*words = append(*words, w)
		return id
	}
}

// outsideVocabMsg is the refusal of id at position j of a row: outside
// the source vocabulary of vs tokens, and for a copy model (copyModel) not
// a word of the row's own text either.
func outsideVocabMsg(id int64, j int, vs int64, copyModel bool) string {
	msg := fmt.Sprintf("token id %d at position %d is outside the source vocabulary [0, %d)", id, j, vs)
	if copyModel && id >= vs {
		msg += fmt.Sprintf(": ids from the vocabulary's size %d up are a copy-attention model's words outside its vocabulary, which come only from the input's own text", vs)
	}
	return msg
}

// encoderRow is the row as the encoder sees it: words outside the source
// vocabulary as UNK. It is row itself when it holds none.
func (t *Translator) encoderRow(row []int64) []int64 {
	if !t.copy {
		return row
	}
	vs := int64(t.info.SrcVocab)
	var out []int64
	for j, id := range row {
		if id < vs {
			continue
		}
		if out == nil {
			out = append([]int64(nil), row...)
		}
		out[j] = t.info.Special.UNK
	}
	if out == nil {
		return row
	}
	return out
}

// encoderRows is encoderRow of every row.
func (t *Translator) encoderRows(rows [][]int64) [][]int64 {
	if !t.copy {
		return rows
	}
	out := make([][]int64, len(rows))
	for i, r := range rows {
		out[i] = t.encoderRow(r)
	}
	return out
}

// sourceWords are the row's source words: the vocabulary's, and the
// row's own words outside it (words, by id - Vs).
func (t *Translator) sourceWords(row []int64, words []string) []string {
	out := t.src.strings(t.encoderRow(row))
	if !t.copy {
		return out
	}
	vs := int64(t.info.SrcVocab)
	for j, id := range row {
		if k := id - vs; k >= 0 && k < int64(len(words)) {
			out[j] = words[k]
		}
	}
	return out
}

// copyMap is the row's dynamic vocabulary (nil for a model without copy
// attention); words are its own words outside the source vocabulary.
func (t *Translator) copyMap(row []int64, words []string) *decode.CopyMap {
	if !t.copy {
		return nil
	}
	return t.copyMapOf(t.sourceWords(row, words))
}

// copyMapOf is copyMap of a row whose sourceWords are words, in the order
// of the release whose rules the model follows: OpenNMT-py 2.x's
// (attnx.json's rules_version 2) or 3.x's.
func (t *Translator) copyMapOf(words []string) *decode.CopyMap {
	if !t.copy {
		return nil
	}
	order := decode.CopyFirstSeen
	if t.onmtV2() {
		order = decode.CopyByCount
	}
	return decode.NewCopyMap(words, t.info.TgtVocab, t.info.Special.UNK, order, func(w string) (int64, bool) {
		id, ok := t.tgt.index[w]
		return id, ok
	})
}

// copied returns, for a hypothesis' tokens, the words of its copied
// (extended) ids by position, nil when it has none.
func copied(cm *decode.CopyMap, tokens []int64) map[int]string {
	if cm == nil {
		return nil
	}
	var out map[int]string
	for i, id := range tokens {
		if w, ok := cm.Word(id); ok {
			if out == nil {
				out = map[int]string{}
			}
			out[i] = w
		}
	}
	return out
}
