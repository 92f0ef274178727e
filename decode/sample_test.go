package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestDrawTokenOpenNMT: OpenNMT-py's filters apply one after the other,
// top-p then top-k, and its top-k keeps every score equal to the k-th.
func TestDrawTokenOpenNMT(t *testing.T) {
	// Probabilities 0.4, 0.2, 0.2, 0.2 (two tied at the second place).
	scores := []float32{float32(math.Log(0.4)), float32(math.Log(0.2)), float32(math.Log(0.2)), float32(math.Log(0.2))}
	for _, c := range []struct {
		name string
		f    sampleFilter
		want []int // tokens that may be drawn
	}{
		{"top-k 2 keeps the ties", sampleFilter{TopK: 2, KeepTies: true, Both: true}, []int{0, 1, 2, 3}},
		{"top-k 2 exactly", sampleFilter{TopK: 2}, []int{0, 1}},
		{"top-p then top-k", sampleFilter{TopP: 0.5, TopK: 1, KeepTies: true, Both: true}, []int{0}},
		{"top-p 0.5", sampleFilter{TopP: 0.5, KeepTies: true, Both: true}, []int{0, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(3, 4))
			var order []int32
			seen := map[int]bool{}
			for range 4000 {
				seen[drawToken(rng, scores, c.f, &order)] = true
			}
			var got []int
			for v := range seen {
				got = append(got, v)
			}
			slices.Sort(got)
			if !slices.Equal(got, c.want) {
				t.Errorf("drawn %v, want %v", got, c.want)
			}
		})
	}
}

// TestOpenNMTSamplePaths: K paths start from the row's one slot, each
// finishes on its own at EOS (or all at MaxLen), scored sum / penalty; the
// argmax cases (TopK 1) are deterministic; bad settings are refused.
func TestOpenNMTSamplePaths(t *testing.T) {
	const V, eos = 4, 3
	// Slot rows: token 1 first, then EOS.
	rows := func(n, step int) []float32 {
		lp := make([]float32, 0, n*V)
		for range n {
			if step == 0 {
				lp = append(lp, -5, -0.1, -3, -4)
			} else {
				lp = append(lp, -5, -3, -4, -0.2)
			}
		}
		return lp
	}
	b := &OpenNMTSample{SOS: 0, EOS: eos, UNK: -1, K: 3, NBest: 2, MaxLen: 10, Penalty: PenaltyNone, Temp: 1, TopK: 1, Rand: rand.New(rand.NewPCG(1, 1))}
	if err := b.Validate(); err != nil {
		t.Fatal(err)
	}
	inputs, parents := make([]int64, 3), make([]int, 3)
	if n := b.Advance(NewSlots(1, V, rows(1, 0), 0, 0, nil), inputs, parents); n != 3 || !slices.Equal(parents, []int{0, 0, 0}) || !slices.Equal(inputs, []int64{1, 1, 1}) {
		t.Fatalf("first step: %d paths, inputs %v, parents %v", n, inputs, parents)
	}
	if n := b.Advance(NewSlots(3, V, rows(3, 1), 0, 0, nil), inputs, parents); n != 0 {
		t.Fatalf("second step: %d paths live, want all finished", n)
	}
	h := b.Hypotheses(0)
	if len(h) != 2 || !slices.Equal(h[0].Tokens, []int64{1, eos}) || h[0].NormalizedScore != float32(-0.1)+float32(-0.2) {
		t.Fatalf("hypotheses %+v", h)
	}
	for _, bad := range []OpenNMTSample{{K: 0, NBest: 1}, {K: 2, NBest: 3}, {K: 1, NBest: 1, Penalty: "x"}, {K: 1, NBest: 1, Penalty: PenaltyAvg, Temp: -1, Rand: b.Rand},
		{K: 1, NBest: 1, Penalty: PenaltyAvg, TopP: 2, Rand: b.Rand}, {K: 1, NBest: 1, Penalty: PenaltyAvg}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: Validate accepted it", bad)
		}
	}
}

// TestTopK: topK keeps a full sort's first n, in order, for every n,
// with ties broken by the order's second key and NaN scores (last).
func TestTopK(t *testing.T) {
	type c struct {
		s float32
		i int
	}
	order := func(x, y c) int {
		if x.s != y.s && !(x.s != x.s && y.s != y.s) {
			switch {
			case x.s != x.s:
				return 1
			case y.s != y.s:
				return -1
			case x.s > y.s:
				return -1
			}
			return 1
		}
		return x.i - y.i
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for _, size := range []int{0, 1, 2, 7, 50, 333} {
		all := make([]c, size)
		for i := range all {
			all[i] = c{s: float32(rng.IntN(9)), i: i}
			if i%17 == 3 {
				all[i].s = float32(math.NaN())
			}
		}
		want := slices.Clone(all)
		slices.SortFunc(want, order)
		for _, n := range []int{0, 1, 3, 10, size - 1, size, size + 4} {
			var sel topK[c]
			sel.reset(n, order)
			for _, x := range all {
				sel.push(x)
			}
			got := sel.result()
			k := max(0, min(n, size))
			if len(got) != k {
				t.Fatalf("size %d n %d: %d returned", size, n, len(got))
			}
			for j := range got {
				if got[j].i != want[j].i {
					t.Fatalf("size %d n %d: [%d] = %v, a full sort gives %v", size, n, j, got[j], want[j])
				}
			}
		}
	}
}
