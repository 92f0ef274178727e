package onnxeval_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/ops"
)

func openWith(t *testing.T, g *builder.Graph, opt onnxeval.Options) *onnxeval.Model {
	t.Helper()
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxeval.OpenBytes(data, opt)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestShapesChecked: shapes a graph computes at run time are checked with
// builder's shape arithmetic and a per-tensor bound, each refusal an error
// naming the node (Expand to a negative shape returned a float32[-3,-5];
// Reshape of an empty tensor to [2^62,4] wrapped to 0 elements; Expand to
// [1<<40] ended the process with an out-of-memory throw).
func TestShapesChecked(t *testing.T) {
	expand := func() *builder.Graph {
		g := builder.New("expand")
		x := g.Input("x", builder.Float, builder.Dims(1))
		s := g.Input("s", builder.Int64, builder.Dims("r"))
		g.Output("y", ops.Expand(x, s))
		return g
	}
	g := builder.New("reshape")
	x := g.Input("x", builder.Float, builder.Dims("n"))
	s := g.Input("s", builder.Int64, builder.Dims(2))
	g.Output("y", ops.Reshape(x, s, ops.ReshapeOpts{}))
	reshape := g
	for _, c := range []struct {
		name  string
		g     *builder.Graph
		x     *onnxeval.Tensor
		shape []int64
		want  string
	}{
		{"expand negative", expand(), onnxeval.New([]int64{1}, []float32{1}), []int64{-3, -5}, "(Expand): shape [-3 -5]: dimension 0 is negative (-3)"},
		{"expand 2^40", expand(), onnxeval.New([]int64{1}, []float32{1}), []int64{1 << 40}, "(Expand): shape [1099511627776] has 1099511627776 elements, more than the native evaluator's limit of 2147483647 per tensor"},
		{"reshape wraps", reshape, onnxeval.New([]int64{0}, []float32{}), []int64{1 << 62, 4}, "(Reshape): shape [4611686018427387904 4]: shape [4611686018427387904 4] has more than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := openWith(t, c.g, onnxeval.Options{Threads: 1})
			out, err := m.Run(map[string]*onnxeval.Tensor{"x": c.x, "s": onnxeval.New([]int64{int64(len(c.shape))}, c.shape)})
			var se *onnxeval.ShapeError
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "node ") {
				t.Fatalf("got %v, %v; want an error naming the node with %q", out, err, c.want)
			}
			if c.name != "reshape wraps" && !errors.As(err, &se) {
				t.Errorf("%v is not a *ShapeError", err)
			}
		})
	}
}

// TestRunMemoryLimit: a run that needs more than Options.MaxRunBytes fails
// naming the node. Expand's index map (4 bytes an element) counts as well
// as its output.
func TestRunMemoryLimit(t *testing.T) {
	g := builder.New("expand")
	x := g.Input("x", builder.Float, builder.Dims(1))
	s := g.Input("s", builder.Int64, builder.Dims(1))
	g.Output("y", ops.Expand(x, s))
	m := openWith(t, g, onnxeval.Options{Threads: 1, MaxRunBytes: 8000})
	in := func(n int64) map[string]*onnxeval.Tensor {
		return map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1}, []float32{2}), "s": onnxeval.New([]int64{1}, []int64{n})}
	}
	if out, err := m.Run(in(1000)); err != nil || out["y"].Len() != 1000 {
		t.Fatalf("1,000 floats and their index map within 8,000 bytes: %v", err)
	}
	_, err := m.Run(in(1001))
	var le *onnxeval.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "(Expand): the run needs more than its memory limit (4004 more bytes with 3996 left") {
		t.Fatalf("1,001 floats: %v", err)
	}
}

// endless is a Loop with no trip count whose condition stays true.
func endless() *builder.Graph {
	g := builder.New("endless")
	x := g.Input("x", builder.Float, builder.Dims(1))
	cond := g.Init("cond", builder.BoolTensor(nil, []bool{true}))
	final, _ := ops.Loop(g, nil, cond, []*builder.Value{x}, func(bg *builder.Graph, _, c *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
		return ops.Identity(c), []*builder.Value{ops.Neg(carried[0])}, nil
	}, ops.LoopOpts{})
	g.Output("y", final[0])
	return g
}

// TestLoopLimits: an endless Loop stops at Options.MaxLoopIterations with
// an error naming the node, and a run stops when its context is done.
func TestLoopLimits(t *testing.T) {
	x := map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{1}, []float32{1})}
	m := openWith(t, endless(), onnxeval.Options{Threads: 1, MaxLoopIterations: 1000})
	_, err := m.Run(x)
	var le *onnxeval.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "(Loop): more than 1000 iterations (onnxeval.Options.MaxLoopIterations); the trip count is not given") {
		t.Fatalf("endless loop: %v", err)
	}
	m = openWith(t, endless(), onnxeval.Options{Threads: 1, MaxLoopIterations: 1 << 62})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := m.RunContext(ctx, []*onnxeval.Tensor{x["x"]})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "(Loop): ") {
			t.Fatalf("a run past its deadline: %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not stop at its context's deadline")
	}
}
