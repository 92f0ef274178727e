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

// TestFusedAttention: attention's scores, mask, softmax and context, built
// as attnx's Luong and OpenNMT-py decoders build them, fuse into one node
// that computes bit for bit what the nodes compute: masked and not, rows
// holding NaN, infinite and huge encoder outputs, a row masked whole (its
// weights NaN), sizes off the kernels' groups, one thread and two; and do
// not fuse when the mask is broadcast (run by the nodes, the same
// result), or when a value in between or the weights before the context
// is read elsewhere.
func TestFusedAttention(t *testing.T) {
	const fusedOp = "attnx.fused.Attention"
	type graphCase struct {
		name         string
		R, S, H      int
		masked       bool
		maskRow      bool // the mask is [1, S], broadcast along the rows: the nodes run
		negAxes      bool // the axes written -1 and -2 instead of 2 and 1
		scoresOut    bool // the masked scores are a graph output too: no fusion
		weightsEarly bool // the weights are read before the context is made: no fusion
		wantFused    bool
	}
	cases := []graphCase{
		{name: "beam of a recipe batch", R: 40, S: 25, H: 128, masked: true, wantFused: true},
		{name: "odd sizes", R: 7, S: 3, H: 19, masked: true, wantFused: true},
		{name: "one position", R: 5, S: 1, H: 16, masked: true, wantFused: true},
		{name: "no mask", R: 6, S: 9, H: 33, wantFused: true},
		{name: "negative axes", R: 6, S: 9, H: 33, masked: true, negAxes: true, wantFused: true},
		{name: "mask broadcast", R: 6, S: 9, H: 16, masked: true, maskRow: true, wantFused: true},
		{name: "scores read twice", R: 6, S: 9, H: 16, masked: true, scoresOut: true},
		{name: "weights read early", R: 6, S: 9, H: 16, masked: true, weightsEarly: true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 53))
			g := builder.New("attention")
			enc := g.Input("enc", builder.Float, builder.Dims(int64(c.R), int64(c.S), int64(c.H)))
			q := g.Input("q", builder.Float, builder.Dims(int64(c.R), int64(c.H)))
			axes := func(name string, v int64) *builder.Value {
				return g.Init(name, builder.Int64Tensor([]int64{1}, []int64{v}))
			}
			last, second := int64(2), int64(1)
			if c.negAxes {
				last, second = -1, -2
			}
			scores := ops.Squeeze(ops.MatMul(enc, ops.Unsqueeze(q, axes("ax_q", last))), axes("ax_s", last))
			in := map[string]*onnxeval.Tensor{}
			if c.masked {
				rows := int64(c.R)
				if c.maskRow {
					rows = 1
				}
				mask := g.Input("mask", builder.Bool, builder.Dims(rows, int64(c.S)))
				scores = ops.Where(mask, scores, g.Init("fill", builder.ScalarFloat(float32(math.Inf(-1)))))
				mv := make([]bool, int(rows)*c.S)
				for r := range int(rows) {
					n := c.S - r%3 // row lengths
					if r == 2 {
						n = 0 // masked whole
					}
					for s := range n {
						mv[r*c.S+s] = true
					}
				}
				in["mask"] = onnxeval.New([]int64{rows, int64(c.S)}, mv)
			}
			if c.scoresOut {
				g.Output("scores", scores)
			}
			weights := ops.Softmax(scores, -1)
			g.Output("attention", weights)
			if c.weightsEarly {
				g.Output("weights_sum", ops.ReduceSum(weights, nil, ops.ReduceSumOpts{}))
			}
			ctx := ops.Squeeze(ops.MatMul(ops.Unsqueeze(weights, axes("ax_w", second)), enc), axes("ax_c", second))
			g.Output("context", ops.Mul(ctx, g.Init("two", builder.ScalarFloat(2))))
			data, err := onnxfile.Marshal(builder.NewModel(g))
			if err != nil {
				t.Fatal(err)
			}
			// Encoder rows: ordinary values, then rows holding NaN, +Inf,
			// a huge value (3e38: its scores overflow), all zeros.
			ev := uniform(rng, c.R*c.S*c.H, 2)
			for r, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), 3e38, 0} {
				if row := r + 3; row < c.R {
					for k := 0; k < c.S*c.H; k++ {
						if v == 0 || k%7 == 0 {
							ev[row*c.S*c.H+k] = v
						}
					}
				}
			}
			in["enc"] = onnxeval.New([]int64{int64(c.R), int64(c.S), int64(c.H)}, ev)
			in["q"] = onnxeval.New([]int64{int64(c.R), int64(c.H)}, uniform(rng, c.R*c.H, 1))
			for _, threads := range []int{1, 2} {
				fused, nodes := openBoth(t, data, threads)
				if got := slices.Contains(fused.OpsDeep(), fusedOp); got != c.wantFused {
					t.Fatalf("fused = %v (plan %v), want %v", got, fused.OpsDeep(), c.wantFused)
				}
				if slices.Contains(nodes.OpsDeep(), fusedOp) {
					t.Fatalf("fused with fusion off")
				}
				runBoth(t, fused, nodes, in, fmt.Sprintf("%d threads", threads))
				// Again, on the buffers the first run gave back.
				got := runBoth(t, fused, nodes, in, fmt.Sprintf("%d threads, second run", threads))
				// Row 0 is ordinary: its weights sum to 1 and its context
				// is their sum of its encoder outputs (doubled).
				w, _ := onnxeval.Float32Data(got["attention"])
				cx, _ := onnxeval.Float32Data(got["context"])
				var sum float64
				for _, v := range w[:c.S] {
					sum += float64(v)
				}
				if math.Abs(sum-1) > 1e-5 {
					t.Fatalf("row 0's weights sum to %v", sum)
				}
				for h := range c.H {
					var want float64
					for s := range c.S {
						want += float64(w[s]) * float64(ev[s*c.H+h])
					}
					if math.Abs(float64(cx[h])-2*want) > 1e-4 {
						t.Fatalf("row 0's context[%d] = %v, want %v", h, cx[h], 2*want)
					}
				}
			}
		})
	}
}
