package qlayer

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/internal/ortest"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/ops"
)

func randn(rng *rand.Rand, n int, scale float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * scale)
	}
	return v
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i])-float64(b[i])))
	}
	return d
}

// TestLinearSchemes checks every form of a linear layer against x·Wᵀ + b
// computed here, on 2-D and 3-D inputs. The tolerances are the forms'
// quantization errors for weights of scale 0.05 and inputs in N(0, 1).
func TestLinearSchemes(t *testing.T) {
	const batch, in, out = 3, 64, 40
	rng := rand.New(rand.NewPCG(1, 1))
	l := Layer{W: randn(rng, out*in, 0.05), B: randn(rng, out, 0.1), Out: out, In: in}
	x := randn(rng, batch*in, 1)
	want := make([]float32, batch*out)
	for i := 0; i < batch; i++ {
		for j := 0; j < out; j++ {
			s := float64(l.B[j])
			for k := 0; k < in; k++ {
				s += float64(x[i*in+k]) * float64(l.W[j*in+k])
			}
			want[i*out+j] = float32(s)
		}
	}
	cases := []struct {
		s   Scheme
		tol float64
	}{
		{Scheme{Form: Float}, 1e-5},
		{Scheme{Form: Dequantize}, 0.02},
		{Scheme{Form: DynamicInt8}, 0.03},
		{Scheme{Form: DynamicInt8, Uint8Weights: true}, 0.03},
		{Scheme{Form: DynamicInt8, Asymmetric: true}, 0.03},
		{Scheme{Form: DynamicInt8, PerTensor: true}, 0.03},
		{Scheme{Form: QLinear, OutRange: [2]float32{-2.5, 2.5}}, 0.04},
		{Scheme{Form: NBits, Bits: 8, BlockSize: 32, AccuracyLevel: 4}, 0.03},
		{Scheme{Form: NBits, Bits: 4, BlockSize: 32}, 0.15},
		{Scheme{Form: NBits, Bits: 4, BlockSize: 32, AccuracyLevel: 4, Asymmetric: true}, 0.15},
	}
	for _, c := range cases {
		for _, rank := range []int{2, 3} {
			t.Run(c.s.String()+map[int]string{2: " 2-D", 3: " 3-D"}[rank], func(t *testing.T) {
				g := builder.New("linear")
				var xv *builder.Value
				shape := []int64{batch, in}
				if rank == 2 {
					xv = g.Input("x", builder.Float, builder.Dims("batch", in))
				} else {
					xv = g.Input("x", builder.Float, builder.Dims(1, "batch", in))
					shape = []int64{1, batch, in}
				}
				b := Linear(g, "fc", xv, l, c.s)
				g.Output("y", b.Y)
				if b.Bytes <= 0 {
					t.Errorf("Bytes = %d", b.Bytes)
				}
				got := ortest.Floats(t, g, map[string]*onnxrun.Tensor{"x": onnxrun.NewFloat32(shape, x)})["y"]
				if d := maxDiff(got, want); d > c.tol {
					t.Errorf("max |diff| %.4g > %.4g", d, c.tol)
				}
			})
		}
	}
}

// TestLinearBytes checks that the reduced forms store what they should:
// int8 is a quarter of float32 plus scales, 4-bit an eighth plus a scale
// per block.
func TestLinearBytes(t *testing.T) {
	l := Layer{W: make([]float32, 64*128), Out: 64, In: 128}
	for _, c := range []struct {
		s    Scheme
		want int
	}{
		{Scheme{Form: Float}, 64 * 128 * 4},
		{Scheme{Form: DynamicInt8, PerTensor: true}, 64*128 + 64*4},
		// Per row: the activations' zero point 128 (a uint8); asymmetric,
		// the column sums (int32) and a uint8 zero.
		{Scheme{Form: DynamicInt8}, 64*128 + 64*4 + 1},
		{Scheme{Form: DynamicInt8, Asymmetric: true}, 64*128 + 64*4 + 64*4 + 1},
		{Scheme{Form: NBits, Bits: 4, BlockSize: 32}, 64*128/2 + 64*4*4},
		{Scheme{Form: NBits, Bits: 4, BlockSize: 32, Asymmetric: true}, 64*128/2 + 64*4*4 + 64*2},
	} {
		g := builder.New("g")
		b := Linear(g, "fc", g.Input("x", builder.Float, builder.Dims(1, 128)), l, c.s)
		if err := g.Err(); err != nil {
			t.Fatal(err)
		}
		if b.Bytes != c.want {
			t.Errorf("%s: %d bytes, want %d", c.s, b.Bytes, c.want)
		}
	}
}

func TestLinearErrors(t *testing.T) {
	for _, c := range []struct {
		l    Layer
		s    Scheme
		want string
	}{
		{Layer{W: make([]float32, 5), Out: 2, In: 3}, Scheme{}, "qlayer: fc (fp32): weight has 5 values and bias 0 for [2, 3]"},
		{Layer{W: []float32{float32(math.NaN()), 0}, Out: 1, In: 2}, Scheme{Form: DynamicInt8}, "element [0,0] is NaN"},
		{Layer{W: make([]float32, 32), Out: 1, In: 32}, Scheme{Form: NBits, Bits: 4, BlockSize: 20}, "block size 20"},
		{Layer{W: make([]float32, 32), Out: 1, In: 32}, Scheme{Form: QLinear}, "output range [0 0] is empty"},
	} {
		g := builder.New("g")
		y := Linear(g, "fc", g.Input("x", builder.Float, builder.Dims(1, c.l.In)), c.l, c.s).Y
		if err := g.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.s, err, c.want)
		}
		if !y.Dead() {
			t.Errorf("%s: the output of a failed layer must be dead", c.s)
		}
	}
}

func rnnWeights(rng *rand.Rand, gates, in, h int) RNNWeights {
	return RNNWeights{W: randn(rng, gates*h*in, 0.1), R: randn(rng, gates*h*h, 0.1), B: randn(rng, 2*gates*h, 0.1), In: in, Hidden: h}
}

// TestCellsMatchOperators checks the LSTM and GRU cells, as one product or
// two, float32 and reduced, against ONNX's LSTM and GRU operators (one
// step, linear_before_reset=1) on the same weights and states.
func TestCellsMatchOperators(t *testing.T) {
	const batch, in, hid = 2, 48, 32
	rng := rand.New(rand.NewPCG(2, 2))
	lstm, gru := rnnWeights(rng, 4, in, hid), rnnWeights(rng, 3, in, hid)
	x, h, c := randn(rng, batch*in, 1), randn(rng, batch*hid, 0.5), randn(rng, batch*hid, 0.5)
	feeds := map[string]*onnxrun.Tensor{
		"x": onnxrun.NewFloat32([]int64{1, batch, in}, x),
		"h": onnxrun.NewFloat32([]int64{1, batch, hid}, h),
		"c": onnxrun.NewFloat32([]int64{1, batch, hid}, c),
	}
	schemes := []struct {
		s   Scheme
		tol float64
	}{
		{Scheme{Form: Float}, 1e-5},
		{Scheme{Form: DynamicInt8}, 0.02},
		{Scheme{Form: NBits, Bits: 4, BlockSize: 16, AccuracyLevel: 4}, 0.1},
	}
	tensor := func(g *builder.Graph, name string, dims []int64, v []float32) *builder.Value {
		return g.Init(name, builder.FloatTensor(dims, v))
	}
	for _, sc := range schemes {
		for _, two := range []bool{false, true} {
			name := sc.s.String()
			if two {
				name += " two products"
			}
			t.Run("LSTM "+name, func(t *testing.T) {
				g := builder.New("lstm")
				xv := g.Input("x", builder.Float, builder.Dims(1, "batch", in))
				hv := g.Input("h", builder.Float, builder.Dims(1, "batch", hid))
				cv := g.Input("c", builder.Float, builder.Dims(1, "batch", hid))
				_, yh, yc := ops.LSTM(xv, tensor(g, "W", []int64{1, 4 * hid, in}, lstm.W), tensor(g, "R", []int64{1, 4 * hid, hid}, lstm.R),
					ops.LSTMOpts{RNNOpts: ops.RNNOpts{B: tensor(g, "B", []int64{1, 8 * hid}, lstm.B), InitialH: hv, OmitY: true}, InitialC: cv})
				h2, c2, bytes := LSTMCell(g, "cell", xv, hv, cv, lstm, sc.s, CellOpts{TwoProducts: two})
				if bytes <= 0 {
					t.Errorf("bytes = %d", bytes)
				}
				g.Output("ref_h", yh)
				g.Output("ref_c", yc)
				g.Output("h2", h2)
				g.Output("c2", c2)
				out := ortest.Floats(t, g, feeds)
				if d := max(maxDiff(out["h2"], out["ref_h"]), maxDiff(out["c2"], out["ref_c"])); d > sc.tol {
					t.Errorf("max |diff| from the LSTM operator %.4g > %.4g", d, sc.tol)
				}
			})
			t.Run("GRU "+name, func(t *testing.T) {
				g := builder.New("gru")
				xv := g.Input("x", builder.Float, builder.Dims(1, "batch", in))
				hv := g.Input("h", builder.Float, builder.Dims(1, "batch", hid))
				g.Input("c", builder.Float, builder.Dims(1, "batch", hid))
				_, yh := ops.GRU(xv, tensor(g, "W", []int64{1, 3 * hid, in}, gru.W), tensor(g, "R", []int64{1, 3 * hid, hid}, gru.R),
					ops.GRUOpts{RNNOpts: ops.RNNOpts{B: tensor(g, "B", []int64{1, 6 * hid}, gru.B), InitialH: hv, OmitY: true}, LinearBeforeReset: true})
				h2, _ := GRUCell(g, "cell", xv, hv, gru, sc.s, CellOpts{TwoProducts: two})
				g.Output("ref_h", yh)
				g.Output("h2", h2)
				out := ortest.Floats(t, g, feeds)
				if d := maxDiff(out["h2"], out["ref_h"]); d > sc.tol {
					t.Errorf("max |diff| from the GRU operator %.4g > %.4g", d, sc.tol)
				}
			})
		}
	}
}

func TestCellWeightErrors(t *testing.T) {
	g := builder.New("g")
	x := g.Input("x", builder.Float, builder.Dims(1, 4))
	h := g.Input("h", builder.Float, builder.Dims(1, 2))
	LSTMCell(g, "cell", x, h, h, RNNWeights{W: make([]float32, 3), In: 4, Hidden: 2}, Scheme{}, CellOpts{})
	if err := g.Err(); err == nil || !strings.Contains(err.Error(), "LSTM cell: W, R, B have 3, 0, 0 values; want 32, 16, 16") {
		t.Errorf("error %v", err)
	}
}

// optimizedOps returns the operators of g's model after ONNX Runtime's
// graph optimisations (all levels), as onnxfile.Summarize counts them.
func optimizedOps(t *testing.T, g *builder.Graph) map[string]int {
	t.Helper()
	path := t.TempDir() + "/optimized.onnx"
	ortest.Open(t, builder.NewModel(g), onnxrun.Options{OptimizedModelPath: path})
	mp, err := onnxfile.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	ops := map[string]int{}
	for _, o := range onnxfile.Summarize(mp).Ops {
		ops[o.Op] = o.Count
	}
	return ops
}

// TestDynamicInt8Fuses checks what the per-tensor DynamicInt8's speed
// rests on: ONNX Runtime fuses DynamicQuantizeLinear, MatMulInteger, Cast,
// the scale Mul and the bias Add into one com.microsoft
// DynamicQuantizeMatMul. The per-row form cannot be fused so (its
// quantization is not DynamicQuantizeLinear's): it keeps one
// MatMulInteger and no operator that looks across rows.
func TestDynamicInt8Fuses(t *testing.T) {
	l := Layer{W: randn(rand.New(rand.NewPCG(5, 5)), 32*64, 0.1), B: make([]float32, 32), Out: 32, In: 64}
	for _, u8 := range []bool{false, true} {
		g := builder.New("fuse")
		g.Output("y", Linear(g, "fc", g.Input("x", builder.Float, builder.Dims("batch", 64)), l, Scheme{Form: DynamicInt8, Uint8Weights: u8, PerTensor: true}).Y)
		got := optimizedOps(t, g)
		if got["com.microsoft.DynamicQuantizeMatMul"] != 1 || got["MatMulInteger"] != 0 || got["DynamicQuantizeLinear"] != 0 || len(got) != 1 {
			t.Errorf("uint8 weights %v: optimised operators %v, want one com.microsoft.DynamicQuantizeMatMul and nothing else", u8, got)
		}
		g = builder.New("rows")
		g.Output("y", Linear(g, "fc", g.Input("x", builder.Float, builder.Dims("batch", 64)), l, Scheme{Form: DynamicInt8, Uint8Weights: u8}).Y)
		got = optimizedOps(t, g)
		if got["MatMulInteger"] != 1 || got["DynamicQuantizeLinear"] != 0 || got["com.microsoft.DynamicQuantizeMatMul"] != 0 {
			t.Errorf("per row, uint8 weights %v: optimised operators %v, want one MatMulInteger and no per-tensor quantization", u8, got)
		}
	}
}

// TestFormsPassChecker: the models of every form, float32, int8 and 4-bit
// (layers, cells, embeddings), pass onnx.checker with its full check (ONNX's
// own shape inference over the types qlayer inferred; operators of the
// com.microsoft domain, which it has no schema for, are left unchecked),
// and the MatMulNBits form declares the com.microsoft opset that ONNX
// Runtime needs to load it (TestLinearSchemes runs it).
func TestFormsPassChecker(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	lstm := rnnWeights(rng, 4, 16, 8)
	l := Layer{W: randn(rng, 8*16, 0.1), B: randn(rng, 8, 0.1), Out: 8, In: 16}
	for _, s := range []Scheme{{Form: Float}, {Form: DynamicInt8}, {Form: DynamicInt8, Uint8Weights: true}, {Form: NBits, Bits: 4, BlockSize: 16, AccuracyLevel: 4}} {
		g := builder.New("forms")
		x := g.Input("x", builder.Float, builder.Dims(1, "batch", 16))
		h := g.Input("h", builder.Float, builder.Dims(1, "batch", 8))
		c := g.Input("c", builder.Float, builder.Dims(1, "batch", 8))
		ids := g.Input("ids", builder.Int64, builder.Dims("batch"))
		h2, c2, _ := LSTMCell(g, "cell", x, h, c, lstm, s, CellOpts{})
		g.Output("next_h", h2)
		g.Output("next_c", c2)
		g.Output("y", Linear(g, "fc", ops.Squeeze(x, g.Init("axis0", builder.Int64Tensor([]int64{1}, []int64{0}))), l, s).Y)
		g.Output("emb", Embedding(g, "emb", ids, l.W, 8, 16, s.Form != Float).Y)
		data, err := onnxfile.Marshal(builder.NewModel(g))
		if err != nil {
			t.Fatal(err)
		}
		onnxcheck.Check(t, data)
		mp, err := onnxfile.LoadBytes(data)
		if err != nil {
			t.Fatal(err)
		}
		declared := false
		for _, o := range onnxfile.Summarize(mp).Opsets {
			declared = declared || (o.Domain == ops.MicrosoftDomain && o.Version == 1)
		}
		if declared != (s.Form == NBits) {
			t.Errorf("%s: opset imports %v: com.microsoft declared %v, want %v", s, onnxfile.Summarize(mp).Opsets, declared, s.Form == NBits)
		}
	}
}
