package onnxeval_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// TestBatchedMatMulThreads: a batched float32 MatMul (attention's scores
// against a column per hypothesis, its context from a row of weights)
// gives each product the same bits whether the batch runs on one thread
// or is split among two or three, and those products are the float64
// sums' to float32 rounding; batches smaller than the threads, a batch
// broadcast from one matrix, and zeros in A (which the row loop skips)
// included.
func TestBatchedMatMulThreads(t *testing.T) {
	for _, c := range []struct {
		name   string
		aShape []int64
		bShape []int64
	}{
		{"scores, a column per row", []int64{40, 30, 256}, []int64{40, 256, 1}},
		{"context, a row of weights", []int64{40, 1, 30}, []int64{40, 30, 256}},
		{"odd batch", []int64{7, 5, 64}, []int64{7, 64, 33}},
		{"one matrix", []int64{1, 30, 256}, []int64{1, 256, 1}},
		{"A broadcast", []int64{1, 12, 40}, []int64{9, 40, 1}},
		{"B broadcast", []int64{9, 3, 40}, []int64{40, 17}},
		{"two batch axes", []int64{3, 5, 2, 16}, []int64{3, 5, 16, 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(len(c.name)), 77))
			numel := func(s []int64) int {
				n := 1
				for _, d := range s {
					n *= int(d)
				}
				return n
			}
			av, bv := uniform(rng, numel(c.aShape), 1), uniform(rng, numel(c.bShape), 1)
			for i := range av {
				if i%7 == 3 {
					av[i] = 0
				}
			}
			dims := func(s []int64) builder.Shape {
				d := make([]any, len(s))
				for i, v := range s {
					d[i] = v
				}
				return builder.Dims(d...)
			}
			g := builder.New("matmul")
			a := g.Input("a", builder.Float, dims(c.aShape))
			b := g.Input("b", builder.Float, dims(c.bShape))
			g.Output("y", ops.MatMul(a, b))
			data, err := onnxfile.Marshal(builder.NewModel(g))
			if err != nil {
				t.Fatal(err)
			}
			in := map[string]*onnxeval.Tensor{"a": onnxeval.New(c.aShape, av), "b": onnxeval.New(c.bShape, bv)}
			var one []float32
			for _, threads := range []int{1, 2, 3} {
				m, err := onnxeval.OpenBytes(data, onnxeval.Options{Threads: threads})
				if err != nil {
					t.Fatal(err)
				}
				out, err := m.Run(in)
				if err != nil {
					t.Fatal(err)
				}
				y, _ := onnxeval.Float32Data(out["y"])
				if threads == 1 {
					one = y
					checkMatMul(t, c.aShape, c.bShape, av, bv, out["y"].Shape, y)
					continue
				}
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(one[i]) {
						t.Fatalf("%d threads: y[%d] = %v, one thread %v", threads, i, y[i], one[i])
					}
				}
			}
		})
	}
}

// checkMatMul compares y (shape ys) with float64 sums of a [.., m, k] times
// b [.., k, n], the batch axes broadcast as numpy does.
func checkMatMul(t *testing.T, as, bs []int64, a, b []float32, ys []int64, y []float32) {
	t.Helper()
	m, k, n := int(as[len(as)-2]), int(as[len(as)-1]), int(bs[len(bs)-1])
	batch := ys[:len(ys)-2]
	// offset of batch index idx (over batch) in a tensor whose batch axes
	// are s (right-aligned, size-1 axes broadcast).
	offset := func(idx []int, s []int64, block int) int {
		s = s[:len(s)-2]
		off, stride := 0, block
		for i := len(s) - 1; i >= 0; i-- {
			j := idx[len(idx)-len(s)+i]
			if s[i] == 1 {
				j = 0
			}
			off += j * stride
			stride *= int(s[i])
		}
		return off
	}
	idx := make([]int, len(batch))
	for p := 0; p*m*n < len(y); p++ {
		rest := p
		for i := len(batch) - 1; i >= 0; i-- {
			idx[i] = rest % int(batch[i])
			rest /= int(batch[i])
		}
		ao, bo := offset(idx, as, m*k), offset(idx, bs, k*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var want float64
				for l := 0; l < k; l++ {
					want += float64(a[ao+i*k+l]) * float64(b[bo+l*n+j])
				}
				if got := y[p*m*n+i*n+j]; math.Abs(float64(got)-want) > 1e-4 {
					t.Fatalf("product %d [%d,%d] = %v, want %v", p, i, j, got, want)
				}
			}
		}
	}
}
