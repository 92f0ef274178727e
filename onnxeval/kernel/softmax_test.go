package kernel

import (
	"math"
	"testing"
)

// TestExpSumAndMax compares the vector exponential sum and maximum with
// float64 ones, over lengths around the assembly's 8 and 16 lanes, and
// the sum's terms with ExpVec's (the 16-lane exponential computes each
// lane as the 8-lane one does: the sums differ by their order only).
func TestExpSumAndMax(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 17, 24, 31, 33, 100, 10000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*1.7)) * 30
		}
		m := Max(x)
		want := math.Inf(-1)
		for _, v := range x {
			want = math.Max(want, float64(v))
		}
		if float64(m) != want {
			t.Fatalf("n=%d: Max = %v, want %v", n, m, want)
		}
		var ws float64
		for _, v := range x {
			ws += math.Exp(float64(v - m))
		}
		got := ExpSum(x, m)
		if math.Abs(got-ws)/ws > 5e-7 {
			t.Errorf("n=%d: ExpSum = %v, want %v", n, got, ws)
		}
		if n%8 == 0 {
			e := make([]float32, n)
			for i, v := range x {
				e[i] = v - m
			}
			ExpVec(e, e)
			var terms float64
			for _, v := range e {
				terms += float64(v)
			}
			if math.Abs(got-terms)/terms > 1e-13 {
				t.Errorf("n=%d: ExpSum = %v, its terms by ExpVec sum to %v", n, got, terms)
			}
		}
	}
	nan := []float32{1, 2, 3, 4, 5, 6, float32(math.NaN()), 8, 9}
	if m := Max(nan); m == m {
		t.Errorf("Max with a NaN = %v, want NaN", m)
	}
}

// TestVectorActivations compares ExpVec, Tanh and Sigmoid with float64
// math over a range of inputs, in place too.
func TestVectorActivations(t *testing.T) {
	for _, n := range []int{1, 8, 13, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37)) * 12
			if i%5 == 0 {
				x[i] *= 1e-3
			}
		}
		z := make([]float32, n)
		ExpVec(x, z)
		for i, v := range x {
			if w := math.Exp(float64(v)); math.Abs(float64(z[i])-w)/w > 3e-7 {
				t.Fatalf("ExpVec(%v) = %v, want %v", v, z[i], w)
			}
		}
		Tanh(x, z)
		for i, v := range x {
			if w := math.Tanh(float64(v)); math.Abs(float64(z[i])-w) > 2e-7 {
				t.Fatalf("Tanh(%v) = %v, want %v", v, z[i], w)
			}
		}
		in := append([]float32(nil), x...)
		Tanh(in, in)
		for i := range in {
			if in[i] != z[i] {
				t.Fatalf("Tanh in place: %v, not %v", in[i], z[i])
			}
		}
		y := append([]float32(nil), x...)
		Sigmoid(y, y)
		for i, v := range x {
			if w := 1 / (1 + math.Exp(-float64(v))); math.Abs(float64(y[i])-w) > 2e-7 {
				t.Fatalf("Sigmoid(%v) = %v, want %v", v, y[i], w)
			}
		}
	}
	big := []float32{100, -100, 88.5, -88.5, 0, 1, 2, 3, 4}
	z := make([]float32, len(big))
	Tanh(big, z)
	if z[0] != 1 || z[1] != -1 || z[4] != 0 {
		t.Errorf("Tanh(%v) = %v", big, z)
	}
	Sigmoid(big, z)
	if z[0] != 1 || z[1] > 1e-30 || z[4] != 0.5 {
		t.Errorf("Sigmoid(%v) = %v", big, z)
	}
}
