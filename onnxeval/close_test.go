package onnxeval_test

import (
	"errors"
	"math"
	"testing"

	"github.com/attnx/attnx/onnxeval"
)

// TestClose: a model runs until Close; later runs fail with ErrClosed
// (naming the model), Recycle after Close is harmless, and a second Close
// returns nil.
func TestClose(t *testing.T) {
	m, want := mlp(t)
	x := []float32{1, 2, 3, 4, 5}
	in := map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1, 5}, x)}
	out, err := m.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range want(x) {
		if got := out["y"].Data.([]float32)[i]; math.Abs(float64(got-w)) > 1e-5 {
			t.Fatalf("before Close: y[%d] = %v, want %v", i, got, w)
		}
	}
	if err := m.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	m.Recycle(out["y"])
	if _, err := m.Run(in); !errors.Is(err, onnxeval.ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	} else if want := "native evaluator: model bytes: the model is closed"; err.Error() != want {
		t.Errorf("Run after Close: %q, want %q", err, want)
	}
	if err := m.Close(); err != nil {
		t.Errorf("a second Close: %v, want nil", err)
	}
}
