package decode_test

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/decode"
)

// The hand-worked tables of reference/test_beam.py: SOS 0, EOS 1, four
// tokens; X is "never". Every value is dyadic, so every float32 sum is
// exact and the expected scores are exact.
const (
	tSOS, tEOS, tV = 0, 1, 4
	tX             = float32(-8)
)

// table gives the log_probs of a slot from its prefix (the tokens fed after
// SOS so far).
type table func(prefix []int64) []float32

func dictTable(entries map[string][]float32) table {
	return func(prefix []int64) []float32 {
		if lp, ok := entries[fmt.Sprint(prefix)]; ok {
			return lp
		}
		return []float32{tX, tX, tX, tX}
	}
}

var (
	// step 1: [2] -0.5, [3] -1 live; EOS at rank 2 (>= K) dropped.
	// step 2: [2,EOS] -0.75 finishes (rank 0); [3,2] -1.5, [2,2] -2.5 live.
	// step 3: [3,2,EOS] -2 finishes (rank 0); [2,2,EOS] -2.625 is at rank
	// 2 and does not finish; two finished = K: stop.
	tableT1 = dictTable(map[string][]float32{
		"[]":    {tX, -4, -0.5, -1},
		"[2]":   {tX, -0.25, -2, -4},
		"[3]":   {tX, -3, -0.5, -2},
		"[3 2]": {tX, -0.5, -1, -2},
		"[2 2]": {tX, -0.125, -4, -4},
	})
	// step 1: [2] -0.5, [3] -0.625; step 2: [3,2] -0.875 live, [2,EOS] -1
	// finishes at rank 1, [2,0] -8.5 live; step 3: [3,2,EOS] -1.25.
	tableT2 = dictTable(map[string][]float32{
		"[]":    {tX, tX, -0.5, -0.625},
		"[2]":   {tX, -0.5, tX, tX},
		"[3]":   {tX, tX, -0.25, tX},
		"[3 2]": {tX, -0.375, tX, tX},
	})
	// Ties everywhere: step 1 v2 and v3 tie; step 2 all four candidates.
	tableT3 = dictTable(map[string][]float32{
		"[]":  {tX, tX, -1, -1},
		"[2]": {tX, tX, -0.5, -0.5},
		"[3]": {tX, tX, -0.5, -0.5},
	})
)

// attnOf is the fake attention row a slot with this prefix reports: two
// source positions holding the prefix's length and last token.
func attnOf(prefix []int64) []float32 {
	last := float32(-1)
	if len(prefix) > 0 {
		last = float32(prefix[len(prefix)-1])
	}
	return []float32{float32(len(prefix)), last}
}

// runTable drives s on plain slices as a Batch would: every slot's
// log_probs and attention come from its input history, and the histories
// follow the parents Advance writes. It returns the number of steps.
func runTable(t testing.TB, s decode.Search, tab table) int {
	t.Helper()
	W := s.Width()
	hist := [][]int64{nil}
	inputs, parents := make([]int64, W), make([]int, W)
	lp, att := make([]float32, 0, W*tV), make([]float32, 0, W*3)
	for steps := 1; ; steps++ {
		lp, att = lp[:0], att[:0]
		for _, h := range hist {
			lp = append(lp, tab(h)...)
			att = append(att, attnOf(h)...)
			att = append(att, 99) // padding of a longer source in the batch
		}
		n := s.Advance(decode.NewSlots(len(hist), tV, lp, 2, 3, att), inputs, parents)
		if n == 0 {
			return steps
		}
		if n > W {
			t.Fatalf("Advance returned %d slots, width %d", n, W)
		}
		next := make([][]int64, n)
		for j := range next {
			next[j] = append(slices.Clone(hist[parents[j]]), inputs[j])
		}
		hist = next
		if steps > 1000 {
			t.Fatal("the search does not stop")
		}
	}
}

type hyp struct {
	Tokens      []int64
	Score, Norm float32
}

func results(b *decode.Beam) []hyp {
	var out []hyp
	for i := range b.Len() {
		out = append(out, hyp{b.AppendTokens(nil, i), b.Score(i), b.NormalizedScore(i)})
	}
	return out
}

func f32(x float64) float32 { return float32(x) }

// TestBeamTables are reference/test_beam.py's hand-worked cases.
func TestBeamTables(t *testing.T) {
	cases := []struct {
		name   string
		tab    table
		k, max int
		alpha  float64
		want   []hyp
	}{
		{"known answer, EOS at rank K dropped", tableT1, 2, 10, 1, []hyp{
			{[]int64{2, 1}, -0.75, -0.375}, {[]int64{3, 2, 1}, -2, f32(-2.0 / 3)}}},
		{"EOS at rank 2 < K = 3 finishes in step 1", tableT1, 3, 1, 0, []hyp{
			{[]int64{2}, -0.5, -0.5}, {[]int64{3}, -1, -1}, {[]int64{1}, -4, -4}, {[]int64{0}, tX, tX}}},
		{"EOS at rank 2 = K does not", tableT1, 2, 1, 0, []hyp{
			{[]int64{2}, -0.5, -0.5}, {[]int64{3}, -1, -1}}},
		{"filled with live at max_len", tableT1, 2, 2, 0, []hyp{
			{[]int64{2, 1}, -0.75, -0.75}, {[]int64{3, 2}, -1.5, -1.5}, {[]int64{2, 2}, -2.5, -2.5}}},
		{"length penalty 0", tableT2, 2, 10, 0, []hyp{
			{[]int64{2, 1}, -1, -1}, {[]int64{3, 2, 1}, -1.25, -1.25}}},
		{"length penalty 1", tableT2, 2, 10, 1, []hyp{
			{[]int64{3, 2, 1}, -1.25, f32(-1.25 / 3)}, {[]int64{2, 1}, -1, -0.5}}},
		{"length penalty 0.5", tableT2, 2, 10, 0.5, []hyp{
			{[]int64{2, 1}, -1, f32(-1 / math.Sqrt(2))}, {[]int64{3, 2, 1}, -1.25, f32(-1.25 / math.Sqrt(3))}}},
		{"ties keep insertion order", tableT3, 2, 2, 1, []hyp{
			{[]int64{2, 2}, -1.5, -0.75}, {[]int64{2, 3}, -1.5, -0.75}}},
	}
	for _, c := range cases {
		b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: c.k, MaxLen: c.max, LengthPenalty: c.alpha}
		if err := b.Validate(); err != nil {
			t.Fatal(err)
		}
		runTable(t, b, c.tab)
		if got := results(b); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

// TestBeamAttention checks that each hypothesis' attention rows are those
// of the slots its tokens were chosen from, over the row's own source.
func TestBeamAttention(t *testing.T) {
	b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 2, MaxLen: 10, LengthPenalty: 1, KeepAttention: true}
	runTable(t, b, tableT1)
	hs := b.Hypotheses(0)
	if len(hs) != 2 {
		t.Fatalf("%d hypotheses, want 2", len(hs))
	}
	for i, h := range hs {
		att := b.Attention(i)
		if len(att) != len(h.Tokens) {
			t.Fatalf("%v: %d attention rows", h.Tokens, len(att))
		}
		for j, row := range att {
			if want := attnOf(h.Tokens[:j]); !slices.Equal(row, want) {
				t.Errorf("%v token %d: attention %v, want %v (the prefix's slot)", h.Tokens, j, row, want)
			}
		}
	}
	if n := len(b.Hypotheses(1)); n != 1 {
		t.Errorf("Hypotheses(1) gave %d", n)
	}
	b.Reset()
	if b.Len() != 0 {
		t.Errorf("Reset left %d hypotheses", b.Len())
	}
	// The same Beam decodes another row the same way after Reset.
	runTable(t, b, tableT1)
	if got := b.Hypotheses(0); !reflect.DeepEqual(got, hs) {
		t.Errorf("after Reset: %v, want %v", got, hs)
	}
}

// specBeam is the spec's pseudocode transcribed literally: every candidate
// sorted, float32 sums. It returns the final list.
func specBeam(tab table, K, maxLen int, alpha float64) []hyp {
	type live struct {
		toks  []int64
		score float32
	}
	type cand struct {
		s    float32
		i, v int
	}
	lv := []live{{nil, 0}}
	var fin []live
	for t := 0; t < maxLen; t++ {
		var cs []cand
		for i, h := range lv {
			for v, x := range tab(h.toks) {
				cs = append(cs, cand{h.score + x, i, v})
			}
		}
		slices.SortFunc(cs, func(a, b cand) int {
			return cmp.Or(cmp.Compare(b.s, a.s), cmp.Compare(a.i, b.i), cmp.Compare(a.v, b.v))
		})
		var nl []live
		for r, c := range cs {
			toks := append(slices.Clone(lv[c.i].toks), int64(c.v))
			if c.v == tEOS {
				if r < K {
					fin = append(fin, live{toks, c.s})
				}
				continue
			}
			nl = append(nl, live{toks, c.s})
			if len(nl) == K {
				break
			}
		}
		lv = nl
		if len(fin) >= K {
			break
		}
	}
	if len(fin) < K {
		fin = append(fin, lv...)
	}
	out := make([]hyp, len(fin))
	for i, h := range fin {
		out[i] = hyp{h.toks, h.score, float32(float64(h.score) / math.Pow(float64(len(h.toks)), alpha))}
	}
	slices.SortStableFunc(out, func(a, b hyp) int { return cmp.Compare(b.Norm, a.Norm) })
	return out
}

// levelTable returns a random table over 6 tokens whose entries take 3
// values, so that ties are everywhere, fixed per prefix.
func levelTable(seed uint64, levels []float32, vocab int) table {
	return func(prefix []int64) []float32 {
		h := seed
		for _, x := range prefix {
			h = h*1000003 + uint64(x) + 1
		}
		r := rand.New(rand.NewPCG(h, seed))
		lp := make([]float32, vocab)
		for v := range lp {
			lp[v] = levels[r.IntN(len(levels))]
		}
		return lp
	}
}

// TestBeamAgainstSpecTranscription compares the bounded selection with the
// literal transcription on random tables full of ties, over widths,
// lengths and penalties (and a vocabulary smaller than the selection).
func TestBeamAgainstSpecTranscription(t *testing.T) {
	levels := []float32{-0.5, -1, -2}
	n := 0
	for seed := range uint64(300) {
		K := 1 + int(seed%5)
		vocab := []int{tV, 6, 2}[seed%3]
		alpha := []float64{0, 0.6, 1}[seed%3]
		maxLen := 1 + int(seed%6)
		tab := levelTable(seed, levels, vocab)
		b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: K, MaxLen: maxLen, LengthPenalty: alpha}
		runVocab(t, b, tab, vocab)
		want := specBeam(tab, K, maxLen, alpha)
		if got := results(b); !reflect.DeepEqual(got, want) {
			t.Fatalf("seed %d K %d V %d max %d alpha %v:\n got %v\nwant %v", seed, K, vocab, maxLen, alpha, got, want)
		}
		n += len(want)
	}
	t.Logf("%d hypotheses compared", n)
}

// runVocab is runTable for a vocabulary of any size.
func runVocab(t testing.TB, s decode.Search, tab table, vocab int) {
	t.Helper()
	W := s.Width()
	hist := [][]int64{nil}
	inputs, parents := make([]int64, W), make([]int, W)
	for {
		var lp, att []float32
		for _, h := range hist {
			lp = append(lp, tab(h)...)
			att = append(att, attnOf(h)...)
		}
		n := s.Advance(decode.NewSlots(len(hist), vocab, lp, 2, 2, att), inputs, parents)
		if n == 0 {
			return
		}
		next := make([][]int64, n)
		for j := range next {
			next[j] = append(slices.Clone(hist[parents[j]]), inputs[j])
		}
		hist = next
	}
}

// TestBeamWidthOneIsGreedy decodes random tables (ties and -inf
// included, every row with a finite entry as log_softmax guarantees) with
// K = 1 and with Greedy: the same tokens.
func TestBeamWidthOneIsGreedy(t *testing.T) {
	inf := float32(math.Inf(-1))
	for seed := range uint64(300) {
		rows := levelTable(seed, []float32{-0.5, -1, -2, inf}, 5)
		tab := func(prefix []int64) []float32 {
			lp := rows(prefix)
			lp[len(prefix)%5] = -3 // one finite entry at least
			return lp
		}
		maxLen := int(seed % 8) // 0 included: no tokens
		g := &decode.Greedy{SOS: tSOS, EOS: tEOS, MaxLen: maxLen}
		b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 1, MaxLen: maxLen, LengthPenalty: 1}
		runVocab(t, g, tab, 5)
		runVocab(t, b, tab, 5)
		if b.Len() != 1 {
			t.Fatalf("seed %d: K = 1 gave %d hypotheses", seed, b.Len())
		}
		if got := b.AppendTokens(nil, 0); !slices.Equal(got, g.Tokens()) && (len(got) > 0 || len(g.Tokens()) > 0) {
			t.Fatalf("seed %d max %d: beam %v, greedy %v", seed, maxLen, got, g.Tokens())
		}
	}
}

func TestBeamValidate(t *testing.T) {
	cases := []struct {
		b    decode.Beam
		want string
	}{
		{decode.Beam{K: 0}, "beam width K = 0: want at least 1"},
		{decode.Beam{K: -3}, "beam width K = -3"},
		{decode.Beam{K: 2, LengthPenalty: -1}, "length penalty -1: want a finite value from 0 to 10"},
		{decode.Beam{K: 2, LengthPenalty: math.NaN()}, "length penalty NaN"},
		{decode.Beam{K: 2, LengthPenalty: math.Inf(1)}, "length penalty +Inf"},
		{decode.Beam{K: 1}, ""},
		{decode.Beam{K: 8, LengthPenalty: 0.6}, ""},
	}
	for _, c := range cases {
		err := c.b.Validate()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v: %v", c.b, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v: %v, want an error containing %q", c.b, err, c.want)
		}
	}
}

// TestBeamAdvanceDoesNotAllocate steps a warmed-up Beam on a realistic
// vocabulary: no allocation per row once the buffers have grown.
func TestBeamAdvanceDoesNotAllocate(t *testing.T) {
	const K, V, steps = 4, 1000, 30
	r := rand.New(rand.NewPCG(1, 1))
	lp := make([]float32, K*V)
	for i := range lp {
		lp[i] = -float32(r.ExpFloat64()) * 5
	}
	att := make([]float32, K*7)
	b := &decode.Beam{SOS: 1, EOS: -1, K: K, MaxLen: steps, LengthPenalty: 1, KeepAttention: true}
	in, par := make([]int64, K), make([]int, K)
	row := func() {
		b.Reset()
		n := 1
		for {
			if n = b.Advance(decode.NewSlots(n, V, lp[:n*V], 7, 7, att), in, par); n == 0 {
				return
			}
		}
	}
	row()
	if got := testing.AllocsPerRun(20, row); got != 0 {
		t.Errorf("%v allocations per row once warmed up, want 0", got)
	}
	if b.Len() != K {
		t.Errorf("%d hypotheses, want %d", b.Len(), K)
	}
}

// TestBeamNaN: log_probs that are not log-probabilities do not make Beam
// panic or loop; a NaN ranks above every number, as torch.topk ranks it.
func TestBeamNaN(t *testing.T) {
	nan := float32(math.NaN())
	tab := func(prefix []int64) []float32 {
		if len(prefix) == 0 {
			return []float32{-1, -2, nan, -0.5}
		}
		return []float32{nan, nan, -1, nan}
	}
	b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 3, MaxLen: 4, LengthPenalty: 1}
	runVocab(t, b, tab, tV)
	if b.Len() == 0 {
		t.Fatal("no hypotheses")
	}
	if got := b.AppendTokens(nil, 0); got[0] != 2 {
		t.Errorf("best hypothesis %v: want the NaN candidate 2 first", got)
	}
}

// TestBeamNearestTie: the smallest gap between adjacent candidates a walk
// looked at. In T1 with K = 2 it is step 3's -2.5 vs -2.625 (worked out in
// the comment of tableT1); in T3 candidates tie exactly.
func TestBeamNearestTie(t *testing.T) {
	for _, c := range []struct {
		tab  table
		want float32
	}{{tableT1, 0.125}, {tableT3, 0}} {
		b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 2, MaxLen: 10, LengthPenalty: 1}
		runTable(t, b, c.tab)
		if got := b.NearestTie(); got != c.want {
			t.Errorf("NearestTie = %v, want %v", got, c.want)
		}
	}
}

// TestBeamWidthOneFollowsFloat32Sums: token 4's log_prob is one float32 ulp
// above token 3's at every step, so Greedy always takes 4; a beam's
// candidates are the float32 sums score + log_prob, and once the score has
// grown the two sums round to the same value and the spec's order (ties by
// token) takes 3. K = 1 follows the spec's sums (as the reference and
// beam.onnx do), not Greedy, in exactly such rounding ties.
func TestBeamWidthOneFollowsFloat32Sums(t *testing.T) {
	lp := []float32{-20, -20, -20, -1, math.Nextafter32(-1, 0)}
	tab := func([]int64) []float32 { return lp }
	g := &decode.Greedy{SOS: tSOS, EOS: tEOS, MaxLen: 6}
	b := &decode.Beam{SOS: tSOS, EOS: tEOS, K: 1, MaxLen: 6, LengthPenalty: 1}
	runVocab(t, g, tab, 5)
	runVocab(t, b, tab, 5)
	want := specBeam(tab, 1, 6, 1)
	if got := results(b); !reflect.DeepEqual(got, want) {
		t.Errorf("K = 1: %v, the spec's float32 sums give %v", got, want)
	}
	if !slices.Equal(g.Tokens(), []int64{4, 4, 4, 4, 4, 4}) || slices.Equal(g.Tokens(), want[0].Tokens) {
		t.Errorf("greedy %v, K = 1 %v: the table should set them apart", g.Tokens(), want[0].Tokens)
	}
}
