package ops

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// cumsumLoop builds a Loop that adds x[i] to an accumulator for i < n and
// scans the running sums. With n constant the scan's leading dimension is n.
func cumsumLoop(g *builder.Graph, n *builder.Value) (final, scans []*builder.Value) {
	x := g.Input("x", builder.Float, builder.Dims(5, "h"))
	acc := Constant(g, builder.FloatTensor([]int64{1}, []float32{0}))
	return Loop(g, n, nil, []*builder.Value{acc}, func(b *builder.Graph, iter, cond *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
		row := Gather(x, iter, 0) // [h]
		sum := Add(carried[0], ReduceSum(row, nil, ReduceSumOpts{NoKeepDims: true}))
		return nil, []*builder.Value{sum}, []*builder.Value{row}
	}, LoopOpts{})
}

func TestLoopInference(t *testing.T) {
	g := builder.New("g")
	final, scans := cumsumLoop(g, ScalarInt64(g, 3))
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	if got := final[0].Type().String(); got != "float32[1]" {
		t.Errorf("final = %s, want float32[1]", got)
	}
	if got := scans[0].Type().String(); got != "float32[3,h]" {
		t.Errorf("scan = %s, want float32[3,h]", got)
	}
	body := final[0].Producer().Attr("body").Graph
	var names []string
	for _, v := range append(body.Inputs(), body.Outputs()...) {
		names = append(names, v.Name())
	}
	want := "loop_0_iter loop_0_cond loop_0_carried0 loop_0_cond_out loop_0_carried0_out loop_0_scan0_out"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("body names %q, want %q", got, want)
	}

	g2 := builder.New("g")
	_, scans = cumsumLoop(g2, g2.Input("n", builder.Int64, builder.Scalar()))
	if got := scans[0].Type().String(); got != "float32[?,h]" {
		t.Errorf("scan with runtime trip count = %s, want float32[?,h]", got)
	}
}

func TestLoopErrors(t *testing.T) {
	cases := []struct {
		name string
		body LoopBody
		opts LoopOpts
		want string
	}{
		{"carried elem", func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			return nil, []*builder.Value{Cast(c[0], builder.Double)}, nil
		}, LoopOpts{}, "body returns float64[2] for carried value 0, want float32[2]"},
		{"carried count", func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			return nil, nil, nil
		}, LoopOpts{}, "body returns 0 carried values, want 1"},
		{"carried grows", func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			return nil, []*builder.Value{Concat(0, c[0], c[0])}, nil
		}, LoopOpts{}, "declare a shape that fits every iteration"},
		{"cond type", func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			return iter, c, nil
		}, LoopOpts{}, "body returns condition int64[], want a bool scalar"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			x := g.Input("x", builder.Float, builder.Dims(2))
			Loop(g, ScalarInt64(g, 2), nil, []*builder.Value{x}, c.body, c.opts)
			if g.Err() == nil || !strings.Contains(g.Err().Error(), c.want) {
				t.Errorf("error %v, want %q", g.Err(), c.want)
			}
		})
	}
	// Growing carried values are fine once declared with an unknown dimension.
	g := builder.New("g")
	x := g.Input("x", builder.Float, builder.Dims(2))
	final, _ := Loop(g, ScalarInt64(g, 2), nil, []*builder.Value{x}, func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
		return nil, []*builder.Value{Concat(0, c[0], c[0])}, nil
	}, LoopOpts{CarriedShapes: []builder.Shape{builder.Dims("n")}})
	if g.Err() != nil || final[0].Type().String() != "float32[n]" {
		t.Errorf("relaxed loop: %v, %v", g.Err(), final[0])
	}
}

func TestIfInference(t *testing.T) {
	g := builder.New("g")
	c := g.Input("c", builder.Bool, builder.Scalar())
	x := g.Input("x", builder.Float, builder.Dims("b", 3))
	outs := If(g, c,
		func(b *builder.Graph) []*builder.Value { return []*builder.Value{x, Tanh(x)} },
		func(b *builder.Graph) []*builder.Value {
			return []*builder.Value{Concat(1, x, x), Neg(x)}
		})
	if err := g.Err(); err != nil {
		t.Fatal(err)
	}
	if a, b := outs[0].Type().String(), outs[1].Type().String(); a != "float32[b,?]" || b != "float32[b,3]" {
		t.Errorf("If outputs %s, %s; want float32[b,?], float32[b,3]", a, b)
	}

	g = builder.New("g")
	c = g.Input("c", builder.Bool, builder.Scalar())
	If(g, c,
		func(b *builder.Graph) []*builder.Value { return []*builder.Value{ScalarInt64(b, 1)} },
		func(b *builder.Graph) []*builder.Value { return []*builder.Value{ScalarFloat(b, 1)} })
	if g.Err() == nil || !strings.Contains(g.Err().Error(), "output 0 is int64[] in the then branch but float32[] in the else branch") {
		t.Errorf("mismatched branches: %v", g.Err())
	}
}

// attentionStep builds a small attention-like graph used for determinism
// and end-to-end checks: embedding, MatMul scores, Softmax, context, and a
// greedy Loop over steps with ArgMax.
func attentionStep() *builder.Model {
	g := builder.New("attn")
	tok := g.Input("tok", builder.Int64, builder.Dims("batch"))
	enc := g.Input("enc", builder.Float, builder.Dims("batch", "src", 4))
	emb := Constant(g, builder.FloatTensor([]int64{6, 4}, []float32{
		0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, -0.1, -0.2, -0.3, -0.4,
		0.9, 0.1, -0.5, 0.2, 0.0, 0.3, 0.3, -0.3, 1.0, -1.0, 0.5, -0.5}))
	final, scans := Loop(g, ScalarInt64(g, 3), nil, []*builder.Value{tok}, func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
		q := Unsqueeze(Gather(emb, c[0], 0), ConstInt64s(b, 1))               // [batch,1,4]
		scores := MatMul(q, Transpose(enc, []int64{0, 2, 1}))                 // [batch,1,src]
		ctx := Squeeze(MatMul(Softmax(scores, -1), enc), ConstInt64s(b, 1))   // [batch,4]
		logits := MatMul(Tanh(ctx), Transpose(emb, nil))                      // [batch,6]
		next := ArgMax(LogSoftmax(logits, -1), -1, ArgOpts{NoKeepDims: true}) // [batch]
		return nil, []*builder.Value{next}, []*builder.Value{next}
	}, LoopOpts{})
	g.Output("last", final[0])
	g.Output("tokens", scans[0])
	return builder.NewModel(g)
}

func TestDeterministicNamesAndBytes(t *testing.T) {
	m1, m2 := attentionStep(), attentionStep()
	if err := m1.Check(); err != nil {
		t.Fatal(err)
	}
	names := func(g *builder.Graph) string {
		var b strings.Builder
		var walk func(g *builder.Graph)
		walk = func(g *builder.Graph) {
			for _, v := range g.Inputs() {
				b.WriteString(v.Name() + " ")
			}
			for _, n := range g.Nodes() {
				b.WriteString(n.Name + ":")
				for _, o := range n.Outputs {
					b.WriteString(o.Name() + ",")
				}
				for _, a := range n.Attrs {
					if a.Graph != nil {
						walk(a.Graph)
					}
				}
			}
		}
		walk(g)
		return b.String()
	}
	if a, b := names(m1.Graph), names(m2.Graph); a != b {
		t.Errorf("names differ between builds:\n%s\n%s", a, b)
	}
	d1, err := onnxfile.Marshal(m1)
	if err != nil {
		t.Fatal(err)
	}
	d2, err := onnxfile.Marshal(m2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d1, d2) {
		t.Error("the same graph built twice gives different bytes")
	}
	if tokens := m1.Graph.Outputs()[1].Type().String(); tokens != "int64[3,batch]" {
		t.Errorf("tokens = %s, want int64[3,batch]", tokens)
	}
	onnxcheck.Check(t, d1)

	// Run it: the greedy loop must agree with a hand computation's shape and
	// stay within the vocabulary.
	testenv.ORT(t, onnxrun.Init())
	sess, err := onnxrun.OpenBytes(d1, onnxrun.Options{IntraOpThreads: 1, InterOpThreads: 1, Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	enc := make([]float32, 2*3*4)
	for i := range enc {
		enc[i] = float32(i%7)/7 - 0.4
	}
	out, err := sess.Run(map[string]*onnxrun.Tensor{
		"tok": onnxrun.NewInt64([]int64{2}, []int64{1, 4}),
		"enc": onnxrun.NewFloat32([]int64{2, 3, 4}, enc),
	})
	if err != nil {
		t.Fatal(err)
	}
	toks, err := out["tokens"].Int64s()
	if err != nil {
		t.Fatal(err)
	}
	if got := out["tokens"].Shape; len(got) != 2 || got[0] != 3 || got[1] != 2 {
		t.Fatalf("tokens shape %v, want [3 2]", got)
	}
	last, _ := out["last"].Int64s()
	if last[0] != toks[4] || last[1] != toks[5] {
		t.Errorf("last %v is not the final scanned step %v", last, toks[4:])
	}
	for _, v := range toks {
		if v < 0 || v >= 6 {
			t.Errorf("token %d outside the vocabulary", v)
		}
	}
}

func TestLoopValues(t *testing.T) {
	g := builder.New("g")
	final, scans := cumsumLoop(g, ScalarInt64(g, 4))
	g.Output("sum", final[0])
	g.Output("rows", scans[0])
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	onnxcheck.Check(t, data)
	testenv.ORT(t, onnxrun.Init())
	sess, err := onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: 1, InterOpThreads: 1, Backend: onnxrun.BackendORT})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	out, err := sess.Run(map[string]*onnxrun.Tensor{"x": onnxrun.NewFloat32([]int64{5, 2}, x)})
	if err != nil {
		t.Fatal(err)
	}
	sum, _ := out["sum"].Float32s()
	rows, _ := out["rows"].Float32s()
	if len(sum) != 1 || sum[0] != 36 {
		t.Errorf("sum = %v, want [36] (1+...+8)", sum)
	}
	if want := x[:8]; len(rows) != 8 || rows[7] != want[7] || rows[0] != want[0] {
		t.Errorf("rows = %v, want %v", rows, want)
	}
}

// TestControlFlowErrorsNameTheirOperator checks that a failed If is reported
// as If and a failed Loop as Loop, including when the graph to add them to is
// nil: the error then goes to the graph of their inputs (it used to be
// dropped, and the placeholder call that dropped it was labelled Loop for
// both).
func TestControlFlowErrorsNameTheirOperator(t *testing.T) {
	branch := func(b *builder.Graph) []*builder.Value { return []*builder.Value{ScalarInt64(b, 1)} }
	cases := []struct {
		name, op, want string
		build          func(g *builder.Graph)
	}{
		{"If nil graph", "If", "the graph to add it to is nil", func(g *builder.Graph) {
			If(nil, g.Input("c", builder.Bool, builder.Scalar()), branch, branch)
		}},
		{"If float cond", "If", "cond is float32[], want bool", func(g *builder.Graph) {
			If(g, g.Input("c", builder.Float, builder.Scalar()), branch, branch)
		}},
		{"If branch counts", "If", "then branch returns 1 values but else branch 0", func(g *builder.Graph) {
			If(g, g.Input("c", builder.Bool, builder.Scalar()), branch, func(*builder.Graph) []*builder.Value { return nil })
		}},
		{"Loop nil graph", "Loop", "the graph to add it to is nil", func(g *builder.Graph) {
			Loop(nil, g.Input("m", builder.Int64, builder.Scalar()), nil, []*builder.Value{g.Input("x", builder.Float, builder.Dims(2))},
				func(b *builder.Graph, iter, cond *builder.Value, c []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
					return nil, c, nil
				}, LoopOpts{})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			c.build(g)
			var be *builder.Error
			if !errors.As(g.Err(), &be) {
				t.Fatalf("error %v, want a *builder.Error", g.Err())
			}
			if be.Op != c.op || !strings.Contains(be.Error(), c.want) {
				t.Errorf("error from %q: %v; want one from %q containing %q", be.Op, be, c.op, c.want)
			}
		})
	}
}
