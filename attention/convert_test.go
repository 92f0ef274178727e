package attention

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.5)
	}
	return v
}

// stateDict returns a random state_dict of the given configuration with the
// spec's keys and PyTorch's shapes.
func stateDict(cfg Config, seed int64) map[string]*builder.Tensor {
	r := rand.New(rand.NewSource(seed))
	sd := map[string]*builder.Tensor{}
	for k, s := range expectedShapes(cfg) {
		sd[k] = builder.FloatTensor(s.dims, randFloats(r, int(builder.NumElements(s.dims))))
	}
	return sd
}

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

// torchCell is one step of torch.nn.LSTM: gates i, f, g, o.
func torchCell(H int, wih, whh, bih, bhh []float32, x, h, c []float64) ([]float64, []float64) {
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

// onnxCell is one step of the ONNX LSTM operator (default activations, no
// peepholes): W and R stack gates i, o, f, c; B = [Wb; Rb].
func onnxCell(H int, W, R, B []float32, x, h, c []float64) ([]float64, []float64) {
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

func TestConvertLSTMLayerMatchesONNXSemantics(t *testing.T) {
	for _, tc := range []struct{ H, in int }{{1, 1}, {3, 5}, {7, 14}} {
		r := rand.New(rand.NewSource(int64(tc.H)))
		H, in := tc.H, tc.in
		wih, whh := randFloats(r, 4*H*in), randFloats(r, 4*H*H)
		bih, bhh := randFloats(r, 4*H), randFloats(r, 4*H)
		layer := ConvertLSTMLayer(int64(H), wih, whh, bih, bhh)
		W, _ := layer.W.Float32s()
		R, _ := layer.R.Float32s()
		B, _ := layer.B.Float32s()
		if got := fmt.Sprint(layer.W.Dims, layer.R.Dims, layer.B.Dims); got != fmt.Sprintf("[1 %d %d] [1 %d %d] [1 %d]", 4*H, in, 4*H, H, 8*H) {
			t.Fatalf("H=%d: shapes %s", H, got)
		}
		x, h, c := make([]float64, in), make([]float64, H), make([]float64, H)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		for i := range h {
			h[i], c[i] = r.NormFloat64(), r.NormFloat64()
		}
		th, tcell := torchCell(H, wih, whh, bih, bhh, x, h, c)
		oh, ocell := onnxCell(H, W, R, B, x, h, c)
		for j := 0; j < H; j++ {
			if math.Abs(th[j]-oh[j]) > 1e-12 || math.Abs(tcell[j]-ocell[j]) > 1e-12 {
				t.Fatalf("H=%d unit %d: torch (%g, %g) vs onnx (%g, %g)", H, j, th[j], tcell[j], oh[j], ocell[j])
			}
		}
	}
}

func TestReorderGatesBlocks(t *testing.T) {
	// Rows tagged by gate: i=1, f=2, g=3, o=4 (H=2, one column).
	p := []float32{1, 1, 2, 2, 3, 3, 4, 4}
	got := fmt.Sprint(ReorderGates(p, 2, 1))
	if got != "[1 1 4 4 2 2 3 3]" {
		t.Fatalf("ReorderGates = %s, want i,o,f,c = [1 1 4 4 2 2 3 3]", got)
	}
}

func TestFromStateDictInfersConfig(t *testing.T) {
	for _, want := range []Config{
		{Bahdanau, 13, 1, 19, 23}, {LuongDot, 5, 2, 7, 11},
		{LuongGeneral, 37, 2, 9, 4}, {LuongConcat, 3, 3, 6, 8},
	} {
		sd := stateDict(want, 1)
		sd["decoder.attn_combine.weight"] = builder.FloatTensor([]int64{1}, []float32{0})
		w, notes, err := FromStateDict(sd, Options{})
		if err != nil {
			t.Fatalf("%v: %v", want, err)
		}
		if w.Config != want {
			t.Errorf("inferred %v, want %v", w.Config, want)
		}
		if len(notes) != 1 || !strings.Contains(notes[0], "ignoring decoder.attn_combine.weight") {
			t.Errorf("%v: notes %q", want, notes)
		}
		if len(w.Encoder) != want.Layers || len(w.Decoder) != want.Layers {
			t.Errorf("%v: %d/%d layers", want, len(w.Encoder), len(w.Decoder))
		}
	}
}

func TestFromStateDictErrors(t *testing.T) {
	cfg := Config{Bahdanau, 4, 1, 6, 7}
	f16 := func(sd map[string]*builder.Tensor) {
		old := sd["decoder.weight"]
		sd["decoder.weight"] = &builder.Tensor{DType: builder.Float16, Dims: old.Dims, Raw: make([]byte, 2*4)}
	}
	cases := []struct {
		name   string
		cfg    Config
		edit   func(map[string]*builder.Tensor)
		opt    Options
		errHas []string
		note   string
	}{
		{"missing key", cfg, func(sd map[string]*builder.Tensor) { delete(sd, "decoder.classifier.bias") }, Options{},
			[]string{"missing key decoder.classifier.bias", "expected shape [7]"}, ""},
		{"extra key", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.extra.weight"] = builder.FloatTensor([]int64{2}, []float32{1, 2})
		}, Options{},
			[]string{"unexpected key decoder.extra.weight [2]", "bahdanau"}, ""},
		{"wrong shape", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.lstm.weight_ih_l0"] = builder.FloatTensor([]int64{16, 4}, make([]float32, 64))
		}, Options{}, []string{"decoder.lstm.weight_ih_l0: shape [16 4], expected [16 8]", "4H x 2H"}, ""},
		{"int tensor", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.classifier.bias"] = builder.Int64Tensor([]int64{7}, make([]int64, 7))
		}, Options{},
			[]string{"decoder.classifier.bias: dtype int64, expected float32"}, ""},
		{"nan", cfg, func(sd map[string]*builder.Tensor) {
			v, _ := sd["decoder.fc_hidden.weight"].Float32s()
			v[5] = float32(math.NaN())
			sd["decoder.fc_hidden.weight"] = builder.FloatTensor([]int64{4, 4}, v)
		}, Options{}, []string{"decoder.fc_hidden.weight: 1 non-finite values", "index 5: NaN", "--allow-nonfinite"}, ""},
		{"wrong arch", cfg, nil, Options{Arch: LuongDot}, []string{"--arch luong-dot disagrees", "bahdanau model"}, ""},
		{"layer mismatch", Config{LuongDot, 4, 2, 6, 7}, func(sd map[string]*builder.Tensor) {
			for _, p := range []string{"weight_ih", "weight_hh", "bias_ih", "bias_hh"} {
				delete(sd, "decoder.lstm."+p+"_l1")
			}
		}, Options{}, []string{"2 encoder LSTM layers but 1 decoder layers"}, ""},
		{"not a seq2seq", cfg, func(sd map[string]*builder.Tensor) { delete(sd, "encoder.embedding.weight") }, Options{},
			[]string{"missing key encoder.embedding.weight", "not an attention seq2seq"}, ""},
		{"float16 converted", cfg, f16, Options{}, nil, "converted decoder.weight from float16 to float32"},
	}
	for _, c := range cases {
		sd := stateDict(c.cfg, 2)
		if c.edit != nil {
			c.edit(sd)
		}
		_, notes, err := FromStateDict(sd, c.opt)
		if c.errHas == nil {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.name, err)
			} else if !strings.Contains(strings.Join(notes, "\n"), c.note) {
				t.Errorf("%s: notes %q lack %q", c.name, notes, c.note)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, want := range c.errHas {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q lacks %q", c.name, err, want)
			}
		}
	}
}
