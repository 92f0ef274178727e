package attention

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// matvec computes W x for W of rows x len(x).
func matvec(w []float32, x []float64, rows int) []float64 {
	out := make([]float64, rows)
	cols := len(x)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			out[r] += float64(w[r*cols+c]) * x[c]
		}
	}
	return out
}

// torchLSTMCell is one step of torch.nn.LSTM: gates i, f, g, o.
func torchLSTMCell(H int, wih, whh, bih, bhh []float32, x, h, c []float64) ([]float64, []float64) {
	a, b := matvec(wih, x, 4*H), matvec(whh, h, 4*H)
	h2, c2 := make([]float64, H), make([]float64, H)
	for j := 0; j < H; j++ {
		g := func(k int) float64 { return a[k*H+j] + b[k*H+j] + float64(bih[k*H+j]) + float64(bhh[k*H+j]) }
		i, f, gg, o := sigmoid(g(0)), sigmoid(g(1)), math.Tanh(g(2)), sigmoid(g(3))
		c2[j] = f*c[j] + i*gg
		h2[j] = o * math.Tanh(c2[j])
	}
	return h2, c2
}

// onnxLSTMCell is one step of the ONNX LSTM operator (default activations,
// no peepholes): W and R stack gates i, o, f, c; B = [Wb; Rb].
func onnxLSTMCell(H int, W, R, B []float32, x, h, c []float64) ([]float64, []float64) {
	a, b := matvec(W, x, 4*H), matvec(R, h, 4*H)
	h2, c2 := make([]float64, H), make([]float64, H)
	for j := 0; j < H; j++ {
		g := func(k int) float64 { return a[k*H+j] + b[k*H+j] + float64(B[k*H+j]) + float64(B[4*H+k*H+j]) }
		i, o, f, cc := sigmoid(g(0)), sigmoid(g(1)), sigmoid(g(2)), math.Tanh(g(3))
		c2[j] = f*c[j] + i*cc
		h2[j] = o * math.Tanh(c2[j])
	}
	return h2, c2
}

// torchGRUCell is one step of torch.nn.GRU: gates r, z, n, with the reset
// gate applied after the recurrent product.
func torchGRUCell(H int, wih, whh, bih, bhh []float32, x, h []float64) []float64 {
	a, b := matvec(wih, x, 3*H), matvec(whh, h, 3*H)
	h2 := make([]float64, H)
	for j := 0; j < H; j++ {
		ai := func(k int) float64 { return a[k*H+j] + float64(bih[k*H+j]) }
		bh := func(k int) float64 { return b[k*H+j] + float64(bhh[k*H+j]) }
		r, z := sigmoid(ai(0)+bh(0)), sigmoid(ai(1)+bh(1))
		n := math.Tanh(ai(2) + r*bh(2))
		h2[j] = (1-z)*n + z*h[j]
	}
	return h2
}

// onnxGRUCell is one step of the ONNX GRU operator with
// linear_before_reset = 1 (default activations): W and R stack gates z, r,
// h; B = [Wb; Rb].
func onnxGRUCell(H int, W, R, B []float32, x, h []float64) []float64 {
	a, b := matvec(W, x, 3*H), matvec(R, h, 3*H)
	h2 := make([]float64, H)
	for j := 0; j < H; j++ {
		wb := func(k int) float64 { return float64(B[k*H+j]) }
		rb := func(k int) float64 { return float64(B[3*H+k*H+j]) }
		z := sigmoid(a[j] + b[j] + wb(0) + rb(0))
		r := sigmoid(a[H+j] + b[H+j] + wb(1) + rb(1))
		hh := math.Tanh(a[2*H+j] + r*(b[2*H+j]+rb(2)) + wb(2))
		h2[j] = (1-z)*hh + z*h[j]
	}
	return h2
}

func floats(t *testing.T, tt *builder.Tensor) []float32 {
	t.Helper()
	v, err := tt.Float32s()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestConvertRNNLayerMatchesONNXSemantics checks the one gate repacking
// path: a PyTorch cell on PyTorch's weights computes what the ONNX operator
// computes on the converted ones.
func TestConvertRNNLayerMatchesONNXSemantics(t *testing.T) {
	for _, cell := range Cells {
		for _, tc := range []struct{ H, in int }{{1, 1}, {3, 5}, {7, 14}} {
			t.Run(fmt.Sprintf("%s/H%d/in%d", cell, tc.H, tc.in), func(t *testing.T) {
				r := rand.New(rand.NewSource(int64(tc.H)))
				H, in, G := tc.H, tc.in, cell.gates()
				wih, whh := randFloats(r, G*H*in), randFloats(r, G*H*H)
				bih, bhh := randFloats(r, G*H), randFloats(r, G*H)
				layer, err := ConvertRNNLayer(cell, H,
					builder.FloatTensor([]int64{int64(G * H), int64(in)}, wih), builder.FloatTensor([]int64{int64(G * H), int64(H)}, whh),
					builder.FloatTensor([]int64{int64(G * H)}, bih), builder.FloatTensor([]int64{int64(G * H)}, bhh))
				if err != nil {
					t.Fatal(err)
				}
				if got, want := fmt.Sprint(layer.W.Dims, layer.R.Dims, layer.B.Dims), fmt.Sprintf("[1 %d %d] [1 %d %d] [1 %d]", G*H, in, G*H, H, 2*G*H); got != want {
					t.Fatalf("shapes %s, want %s", got, want)
				}
				W, R, B := floats(t, layer.W), floats(t, layer.R), floats(t, layer.B)
				x, h, c := make([]float64, in), make([]float64, H), make([]float64, H)
				for i := range x {
					x[i] = r.NormFloat64()
				}
				for i := range h {
					h[i], c[i] = r.NormFloat64(), r.NormFloat64()
				}
				var th, oh, tcl, ocl []float64
				if cell == GRU {
					th, oh = torchGRUCell(H, wih, whh, bih, bhh, x, h), onnxGRUCell(H, W, R, B, x, h)
					tcl, ocl = make([]float64, H), make([]float64, H)
				} else {
					th, tcl = torchLSTMCell(H, wih, whh, bih, bhh, x, h, c)
					oh, ocl = onnxLSTMCell(H, W, R, B, x, h, c)
				}
				for j := 0; j < H; j++ {
					if math.Abs(th[j]-oh[j]) > 1e-12 || math.Abs(tcl[j]-ocl[j]) > 1e-12 {
						t.Fatalf("unit %d: torch (%g, %g) vs onnx (%g, %g)", j, th[j], tcl[j], oh[j], ocl[j])
					}
				}
			})
		}
	}
}

func TestReorderGatesBlocks(t *testing.T) {
	// Rows tagged by PyTorch gate number (H=2, one column).
	for _, tc := range []struct {
		cell Cell
		in   []float32
		want string
	}{
		{LSTM, []float32{1, 1, 2, 2, 3, 3, 4, 4}, "[1 1 4 4 2 2 3 3]"}, // i,f,g,o -> i,o,f,c
		{GRU, []float32{1, 1, 2, 2, 3, 3}, "[2 2 1 1 3 3]"},            // r,z,n -> z,r,h
	} {
		p := builder.FloatTensor([]int64{int64(len(tc.in))}, tc.in)
		out := &builder.Tensor{DType: builder.Float, Dims: p.Dims, Raw: reorderGates(nil, p.Raw, tc.cell, 2, 1)}
		if got := fmt.Sprint(floats(t, out)); got != tc.want {
			t.Errorf("%s: reorder = %s, want %s", tc.cell, got, tc.want)
		}
	}
}

func TestConvertRNNLayerErrors(t *testing.T) {
	f := func(dims ...int64) *builder.Tensor {
		return builder.FloatTensor(dims, make([]float32, builder.NumElements(dims)))
	}
	for _, tc := range []struct {
		name               string
		cell               Cell
		wih, whh, bih, bhh *builder.Tensor
		want               string
	}{
		{"lstm rows for a gru", GRU, f(8, 3), f(8, 2), f(8), f(8), "gru layer: weight_ih: shape [8 3], expected [6 3]"},
		{"nil bias", LSTM, f(8, 3), f(8, 2), nil, f(8), "bias_ih is missing"},
		{"int weights", LSTM, builder.Int64Tensor([]int64{8, 3}, make([]int64, 24)), f(8, 2), f(8), f(8), "weight_ih: dtype int64, expected float32"},
		{"short data", GRU, f(6, 3), &builder.Tensor{DType: builder.Float, Dims: []int64{6, 2}, Raw: make([]byte, 8)}, f(6), f(6), "weight_hh: 8 bytes of float32 data for shape [6 2], expected 48"},
		{"unknown cell", "rnn", f(8, 3), f(8, 2), f(8), f(8), `unknown cell "rnn"`},
	} {
		_, err := ConvertRNNLayer(tc.cell, 2, tc.wih, tc.whh, tc.bih, tc.bhh)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestRepack(t *testing.T) {
	m := builder.FloatTensor([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	tr, err := repack(m, transposed)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(tr.Dims, floats(t, tr)); got != "[3 2] [1 4 2 5 3 6]" {
		t.Errorf("transposed = %s", got)
	}
	v, err := repack(builder.FloatTensor([]int64{1, 3}, []float32{7, 8, 9}), vector)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(v.Dims, floats(t, v)); got != "[3] [7 8 9]" {
		t.Errorf("vector = %s", got)
	}
	// Regression (issue 11): transposing used to drop Float32s' error and
	// transpose whatever came back.
	for _, tc := range []struct {
		t    *builder.Tensor
		p    pack
		want string
	}{
		{&builder.Tensor{DType: builder.Float16, Dims: []int64{2, 2}, Raw: make([]byte, 8)}, transposed, "dtype float16, expected float32"},
		{&builder.Tensor{DType: builder.Float, Dims: []int64{2, 2}, Raw: make([]byte, 12)}, transposed, "12 bytes of float32 data"},
		{builder.FloatTensor([]int64{2, 3}, make([]float32, 6)), vector, "expected [1 n]"},
		{nil, asIs, "missing tensor"},
	} {
		if _, err := repack(tc.t, tc.p); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("repack(%v): error %v, want %q", tc.t, err, tc.want)
		}
	}
}
