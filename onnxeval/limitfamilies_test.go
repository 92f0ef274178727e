package onnxeval_test

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/ops"
)

// TestMemoryLimitEveryFamily: for each family of ops a run whose output
// (or index map) is just over Options.MaxRunBytes stops with a
// *LimitError naming the node, whatever the element type. Before, only
// float32 buffers were counted: int64 and float64 Expands ran past a
// 1 MiB limit, and Expand to 2^31-1 elements died of a fatal out-of-memory
// making its index map.
func TestMemoryLimitEveryFamily(t *testing.T) {
	const limit = 1 << 20
	n := int64(1 << 18) // 1 MiB of 4-byte elements: with the rest, just over
	scalar := func(v int64) *onnxeval.Tensor { return onnxeval.New([]int64{}, []int64{v}) }
	shape := func(d ...int64) *onnxeval.Tensor { return onnxeval.New([]int64{int64(len(d))}, d) }
	expand := func(dt builder.DataType) func() (*builder.Graph, []*onnxeval.Tensor) {
		return func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("expand")
			x := g.Input("x", dt, builder.Dims(1))
			s := g.Input("s", builder.Int64, builder.Dims(1))
			g.Output("y", ops.Expand(x, s))
			var v *onnxeval.Tensor
			switch dt {
			case builder.Int64:
				v = onnxeval.New([]int64{1}, []int64{7})
			case builder.Double:
				v = onnxeval.New([]int64{1}, []float64{7})
			default:
				v = onnxeval.New([]int64{1}, []float32{7})
			}
			return g, []*onnxeval.Tensor{v, shape(n)}
		}
	}
	cases := []struct {
		name, op string
		limit    int64
		graph    func() (*builder.Graph, []*onnxeval.Tensor)
	}{
		{"Expand float32", "Expand", limit, expand(builder.Float)},
		{"Expand int64", "Expand", limit, expand(builder.Int64)},
		{"Expand float64", "Expand", limit, expand(builder.Double)},
		{"Expand to 2^31-1 (the index map)", "Expand", 64 << 20, func() (*builder.Graph, []*onnxeval.Tensor) {
			g, in := expand(builder.Float)()
			in[1] = shape(2147483647)
			return g, in
		}},
		{"Add int64 broadcast", "Add", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("add")
			a := g.Input("a", builder.Int64, builder.Dims(512, 1))
			b := g.Input("b", builder.Int64, builder.Dims(1, 512))
			g.Output("y", ops.Add(a, b))
			return g, []*onnxeval.Tensor{onnxeval.New([]int64{512, 1}, make([]int64, 512)), onnxeval.New([]int64{1, 512}, make([]int64, 512))}
		}},
		{"Where broadcast", "Where", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("where")
			c := g.Input("c", builder.Bool, builder.Dims(1024, 1))
			x := g.Input("x", builder.Float, builder.Dims(1, 1024))
			y := g.Input("y", builder.Float, builder.Dims(1))
			g.Output("z", ops.Where(c, x, y))
			return g, []*onnxeval.Tensor{onnxeval.New([]int64{1024, 1}, make([]bool, 1024)), onnxeval.New([]int64{1, 1024}, make([]float32, 1024)), onnxeval.New([]int64{1}, []float32{1})}
		}},
		{"ConstantOfShape int64", "ConstantOfShape", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("cos")
			s := g.Input("s", builder.Int64, builder.Dims(1))
			g.Output("y", ops.ConstantOfShape(s, builder.Int64Tensor([]int64{1}, []int64{3})))
			return g, []*onnxeval.Tensor{shape(n)}
		}},
		{"Range int64", "Range", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("range")
			a := g.Input("a", builder.Int64, builder.Dims())
			b := g.Input("b", builder.Int64, builder.Dims())
			d := g.Input("d", builder.Int64, builder.Dims())
			g.Output("y", ops.Range(a, b, d))
			return g, []*onnxeval.Tensor{scalar(0), scalar(n), scalar(1)}
		}},
		{"Range to 10^15", "Range", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("range")
			a := g.Input("a", builder.Int64, builder.Dims())
			b := g.Input("b", builder.Int64, builder.Dims())
			d := g.Input("d", builder.Int64, builder.Dims())
			g.Output("y", ops.Range(a, b, d))
			return g, []*onnxeval.Tensor{scalar(0), scalar(1e15), scalar(1)}
		}},
		{"MatMul outer product", "MatMul", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("matmul")
			a := g.Input("a", builder.Float, builder.Dims(512, 1))
			b := g.Input("b", builder.Float, builder.Dims(1, 513))
			g.Output("y", ops.MatMul(a, b))
			return g, []*onnxeval.Tensor{onnxeval.New([]int64{512, 1}, make([]float32, 512)), onnxeval.New([]int64{1, 513}, make([]float32, 513))}
		}},
		{"MatMulInteger outer product", "MatMulInteger", limit, func() (*builder.Graph, []*onnxeval.Tensor) {
			g := builder.New("mmi")
			a := g.Input("a", builder.Uint8, builder.Dims(512, 1))
			b := g.Input("b", builder.Uint8, builder.Dims(1, 513))
			g.Output("y", ops.MatMulInteger(a, b, nil, nil))
			return g, []*onnxeval.Tensor{onnxeval.New([]int64{512, 1}, make([]uint8, 512)), onnxeval.New([]int64{1, 513}, make([]uint8, 513))}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g, in := c.graph()
			m := openWith(t, g, onnxeval.Options{Threads: 1, MaxRunBytes: c.limit})
			_, err := m.RunContext(t.Context(), in)
			var le *onnxeval.LimitError
			if !errors.As(err, &le) || !strings.Contains(err.Error(), "("+c.op+"): the run needs more than its memory limit") {
				t.Fatalf("got %v, want a *LimitError naming the %s node", err, c.op)
			}
		})
	}
}

// TestCraftedModels: the crafted files of testdata/crafted (made by
// make_crafted.py with onnx's helpers) are errors, not crashes: MatMulNBits
// with N=2^62 and empty weights is refused at open naming its sizes (its
// size check wrapped to 0 and Dequantize indexed an empty slice), and
// Expand to 2^31-1 elements stops at FuzzOpenBytes' 64 MiB limit.
func TestCraftedModels(t *testing.T) {
	b, err := os.ReadFile("testdata/crafted/nbits_wrap.onnx")
	if err != nil {
		t.Fatal(err)
	}
	_, err = onnxeval.OpenBytes(b, onnxeval.Options{Threads: 1})
	if err == nil || !strings.Contains(err.Error(), "K=64 N=4611686018427387904 bits=4 block_size=16: shape [4611686018427387904 64]: shape [4611686018427387904 64] has more than") {
		t.Errorf("nbits_wrap.onnx: %v", err)
	}
	b, err = os.ReadFile("testdata/crafted/expand_2g.onnx")
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnxeval.OpenBytes(b, onnxeval.Options{Threads: 1, MaxRunBytes: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.RunContext(t.Context(), []*onnxeval.Tensor{onnxeval.New([]int64{1}, []float32{1})})
	var le *onnxeval.LimitError
	if !errors.As(err, &le) || !strings.Contains(err.Error(), "(Expand): the run needs more than its memory limit") {
		t.Errorf("expand_2g.onnx: %v, want a *LimitError naming Expand", err)
	}
}
