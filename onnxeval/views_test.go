package onnxeval_test

import (
	"math/rand/v2"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// TestSplitAndGatherViews: Split along axis 0 and Gather of one constant
// index along axis 0 return views of their input, whose buffer then lives
// as long as the views do: values of the same size computed after them
// (which would take a freed buffer from the arena) do not overwrite them,
// a view may be a graph output, and a Loop carrying state through such
// views computes what the copies computed.
func TestSplitAndGatherViews(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	xv := uniform(rng, 4*3*8, 2)
	g := builder.New("views")
	x := g.Input("x", builder.Float, builder.Dims(4, 3, 8))
	k := func(name string, v float32) *builder.Value { return g.Init(name, builder.ScalarFloat(v)) }
	// Each view's input is read by nothing else, and a value of its size
	// is made after it: were the input's buffer given back after the view
	// was taken, that value would be written over the view.
	a1 := ops.Mul(x, k("k2", 2))
	parts := ops.Split(a1, nil, 0, 2)
	b := ops.Mul(x, k("k3", 3))
	g.Output("b", b)
	g.Output("y0", ops.Add(parts[0], parts[1]))
	a2 := ops.Mul(x, k("k2.5", 2.5))
	row3 := ops.Gather(a2, g.Init("three", builder.ScalarInt64(3)), 0)
	c := ops.Mul(x, k("k5", 5))
	g.Output("c", c)
	g.Output("row3", ops.Mul(row3, k("k4", 4)))
	// Views as graph outputs.
	a := ops.Add(x, x)
	parts3 := ops.Split(a, nil, 0, 2)
	g.Output("p1", parts3[1])
	g.Output("last", ops.Gather(a, g.Init("minus_one", builder.ScalarInt64(-1)), 0))
	// A Loop carrying [4, 3, 8]: each iteration swaps its halves (through
	// views) and adds one to the half that moves up.
	one := k("one", 1)
	final, _ := ops.Loop(g, g.Init("trips", builder.ScalarInt64(3)), nil, []*builder.Value{a},
		func(b *builder.Graph, _, _ *builder.Value, in []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			h := ops.Split(in[0], nil, 0, 2)
			return nil, []*builder.Value{ops.Concat(0, ops.Add(h[1], one), h[0])}, nil
		}, ops.LoopOpts{})
	g.Output("loop", final[0])
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	half := 2 * 3 * 8
	av := make([]float32, len(xv))
	for i, v := range xv {
		av[i] = v + v
	}
	want := map[string][]float32{"b": make([]float32, len(xv)), "c": make([]float32, len(xv)), "y0": make([]float32, half),
		"p1": av[half:], "row3": make([]float32, 24), "last": av[3*24:]}
	for i, v := range xv {
		want["b"][i], want["c"][i] = v*3, v*5
	}
	for i := range want["y0"] {
		want["y0"][i] = xv[i]*2 + xv[half+i]*2
	}
	for i := range want["row3"] {
		want["row3"][i] = xv[3*24+i] * 2.5 * 4
	}
	state := append([]float32(nil), av...)
	for range 3 {
		next := make([]float32, 0, len(state))
		for _, v := range state[half:] {
			next = append(next, v+1)
		}
		state = append(next, state[:half]...)
	}
	want["loop"] = state
	for _, threads := range []int{1, 2} {
		m, err := onnxeval.OpenBytes(data, onnxeval.Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		for run := 0; run < 2; run++ { // the second run takes buffers the first gave back
			out, err := m.Run(map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{4, 3, 8}, xv)})
			if err != nil {
				t.Fatal(err)
			}
			for name, w := range want {
				got, _ := onnxeval.Float32Data(out[name])
				if len(got) != len(w) {
					t.Fatalf("%d threads, run %d: %s has %d values, want %d", threads, run, name, len(got), len(w))
				}
				for i := range w {
					if got[i] != w[i] {
						t.Fatalf("%d threads, run %d: %s[%d] = %v, want %v", threads, run, name, i, got[i], w[i])
					}
				}
			}
		}
	}
}
