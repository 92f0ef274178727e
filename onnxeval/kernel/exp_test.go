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
