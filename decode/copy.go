package decode

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
)

// CopyMap is one sentence's dynamic vocabulary for a copy-attention
// model (OpenNMT-py's pointer-generator): the words of its source, each
// with an extended id, and what each extended id becomes in the step's
// distribution.
//
// OpenNMT-py builds it per sentence: its specials, then the source's
// distinct tokens in the order of its release (CopyOrder). A decoder step
// gives p_gen(w) over the target vocabulary (already times 1 - p_copy)
// and p_copy times the copy attention over source positions;
// collapse_copy_scores then makes the distribution over Vt + len(Words)
// ids: an extended word that is in the target vocabulary adds its copy
// probability to that word's and keeps 1e-10 itself; any other extended id keeps the sum of the copy
// probabilities of its positions. Log of it all is what the search sees.
// A picked extended id (>= Vt) is fed back to the decoder as UNK and
// written as its source word.
type CopyMap struct {
	// Vt is the target vocabulary's size: extended id i is Vt + i.
	Vt int
	// UNK is the target vocabulary's unknown token, fed back for an
	// extended id.
	UNK int64
	// Words are the extended vocabulary's words, by extended id.
	Words []string
	// Target is, per extended id, the target id it collapses into, or -1
	// (the word is not in the target vocabulary, or it is <unk>).
	Target []int64
	// Pos is, per source position, its extended id.
	Pos []int32
}

// CopyOrder is how a release of OpenNMT-py orders a sentence's dynamic
// vocabulary. The order decides nothing but the extended ids, and so
// which of two copy candidates of exactly equal scores a search keeps.
type CopyOrder int

const (
	// CopyFirstSeen is OpenNMT-py 3.x's (text_utils._addcopykeys, a
	// pyonmttok vocabulary built from the Counter's keys): the four
	// specials <unk>, <blank>, <s>, </s>, then the source's distinct
	// tokens in the order they first occur.
	CopyFirstSeen CopyOrder = iota
	// CopyByCount is OpenNMT-py 2.x's (dataset_base._dynamic_dict, a
	// torchtext Vocab of the source's Counter): the specials <unk> and
	// <blank>, then the source's other distinct tokens by count, most
	// first, ties in string order.
	CopyByCount
)

// CopySpecials are the first words of every OpenNMT-py 3.x dynamic
// vocabulary, ids 0 to 3 (CopyFirstSeen).
var CopySpecials = []string{"<unk>", "<blank>", "<s>", "</s>"}

// CopySpecials2 are the first words of every OpenNMT-py 2.x dynamic
// vocabulary, ids 0 and 1 (CopyByCount).
var CopySpecials2 = []string{"<unk>", "<blank>"}

// NewCopyMap builds a sentence's CopyMap from its source tokens (one per
// encoder position) in the order of order, with the target vocabulary's
// lookup (ok false for a word it lacks). unk is the target vocabulary's
// unknown token.
func NewCopyMap(src []string, vt int, unk int64, order CopyOrder, lookup func(string) (int64, bool)) *CopyMap {
	m := &CopyMap{Vt: vt, UNK: unk, Pos: make([]int32, len(src))}
	ids := make(map[string]int32, len(src)+len(CopySpecials))
	add := func(w string) int32 {
		if id, ok := ids[w]; ok {
			return id
		}
		id := int32(len(m.Words))
		ids[w] = id
		m.Words = append(m.Words, w)
		t := int64(-1)
		if x, ok := lookup(w); ok && x != unk && id > 0 {
			t = x
		}
		m.Target = append(m.Target, t)
		return id
	}
	specials := CopySpecials
	if order == CopyByCount {
		specials = CopySpecials2
	}
	for _, w := range specials {
		add(w)
	}
	if order == CopyByCount {
		for _, w := range byCount(src) {
			add(w)
		}
	}
	for i, w := range src {
		m.Pos[i] = add(w)
	}
	return m
}

// byCount returns the distinct words of src by count, most first, ties in
// string order (torchtext's Vocab: sorted by word, then stably by count).
func byCount(src []string) []string {
	count := map[string]int{}
	var words []string
	for _, w := range src {
		if count[w] == 0 {
			words = append(words, w)
		}
		count[w]++
	}
	slices.SortFunc(words, func(a, b string) int {
		if c := cmp.Compare(count[b], count[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return words
}

// Width is the length of the sentence's extended rows: Vt + len(Words).
func (m *CopyMap) Width() int { return m.Vt + len(m.Words) }

// Word returns the source word of extended id id (>= Vt), and false for
// a target id.
func (m *CopyMap) Word(id int64) (string, bool) {
	i := id - int64(m.Vt)
	if i < 0 || i >= int64(len(m.Words)) {
		return "", false
	}
	return m.Words[i], true
}

// Input is what the decoder is fed for token id: UNK for an extended id.
func (m *CopyMap) Input(id int64) int64 {
	if id >= int64(m.Vt) {
		return m.UNK
	}
	return id
}

// copyFloor is log(1e-10) in float32: what collapse_copy_scores leaves
// in an extended id whose word went to the target vocabulary.
var copyFloor = float32(math.Log(float64(float32(1e-10))))

// Extend writes into out (len Width()) one slot's distribution over the
// extended vocabulary, as log-probabilities, from the step's
// lp = log(p_gen (1 - p_copy)) over Vt and copy = p_copy x copy attention
// over the sentence's positions (at least len(Pos) values). sums is
// scratch of at least len(Words).
func (m *CopyMap) Extend(out, lp, copyP, sums []float32) {
	vt, n := m.Vt, len(m.Words)
	sums = sums[:n]
	clear(sums)
	for s, id := range m.Pos {
		sums[id] += copyP[s]
	}
	copy(out[:vt], lp[:vt])
	for i, t := range m.Target {
		if t < 0 {
			out[vt+i] = float32(math.Log(float64(sums[i])))
			continue
		}
		p := float32(math.Exp(float64(lp[t]))) + sums[i]
		out[t] = float32(math.Log(float64(p)))
		out[vt+i] = copyFloor
	}
}

// copier is a Search that decodes with a sentence's dynamic vocabulary.
type copier interface {
	copyMap() *CopyMap
}

// checkCopy checks the rows' CopyMaps: only a copy model's rows have
// them, of their source's length. A copy model's row without one decodes
// over the generator's share alone (log_probs as the decoder gives them:
// what attnx verify compares with PyTorch step by step).
func checkCopy(copyModel bool, sources [][]int64, searches []Search) error {
	for i, s := range searches {
		var m *CopyMap
		if c, ok := s.(copier); ok {
			m = c.copyMap()
		}
		switch {
		case !copyModel && m != nil:
			return fmt.Errorf("decode: row %d has a CopyMap, but the model has no copy attention", i)
		case m != nil && len(m.Pos) != len(sources[i]):
			return fmt.Errorf("decode: row %d: its CopyMap has %d source positions, the source %d", i, len(m.Pos), len(sources[i]))
		}
	}
	return nil
}
