package onnxeval

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestArithRunsMatchElementwise: float32 Add, Sub, Mul and Div on the
// vector kernels, cut into broadcast runs, give bit for bit what the
// element-by-element loop gives, for shapes broadcast every way a pair
// can be (a bias row, a column, a middle axis, a scalar, both sides at
// once, size-1 and size-0 axes), NaN and infinities included.
func TestArithRunsMatchElementwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	pairs := [][2][]int64{
		{{3, 4, 5}, {3, 4, 5}},
		{{3, 12, 17}, {3, 1, 17}}, // attention: a query against every key
		{{32, 100}, {100}},
		{{32, 100}, {32, 1}},
		{{1}, {7, 9}},
		{{7, 9}, {}},
		{{2, 1, 5}, {1, 3, 1}},
		{{4, 1, 1, 6}, {1, 5, 3, 1}},
		{{1, 3, 1}, {2, 1, 9}},
		{{2, 3, 0}, {1, 3, 1}},
		{{5, 1}, {5, 1}},
		{{1, 1}, {1}},
		{{6, 1, 8}, {8}},
	}
	for _, p := range pairs {
		for _, swap := range []bool{false, true} {
			as, bs := p[0], p[1]
			if swap {
				as, bs = bs, as
			}
			a := New(as, randomOdd(rng, numel(as)))
			b := New(bs, randomOdd(rng, numel(bs)))
			for _, op := range []arith{opAdd, opSub, opMul, opDiv} {
				r := &runner{arena: &arena{}, budget: 1 << 30}
				got := arithF32(r, op, a, b)
				want, err := binaryT(r, a, b, arithFn[float32](op))
				if err != nil {
					t.Fatal(err)
				}
				name := fmt.Sprintf("%v op %d %v", as, op, bs)
				if got == nil || !sameShape(got.Shape, want.Shape) {
					t.Fatalf("%s: shape %v, want %v", name, got, want.Shape)
				}
				g, w := get[float32](got), get[float32](want)
				for i := range w {
					if math.Float32bits(g[i]) != math.Float32bits(w[i]) && !(g[i] != g[i] && w[i] != w[i]) {
						t.Fatalf("%s: [%d] = %v, want %v", name, i, g[i], w[i])
					}
				}
			}
		}
	}
}

func randomOdd(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = (rng.Float32() - 0.5) * 10
		switch rng.IntN(25) {
		case 0:
			x[i] = float32(math.NaN())
		case 1:
			x[i] = float32(math.Inf(1 - 2*rng.IntN(2)))
		case 2:
			x[i] = 0
		}
	}
	return x
}

// TestTopKScanMatchesHeap: float32 TopK along the last axis, which skips
// the elements that cannot displace the worst kept one, picks what the
// element-by-element selection picks (run here on the same values as
// float64), ties to the lower index, NaN and infinities included.
func TestTopKScanMatchesHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, dim := range []int{1, 5, 8, 33, 1000} {
		for _, k := range []int{1, 2, 4, 8} {
			if k > dim {
				continue
			}
			x := randomOdd(rng, 3*dim)
			for i := range x {
				if rng.IntN(4) == 0 {
					x[i] = float32(rng.IntN(3)) // ties
				}
			}
			x64 := make([]float64, len(x))
			for i, v := range x {
				x64[i] = float64(v)
			}
			for _, largest := range []bool{true, false} {
				r := &runner{arena: &arena{}, budget: 1 << 30}
				v32, i32 := topK[float32](r, New([]int64{3, int64(dim)}, x), 1, k, largest)
				v64, i64 := topK[float64](r, New([]int64{3, int64(dim)}, x64), 1, k, largest)
				gi, wi := get[int64](i32), get[int64](i64)
				gv, wv := get[float32](v32), get[float64](v64)
				for j := range wi {
					if gi[j] != wi[j] || !(float64(gv[j]) == wv[j] || gv[j] != gv[j] && wv[j] != wv[j]) {
						t.Fatalf("dim %d k %d largest %v: indices %v values %v, want %v %v", dim, k, largest, gi, gv, wi, wv)
					}
				}
			}
		}
	}
}

// TestArenaKeepsLargeBuffersForLargeValues: a small value does not take a
// free buffer many times its size, which stays for the next large value.
func TestArenaKeepsLargeBuffersForLargeValues(t *testing.T) {
	a := &arena{}
	r := &runner{arena: a, budget: 1 << 30}
	big := a.get(r, 1<<20)
	a.put(big)
	if small := a.get(r, 10); cap(small) >= 1<<20 {
		t.Fatalf("a 10-value tensor took the free buffer of %d", cap(small))
	}
	if again := a.get(r, 1<<20); &again[0] != &big[0] {
		t.Fatalf("the next large value did not reuse the large buffer")
	}
	mid := a.get(r, 3000)
	a.put(mid)
	if got := a.get(r, 2000); &got[0] != &mid[0] {
		t.Fatalf("a buffer less than twice the size was not reused")
	}
}

// TestArgMaxScanMatchesLoop: float32 ArgMax and ArgMin along a contiguous
// row, found by the vector scan, pick what the element-by-element loop
// picks (run on the same values as float64): the first of equal extremes,
// NaN never beyond anything, a leading NaN kept.
func TestArgMaxScanMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	for _, dim := range []int{1, 2, 7, 8, 9, 100, 10000} {
		x := randomOdd(rng, 4*dim)
		for i := range x {
			if rng.IntN(3) == 0 {
				x[i] = float32(rng.IntN(4)) // ties
			}
		}
		x[0] = float32(math.NaN()) // a row starting with NaN
		x64 := make([]float64, len(x))
		for i, v := range x {
			x64[i] = float64(v)
		}
		for _, largest := range []bool{true, false} {
			got := get[int64](argT[float32](New([]int64{4, int64(dim)}, x), 1, false, largest, false))
			want := get[int64](argT[float64](New([]int64{4, int64(dim)}, x64), 1, false, largest, false))
			if !slices.Equal(got, want) {
				t.Fatalf("dim %d largest %v: %v, want %v", dim, largest, got, want)
			}
		}
	}
}

// TestBinaryBroadcastMatchesIndexMaps: binaryT's broadcast paths (both
// inputs repeated along some axes, one a suffix, one a scalar) give what
// the element-by-element index maps give, for a comparison (int64 to bool,
// an attention mask's Less) and a float32 operation, on shapes with zero
// and one lengths.
func TestBinaryBroadcastMatchesIndexMaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	pairs := [][2][]int64{
		{{1, 25}, {150, 1}},
		{{2, 1, 5}, {1, 3, 1}},
		{{4, 1, 1, 6}, {1, 5, 3, 1}},
		{{1, 3, 1}, {2, 1, 9}},
		{{2, 3, 0}, {1, 3, 1}},
		{{3, 1}, {1, 1, 4}},
		{{6, 1, 8}, {8}},
		{{32, 100}, {32, 1}},
		{{7}, {}},
		{{1}, {5, 1}},
	}
	for _, p := range pairs {
		for _, swap := range []bool{false, true} {
			as, bs := p[0], p[1]
			if swap {
				as, bs = bs, as
			}
			ai, bi := make([]int64, numel(as)), make([]int64, numel(bs))
			for i := range ai {
				ai[i] = rng.Int64N(9)
			}
			for i := range bi {
				bi[i] = rng.Int64N(9)
			}
			r := &runner{arena: &arena{}, budget: 1 << 30}
			got, err := binaryT(r, New(as, ai), New(bs, bi), func(x, y int64) bool { return x < y })
			if err != nil {
				t.Fatal(err)
			}
			shape, _ := broadcastShape(as, bs)
			ia, ib := bcastIndex(r, shape, as), bcastIndex(r, shape, bs)
			at := func(idx []int32, i int) int {
				if idx == nil {
					return i
				}
				return int(idx[i])
			}
			g := get[bool](got)
			if !sameShape(got.Shape, shape) || len(g) != numel(shape) {
				t.Fatalf("%v < %v: shape %v, want %v", as, bs, got.Shape, shape)
			}
			for i := range g {
				if want := ai[at(ia, i)] < bi[at(ib, i)]; g[i] != want {
					t.Fatalf("%v < %v: [%d] = %v, want %v", as, bs, i, g[i], want)
				}
			}
			af, bf := New(as, randomOdd(rng, numel(as))), New(bs, randomOdd(rng, numel(bs)))
			fz, err := binaryT(r, af, bf, func(x, y float32) float32 { return x - 2*y })
			if err != nil {
				t.Fatal(err)
			}
			xs, ys, zs := get[float32](af), get[float32](bf), get[float32](fz)
			for i := range zs {
				want := xs[at(ia, i)] - 2*ys[at(ib, i)]
				if math.Float32bits(zs[i]) != math.Float32bits(want) && !(want != want && zs[i] != zs[i]) {
					t.Fatalf("%v - 2 %v: [%d] = %v, want %v", as, bs, i, zs[i], want)
				}
			}
		}
	}
}
