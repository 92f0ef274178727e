package onnxeval_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

// open marshals a built model and loads it into the evaluator.
func open(t *testing.T, g *builder.Graph) *onnxeval.Model {
	t.Helper()
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxeval.OpenBytes(data, onnxeval.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// mlp is y = relu(x W^T + b) · V: a Gemm with a constant weight, a
// MatMul with a constant one, and an elementwise op between.
func mlp(t *testing.T) (*onnxeval.Model, func(x []float32) []float32) {
	t.Helper()
	const in, hid, out = 5, 7, 3
	w := make([]float32, hid*in)
	b := make([]float32, hid)
	v := make([]float32, hid*out)
	for i := range w {
		w[i] = float32(math.Sin(float64(i)))
	}
	for i := range b {
		b[i] = 0.1 * float32(i-3)
	}
	for i := range v {
		v[i] = float32(math.Cos(float64(i)))
	}
	g := builder.New("mlp")
	x := g.Input("x", builder.Float, builder.Dims("batch", in))
	h := ops.Relu(ops.Gemm(x, g.Init("w", builder.FloatTensor([]int64{hid, in}, w)), g.Init("b", builder.FloatTensor([]int64{hid}, b)), ops.GemmOpts{TransB: true}))
	g.Output("y", ops.MatMul(h, g.Init("v", builder.FloatTensor([]int64{hid, out}, v))))
	want := func(x []float32) []float32 {
		rows := len(x) / in
		y := make([]float32, rows*out)
		for r := 0; r < rows; r++ {
			for j := 0; j < out; j++ {
				var s float64
				for k := 0; k < hid; k++ {
					a := float64(b[k])
					for l := 0; l < in; l++ {
						a += float64(x[r*in+l]) * float64(w[k*in+l])
					}
					s += max(a, 0) * float64(v[k*out+j])
				}
				y[r*out+j] = float32(s)
			}
		}
		return y
	}
	return open(t, g), want
}

func TestRunComputesAndReusesBuffers(t *testing.T) {
	m, want := mlp(t)
	for run := 0; run < 3; run++ { // later runs take their buffers from the arena
		for _, rows := range []int{1, 4, 2} {
			x := make([]float32, rows*5)
			for i := range x {
				x[i] = float32(i%7)*0.3 - 1 + float32(run)
			}
			out, err := m.Run(map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{int64(rows), 5}, x)})
			if err != nil {
				t.Fatal(err)
			}
			y := out["y"]
			if y.DType != builder.Float || len(y.Shape) != 2 || y.Shape[0] != int64(rows) || y.Shape[1] != 3 {
				t.Fatalf("y is %v", y)
			}
			got, w := y.Data.([]float32), want(x)
			for i := range w {
				if math.Abs(float64(got[i]-w[i])) > 1e-5 {
					t.Fatalf("run %d rows %d: y[%d] = %v, want %v", run, rows, i, got[i], w[i])
				}
			}
		}
	}
}

// TestRecycle: an output handed back with Recycle serves a later run's
// buffer, and that run computes the same as before; a Loop model's runs
// (whose iterations return their carried values to the arena) too.
func TestRecycle(t *testing.T) {
	m, want := mlp(t)
	x := []float32{1, 2, 3, 4, 5, -1, -2, -3, -4, -5}
	in := map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{2, 5}, x)}
	out, err := m.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	first := out["y"].Data.([]float32)
	m.Recycle(out["y"])
	m.Recycle(out["y"]) // a second time: nothing (the buffer is given once)
	reused := false
	for range 3 {
		out, err = m.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		got := out["y"].Data.([]float32)
		reused = reused || &got[0] == &first[0]
		for i, w := range want(x) {
			if math.Abs(float64(got[i]-w)) > 1e-5 {
				t.Fatalf("y[%d] = %v, want %v", i, got[i], w)
			}
		}
	}
	if !reused {
		t.Errorf("no later run reused the recycled output's buffer")
	}
}

// TestConcurrentRuns runs one model from many goroutines: every result
// equals the one computed alone.
func TestConcurrentRuns(t *testing.T) {
	m, want := mlp(t)
	var wg sync.WaitGroup
	errs := make(chan string, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				rows := 1 + (g+i)%4
				x := make([]float32, rows*5)
				for k := range x {
					x[k] = float32((k+g+i)%11) * 0.2
				}
				out, err := m.Run(map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{int64(rows), 5}, x)})
				if err != nil {
					errs <- err.Error()
					return
				}
				got, w := out["y"].Data.([]float32), want(x)
				for k := range w {
					if math.Abs(float64(got[k]-w[k])) > 1e-5 {
						errs <- "concurrent run differs"
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Fatal(e)
	}
}

func TestBadInputs(t *testing.T) {
	m, _ := mlp(t)
	cases := []struct {
		name string
		in   map[string]*onnxeval.Tensor
		want string
	}{
		{"missing", map[string]*onnxeval.Tensor{}, `input "x" is missing`},
		{"unknown", map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1, 5}, make([]float32, 5)), "z": onnxeval.New([]int64{1}, []float32{0})}, `no input called "z"`},
		{"type", map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1, 5}, make([]int64, 5))}, `input "x" is int64, the model wants float32`},
		{"rank", map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{5}, make([]float32, 5))}, `input "x" has rank 1`},
		{"fixed dim", map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1, 4}, make([]float32, 4))}, `input "x" has shape [1 4]`},
		{"data length", map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{2, 5}, make([]float32, 5))}, `(10 elements) but 5 values`},
	}
	for _, c := range cases {
		_, err := m.Run(c.in)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// TestUnsupportedOperator: a model with an operator the evaluator lacks is
// refused when loaded, naming the node and the operator.
func TestUnsupportedOperator(t *testing.T) {
	g := builder.New("conv")
	x := g.Input("x", builder.Float, builder.Dims(1, 1, 4))
	y := builder.Apply(builder.Call{Graph: g, Op: "Hardmax", Inputs: []*builder.Value{x}, Infer: func() ([]*builder.Type, error) {
		ty := x.Type()
		return []*builder.Type{&ty}, nil
	}}, 1)[0]
	g.Output("y", y)
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	_, err = onnxeval.OpenBytes(data, onnxeval.Options{})
	var ue *onnxeval.UnsupportedError
	if !errors.As(err, &ue) || ue.Op != "Hardmax" || !strings.Contains(err.Error(), "operator not implemented by the native evaluator") {
		t.Fatalf("error %v, want an UnsupportedError for Hardmax", err)
	}
	if onnxeval.Implements("", "Hardmax") || !onnxeval.Implements("", "LSTM") || !onnxeval.Implements("com.microsoft", "MatMulNBits") {
		t.Error("Implements disagrees with the registry")
	}
}

// TestLoopWithCapturesAndScans runs a Loop that reads an outer value and
// a constant, carries a sum and stacks a scan output.
func TestLoopWithCapturesAndScans(t *testing.T) {
	g := builder.New("loop")
	x := g.Input("x", builder.Float, builder.Dims(2))
	n := g.Input("n", builder.Int64, builder.Scalar())
	two := g.Init("two", builder.FloatTensor([]int64{2}, []float32{2, 2}))
	cond := g.Init("cond", builder.BoolTensor(nil, []bool{true}))
	final, scans := ops.Loop(g, n, cond, []*builder.Value{x}, func(bg *builder.Graph, _, c *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
		next := ops.Add(ops.Mul(carried[0], two), x)
		return ops.Identity(c), []*builder.Value{next}, []*builder.Value{next}
	}, ops.LoopOpts{})
	g.Output("final", final[0])
	g.Output("steps", scans[0])
	m := open(t, g)
	out, err := m.Run(map[string]*onnxeval.Tensor{
		"x": onnxeval.New([]int64{2}, []float32{1, -1}),
		"n": onnxeval.New([]int64{}, []int64{3}),
	})
	if err != nil {
		t.Fatal(err)
	}
	// s0 = x; s(i+1) = 2 s(i) + x: 3, 7, 15 (and their negatives).
	if got := out["final"].Data.([]float32); got[0] != 15 || got[1] != -15 {
		t.Errorf("final = %v, want [15 -15]", got)
	}
	steps := out["steps"]
	if want := []float32{3, -3, 7, -7, 15, -15}; len(steps.Shape) != 2 || steps.Shape[0] != 3 || !slices.Equal(steps.Data.([]float32), want) {
		t.Errorf("steps = %v %v, want [3 2] %v", steps.Shape, steps.Data, want)
	}
	// Zero iterations: the carried value comes back unchanged, no scans.
	out, err = m.Run(map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{2}, []float32{1, -1}), "n": onnxeval.New([]int64{}, []int64{0})})
	if err != nil || !slices.Equal(out["final"].Data.([]float32), []float32{1, -1}) || out["steps"].Shape[0] != 0 {
		t.Errorf("zero iterations: %v, %v", out, err)
	}
}

// TestLoopReturningCapturedValue: a Loop body that returns a value of the
// enclosing graph (captured, not copied) as its carried value and as a
// scan output. The Loop hands its own finished values back to the arena,
// never the enclosing graph's: y is read again after the Loop, and every
// result must still be 2x.
func TestLoopReturningCapturedValue(t *testing.T) {
	f32 := func(name string, dims ...any) onnxfile.ValueInfo {
		return onnxfile.ValueInfo{Name: name, Type: onnxfile.ValueType{Kind: onnxfile.KindTensor, Elem: builder.Float, Shape: builder.Dims(dims...)}}
	}
	node := func(op string, in, out []string) onnxfile.GraphNode {
		return onnxfile.GraphNode{Node: onnxfile.Node{Op: op, Inputs: in, Outputs: out}}
	}
	body := &onnxfile.Graph{
		Name: "body",
		Inputs: []onnxfile.ValueInfo{
			{Name: "i", Type: onnxfile.ValueType{Kind: onnxfile.KindTensor, Elem: builder.Int64, Shape: builder.Dims()}},
			{Name: "c", Type: onnxfile.ValueType{Kind: onnxfile.KindTensor, Elem: builder.Bool, Shape: builder.Dims()}},
			f32("acc", 4),
		},
		Nodes:   []onnxfile.GraphNode{node("Identity", []string{"c"}, []string{"c_out"})},
		Outputs: []onnxfile.ValueInfo{{Name: "c_out", Type: onnxfile.ValueType{Kind: onnxfile.KindTensor, Elem: builder.Bool, Shape: builder.Dims()}}, f32("y", 4), f32("y", 4)},
	}
	loop := node("Loop", []string{"n", "", "x"}, []string{"final", "steps"})
	loop.Graphs = map[string]*onnxfile.Graph{"body": body}
	g := &onnxfile.Graph{
		Name:   "main",
		Opset:  17,
		Inputs: []onnxfile.ValueInfo{f32("x", 4), {Name: "n", Type: onnxfile.ValueType{Kind: onnxfile.KindTensor, Elem: builder.Int64, Shape: builder.Dims()}}},
		Nodes: []onnxfile.GraphNode{
			node("Add", []string{"x", "x"}, []string{"y"}),
			loop,
			node("Add", []string{"final", "y"}, []string{"z"}),
			node("Add", []string{"y", "y"}, []string{"w"}),
		},
		Outputs: []onnxfile.ValueInfo{f32("z", 4), f32("steps", "n", 4), f32("w", 4)},
	}
	m, err := onnxeval.FromGraph("loop", g, onnxeval.Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := []float32{1, 2, 3, 4}
	for run := 0; run < 3; run++ { // later runs reuse the arena's buffers
		out, err := m.Run(map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{4}, x), "n": onnxeval.New([]int64{}, []int64{3})})
		if err != nil {
			t.Fatal(err)
		}
		z, _ := onnxeval.Float32Data(out["z"])
		w, _ := onnxeval.Float32Data(out["w"])
		st, _ := onnxeval.Float32Data(out["steps"])
		for i, v := range x {
			if z[i] != 4*v || w[i] != 4*v {
				t.Fatalf("run %d: z %v w %v, want 4x of %v", run, z, w, x)
			}
			for k := 0; k < 3; k++ {
				if st[k*4+i] != 2*v {
					t.Fatalf("run %d: steps %v, want 2x of %v three times", run, st, x)
				}
			}
		}
	}
}

// TestRunInto: an output with a destination is computed in it (the
// buffer the caller gave, never taken by the arena, so a later run's
// values do not land in it unasked), with RunOrdered's values; a wrong
// length leaves the output in the arena's buffer.
func TestRunInto(t *testing.T) {
	m, want := mlp(t)
	x := []float32{1, 2, 3, 4, 5, -1, -2, -3, -4, -5}
	in := []*onnxeval.Tensor{onnxeval.New([]int64{2, 5}, x)}
	dst := make([]float32, 6)
	out, err := m.RunInto(in, [][]float32{dst})
	if err != nil {
		t.Fatal(err)
	}
	if !onnxeval.OutputIn(out[0], dst) {
		t.Fatal("the output was not computed in its destination")
	}
	for i, w := range want(x) {
		if math.Abs(float64(dst[i]-w)) > 1e-5 {
			t.Fatalf("y[%d] = %v, want %v", i, dst[i], w)
		}
	}
	m.Recycle(out...) // not the arena's: nothing
	kept := append([]float32(nil), dst...)
	for range 3 {
		o, err := m.RunOrdered([]*onnxeval.Tensor{onnxeval.New([]int64{2, 5}, []float32{9, 9, 9, 9, 9, 9, 9, 9, 9, 9})})
		if err != nil {
			t.Fatal(err)
		}
		if got := o[0].Data.([]float32); &got[0] == &dst[0] {
			t.Fatal("a later run wrote into the destination")
		}
		m.Recycle(o...)
	}
	for i := range kept {
		if dst[i] != kept[i] {
			t.Fatalf("the destination changed after later runs: %v, was %v", dst, kept)
		}
	}
	short := make([]float32, 5)
	out, err = m.RunInto(in, [][]float32{short})
	if err != nil || onnxeval.OutputIn(out[0], short) {
		t.Fatalf("a destination of the wrong length: %v, in place %v", err, err == nil && onnxeval.OutputIn(out[0], short))
	}
}

// TestRunIntoTwoOutputsOfOneNode: a node that computes two graph outputs
// of one length gets no destination (it might put one in the other's);
// both come out right through the copy.
func TestRunIntoTwoOutputsOfOneNode(t *testing.T) {
	g := builder.New("split")
	x := g.Input("x", builder.Float, builder.Dims(2, 4))
	parts := ops.Split(x, nil, 1, 2)
	g.Output("a", parts[0])
	g.Output("b", parts[1])
	m := open(t, g)
	da, db := make([]float32, 4), make([]float32, 4)
	out, err := m.RunInto([]*onnxeval.Tensor{onnxeval.New([]int64{2, 4}, []float32{1, 2, 3, 4, 5, 6, 7, 8})}, [][]float32{da, db})
	if err != nil {
		t.Fatal(err)
	}
	if onnxeval.OutputIn(out[0], da) || onnxeval.OutputIn(out[1], db) || onnxeval.OutputIn(out[0], db) || onnxeval.OutputIn(out[1], da) {
		t.Fatal("a node with two outputs wrote into a destination")
	}
	if a, b := out[0].Data.([]float32), out[1].Data.([]float32); !slices.Equal(a, []float32{1, 2, 5, 6}) || !slices.Equal(b, []float32{3, 4, 7, 8}) {
		t.Fatalf("a %v, b %v", a, b)
	}
}
