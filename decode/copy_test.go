package decode

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// TestCopyMap: the dynamic vocabulary is OpenNMT-py's (the four
// specials, then the source's words in the order they first occur), and
// what each extended id collapses into follows collapse_copy_scores: a
// word of the target vocabulary, but not <unk> (id 0) or anything at
// extended id 0.
func TestCopyMap(t *testing.T) {
	tgt := map[string]int64{"<unk>": 0, "<blank>": 1, "<s>": 2, "</s>": 3, "the": 4, "pays": 5, "<t>": 6}
	lookup := func(w string) (int64, bool) { id, ok := tgt[w]; return id, ok }
	m := NewCopyMap([]string{"Jofe", "pays", "the", "Jofe", "<unk>", "977"}, 7, 0, CopyFirstSeen, lookup)
	if want := []string{"<unk>", "<blank>", "<s>", "</s>", "Jofe", "pays", "the", "977"}; !slices.Equal(m.Words, want) {
		t.Errorf("Words %q, want %q", m.Words, want)
	}
	if want := []int64{-1, 1, 2, 3, -1, 5, 4, -1}; !slices.Equal(m.Target, want) {
		t.Errorf("Target %v, want %v", m.Target, want)
	}
	if want := []int32{4, 5, 6, 4, 0, 7}; !slices.Equal(m.Pos, want) {
		t.Errorf("Pos %v, want %v", m.Pos, want)
	}
	if m.Width() != 15 {
		t.Errorf("Width %d, want 15", m.Width())
	}
	for _, c := range []struct {
		id   int64
		word string
		ok   bool
		in   int64
	}{{5, "", false, 5}, {11, "Jofe", true, 0}, {14, "977", true, 0}, {15, "", false, 0}, {-1, "", false, -1}} {
		w, ok := m.Word(c.id)
		if w != c.word || ok != c.ok {
			t.Errorf("Word(%d) = %q, %v; want %q, %v", c.id, w, ok, c.word, c.ok)
		}
		if c.id >= 0 && m.Input(c.id) != c.in {
			t.Errorf("Input(%d) = %d, want %d", c.id, m.Input(c.id), c.in)
		}
	}
}

// collapseReference is OpenNMT-py's CopyGenerator output and
// collapse_copy_scores for one row, in float64 and in its own order:
// [p_gen (1 - p_copy); p_copy attention summed per extended id], then
// each extended id whose word is a target word adds to it and keeps 1e-10,
// then the log.
func collapseReference(m *CopyMap, gen, copyP []float64) []float64 {
	out := make([]float64, m.Width())
	copy(out, gen)
	for s, id := range m.Pos {
		out[m.Vt+int(id)] += copyP[s]
	}
	for i := 1; i < len(m.Words); i++ {
		if t := m.Target[i]; t >= 0 {
			out[t] += out[m.Vt+i]
			out[m.Vt+i] = 1e-10
		}
	}
	for i := range out {
		out[i] = math.Log(out[i])
	}
	return out
}

func TestCopyExtend(t *testing.T) {
	tgt := map[string]int64{"<unk>": 0, "<blank>": 1, "<s>": 2, "</s>": 3, "a": 4, "b": 5}
	lookup := func(w string) (int64, bool) { id, ok := tgt[w]; return id, ok }
	for _, c := range []struct {
		name string
		src  []string
	}{
		{"oov only", []string{"x", "y", "x"}},
		{"in vocabulary", []string{"a", "b", "a", "b"}},
		{"mixed with a literal <unk>", []string{"x", "a", "<unk>", "y", "b", "x"}},
		{"a literal </s>", []string{"</s>", "x"}},
	} {
		for _, order := range []CopyOrder{CopyFirstSeen, CopyByCount} {
			t.Run(fmt.Sprintf("%s order %d", c.name, order), func(t *testing.T) {
				m := NewCopyMap(c.src, 6, 0, order, lookup)
				gen := []float64{0.05, 0, 0.1, 0.15, 0.2, 0.1} // pad (1) has none
				copyP := make([]float64, len(c.src))
				for s := range copyP {
					copyP[s] = 0.4 / float64(len(c.src)) * float64(s+1) / float64(len(c.src)+1) * 2
				}
				want := collapseReference(m, gen, copyP)
				lp, cp := make([]float32, 6), make([]float32, len(c.src))
				for i, g := range gen {
					lp[i] = float32(math.Log(g))
				}
				for i, p := range copyP {
					cp[i] = float32(p)
				}
				got := make([]float32, m.Width())
				m.Extend(got, lp, cp, make([]float32, len(m.Words)))
				for i := range want {
					w, g := want[i], float64(got[i])
					if math.IsInf(w, -1) != math.IsInf(g, -1) || !math.IsInf(w, -1) && math.Abs(w-g) > 1e-5 {
						t.Errorf("id %d: %v, want %v", i, g, w)
					}
				}
			})
		}
	}
}

// TestCheckCopy: a copied word can win the argmax; a model without copy
// attention refuses a CopyMap, and a copy model one of another length
// than the source (a row without one decodes over the generator's share).
func TestCheckCopy(t *testing.T) {
	tgt := map[string]int64{"<unk>": 0, "<blank>": 1, "<s>": 2, "</s>": 3}
	lookup := func(w string) (int64, bool) { id, ok := tgt[w]; return id, ok }
	m := NewCopyMap([]string{"x", "y"}, 6, 0, CopyFirstSeen, lookup)
	// Extended ids: x = 6 + 4, y = 6 + 5.
	lp := []float32{-9, float32(math.Inf(-1)), -9, -9, -9, -9}
	out := make([]float32, m.Width())
	m.Extend(out, lp, []float32{0.7, 0.1}, make([]float32, len(m.Words)))
	if got := Argmax(out); got != 10 {
		t.Fatalf("argmax %d, want the copied x (10): %v", got, out)
	}
	if err := checkCopy(false, [][]int64{{1, 2}}, []Search{&Greedy{Copy: m}}); err == nil {
		t.Error("a CopyMap for a model without copy attention was accepted")
	}
	if err := checkCopy(true, [][]int64{{1, 2}}, []Search{&Greedy{}}); err != nil {
		t.Errorf("a copy model's row without a CopyMap (the generator's share alone) was refused: %v", err)
	}
	if err := checkCopy(true, [][]int64{{1, 2, 3}}, []Search{&Greedy{Copy: m}}); err == nil {
		t.Error("a CopyMap of 2 positions for a source of 3 was accepted")
	}
	if err := checkCopy(true, [][]int64{{1, 2}}, []Search{&Greedy{Copy: m}}); err != nil {
		t.Error(err)
	}
}

// TestCopyOrder: each release's dynamic vocabulary. OpenNMT-py 3.x's
// (CopyFirstSeen) holds its four specials, then the source's words as
// they first occur; 2.3.0's (CopyByCount, torchtext's Vocab of the
// source's Counter) its two specials, then the words by count, ties in
// string order, a literal special where the special is. Two candidates
// of exactly equal copy probability then tie, and the first extended id
// wins the argmax: a different word under each release.
func TestCopyOrder(t *testing.T) {
	tgt := map[string]int64{"<unk>": 0, "<blank>": 1, "<s>": 2, "</s>": 3, "the": 4}
	lookup := func(w string) (int64, bool) { id, ok := tgt[w]; return id, ok }
	src := []string{"Zed", "the", "Ann", "the", "<blank>", "Bo", "Ann", "Édo", "Zed", "Ann"}
	for _, c := range []struct {
		order CopyOrder
		words []string
		pos   []int32
	}{
		{CopyFirstSeen, []string{"<unk>", "<blank>", "<s>", "</s>", "Zed", "the", "Ann", "Bo", "Édo"}, []int32{4, 5, 6, 5, 1, 7, 6, 8, 4, 6}},
		// Ann 3, the 2 and Zed 2 (string order), Bo and Édo 1.
		{CopyByCount, []string{"<unk>", "<blank>", "Ann", "Zed", "the", "Bo", "Édo"}, []int32{3, 4, 2, 4, 1, 5, 2, 6, 3, 2}},
	} {
		m := NewCopyMap(src, 5, 0, c.order, lookup)
		if !slices.Equal(m.Words, c.words) || !slices.Equal(m.Pos, c.pos) {
			t.Errorf("order %d: Words %q Pos %v, want %q %v", c.order, m.Words, m.Pos, c.words, c.pos)
		}
	}

	// A tie: two words outside the target vocabulary, each at one
	// position with the same copy probability, the generator's words
	// far below.
	tie := []string{"Mo", "Al"}
	lp := []float32{-20, -20, -20, -20, -20}
	for _, c := range []struct {
		order CopyOrder
		want  string
	}{{CopyFirstSeen, "Mo"}, {CopyByCount, "Al"}} {
		m := NewCopyMap(tie, 5, 0, c.order, lookup)
		out := make([]float32, m.Width())
		m.Extend(out, lp, []float32{0.4, 0.4}, make([]float32, len(m.Words)))
		w, ok := m.Word(Argmax(out))
		if !ok || w != c.want {
			t.Errorf("order %d: the tie goes to %q (%v), want %q: %v", c.order, w, ok, c.want, out)
		}
	}
}
