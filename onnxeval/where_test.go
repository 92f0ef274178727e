package onnxeval

import (
	"math/rand/v2"
	"testing"
)

// TestWhereF32MatchesPick checks Where's float32 pass against the
// definition, element by element through the broadcast of each operand:
// shapes as attention masks take them (a mask over rows and source
// positions, a scalar fill), and others.
func TestWhereF32MatchesPick(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ out, cs, xs, ys []int64 }{
		{[]int64{3, 1, 9}, []int64{3, 1, 9}, []int64{3, 1, 9}, []int64{}},
		{[]int64{3, 5, 9}, []int64{3, 1, 9}, []int64{3, 5, 9}, []int64{1}},
		{[]int64{2, 4, 6}, []int64{6}, []int64{2, 1, 6}, []int64{2, 4, 1}},
		{[]int64{4, 7}, []int64{4, 7}, []int64{}, []int64{4, 7}},
	} {
		n := numel(c.out)
		cond := make([]bool, numel(c.cs))
		for i := range cond {
			cond[i] = rng.IntN(2) == 0
		}
		x, y := make([]float32, numel(c.xs)), make([]float32, numel(c.ys))
		for i := range x {
			x[i] = rng.Float32()
		}
		for i := range y {
			y[i] = -rng.Float32()
		}
		r := &runner{arena: &arena{}, budget: 1 << 30}
		ic, ix, iy := bcastIndex(r, c.out, c.cs), bcastIndex(r, c.out, c.xs), bcastIndex(r, c.out, c.ys)
		z := make([]float32, n)
		whereF32(cond, x, y, z, ic, ix, iy)
		at := func(idx []int32, i int) int {
			if idx == nil {
				return i
			}
			return int(idx[i])
		}
		for i := range z {
			want := y[at(iy, i)]
			if cond[at(ic, i)] {
				want = x[at(ix, i)]
			}
			if z[i] != want {
				t.Fatalf("%+v: z[%d] = %v, want %v", c, i, z[i], want)
			}
		}
	}
}
