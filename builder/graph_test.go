package builder

import (
	"errors"
	"math"
	"strings"
	"testing"
)

// add is a minimal elementwise operator for testing the builder without ops.
func add(a, b *Value) *Value {
	return Apply(Call{Op: "Add", InputNames: []string{"A", "B"}, Inputs: []*Value{a, b},
		Infer: func() ([]*Type, error) {
			if a.Elem() != b.Elem() {
				return nil, errors.New("A and B must have the same element type")
			}
			s, err := Broadcast(a.Shape(), b.Shape())
			return []*Type{{Elem: a.Elem(), Shape: s}}, err
		}}, 1)[0]
}

func TestStickyErrorRecordsOpAndCaller(t *testing.T) {
	g := New("g")
	x := g.Input("x", Float, Dims("batch", 3))
	y := g.Input("y", Int64, Dims(3))
	bad := add(x, y) // line of the first error
	later := add(bad, x)
	g.Output("z", later)
	err := g.Err()
	if err == nil {
		t.Fatal("want an error")
	}
	msg := err.Error()
	for _, want := range []string{"Add(A: float32[batch,3], B: int64[3])", "graph_test.go:", "same element type"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if !bad.Dead() || !later.Dead() {
		t.Error("values after an error must be dead")
	}
	if len(g.Nodes()) != 0 {
		t.Errorf("no node may be recorded after an error, got %d", len(g.Nodes()))
	}
}

func TestBroadcastShapes(t *testing.T) {
	cases := []struct {
		a, b Shape
		want string
		err  bool
	}{
		{Dims("batch", 1, 5), Dims(4, 1), "[batch,4,5]", false},
		{Dims(3), Dims(4), "", true},
		{Dims("s", 3), Dims("s", 3), "[s,3]", false},
		{Dims("a"), Dims(7), "[7]", false},
		{Scalar(), Dims(2, 2), "[2,2]", false},
		{nil, Dims(2), "[*]", false},
	}
	for _, c := range cases {
		got, err := Broadcast(c.a, c.b)
		if (err != nil) != c.err {
			t.Errorf("Broadcast(%v, %v) error = %v, want error %v", c.a, c.b, err, c.err)
			continue
		}
		if err == nil && got.String() != c.want {
			t.Errorf("Broadcast(%v, %v) = %v, want %s", c.a, c.b, got, c.want)
		}
	}
}

func TestOutputRenamesOrAddsIdentity(t *testing.T) {
	g := New("g")
	x := g.Input("x", Float, Dims(2))
	s := add(x, x)
	out := g.Output("sum", s)
	if out != s || s.Name() != "sum" {
		t.Errorf("node output should be renamed in place, got %q", s.Name())
	}
	passthrough := g.Output("x_copy", x)
	if passthrough.Producer() == nil || passthrough.Producer().OpType != "Identity" {
		t.Error("an input used as output needs an Identity node")
	}
	g.Output("sum", x)
	if g.Err() == nil || !strings.Contains(g.Err().Error(), `"sum" is already used`) {
		t.Errorf("duplicate output name: got %v", g.Err())
	}
}

func TestValuesFromAnotherGraphAreRefused(t *testing.T) {
	g1, g2 := New("a"), New("b")
	x := g1.Input("x", Float, Dims(2))
	y := g2.Input("y", Float, Dims(2))
	add(y, x)
	if g2.Err() == nil || !strings.Contains(g2.Err().Error(), "another graph") {
		t.Fatalf("got %v", g2.Err())
	}
}

func TestSubgraphUsesOuterValuesAndSharesNames(t *testing.T) {
	g := New("main")
	x := g.Input("x", Float, Dims(2))
	body := g.Sub("body")
	i := body.Input("i", Float, Dims(2))
	s := add(i, x)
	if s.Graph() != body {
		t.Fatal("node with a body input must go into the body")
	}
	h := add(x, x)
	if h.Graph() != g {
		t.Fatal("node with only outer inputs goes into the outer graph")
	}
	if s.Name() == h.Name() {
		t.Fatalf("names must be unique across subgraphs: %q", s.Name())
	}
}

func TestToFloat32Conversions(t *testing.T) {
	cases := []struct {
		name string
		t    *Tensor
		want []float32
	}{
		{"float16", &Tensor{DType: Float16, Dims: []int64{5}, Raw: []byte{0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c, 0x55, 0x35}},
			[]float32{1, -2, 5.9604645e-08, float32(math.Inf(1)), 0.33325195}},
		{"bfloat16", &Tensor{DType: BFloat16, Dims: []int64{2}, Raw: []byte{0x80, 0x3f, 0x40, 0xc0}}, []float32{1, -3}},
		{"float64", &Tensor{DType: Double, Dims: []int64{1}, Raw: []byte{0, 0, 0, 0, 0, 0, 0xf8, 0x3f}}, []float32{1.5}},
		{"float32", FloatTensor([]int64{2}, []float32{0.25, -7}), []float32{0.25, -7}},
	}
	for _, c := range cases {
		got, err := c.t.ToFloat32()
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i := range c.want {
			if got[i] != c.want[i] {
				t.Errorf("%s[%d] = %v, want %v", c.name, i, got[i], c.want[i])
			}
		}
	}
	if _, err := Int64Tensor([]int64{1}, []int64{3}).ToFloat32(); err == nil || !strings.Contains(err.Error(), "not a floating-point type") {
		t.Errorf("int64 conversion: got %v", err)
	}
}

func TestOutputAsNamesUnknownDims(t *testing.T) {
	g := New("g")
	x := g.Input("x", Float, Shape{Sym("batch"), UnknownDim()})
	y := g.OutputAs("y", add(x, x), Dims("batch", "out_len"))
	if got := y.Type().String(); got != "float32[batch,out_len]" {
		t.Fatalf("declared output type %s", got)
	}
	g2 := New("g2")
	x2 := g2.Input("x", Float, Dims("batch", 3))
	g2.OutputAs("y", add(x2, x2), Dims("batch", 4))
	if g2.Err() == nil || !strings.Contains(g2.Err().Error(), "disagrees with the inferred [batch,3] at dimension 1") {
		t.Fatalf("got %v", g2.Err())
	}
}
