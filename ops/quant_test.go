package ops

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/ortest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
)

const (
	u8 = builder.Uint8
	s8 = builder.Int8
)

// quantBackendCases are the ONNX backend node tests of the quantization
// operators, run like backendCases (built with package ops, run in ONNX
// Runtime, checked with onnx.checker).
var quantBackendCases = []backendCase{
	{names: []string{"test_dequantizelinear", "test_dequantizelinear_axis"}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{DequantizeLinear(in[0], in[1], at(in, 2), QuantOpts{Axis: axisAttr(n)})}
	}},
	{names: []string{"test_quantizelinear", "test_quantizelinear_axis"}, build: func(_ *testing.T, _ *builder.Graph, n onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{QuantizeLinear(in[0], in[1], at(in, 2), QuantOpts{Axis: axisAttr(n)})}
	}},
	{names: []string{"test_dynamicquantizelinear", "test_dynamicquantizelinear_max_adjusted", "test_dynamicquantizelinear_min_adjusted"},
		build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
			y, s, zp := DynamicQuantizeLinear(in[0])
			return []*builder.Value{y, s, zp}
		}},
	{names: []string{"test_matmulinteger"}, build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{MatMulInteger(in[0], in[1], at(in, 2), at(in, 3))}
	}},
	{names: []string{"test_qlinearmatmul_2D", "test_qlinearmatmul_3D"}, build: func(_ *testing.T, _ *builder.Graph, _ onode, in []*builder.Value) []*builder.Value {
		return []*builder.Value{QLinearMatMul(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7])}
	}},
}

func axisAttr(n onode) *int64 {
	if a := n.attr("axis"); a != nil {
		return Int(a.Int)
	}
	return nil
}

// TestQuantBackendNodeCases runs the ONNX backend cases of QuantizeLinear,
// DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and QLinearMatMul.
func TestQuantBackendNodeCases(t *testing.T) {
	testenv.Backend(t, "node")
	ortest.Require(t)
	modelDir := t.TempDir()
	for _, bc := range quantBackendCases {
		for _, name := range bc.names {
			t.Run(name, func(t *testing.T) { runBackendCase(t, bc, name, modelDir) })
		}
	}
	checkModels(t, modelDir)
}

func randFloats(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// matmulT returns a [m,k] · w[n,k]ᵀ in float64.
func matmulT(a []float32, w []float32, m, k, n int) []float64 {
	out := make([]float64, m*n)
	for i := 0; i < m; i++ {
		for j := 0; j < n; j++ {
			s := 0.0
			for p := 0; p < k; p++ {
				s += float64(a[i*k+p]) * float64(w[j*k+p])
			}
			out[i*n+j] = s
		}
	}
	return out
}

// TestMatMulNBits runs com.microsoft MatMulNBits in ONNX Runtime on weights
// packed by quant.QuantizeBlockwise and compares with A times the
// dequantized weights computed here: the layout, scales and zero points
// must be what the operator reads. At accuracy level 4 A is quantized to
// int8 per block at run time, so the tolerance is that quantization's.
func TestMatMulNBits(t *testing.T) {
	ortest.Require(t)
	cases := []struct {
		name                 string
		bits, block, k, n    int
		symmetric, bias, s2d bool
		level                int64
		tol                  float64 // relative to the largest |expected|
	}{
		{"4-bit block 32 symmetric", 4, 32, 64, 24, true, false, false, 0, 1e-5},
		{"4-bit block 16 asymmetric K not a multiple, bias", 4, 16, 40, 10, false, true, false, 0, 1e-5},
		{"4-bit block 32 scales [N, blocks]", 4, 32, 64, 8, true, false, true, 0, 1e-5},
		{"4-bit block 128 accuracy level 4", 4, 128, 256, 16, true, false, false, 4, 2e-2},
		{"8-bit block 32 symmetric", 8, 32, 64, 12, true, false, false, 0, 1e-5},
		{"8-bit block 32 asymmetric accuracy level 4", 8, 32, 96, 12, false, true, false, 4, 2e-2},
		{"2-bit block 16 asymmetric", 2, 16, 32, 6, false, false, false, 0, 1e-5},
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const m = 3
			w := randFloats(rng, c.n*c.k)
			a := randFloats(rng, m*c.k)
			q, err := quant.QuantizeBlockwise(w, c.n, c.k, c.bits, c.block, c.symmetric)
			if err != nil {
				t.Fatal(err)
			}
			packed, scales, zps := q.Tensors()
			if c.s2d {
				scales.Dims = []int64{int64(c.n), int64(q.Blocks())}
			}
			g := builder.New("nbits")
			x := g.Input("a", builder.Float, builder.Dims("m", c.k))
			opts := MatMulNBitsOpts{AccuracyLevel: c.level}
			if c.bits != 4 {
				opts.Bits = int64(c.bits)
			}
			if zps != nil {
				opts.ZeroPoints = g.Init("zp", zps)
			}
			var bias []float32
			if c.bias {
				bias = randFloats(rng, c.n)
				opts.Bias = g.Init("bias", builder.FloatTensor([]int64{int64(c.n)}, bias))
			}
			y := MatMulNBits(x, g.Init("B", packed), g.Init("scales", scales), int64(c.k), int64(c.n), int64(c.block), opts)
			if got := y.Type().String(); got != "float32[m,"+itoa(c.n)+"]" {
				t.Errorf("inferred %s", got)
			}
			g.Output("y", y)
			out := ortest.Run(t, g, map[string]*onnxrun.Tensor{"a": onnxrun.NewFloat32([]int64{m, int64(c.k)}, a)})
			got, err := out["y"].Float32s()
			if err != nil {
				t.Fatal(err)
			}
			want := matmulT(a, q.Dequantize(), m, c.k, c.n)
			scale := 0.0
			for i := range want {
				if bias != nil {
					want[i] += float64(bias[i%c.n])
				}
				scale = max(scale, math.Abs(want[i]))
			}
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > c.tol*scale {
					t.Fatalf("y[%d] = %v, want %v (|diff| %.3g > %.3g)", i, got[i], want[i], d, c.tol*scale)
				}
			}
		})
	}
}

func itoa(n int) string { return builder.D(int64(n)).String() }

// TestQuantizedMatMulForms runs the int8 weight forms the exports choose
// among on one random weight and checks each against the product with the
// dequantized weight: DequantizeLinear per column then MatMul;
// DynamicQuantizeLinear of A then MatMulInteger with int8 and uint8 weights,
// rescaled; QLinearMatMul with a float output range.
func TestQuantizedMatMulForms(t *testing.T) {
	ortest.Require(t)
	const m, k, n = 2, 48, 20
	rng := rand.New(rand.NewPCG(9, 10))
	w := randFloats(rng, n*k) // PyTorch layout [n, k]
	a := randFloats(rng, m*k)
	q, err := quant.QuantizeInt8(w, n, k, 0)
	if err != nil {
		t.Fatal(err)
	}
	qb := q.Transpose() // MatMul's B: [k, n], one scale per column
	want := matmulT(a, q.Dequantize(), m, k, n)
	g := builder.New("forms")
	x := g.Input("a", builder.Float, builder.Dims("m", k))
	scales := g.Init("scales", qb.ScaleTensor())
	bInt8 := g.Init("b_int8", qb.Tensor())
	bUint8 := g.Init("b_uint8", &builder.Tensor{DType: builder.Uint8, Dims: []int64{k, n}, Raw: qb.Uint8()})
	zp128 := g.Init("zp128", &builder.Tensor{DType: builder.Uint8, Raw: []byte{128}})

	g.Output("dq", MatMul(x, DequantizeLinear(bInt8, scales, nil, QuantOpts{})))
	xq, xs, xzp := DynamicQuantizeLinear(x)
	rescale := func(acc *builder.Value) *builder.Value {
		return Mul(Mul(Cast(acc, builder.Float), xs), scales)
	}
	g.Output("mmi_s8", rescale(MatMulInteger(xq, bInt8, xzp, nil)))
	g.Output("mmi_u8", rescale(MatMulInteger(xq, bUint8, xzp, zp128)))
	// QLinearMatMul needs the output's range ahead of time: here the exact
	// product's, so that only rounding separates it from want.
	lo, hi := 0.0, 0.0
	for _, v := range want {
		lo, hi = min(lo, v), max(hi, v)
	}
	yScale := float32((hi - lo) / 255)
	yZP := uint8(math.Round(-lo / float64(yScale)))
	ys := g.Init("y_scale", builder.ScalarFloat(yScale))
	yzp := g.Init("y_zp", &builder.Tensor{DType: builder.Uint8, Raw: []byte{yZP}})
	qy := QLinearMatMul(xq, xs, xzp, bInt8, scales, g.Init("zp_b", &builder.Tensor{DType: builder.Int8, Dims: []int64{n}, Raw: make([]byte, n)}), ys, yzp)
	g.Output("qlinear", DequantizeLinear(qy, ys, yzp, QuantOpts{}))

	out := ortest.Run(t, g, map[string]*onnxrun.Tensor{"a": onnxrun.NewFloat32([]int64{m, k}, a)})
	scale := 0.0
	for _, v := range want {
		scale = max(scale, math.Abs(v))
	}
	for _, c := range []struct {
		name string
		tol  float64 // relative to the largest |want|
	}{
		{"dq", 1e-5},
		// A quantized to uint8 over its range: one step is range/255.
		{"mmi_s8", 2e-2}, {"mmi_u8", 2e-2},
		// Plus the output's own rounding, half a step of range/255.
		{"qlinear", 3e-2},
	} {
		got, err := out[c.name].Float32s()
		if err != nil {
			t.Fatal(err)
		}
		worst := 0.0
		for i := range want {
			worst = max(worst, math.Abs(float64(got[i])-want[i]))
		}
		if worst > c.tol*scale {
			t.Errorf("%s: largest |diff| %.3g > %.3g", c.name, worst, c.tol*scale)
		}
	}
}

// TestInferQuant checks the inferred types of the quantization operators
// and, where err is set, the error a bad call records (want then holds
// fragments of the message: the signature, the fault, the caller).
func TestInferQuant(t *testing.T) {
	nbits := func(g *builder.Graph, a, w, s *builder.Value, k, n, bs int64, o MatMulNBitsOpts) []*builder.Value {
		return []*builder.Value{MatMulNBits(a, w, s, k, n, bs, o)}
	}
	cases := []struct {
		name  string
		err   bool
		build func(g *builder.Graph) []*builder.Value
		want  []string
	}{
		{"DequantizeLinear per axis", false, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{DequantizeLinear(in(g, "x", s8, "b", 16), in(g, "s", f32, "b"), nil, QuantOpts{Axis: Int(0)})}
		}, []string{"float32[b,16]"}},
		{"QuantizeLinear int8", false, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{QuantizeLinear(in(g, "x", f32, 3, 4), in(g, "s", f32), in(g, "z", s8), QuantOpts{})}
		}, []string{"int8[3,4]"}},
		{"DynamicQuantizeLinear", false, func(g *builder.Graph) []*builder.Value {
			y, s, z := DynamicQuantizeLinear(in(g, "x", f32, "b", 512))
			return []*builder.Value{y, s, z}
		}, []string{"uint8[b,512]", "float32[]", "uint8[]"}},
		{"MatMulInteger", false, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{MatMulInteger(in(g, "a", u8, "b", 512), in(g, "w", s8, 512, 100), in(g, "za", u8), in(g, "zw", s8, 100))}
		}, []string{"int32[b,100]"}},
		{"QLinearMatMul", false, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{QLinearMatMul(in(g, "a", u8, 2, "b", 8), in(g, "as", f32), in(g, "az", u8),
				in(g, "w", s8, 8, 5), in(g, "ws", f32, 5), in(g, "wz", s8, 5), in(g, "ys", f32), in(g, "yz", s8))}
		}, []string{"int8[2,b,5]"}},
		{"MatMulNBits", false, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{MatMulNBits(in(g, "a", f32, "b", 1, 500), in(g, "w", u8, 7, 16, 16), in(g, "s", f32, 112), 500, 7, 32,
				MatMulNBitsOpts{ZeroPoints: in(g, "z", u8, 7, 8), Bias: in(g, "bias", f32, 7)})}
		}, []string{"float32[b,1,7]"}},
		{"DequantizeLinear float x", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{DequantizeLinear(in(g, "x", f32, 2), in(g, "s", f32), nil, QuantOpts{})}
		}, []string{"DequantizeLinear(x: float32[2], x_scale: float32[])", "x is float32[2], want one of int8, uint8, int32", "quant_test.go:"}},
		{"DequantizeLinear scale length", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{DequantizeLinear(in(g, "x", s8, 4, 3), in(g, "s", f32, 4), nil, QuantOpts{})}
		}, []string{"x_scale is float32[4] but x is int8[4,3]: a 1-D scale needs x's dimension 1 (axis 1) elements"}},
		{"DequantizeLinear zero point type", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{DequantizeLinear(in(g, "x", s8, 4), in(g, "s", f32), in(g, "z", u8), QuantOpts{})}
		}, []string{"x_zero_point is uint8[], want int8"}},
		{"DequantizeLinear axis", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{DequantizeLinear(in(g, "x", s8, 4), in(g, "s", f32, 4), nil, QuantOpts{Axis: Int(2)})}
		}, []string{"axis 2 is out of range for rank 1"}},
		{"QuantizeLinear scale rank", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{QuantizeLinear(in(g, "x", f32, 4), in(g, "s", f32, 1, 1), nil, QuantOpts{})}
		}, []string{"y_scale is float32[1,1], want rank [0 1]"}},
		{"DynamicQuantizeLinear int", true, func(g *builder.Graph) []*builder.Value {
			y, _, _ := DynamicQuantizeLinear(in(g, "x", i64, 2))
			return []*builder.Value{y}
		}, []string{"x is int64[2], want float32"}},
		{"MatMulInteger float", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{MatMulInteger(in(g, "a", f32, 2, 3), in(g, "b", s8, 3, 4), nil, nil)}
		}, []string{"A is float32[2,3], want one of uint8, int8"}},
		{"MatMulInteger inner", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{MatMulInteger(in(g, "a", u8, 2, 3), in(g, "b", s8, 4, 4), nil, nil)}
		}, []string{"inner dimensions differ"}},
		{"MatMulInteger zero point per column", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{MatMulInteger(in(g, "a", u8, 2, 3), in(g, "b", s8, 3, 4), nil, in(g, "z", s8, 3))}
		}, []string{"b_zero_point is int8[3], want a scalar, 1 or 4 elements"}},
		{"QLinearMatMul missing", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{QLinearMatMul(in(g, "a", u8, 2, 3), in(g, "as", f32), nil, in(g, "b", s8, 3, 4), in(g, "bs", f32), in(g, "bz", s8), in(g, "ys", f32), in(g, "yz", u8))}
		}, []string{"input a_zero_point is required but nil"}},
		{"QLinearMatMul scale type", true, func(g *builder.Graph) []*builder.Value {
			return []*builder.Value{QLinearMatMul(in(g, "a", u8, 2, 3), in(g, "as", i64), in(g, "az", u8), in(g, "b", s8, 3, 4), in(g, "bs", f32), in(g, "bz", s8), in(g, "ys", f32), in(g, "yz", u8))}
		}, []string{"a_scale is int64[], want float32"}},
		{"MatMulNBits B shape", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 2, 32), in(g, "s", f32, 20), 64, 10, 32, MatMulNBitsOpts{})
		}, []string{"MatMulNBits(A: float32[1,64], B: uint8[10,2,32], scales: float32[20]; K=64, N=10, block_size=32)", "B is uint8[10,2,32], want [10,2,16]"}},
		{"MatMulNBits K", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 60), in(g, "w", u8, 10, 2, 16), in(g, "s", f32, 20), 64, 10, 32, MatMulNBitsOpts{})
		}, []string{"A is float32[1,60], want its last dimension to be K = 64"}},
		{"MatMulNBits block size", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 3, 12), in(g, "s", f32, 30), 64, 10, 24, MatMulNBitsOpts{})
		}, []string{"block_size is 24, want a power of two of at least 16"}},
		{"MatMulNBits scales", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 2, 16), in(g, "s", f32, 10), 64, 10, 32, MatMulNBitsOpts{})
		}, []string{"scales is float32[10], want [20]"}},
		{"MatMulNBits zero points", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 2, 16), in(g, "s", f32, 20), 64, 10, 32, MatMulNBitsOpts{ZeroPoints: in(g, "z", u8, 20)})
		}, []string{"zero_points is uint8[20], want [10]"}},
		{"MatMulNBits bits", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 2, 16), in(g, "s", f32, 20), 64, 10, 32, MatMulNBitsOpts{Bits: 3})
		}, []string{"bits is 3, want 2, 4 or 8"}},
		{"MatMulNBits bias", true, func(g *builder.Graph) []*builder.Value {
			return nbits(g, in(g, "a", f32, 1, 64), in(g, "w", u8, 10, 2, 16), in(g, "s", f32, 20), 64, 10, 32, MatMulNBitsOpts{Bias: in(g, "b", f32, 64)})
		}, []string{"bias is float32[64], want [10]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := builder.New("g")
			vs := c.build(g)
			err := g.Err()
			switch {
			case c.err && err == nil:
				t.Fatal("want an error")
			case c.err:
				for _, w := range c.want {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			case err != nil:
				t.Fatalf("unexpected error: %v", err)
			default:
				for i, v := range vs {
					if got := v.Type().String(); got != c.want[i] {
						t.Errorf("output %d type = %s, want %s", i, got, c.want[i])
					}
				}
				if p := vs[0].Producer(); p.OpType == "MatMulNBits" && p.Domain != MicrosoftDomain {
					t.Errorf("MatMulNBits domain %q, want %q", p.Domain, MicrosoftDomain)
				}
			}
		})
	}
}
