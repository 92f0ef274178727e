package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func oddValues(r *rand.Rand, n int) []float32 {
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, 3e38, -3e38}
	x := make([]float32, n)
	for i := range x {
		x[i] = (r.Float32() - 0.5) * 20
		if r.IntN(10) == 0 {
			x[i] = special[r.IntN(len(special))]
		}
	}
	return x
}

func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestArith: the vector loops round each result as Go's float32
// arithmetic does, on every length (the tails too), NaN and infinities
// included, in place as well.
func TestArith(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 31, 100, 1000} {
		x, y := oddValues(r, n), oddValues(r, n)
		for _, op := range []Op{Add, Sub, Mul, Div} {
			z := make([]float32, n)
			Arith(op, x, y, z)
			for i := range x {
				if want := op.apply(x[i], y[i]); !sameBits(z[i], want) {
					t.Fatalf("n %d op %d: %v op %v = %v, want %v", n, op, x[i], y[i], z[i], want)
				}
			}
			if op == Sub && n > 1 {
				z := make([]float32, n)
				SubSub(x, y[0], y[1], z)
				for i := range x {
					if want := (x[i] - y[0]) - y[1]; !sameBits(z[i], want) {
						t.Fatalf("n %d: (%v - %v) - %v = %v, want %v", n, x[i], y[0], y[1], z[i], want)
					}
				}
			}
			for _, swap := range []bool{false, true} {
				v := []float32{2.5}
				if n > 0 {
					v = y[:1]
				}
				z := append([]float32(nil), x...)
				ArithScalar(op, z, v[0], z, swap)
				for i := range x {
					want := op.apply(x[i], v[0])
					if swap {
						want = op.apply(v[0], x[i])
					}
					if !sameBits(z[i], want) {
						t.Fatalf("n %d op %d swap %v: %v, %v: %v, want %v", n, op, swap, x[i], v[0], z[i], want)
					}
				}
			}
		}
	}
}

// TestActivationsPositionFree: Sigmoid, Tanh and ExpVec give an element
// the same bits wherever it stands in its slice (in a group of eight, in
// the last partial group, alone): a row's activations do not depend on
// the length of the tensor it is part of. (Exp itself, Go's arithmetic
// without fused multiply-adds, may differ in the last bit.)
func TestActivationsPositionFree(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	for _, f := range []struct {
		name string
		fn   func(x, z []float32)
	}{{"Sigmoid", Sigmoid}, {"Tanh", Tanh}, {"ExpVec", ExpVec}} {
		for _, n := range []int{1, 3, 8, 13, 16, 37} {
			for range 200 {
				x := oddValues(r, n)
				z := make([]float32, n)
				f.fn(x, z)
				for i := range x {
					one := []float32{0}
					f.fn(x[i:i+1], one)
					if !sameBits(one[0], z[i]) {
						t.Fatalf("%s(%v): %v as element %d of %d, %v alone", f.name, x[i], z[i], i, n, one[0])
					}
				}
			}
		}
	}
}

// TestTanhSigmoidSteps: the one-pass assembly of Tanh and Sigmoid gives
// the same bits as their three steps (scale, ExpVec, finish), and Max
// finds a NaN wherever it is.
func TestTanhSigmoidSteps(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	for _, n := range []int{1, 8, 13, 64, 257} {
		x := oddValues(r, n)
		th, sg := make([]float32, n), make([]float32, n)
		Tanh(x, th)
		Sigmoid(x, sg)
		e := make([]float32, n)
		for i, v := range x {
			e[i] = 2 * v
		}
		ExpVec(e, e)
		for i := range x {
			if want := 1 - 2/(e[i]+1); !sameBits(th[i], want) {
				t.Fatalf("n %d: tanh(%v) = %v, want %v", n, x[i], th[i], want)
			}
		}
		for i, v := range x {
			e[i] = -v
		}
		ExpVec(e, e)
		for i := range x {
			if want := 1 / (1 + e[i]); !sameBits(sg[i], want) {
				t.Fatalf("n %d: sigmoid(%v) = %v, want %v", n, x[i], sg[i], want)
			}
		}
		for i := range x {
			if x[i] != x[i] {
				x[i] = 1
			}
		}
		want := x[0]
		for _, v := range x {
			want = max(want, v)
		}
		if got := Max(x); got != want {
			t.Fatalf("n %d: Max = %v, want %v", n, got, want)
		}
		for _, at := range []int{0, n / 2, n - 1} {
			old := x[at]
			x[at] = float32(math.NaN())
			if got := Max(x); got == got {
				t.Fatalf("n %d: NaN at %d, Max = %v", n, at, got)
			}
			x[at] = old
		}
	}
}

// TestFirstBeyond: the first element strictly beyond a threshold, either
// way, at every position (the vector part and the tail), NaN never.
func TestFirstBeyond(t *testing.T) {
	r := rand.New(rand.NewPCG(35, 36))
	for _, n := range []int{0, 1, 7, 8, 9, 16, 37, 100} {
		x := oddValues(r, n)
		for _, th := range []float32{0, 3, -3, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			for _, below := range []bool{false, true} {
				want := n
				for i, v := range x {
					if below && v < th || !below && v > th {
						want = i
						break
					}
				}
				if got := FirstBeyond(x, th, below); got != want {
					t.Fatalf("n %d t %v below %v: %d, want %d (%v)", n, th, below, got, want, x)
				}
			}
			want := n
			for i, v := range x {
				if !(v <= th) {
					want = i
					break
				}
			}
			if got := FirstAboveOrNaN(x, th); got != want {
				t.Fatalf("n %d t %v: FirstAboveOrNaN %d, want %d (%v)", n, th, got, want, x)
			}
		}
	}
}
