package kernel

import (
	"math"
	"testing"
)

// TestExp checks the float32 exponential (Exp) against math.Exp over the
// range log-softmax feeds it (and past both ends).
func TestExp(t *testing.T) {
	worst := 0.0
	for i := 0; i <= 2000000; i++ {
		x := float32(-100 + 200*float64(i)/2000000)
		got, want := float64(Exp(x)), math.Exp(float64(x))
		switch {
		case x > 88.72283:
			if !math.IsInf(got, 1) {
				t.Fatalf("Exp(%v) = %v, want +Inf", x, got)
			}
		case want < 1.2e-38:
			if got != 0 && math.Abs(got-want) > 1e-38 {
				t.Fatalf("Exp(%v) = %v, want %v", x, got, want)
			}
		default:
			worst = max(worst, math.Abs(got-want)/want)
		}
	}
	if worst > 3e-7 {
		t.Errorf("Exp's largest relative error is %.3g, want <= 3e-7 (about 2 ulp)", worst)
	}
	if v := Exp(float32(math.NaN())); v == v {
		t.Errorf("Exp(NaN) = %v", v)
	}
}

// TestNaNPropagates: a NaN in gives NaN out at its place through Exp,
// ExpVec, Tanh, Sigmoid, ExpSum and Max, on whichever path this build and
// CPU take (the assembly clamps dropped NaN in its first eight lanes:
// Tanh(NaN) = 1, Sigmoid(NaN) = 4.2e-39, Exp(NaN) = 2.4e38). make test runs
// it on every path: AVX-512, AVX2 (ATTNX_KERNELS=avx2) and purego.
func TestNaNPropagates(t *testing.T) {
	nan := float32(math.NaN())
	t.Logf("kernels: %s", Accelerated())
	for n := 1; n <= 40; n++ {
		for at := 0; at < n; at++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = float32(i%5) - 2
			}
			x[at] = nan
			for name, f := range map[string]func(x, z []float32){"ExpVec": ExpVec, "Tanh": Tanh, "Sigmoid": Sigmoid} {
				z := make([]float32, n)
				f(x, z)
				for i, v := range z {
					if isNaN := v != v; isNaN != (i == at) {
						t.Fatalf("%s of %d values with NaN at %d: z[%d] = %v", name, n, at, i, v)
					}
				}
			}
			if s := ExpSum(x, 0); s == s {
				t.Fatalf("ExpSum of %d values with NaN at %d = %v, want NaN", n, at, s)
			}
			if m := Max(x); m == m {
				t.Fatalf("Max of %d values with NaN at %d = %v, want NaN", n, at, m)
			}
		}
	}
	if e := Exp(nan); e == e {
		t.Fatalf("Exp(NaN) = %v", e)
	}
}
