package decode

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestOpenNMTPushRowScan: the vector scan that skips candidates which
// cannot enter selects exactly what offering every candidate selects
// (torch.topk's order, ties by index), on rows with ties, NaN, -Inf,
// values below the masked one, masked EOS and UNK, blocked tokens, and
// each length penalty.
func TestOpenNMTPushRowScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	for trial := range 3000 {
		V := 1 + rng.IntN(300)
		K := 1 + rng.IntN(8)
		rows := 1 + rng.IntN(5)
		b := &OpenNMTBeam{K: K, EOS: int64(rng.IntN(V)), UNK: int64(rng.IntN(V)), BanUNK: rng.IntN(2) == 0, MinLen: rng.IntN(3)}
		length := 1 + rng.IntN(3)
		pen := []float64{1, 0.5, 1.7, float64(length + 1)}[rng.IntN(4)]
		lps := make([][]float32, rows)
		hs := make([]onmtLive, rows)
		forb := make([]map[int64]bool, rows)
		for r := range rows {
			lp := make([]float32, V)
			for v := range lp {
				switch rng.IntN(20) {
				case 0:
					lp[v] = float32(math.Inf(-1))
				case 1:
					lp[v] = -70000
				case 2:
					if trial%5 == 0 {
						lp[v] = float32(math.NaN())
					}
				case 3, 4, 5:
					lp[v] = -float32(rng.IntN(4)) // ties
				default:
					lp[v] = -float32(rng.ExpFloat64() * 4)
				}
			}
			lps[r] = lp
			hs[r] = onmtLive{score: -float32(rng.ExpFloat64() * 3), pos: int32(r)}
			if rng.IntN(3) == 0 {
				hs[r].score = float32(math.Inf(-1))
			}
			if rng.IntN(2) == 0 {
				forb[r] = map[int64]bool{int64(rng.IntN(V)): true, int64(rng.IntN(V)): true}
			}
		}
		// The reference: every candidate offered.
		var ref topK[onmtCand]
		ref.reset(K, onmtOrder)
		for r := range rows {
			for v, x := range lps[r] {
				switch {
				case int64(v) == b.EOS && length <= b.MinLen:
					x = onmtMasked
				case int64(v) == b.UNK && b.BanUNK:
					x = onmtMasked
				}
				c := x + hs[r].score
				if pen != 1 {
					c /= float32(pen)
				}
				if forb[r] != nil && forb[r][int64(v)] {
					c = onmtBlocked
				}
				ref.push(onmtCand{score: c, i: int32(r), v: int32(v), flat: int64(hs[r].pos)*int64(V) + int64(v)})
			}
		}
		b.sel.reset(K, onmtOrder)
		for r := range rows {
			b.pushRow(lps[r], r, hs[r], length, pen, float32(pen), forb[r])
		}
		want, got := slices.Clone(ref.result()), b.sel.result()
		same := len(want) == len(got)
		for j := 0; same && j < len(want); j++ {
			w, g := want[j], got[j]
			same = w.i == g.i && w.v == g.v && w.flat == g.flat && (w.score == g.score || (w.score != w.score && g.score != g.score))
		}
		if !same {
			t.Fatalf("trial %d (V %d, K %d, pen %g): scan %+v, every candidate %+v", trial, V, K, pen, got, want)
		}
	}
}

// TestOpenNMTSamplePickArgmax: the greedy pick (Temp 0 or TopK 1) is the
// first largest value, a NaN never taken over a number and a leading NaN
// kept, as the scalar comparison x > lp[best] gives.
func TestOpenNMTSamplePickArgmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	b := &OpenNMTSample{TopK: 1}
	for trial := range 2000 {
		lp := make([]float32, 1+rng.IntN(70))
		for v := range lp {
			switch rng.IntN(10) {
			case 0:
				lp[v] = float32(math.NaN())
			case 1:
				lp[v] = float32(math.Inf(-1))
			default:
				lp[v] = -float32(rng.IntN(5))
			}
		}
		want := 0
		for v, x := range lp {
			if x > lp[want] {
				want = v
			}
		}
		if got, _ := b.pick(slices.Clone(lp)); got != want {
			t.Fatalf("trial %d: %v: picked %d, want %d", trial, lp, got, want)
		}
	}
}

// TestFairseqPrepareNaN: every NaN log-prob becomes -Inf (first, last and
// runs of them), and nothing else changes.
func TestFairseqPrepareNaN(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(-1))
	b := &FairseqBeam{EOS: 2, UNK: -1}
	for _, n := range []int{1, 7, 8, 9, 33, 100} {
		for trial := range 20 {
			rng := rand.New(rand.NewPCG(uint64(n), uint64(trial)))
			lp := make([]float32, n)
			for v := range lp {
				if rng.IntN(4) == 0 {
					lp[v] = nan
				} else {
					lp[v] = -float32(rng.IntN(50))
				}
			}
			want := slices.Clone(lp)
			for v, x := range want {
				if x != x {
					want[v] = inf
				}
			}
			got := b.prepare(lp, 0, 10)
			for v := range want {
				if got[v] != want[v] {
					t.Fatalf("n %d trial %d: [%d] = %v, want %v", n, trial, v, got[v], want[v])
				}
			}
		}
	}
}
