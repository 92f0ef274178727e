package onnxeval_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/bench"
	"github.com/attnx/attnx/internal/qlayer"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxeval"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/quant"
)

const fusedRowInt8 = "attnx.fused.RowInt8MatMul"

// TestFusedRowInt8MatchesNodes: the fused per-row int8 product, the
// quantized LSTM cells' gates, the attention (Luong's scores, mask,
// softmax and context), and the classifier's
// log-softmax folded into its product (int8's, int4's, or float32's
// Gemm), compute bit for bit what the nodes they replace compute: every
// output of encoder.onnx, decoder.onnx, greedy.onnx and beam.onnx (whose
// Loop bodies fuse too), on sizes whose inner dimension suits the VNNI
// kernel (64) and sizes that take the integer loop (40), with states
// holding NaN, infinities, zeros and huge values. Run it with -tags purego
// for the portable kernels.
func TestFusedRowInt8MatchesNodes(t *testing.T) {
	dir := t.TempDir()
	type model struct {
		cfg     attention.Config
		weights quant.Precision
	}
	for i, mc := range []model{
		{attention.Config{Arch: attention.LuongGeneral, Cell: attention.LSTM, Hidden: 64, Embedding: 64, Layers: 2, SrcVocab: 31, TgtVocab: 37}, quant.PrecisionInt8},
		{attention.Config{Arch: attention.Bahdanau, Cell: attention.GRU, Hidden: 40, Embedding: 24, Layers: 1, SrcVocab: 29, TgtVocab: 33}, quant.PrecisionInt8},
		{attention.Config{Arch: attention.LuongGeneral, Cell: attention.LSTM, Hidden: 64, Embedding: 64, Layers: 2, SrcVocab: 31, TgtVocab: 37}, quant.PrecisionFP32},
		{attention.Config{Arch: attention.LuongGeneral, Cell: attention.LSTM, Hidden: 64, Embedding: 64, Layers: 2, SrcVocab: 31, TgtVocab: 37}, quant.PrecisionInt4},
	} {
		cfg := mc.cfg
		t.Run(fmt.Sprintf("%s-%s-H%d-%s", cfg.Arch, cfg.Cell, cfg.Hidden, mc.weights), func(t *testing.T) {
			sd, err := bench.RandomStateDict(cfg, uint64(40+i))
			if err != nil {
				t.Fatal(err)
			}
			ckpt := filepath.Join(dir, fmt.Sprintf("%d.safetensors", i))
			if err := checkpoint.WriteSafetensors(ckpt, sd, nil); err != nil {
				t.Fatal(err)
			}
			md := filepath.Join(dir, fmt.Sprint(i))
			if _, err := modeldir.Export(ckpt, md, modeldir.Options{Greedy: true, Beam: true, Weights: mc.weights}); err != nil {
				t.Fatal(err)
			}
			open := func(file string, off bool) *onnxeval.Model {
				t.Helper()
				onnxeval.SetFusion(!off)
				defer onnxeval.SetFusion(true)
				m, err := onnxeval.Open(filepath.Join(md, file), onnxeval.Options{})
				if err != nil {
					t.Fatal(err)
				}
				return m
			}
			for _, file := range []string{modeldir.DecoderFile, modeldir.GreedyFile, modeldir.BeamFile} {
				ops := open(file, false).OpsDeep()
				classifier := "attnx.fused.GemmLogSoftmax"
				if mc.weights == quant.PrecisionInt4 {
					classifier = "attnx.fused.MatMulNBitsLogSoftmax"
					if !slices.Contains(ops, "attnx.fused.LSTMGates") {
						t.Errorf("%s: the LSTM cells' gates are not fused: %v", file, ops)
					}
				}
				if mc.weights == quant.PrecisionInt8 {
					if !slices.Contains(ops, fusedRowInt8) {
						t.Errorf("%s: no fused per-row int8 product in its plan", file)
					}
					classifier = fusedRowInt8 + "AddLogSoftmax"
					if cfg.Cell == attention.LSTM && !slices.Contains(ops, "attnx.fused.LSTMGates") {
						t.Errorf("%s: the LSTM cells' gates are not fused: %v", file, ops)
					}
				}
				if cfg.Arch == attention.LuongGeneral && !slices.Contains(ops, "attnx.fused.Attention") {
					t.Errorf("%s: the attention is not fused: %v", file, ops)
				}
				if !slices.Contains(ops, classifier) {
					t.Errorf("%s: the classifier's bias and log-softmax are not folded into its product (%s): %v", file, classifier, ops)
				}
				if off := open(file, true).OpsDeep(); slices.ContainsFunc(off, func(op string) bool { return strings.HasPrefix(op, "attnx.fused.") }) {
					t.Errorf("%s: fused with fusion off: %v", file, off)
				}
			}
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			// 5 rows: blocks of 4 rows and a row alone in the VNNI kernels.
			const B, S = 5, 5
			lens := []int64{S, 3, 1, 5, 2}
			ids := make([]int64, B*S)
			for j := range ids {
				ids[j] = 4 + rng.Int64N(int64(cfg.SrcVocab-4))
			}
			encIn := map[string]*onnxeval.Tensor{attention.InSourceIDs: onnxeval.New([]int64{B, S}, ids), attention.InSourceLengths: onnxeval.New([]int64{B}, lens)}
			enc := runBoth(t, open(modeldir.EncoderFile, false), open(modeldir.EncoderFile, true), encIn, "encoder.onnx")
			dec := map[string]*onnxeval.Tensor{
				attention.InInputIDs:       onnxeval.New([]int64{B}, []int64{1, 5, 6, 7, 8}),
				attention.InEncoderOutputs: enc[attention.OutEncoder],
				attention.InSourceLengths:  encIn[attention.InSourceLengths],
			}
			for name, v := range enc {
				if name != attention.OutEncoder {
					dec[name] = v
				}
			}
			runBoth(t, open(modeldir.DecoderFile, false), open(modeldir.DecoderFile, true), dec, "decoder.onnx")
			// States that hold NaN, infinities, zeros and huge values, a row each.
			hd, _ := onnxeval.Float32Data(dec[attention.InHidden])
			h := slices.Clone(hd)
			H := cfg.Hidden
			for r, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), 0, 3e38} {
				for k := range H {
					if r == 2 || k%3 == 0 {
						h[r*H+k] = v
					}
				}
			}
			dec[attention.InHidden] = onnxeval.New(slices.Clone(dec[attention.InHidden].Shape), h)
			runBoth(t, open(modeldir.DecoderFile, false), open(modeldir.DecoderFile, true), dec, "decoder.onnx, odd states")
			loop := map[string]*onnxeval.Tensor{attention.InSourceIDs: encIn[attention.InSourceIDs], attention.InSourceLengths: encIn[attention.InSourceLengths],
				attention.InMaxLen: onnxeval.New([]int64{}, []int64{9})}
			runBoth(t, open(modeldir.GreedyFile, false), open(modeldir.GreedyFile, true), loop, "greedy.onnx")
			loop[attention.InBeamSize] = onnxeval.New([]int64{}, []int64{3})
			loop[attention.InLengthPenalty] = onnxeval.New([]int64{}, []float64{1})
			runBoth(t, open(modeldir.BeamFile, false), open(modeldir.BeamFile, true), loop, "beam.onnx")
		})
	}
}

// uniform is n values drawn uniformly from [-scale, scale).
func uniform(rng *rand.Rand, n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = (rng.Float32()*2 - 1) * scale
	}
	return v
}

// openBoth opens the model file data twice, with plan-time fusion and
// without, each running on threads.
func openBoth(t *testing.T, data []byte, threads int) (fused, nodes *onnxeval.Model) {
	t.Helper()
	open := func(fuse bool) *onnxeval.Model {
		onnxeval.SetFusion(fuse)
		defer onnxeval.SetFusion(true)
		m, err := onnxeval.OpenBytes(data, onnxeval.Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	return open(true), open(false)
}

// runBoth runs the fused and the unfused model on in and checks that every
// output is the same, bit for bit; it returns the fused model's outputs.
func runBoth(t *testing.T, fused, nodes *onnxeval.Model, in map[string]*onnxeval.Tensor, what string) map[string]*onnxeval.Tensor {
	t.Helper()
	a, err := fused.Run(in)
	if err != nil {
		t.Fatalf("%s fused: %v", what, err)
	}
	b, err := nodes.Run(in)
	if err != nil {
		t.Fatalf("%s unfused: %v", what, err)
	}
	for name, x := range a {
		y := b[name]
		if y == nil || !slices.Equal(x.Shape, y.Shape) || x.DType != y.DType {
			t.Fatalf("%s %s: %v %v fused, %v unfused", what, name, x.DType, x.Shape, y)
		}
		if xf, ok := onnxeval.Float32Data(x); ok {
			yf, _ := onnxeval.Float32Data(y)
			for k := range xf {
				if math.Float32bits(xf[k]) != math.Float32bits(yf[k]) && !(xf[k] != xf[k] && yf[k] != yf[k]) {
					t.Fatalf("%s %s[%d]: fused %v, unfused %v", what, name, k, xf[k], yf[k])
				}
			}
			continue
		}
		if fmt.Sprint(x.Data) != fmt.Sprint(y.Data) {
			t.Fatalf("%s %s: fused %v, unfused %v", what, name, x.Data, y.Data)
		}
	}
	return a
}

// TestBidirectionalThreadsAgree: a bidirectional encoder's two directions
// run side by side with two threads (and split their own products with
// four); the outputs are bit for bit those of one thread (OpenNMT-py's
// recipe shape: two bidirectional LSTM layers).
func TestBidirectionalThreadsAgree(t *testing.T) {
	dir := t.TempDir()
	cfg := bench.ToolkitConfig(attention.Config{Arch: attention.Arch("onmt-general"), Cell: attention.LSTM, Hidden: 64, Layers: 2, SrcVocab: 50, TgtVocab: 40})
	sd, err := bench.RandomStateDict(cfg, 7)
	if err != nil {
		t.Fatal(err)
	}
	ckpt := filepath.Join(dir, "c.safetensors")
	if err := checkpoint.WriteSafetensors(ckpt, sd, nil); err != nil {
		t.Fatal(err)
	}
	md := filepath.Join(dir, "m")
	if _, err := modeldir.Export(ckpt, md, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	const B, S = 8, 20
	rng := rand.New(rand.NewPCG(5, 6))
	ids, lens := make([]int64, B*S), make([]int64, B)
	for i := range ids {
		ids[i] = 4 + rng.Int64N(40)
	}
	for b := range lens {
		lens[b] = S - int64(b)
	}
	in := map[string]*onnxeval.Tensor{attention.InSourceIDs: onnxeval.New([]int64{B, S}, ids), attention.InSourceLengths: onnxeval.New([]int64{B}, lens)}
	var outs []map[string]*onnxeval.Tensor
	threadCounts := []int{1, 2, 4} // 4: each direction splits its own products
	for _, threads := range threadCounts {
		m, err := onnxeval.Open(filepath.Join(md, modeldir.EncoderFile), onnxeval.Options{Threads: threads})
		if err != nil {
			t.Fatal(err)
		}
		o, err := m.Run(in)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, o)
	}
	for k := 1; k < len(outs); k++ {
		for name, a := range outs[0] {
			x, _ := onnxeval.Float32Data(a)
			y, _ := onnxeval.Float32Data(outs[k][name])
			if len(x) == 0 || len(x) != len(y) {
				t.Fatalf("%s: %d and %d values", name, len(x), len(y))
			}
			for i := range x {
				if math.Float32bits(x[i]) != math.Float32bits(y[i]) {
					t.Fatalf("%s[%d]: %v with one thread, %v with %d", name, i, x[i], y[i], threadCounts[k])
				}
			}
		}
	}
}

// TestFusedRowInt8ManyRows: the fused per-row int8 product of 300 rows,
// its columns split among two threads, gives bit for bit the nodes'
// result (rows holding NaN, infinities, zeros and huge values among
// them), at one thread and two.
func TestFusedRowInt8ManyRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(77, 78))
	const rows, in, out = 300, 512, 96
	g := builder.New("linear")
	x := g.Input("x", builder.Float, builder.Dims(rows, in))
	l := qlayer.Linear(g, "fc", x, qlayer.Layer{W: uniform(rng, out*in, 0.1), B: uniform(rng, out, 1), Out: out, In: in}, qlayer.Scheme{Form: qlayer.DynamicInt8})
	g.Output("y", l.Y)
	data, err := onnxfile.Marshal(builder.NewModel(g))
	if err != nil {
		t.Fatal(err)
	}
	xs := uniform(rng, rows*in, 2)
	for r, v := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, 3e38} {
		row := 37*r + 5
		for k := range in {
			if v == 0 || k%9 == 0 {
				xs[row*in+k] = v
			}
		}
	}
	for _, threads := range []int{1, 2} {
		fused, nodes := openBoth(t, data, threads)
		if !slices.Contains(fused.OpsDeep(), fusedRowInt8+"Add") {
			t.Fatalf("not fused: %v", fused.OpsDeep())
		}
		runBoth(t, fused, nodes, map[string]*onnxeval.Tensor{"x": onnxeval.New([]int64{rows, in}, xs)}, fmt.Sprintf("%d threads", threads))
	}
}
