package onnxeval

import (
	"math"
	"testing"
)

// TestInt8BlockScale: a block's scale is its largest magnitude over 127
// (NaN when it holds one, 0 for zeros of either sign), whichever kernel
// finds the largest (blocks of 128, 32 and odd lengths around the vector
// kernel's 16 lanes).
func TestInt8BlockScale(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{1, 7, 15, 16, 17, 32, 33, 128, 131} {
		for _, special := range []float32{0, float32(math.Copysign(0, -1)), nan, inf, -inf, -3e38, 1e-40} {
			for _, at := range []int{0, n / 2, n - 1} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(math.Sin(float64(i*7+n))) * 3
				}
				x[at] = special
				var amax float32
				for _, v := range x {
					amax = max(amax, float32(math.Abs(float64(v))))
				}
				want := amax / 127
				got, inv := int8BlockScale(x)
				if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
					t.Fatalf("n=%d, %v at %d: scale %v, want %v", n, special, at, got, want)
				}
				if want != 0 && want == want && inv != 1/want {
					t.Fatalf("n=%d, %v at %d: inverse %v, want %v", n, special, at, inv, 1/want)
				}
			}
		}
		zeros := make([]float32, n)
		zeros[n-1] = float32(math.Copysign(0, -1))
		if s, inv := int8BlockScale(zeros); math.Float32bits(s) != 0 || inv != 0 {
			t.Fatalf("n=%d zeros: scale %v inverse %v, want +0 and 0", n, s, inv)
		}
	}
}
