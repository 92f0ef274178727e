package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestArgmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		row  []float32
		want int64
	}{
		{nil, -1},
		{[]float32{3}, 0},
		{[]float32{1, 5, 2}, 1},
		{[]float32{-3, -1, -2}, 1},
		{[]float32{2, 7, 7, 1}, 1},   // ties go to the lowest index
		{[]float32{7, 7, 7}, 0},      // all equal
		{[]float32{-inf, -inf}, 0},   // all -inf
		{[]float32{1, inf, 2}, 1},    // +inf wins
		{[]float32{1, nan, 9}, 1},    // the first NaN, as torch.argmax
		{[]float32{nan, 9, nan}, 0},  // NaN first
		{[]float32{1, 9, 3, nan}, 3}, // a NaN after the maximum still wins
	}
	for _, c := range cases {
		if got := Argmax(c.row); got != c.want {
			t.Errorf("Argmax(%v) = %d, want %d", c.row, got, c.want)
		}
	}
}

// TestArgmaxLongRows: rows long enough for the vector scan, with ties,
// infinities and NaNs anywhere, against the element-by-element rule.
func TestArgmaxLongRows(t *testing.T) {
	r := rand.New(rand.NewPCG(61, 62))
	ref := func(row []float32) int64 {
		best, bv := 0, row[0]
		for i, x := range row {
			if x != x {
				return int64(i)
			}
			if x > bv {
				best, bv = i, x
			}
		}
		return int64(best)
	}
	for _, n := range []int{8, 9, 15, 16, 17, 33, 1000, 10000} {
		for trial := 0; trial < 20; trial++ {
			row := make([]float32, n)
			for i := range row {
				row[i] = float32(r.IntN(50)) - 25
				if trial%4 == 1 && r.IntN(n) == 0 {
					row[i] = float32(math.NaN())
				}
				if trial%4 == 2 && r.IntN(n) == 0 {
					row[i] = float32(math.Inf(1))
				}
			}
			if got, want := Argmax(row), ref(row); got != want {
				t.Fatalf("n %d trial %d: Argmax = %d, want %d", n, trial, got, want)
			}
		}
	}
}

func TestSlotsViews(t *testing.T) {
	lp := []float32{0, 1, 2, 10, 11, 12}
	att := []float32{.5, .5, 0, 1, 0, 0} // stride 3, row length 2
	s := NewSlots(2, 3, lp, 2, 3, att)
	if s.Len() != 2 || s.Vocab() != 3 || s.SourceLength() != 2 {
		t.Fatalf("Len %d Vocab %d SourceLength %d", s.Len(), s.Vocab(), s.SourceLength())
	}
	if !slices.Equal(s.LogProbs(1), []float32{10, 11, 12}) || !slices.Equal(s.Attention(1), []float32{1, 0}) {
		t.Errorf("slot 1: %v %v", s.LogProbs(1), s.Attention(1))
	}
	// A Search appending to a view must not overwrite the next slot.
	_ = append(s.LogProbs(0), 99)
	_ = append(s.Attention(0), 99)
	if lp[3] != 10 || att[2] != 0 {
		t.Errorf("appending to a view wrote into the buffer: %v %v", lp, att)
	}
}

// TestGreedyAdvance drives Greedy on plain slices: it feeds back the
// argmax, records attention, and stops after EOS (included) or MaxLen.
func TestGreedyAdvance(t *testing.T) {
	const V = 4
	step := func(tok int) Slots {
		lp := make([]float32, V)
		for i := range lp {
			lp[i] = -5
		}
		lp[tok] = -0.1
		return NewSlots(1, V, lp, 2, 3, []float32{0.25, 0.75, 0})
	}
	cases := []struct {
		name   string
		maxLen int
		toks   []int
		want   []int64
	}{
		{"stops after EOS", 10, []int{3, 1, 2, 3}, []int64{3, 1, 2}},
		{"stops at MaxLen", 2, []int{3, 1, 3}, []int64{3, 1}},
		{"EOS at once", 5, []int{2}, []int64{2}},
		{"MaxLen 0", 0, []int{3}, nil},
	}
	for _, c := range cases {
		g := &Greedy{SOS: 1, EOS: 2, MaxLen: c.maxLen, KeepAttention: true}
		if g.Width() != 1 || g.First() != 1 {
			t.Fatalf("Width %d First %d", g.Width(), g.First())
		}
		in, par := []int64{-1}, []int{-1}
		for i, tok := range c.toks {
			n := g.Advance(step(tok), in, par)
			if n == 0 {
				break
			}
			if n != 1 || in[0] != int64(tok) || par[0] != 0 {
				t.Errorf("%s: step %d: Advance = %d, input %d, parent %d", c.name, i, n, in[0], par[0])
			}
		}
		if !slices.Equal(g.Tokens(), c.want) {
			t.Errorf("%s: tokens %v, want %v", c.name, g.Tokens(), c.want)
		}
		att := g.Attention()
		if len(att) != len(c.want) {
			t.Errorf("%s: %d attention rows for %d tokens", c.name, len(att), len(c.want))
		}
		for _, a := range att {
			if !slices.Equal(a, []float32{0.25, 0.75}) {
				t.Errorf("%s: attention row %v, want the row's own 2 positions", c.name, a)
			}
		}
		g.Reset()
		if len(g.Tokens()) != 0 || len(g.Attention()) != 0 {
			t.Errorf("%s: Reset left %v", c.name, g.Tokens())
		}
	}
}

// TestRelayout moves rows between random layouts (rows leaving, slots
// expanding, duplicating and shrinking, the stride growing and shrinking)
// and checks each new slot against its row's data, with zeros past the old
// stride. Slots already in place carry a sentinel the row's other slots do
// not: it must survive, and be what the row's other slots are copied from.
func TestRelayout(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 3000; trial++ {
		nRows := 1 + r.IntN(6)
		oldLen := 1 + r.IntN(5)
		newLen := oldLen
		switch r.IntN(3) {
		case 0:
			newLen = 1 + r.IntN(6)
		}
		var oldRow []RowID
		for row := 0; row < nRows; row++ {
			for k := 1 + r.IntN(3); k > 0; k-- {
				oldRow = append(oldRow, RowID(10+row))
			}
		}
		// Row data: value v of row R is R*100+v; mark in-place candidates
		// to prove they are not rewritten.
		size := max(len(oldRow)*oldLen, 4*nRows*newLen) + 8
		buf := make([]float32, size)
		for j, row := range oldRow {
			for v := 0; v < oldLen; v++ {
				buf[j*oldLen+v] = float32(row)*100 + float32(v)
			}
		}
		// New layout: keep each row with probability 3/4, with 1..4 slots.
		var newRow []RowID
		var src []int
		for row := 0; row < nRows; row++ {
			if r.IntN(4) == 0 {
				continue
			}
			var olds []int
			for j, x := range oldRow {
				if x == RowID(10+row) {
					olds = append(olds, j)
				}
			}
			for k := 1 + r.IntN(4); k > 0; k-- {
				newRow = append(newRow, RowID(10+row))
				src = append(src, olds[r.IntN(len(olds))])
			}
		}
		// Slots that stay in place get a sentinel in their last value,
		// which relayout must leave alone.
		hasInPlace := map[RowID]bool{}
		if oldLen == newLen {
			for j := range newRow {
				if j < len(oldRow) && oldRow[j] == newRow[j] {
					buf[j*oldLen+oldLen-1] = -1
					hasInPlace[newRow[j]] = true
				}
			}
		}
		relayout(buf, oldRow, oldLen, newRow, src, newLen)
		for j, row := range newRow {
			for v := 0; v < newLen; v++ {
				got := buf[j*newLen+v]
				want := float32(row)*100 + float32(v)
				if v >= oldLen {
					want = 0
				}
				if hasInPlace[row] && v == newLen-1 {
					want = -1 // kept in place, or copied from a slot kept in place
				}
				if got != want {
					t.Fatalf("trial %d: old rows %v (len %d) -> new %v from %v (len %d): slot %d value %d = %v, want %v",
						trial, oldRow, oldLen, newRow, src, newLen, j, v, got, want)
				}
			}
		}
	}
}
