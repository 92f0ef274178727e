package translate

import (
	"sync"

	"github.com/attnx/attnx/decode"
)

// copyGeneration is how many source words outside the vocabulary one
// generation of a copyWords holds, copyGenerationBytes how many bytes of
// them: at most two generations are kept.
const (
	copyGeneration      = 1 << 16
	copyGenerationBytes = 4 << 20
)

// copyWords gives the source words a copy-attention model's source
// vocabulary lacks ids of their own, above the vocabulary (Vs, Vs+1, ...),
// so that a row of source ids still says which word each position holds:
// the model's encoder sees them as UNK, while the copy distribution and
// the output text use the words (decode.CopyMap). Every surface (the
// library's calls, the corpus and stream readers, the scheduler behind
// attnx serve) carries rows of ids, so the words travel inside them.
//
// Its memory is bounded: ids are handed out in generations of
// copyGeneration words or copyGenerationBytes bytes of them; when one
// fills, the one before it is forgotten. A row whose words went with a
// forgotten generation (it waited while two generations of new words
// came) copies them as "<unk>".
type copyWords struct {
	base int64 // Vs

	mu    sync.RWMutex
	gen   int64            // the current generation
	index map[string]int64 // word -> id, this generation
	words [2][]string      // words by generation parity
	bytes int              // the current generation's words' bytes
}

func newCopyWords(vs int) *copyWords {
	return &copyWords{base: int64(vs), index: map[string]int64{}}
}

// id returns w's id, giving it one if it has none in this generation.
func (c *copyWords) id(w string) int64 {
	c.mu.RLock()
	id, ok := c.index[w]
	c.mu.RUnlock()
	if ok {
		return id
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id, ok := c.index[w]; ok {
		return id
	}
	p := c.gen & 1
	if len(c.words[p]) == copyGeneration || len(c.words[p]) > 0 && c.bytes+len(w) > copyGenerationBytes {
		c.gen++
		p = c.gen & 1
		c.words[p] = c.words[p][:0:0]
		c.index = map[string]int64{}
		c.bytes = 0
	}
	id = c.base + c.gen*copyGeneration + int64(len(c.words[p]))
	c.words[p] = append(c.words[p], w)
	c.index[w] = id
	c.bytes += len(w)
	return id
}

// word returns the word of an id id gave, false when its generation is
// forgotten or it was never given.
func (c *copyWords) word(id int64) (string, bool) {
	if id < c.base {
		return "", false
	}
	g, k := (id-c.base)/copyGeneration, (id-c.base)%copyGeneration
	c.mu.RLock()
	defer c.mu.RUnlock()
	if g != c.gen && g != c.gen-1 {
		return "", false
	}
	ws := c.words[g&1]
	if k >= int64(len(ws)) {
		return "", false
	}
	return ws[k], true
}

// encoderRow is the row as the encoder sees it: words outside the source
// vocabulary as UNK. It is row itself when it holds none.
func (t *Translator) encoderRow(row []int64) []int64 {
	if t.copy == nil {
		return row
	}
	var out []int64
	for j, id := range row {
		if id < t.copy.base {
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
	if t.copy == nil {
		return rows
	}
	out := make([][]int64, len(rows))
	for i, r := range rows {
		out[i] = t.encoderRow(r)
	}
	return out
}

// sourceWords are the row's source words: the vocabulary's, and the
// words outside it that it carries ("<unk>" for one forgotten).
func (t *Translator) sourceWords(row []int64) []string {
	out := t.src.strings(t.encoderRow(row))
	if t.copy == nil {
		return out
	}
	for j, id := range row {
		if id >= t.copy.base {
			if w, ok := t.copy.word(id); ok {
				out[j] = w
			}
		}
	}
	return out
}

// copyMap is the row's dynamic vocabulary (nil for a model without copy
// attention).
func (t *Translator) copyMap(row []int64) *decode.CopyMap {
	if t.copy == nil {
		return nil
	}
	return t.copyMapOf(t.sourceWords(row))
}

// copyMapOf is copyMap of a row whose sourceWords are words.
func (t *Translator) copyMapOf(words []string) *decode.CopyMap {
	if t.copy == nil {
		return nil
	}
	return decode.NewCopyMap(words, t.info.TgtVocab, t.info.Special.UNK, func(w string) (int64, bool) {
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
