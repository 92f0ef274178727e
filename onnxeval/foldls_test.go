package onnxeval_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// TestFoldedLogSoftmax: a LogSoftmax of a Gemm's result folds into the
// Gemm (the log-probabilities written over the logits) only when nothing
// else reads the logits, and the folded node computes bit for bit what
// the two nodes compute: rows holding NaN, infinities and huge values, odd
// widths (the kernels' partial groups), a constant and a computed B, with
// and without a bias, alpha other than 1, the axis across the rows, one
// thread and two.
func TestFoldedLogSoftmax(t *testing.T) {
	const folded = "attnx.fused.GemmLogSoftmax"
	type graphCase struct {
		name        string
		M, K, N     int
		constB      bool
		bias        bool
		alpha       float32
		axis        int64
		logitsOut   bool // the logits are a graph output too: no fold
		softmaxOnly bool // Softmax, not LogSoftmax: no fold
	}
	cases := []graphCase{
		{name: "classifier", M: 5, K: 24, N: 1003, constB: true, bias: true, alpha: 1, axis: -1},
		{name: "classifier axis 1", M: 7, K: 16, N: 37, constB: true, bias: true, alpha: 1, axis: 1},
		{name: "one row", M: 1, K: 9, N: 16, constB: true, bias: true, alpha: 1, axis: -1},
		{name: "B an input", M: 4, K: 12, N: 33, bias: true, alpha: 1, axis: -1},
		{name: "no bias", M: 3, K: 8, N: 21, constB: true, alpha: 1, axis: -1},
		{name: "alpha", M: 3, K: 8, N: 21, constB: true, bias: true, alpha: 0.5, axis: -1},
		{name: "across rows", M: 6, K: 8, N: 19, constB: true, bias: true, alpha: 1, axis: 0},
		{name: "logits read twice", M: 5, K: 8, N: 40, constB: true, bias: true, alpha: 1, axis: -1, logitsOut: true},
		{name: "softmax", M: 5, K: 8, N: 40, constB: true, bias: true, alpha: 1, axis: -1, softmaxOnly: true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 41))
			vals := func(n int, scale float32) []float32 { return uniform(rng, n, scale) }
			g := builder.New("classifier")
			x := g.Input("x", builder.Float, builder.Dims(int64(c.M), int64(c.K)))
			in := []*onnxeval.Tensor{nil}
			var b *builder.Value
			bv := vals(c.N*c.K, 1)
			if c.constB {
				b = g.Init("w", builder.FloatTensor([]int64{int64(c.N), int64(c.K)}, bv))
			} else {
				b = g.Input("w", builder.Float, builder.Dims(int64(c.N), int64(c.K)))
				in = append(in, onnxeval.New([]int64{int64(c.N), int64(c.K)}, bv))
			}
			var bias *builder.Value
			if c.bias {
				bias = g.Init("b", builder.FloatTensor([]int64{int64(c.N)}, vals(c.N, 3)))
			}
			opts := ops.GemmOpts{TransB: true}
			if c.alpha != 1 {
				opts.Alpha = &c.alpha
			}
			logits := ops.Gemm(x, b, bias, opts)
			if c.softmaxOnly {
				g.Output("p", ops.Softmax(logits, c.axis))
			} else {
				g.Output("p", ops.LogSoftmax(logits, c.axis))
			}
			if c.logitsOut {
				g.Output("logits", logits)
			}
			data, err := onnxfile.Marshal(builder.NewModel(g))
			if err != nil {
				t.Fatal(err)
			}
			// Rows: ordinary values, then one holding NaN, one +Inf, one
			// -Inf, one huge (3e38, whose logits overflow), one all zero.
			xs := vals(c.M*c.K, 2)
			for r, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 3e38, 0} {
				if row := r + 1; row < c.M {
					for k := range c.K {
						if v == 0 || k%5 == 0 {
							xs[row*c.K+k] = v
						}
					}
				}
			}
			in[0] = onnxeval.New([]int64{int64(c.M), int64(c.K)}, xs)
			for _, threads := range []int{1, 2} {
				fused, nodes := openBoth(t, data, threads)
				want := !c.logitsOut && !c.softmaxOnly
				if got := slices.Contains(fused.OpsDeep(), folded); got != want {
					t.Fatalf("folded = %v (plan %v), want %v", got, fused.OpsDeep(), want)
				}
				if slices.Contains(nodes.OpsDeep(), folded) {
					t.Fatalf("folded with fusion off")
				}
				names := map[string]*onnxeval.Tensor{"x": in[0]}
				if !c.constB {
					names["w"] = in[1]
				}
				got := runBoth(t, fused, nodes, names, fmt.Sprintf("%d threads", threads))
				// The result is a log-softmax: a finite row's exponentials sum to 1.
				p, _ := onnxeval.Float32Data(got["p"])
				if c.axis != 0 && !c.softmaxOnly {
					var s float64
					for _, v := range p[:c.N] {
						s += math.Exp(float64(v))
					}
					if math.Abs(s-1) > 1e-4 {
						t.Fatalf("row 0: the exponentials of the log-probabilities sum to %v", s)
					}
				}
			}
		})
	}
}
