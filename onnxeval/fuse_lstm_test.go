package onnxeval_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/qlayer"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// TestFusedLSTMGates: the elementwise half of qlayer's LSTM cell (the
// quantized decoders') runs as one fused node computing bit for bit what
// its nodes compute: with one product and with two (the Add folded in),
// float32 and int8 products, states as [rows, H] and [1, rows, H], widths
// that leave partial groups of the kernels' lanes, state values NaN,
// infinite, zero and huge; a cell state broadcast along the rows (a shape
// the fused loop does not take) runs the nodes themselves, with the same
// result; and nothing fuses when an intermediate value is also read
// elsewhere (here a graph output).
func TestFusedLSTMGates(t *testing.T) {
	const fused = "attnx.fused.LSTMGates"
	type tc struct {
		name      string
		rows, H   int
		two       bool
		int8      bool
		cShape    []int64 // the cell state's shape
		leak      string  // a value made a graph output too: the first Sigmoid's or Tanh's, or "pre", the gates' sum
		wantFused bool
	}
	cases := []tc{
		{name: "one product", rows: 5, H: 24, cShape: []int64{5, 24}, wantFused: true},
		{name: "two products", rows: 5, H: 24, two: true, cShape: []int64{5, 24}, wantFused: true},
		{name: "int8 two products", rows: 6, H: 19, two: true, int8: true, cShape: []int64{6, 19}, wantFused: true},
		{name: "int8 one product", rows: 3, H: 64, int8: true, cShape: []int64{3, 64}, wantFused: true},
		// H a multiple of 16: the one-pass kernel on 16 lanes with
		// AVX-512 (H 24 above: on 8 lanes, AVX2's kernel), the gates' sum
		// taken in it (two products) or given (one).
		{name: "two products, H 32", rows: 5, H: 32, two: true, cShape: []int64{5, 32}, wantFused: true},
		{name: "int8 two products, H 48", rows: 7, H: 48, two: true, int8: true, cShape: []int64{7, 48}, wantFused: true},
		{name: "one product, H 16", rows: 3, H: 16, cShape: []int64{3, 16}, wantFused: true},
		{name: "states with a leading one", rows: 4, H: 13, two: true, cShape: []int64{1, 4, 13}, wantFused: true},
		{name: "one row", rows: 1, H: 9, two: true, cShape: []int64{1, 9}, wantFused: true},
		{name: "c broadcast along the rows", rows: 4, H: 16, two: true, cShape: []int64{16}, wantFused: true},
		{name: "gates read twice", rows: 4, H: 16, two: true, cShape: []int64{4, 16}, leak: "Sigmoid"},
		{name: "tanh of the candidate read twice", rows: 4, H: 16, two: true, cShape: []int64{4, 16}, leak: "Tanh"},
		{name: "the gates' sum read twice", rows: 4, H: 16, two: true, cShape: []int64{4, 16}, leak: "pre", wantFused: true},
	}
	for ci, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(ci), 7))
			vals := func(n int, scale float32) []float32 { return uniform(rng, n, scale) }
			const in = 11
			H := c.H
			w := qlayer.RNNWeights{W: vals(4*H*in, 0.5), R: vals(4*H*H, 0.5), B: vals(8*H, 1), In: in, Hidden: H}
			g := builder.New("cell")
			x := g.Input("x", builder.Float, builder.Dims(int64(c.rows), in))
			h := g.Input("h", builder.Float, builder.Dims(int64(c.rows), int64(H)))
			var dims []any
			for _, d := range c.cShape {
				dims = append(dims, d)
			}
			cs := g.Input("c", builder.Float, builder.Dims(dims...))
			s := qlayer.Scheme{Form: qlayer.Float}
			if c.int8 {
				s = qlayer.Scheme{Form: qlayer.DynamicInt8}
			}
			h2, c2, _ := qlayer.LSTMCell(g, "cell", x, h, cs, w, s, qlayer.CellOpts{TwoProducts: c.two})
			g.Output("h2", h2)
			g.Output("c2", c2)
			for _, n := range g.Nodes() {
				if n.OpType == c.leak {
					g.Output("leaked", n.Outputs[0])
					break
				}
				if c.leak == "pre" && n.OpType == "Split" { // the first Split's input
					g.Output("leaked", n.Inputs[0])
					break
				}
			}
			data, err := onnxfile.Marshal(builder.NewModel(g))
			if err != nil {
				t.Fatal(err)
			}
			hv, cv := vals(c.rows*H, 1), vals(numelOf(c.cShape), 2)
			// Row 1's state NaN, row 2's infinite, row 3's huge (cell
			// values overflow the products' sums), every fifth element.
			for r, v := range []float32{float32(math.NaN()), float32(math.Inf(-1)), 3e38} {
				if row := r + 1; row < c.rows && len(cv) == c.rows*H {
					for k := 0; k < H; k += 5 {
						cv[row*H+k] = v
						hv[row*H+k] = -v
					}
				}
			}
			feeds := map[string]*onnxeval.Tensor{
				"x": onnxeval.New([]int64{int64(c.rows), in}, vals(c.rows*in, 3)),
				"h": onnxeval.New([]int64{int64(c.rows), int64(H)}, hv),
				"c": onnxeval.New(slices.Clone(c.cShape), cv),
			}
			for _, threads := range []int{1, 2} {
				f, n := openBoth(t, data, threads)
				if got := slices.Contains(f.OpsDeep(), fused); got != c.wantFused {
					t.Fatalf("fused = %v (plan %v), want %v", got, f.OpsDeep(), c.wantFused)
				}
				got := runBoth(t, f, n, feeds, fmt.Sprintf("%d threads", threads))
				// A real check of the values, not only of the agreement:
				// the cell's first state element from the formulas.
				if c.int8 || len(cv) != c.rows*H {
					continue
				}
				hs, _ := onnxeval.Float32Data(got["h2"])
				want := lstmFirst(w, feeds, H, in)
				if math.Abs(float64(hs[0]-want)) > 1e-5 {
					t.Fatalf("h2[0] = %v, the formulas give %v", hs[0], want)
				}
			}
		})
	}
}

func numelOf(shape []int64) int {
	n := 1
	for _, d := range shape {
		n *= int(d)
	}
	return n
}

// lstmFirst is h2[0][0] from ONNX LSTM's formulas (gates i, o, f, c in
// W's and R's blocks), in float64.
func lstmFirst(w qlayer.RNNWeights, feeds map[string]*onnxeval.Tensor, H, in int) float32 {
	x, _ := onnxeval.Float32Data(feeds["x"])
	h, _ := onnxeval.Float32Data(feeds["h"])
	c, _ := onnxeval.Float32Data(feeds["c"])
	gate := func(blk int) float64 {
		u := blk * H // row u of the block, unit 0
		s := float64(w.B[u]) + float64(w.B[4*H+u])
		for k := 0; k < in; k++ {
			s += float64(w.W[u*in+k]) * float64(x[k])
		}
		for k := 0; k < H; k++ {
			s += float64(w.R[u*H+k]) * float64(h[k])
		}
		return s
	}
	sig := func(v float64) float64 { return 1 / (1 + math.Exp(-v)) }
	i, o, f, g := sig(gate(0)), sig(gate(1)), sig(gate(2)), math.Tanh(gate(3))
	c2 := f*float64(c[0]) + i*g
	return float32(o * math.Tanh(c2))
}

// TestLSTMGatesOrder: the fused node takes the place of the pattern's last
// node (h2's Mul), so a pattern whose c2 is read by a node placed before
// that Mul stays unfused (and runs); the same cell written in that order
// with c2's reader last fuses, and both give qlayer's order's result.
func TestLSTMGatesOrder(t *testing.T) {
	const H, rows = 8, 3
	rng := rand.New(rand.NewPCG(3, 3))
	pre, cv := uniform(rng, rows*4*H, 2), uniform(rng, rows*H, 2)
	build := func(readEarly bool) []byte {
		g := builder.New("gates")
		p := g.Input("pre", builder.Float, builder.Dims(rows, 4*H))
		c := g.Input("c", builder.Float, builder.Dims(rows, H))
		sizes := func(name string, s ...int64) *builder.Value {
			return g.Init(name, builder.Int64Tensor([]int64{int64(len(s))}, s))
		}
		parts := ops.Split(p, sizes("s1", 3*H, H), -1, 2)
		ifo := ops.Split(ops.Sigmoid(parts[0]), sizes("s2", H, H, H), -1, 3)
		c2 := ops.Add(ops.Mul(ifo[1], c), ops.Mul(ifo[0], ops.Tanh(parts[1])))
		var early *builder.Value
		if readEarly {
			early = ops.Neg(c2)
		}
		h2 := ops.Mul(ifo[2], ops.Tanh(c2))
		if !readEarly {
			early = ops.Neg(c2)
		}
		g.Output("h2", h2)
		g.Output("negc2", early)
		data, err := onnxfile.Marshal(builder.NewModel(g))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	feeds := map[string]*onnxeval.Tensor{"pre": onnxeval.New([]int64{rows, 4 * H}, pre), "c": onnxeval.New([]int64{rows, H}, cv)}
	var results []map[string]*onnxeval.Tensor
	for _, early := range []bool{true, false} {
		f, n := openBoth(t, build(early), 1)
		if got := slices.Contains(f.OpsDeep(), "attnx.fused.LSTMGates"); got == early {
			t.Fatalf("c2 read early = %v: fused = %v (plan %v)", early, got, f.OpsDeep())
		}
		results = append(results, runBoth(t, f, n, feeds, fmt.Sprintf("c2 read early = %v", early)))
	}
	for _, name := range []string{"h2", "negc2"} {
		a, _ := onnxeval.Float32Data(results[0][name])
		b, _ := onnxeval.Float32Data(results[1][name])
		if !slices.Equal(a, b) {
			t.Fatalf("%s differs between the two orders: %v, %v", name, a, b)
		}
	}
}
