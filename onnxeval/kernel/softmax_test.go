package kernel

import (
	"math"
	"testing"
)

// TestExpSumAndMax compares the vector exponential sum and maximum with
// float64 ones, over lengths around the assembly's 8 lanes.
func TestExpSumAndMax(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 100, 10000} {
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
		if got := ExpSum(x, m); math.Abs(got-ws)/ws > 5e-7 {
			t.Errorf("n=%d: ExpSum = %v, want %v", n, got, ws)
		}
	}
	nan := []float32{1, 2, 3, 4, 5, 6, float32(math.NaN()), 8, 9}
	if m := Max(nan); m == m {
		t.Errorf("Max with a NaN = %v, want NaN", m)
	}
}
