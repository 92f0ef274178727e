package onnxeval

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestWhereMatchesDefinition checks Where's pass over index maps against
// the definition, element by element through the broadcast of each
// operand: shapes as attention masks take them (a mask over rows and
// source positions, a scalar fill), and others.
func TestWhereMatchesDefinition(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []struct{ out, cs, xs, ys []int64 }{
		{[]int64{3, 1, 9}, []int64{3, 1, 9}, []int64{3, 1, 9}, []int64{}},
		{[]int64{3, 5, 9}, []int64{3, 1, 9}, []int64{3, 5, 9}, []int64{1}},
		{[]int64{2, 4, 6}, []int64{6}, []int64{2, 1, 6}, []int64{2, 4, 1}},
		{[]int64{4, 7}, []int64{4, 7}, []int64{}, []int64{4, 7}},
	} {
		n := numel(c.out)
		cond, x, y := whereOperands(rng, c.cs, c.xs, c.ys)
		r := &runner{arena: &arena{}, budget: 1 << 30}
		ic, ix, iy := bcastIndex(r, c.out, c.cs), bcastIndex(r, c.out, c.xs), bcastIndex(r, c.out, c.ys)
		z := make([]float32, n)
		whereT(cond, x, y, z, ic, ix, iy)
		checkWhere(t, fmt.Sprintf("%+v", c), z, cond, x, y, ic, ix, iy)
	}
}

// whereOperands returns a random condition and operands of these shapes,
// X's values positive and Y's negative.
func whereOperands(rng *rand.Rand, cs, xs, ys []int64) (cond []bool, x, y []float32) {
	cond = make([]bool, numel(cs))
	for i := range cond {
		cond[i] = rng.IntN(2) == 0
	}
	x, y = make([]float32, numel(xs)), make([]float32, numel(ys))
	for i := range x {
		x[i] = rng.Float32()
	}
	for i := range y {
		y[i] = -rng.Float32()
	}
	return cond, x, y
}

// checkWhere fails t unless z[i] is x's element where cond's is true and
// y's where it is false, each operand's element reached through its index
// map (nil: the output's own index).
func checkWhere(t *testing.T, what string, z []float32, cond []bool, x, y []float32, ic, ix, iy []int32) {
	t.Helper()
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
			t.Fatalf("%s: z[%d] = %v, want %v", what, i, z[i], want)
		}
	}
}

// TestWhereRunsF32 checks Where's run path against the definition: a
// condition over leading axes (an encoder's mask over positions and batch
// rows, batch 1 included) with X and Y of the output's shape or one
// element; and that it declines shapes it does not cover.
func TestWhereRunsF32(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct {
		out, cs, xs, ys []int64
		takes           bool
	}{
		{[]int64{7, 3, 16}, []int64{7, 3, 1}, []int64{7, 3, 16}, []int64{}, true},
		{[]int64{7, 1, 16}, []int64{7, 1, 1}, []int64{1}, []int64{7, 1, 16}, true},
		{[]int64{5, 2, 4, 8}, []int64{5, 2}, []int64{5, 2, 4, 8}, []int64{5, 2, 4, 8}, false}, // cond aligned to the last axes
		{[]int64{5, 2, 8}, []int64{5, 1, 1}, []int64{5, 2, 8}, []int64{1}, true},
		{[]int64{5, 2, 8}, []int64{1, 2, 1}, []int64{5, 2, 8}, []int64{1}, false}, // broadcast along a leading axis
		{[]int64{5, 2, 8}, []int64{5, 2, 1}, []int64{1, 2, 8}, []int64{1}, false}, // X broadcast
		{[]int64{5, 2, 3}, []int64{5, 2, 1}, []int64{5, 2, 3}, []int64{1}, false}, // runs too short
	} {
		cond, x, y := whereOperands(rng, c.cs, c.xs, c.ys)
		r := &runner{arena: &arena{}, budget: 1 << 30}
		o := whereRunsF32(r, &Tensor{DType: dtBool, Shape: c.cs, Data: cond}, &Tensor{DType: dtFloat, Shape: c.xs, Data: x},
			&Tensor{DType: dtFloat, Shape: c.ys, Data: y}, c.out)
		if (o != nil) != c.takes {
			t.Fatalf("%+v: took it %v", c, o != nil)
		}
		if o == nil {
			continue
		}
		ic, ix, iy := bcastIndex(r, c.out, c.cs), bcastIndex(r, c.out, c.xs), bcastIndex(r, c.out, c.ys)
		checkWhere(t, fmt.Sprintf("%+v", c), o.Data.([]float32), cond, x, y, ic, ix, iy)
	}
}
