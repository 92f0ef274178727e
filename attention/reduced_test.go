package attention

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/onnxcheck"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
)

// opTypes counts a graph's operators by domain-qualified type, subgraphs
// included.
func opTypes(g *builder.Graph, into map[string]int) {
	for _, n := range g.Nodes() {
		op := n.OpType
		if n.Domain != "" {
			op = n.Domain + "." + op
		}
		into[op]++
		for _, a := range n.Attrs {
			if a.Graph != nil {
				opTypes(a.Graph, into)
			}
		}
	}
}

// TestReducedGraphsRun builds the encoder, decoder step and greedy graphs of
// every architecture and cell at int8 and int4, and checks that: the int8
// graphs use standard ONNX operators only and int4's decoder and greedy
// graphs use com.microsoft MatMulNBits for the classifier; each one loads
// and runs in ONNX Runtime; a decoder step fed the same inputs as the
// float32 graphs returns log_probs close to theirs (within 0.05 at int8,
// 0.6 at int4: the weights are N(0, 0.5) random, sizes 5 to 15), but not
// equal (the reduced forms are in use); greedy.onnx decodes tokens of the
// vocabulary; and onnx.checker's full check accepts every graph, the
// contrib-op ones included.
func TestReducedGraphsRun(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := t.TempDir()
	var files []string
	sp := Special{SOS: 1, EOS: 2, PAD: 0, UNK: -1}
	// About twice the largest deviation seen over these models (0.024 and
	// 0.30): int8 rounds every product to 1/254 of its range, 4-bit the
	// classifier's weights to 1/16 of theirs.
	maxDev := map[quant.Precision]float64{quant.PrecisionInt8: 0.05, quant.PrecisionInt4: 0.6}
	for i, cfg := range allConfigs() {
		w, _, err := FromStateDict(stateDict(t, cfg, int64(40+i)), Options{})
		if err != nil {
			t.Fatal(err)
		}
		open := func(name string, prec quant.Precision, build func(BuildOptions) (*builder.Model, error)) (*onnxrun.Session, map[string]int) {
			t.Helper()
			m, err := build(BuildOptions{Weights: prec})
			if err != nil {
				t.Fatalf("%v %s %s: %v", cfg, prec, name, err)
			}
			ops := map[string]int{}
			opTypes(m.Graph, ops)
			data, err := onnxfile.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if prec.Reduced() {
				p := filepath.Join(dir, fmt.Sprintf("%d_%s_%s.onnx", i, prec, name))
				if err := os.WriteFile(p, data, 0o644); err != nil {
					t.Fatal(err)
				}
				files = append(files, p)
			}
			s, err := onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: 1})
			if err != nil {
				t.Fatalf("%v %s %s: ONNX Runtime does not load it: %v", cfg, prec, name, err)
			}
			t.Cleanup(func() { s.Close() })
			return s, ops
		}
		r := rand.New(rand.NewSource(int64(i)))
		const B, S = 3, 5
		ids := make([]int64, B*S)
		for k := range ids {
			ids[k] = int64(r.Intn(cfg.SrcVocab))
		}
		encIn := map[string]*onnxrun.Tensor{InSourceIDs: onnxrun.NewInt64([]int64{B, S}, ids), InSourceLengths: onnxrun.NewInt64([]int64{B}, []int64{5, 2, 4})}
		var ref []float32
		for _, prec := range quant.Precisions {
			enc, encOps := open("encoder", prec, func(o BuildOptions) (*builder.Model, error) { return Encoder(w, o) })
			dec, decOps := open("decoder", prec, func(o BuildOptions) (*builder.Model, error) { return Decoder(w, o) })
			gr, grOps := open("greedy", prec, func(o BuildOptions) (*builder.Model, error) { return Greedy(w, sp, o) })
			for name, ops := range map[string]map[string]int{"encoder": encOps, "decoder": decOps, "greedy": grOps} {
				nbits, integer := ops["com.microsoft.MatMulNBits"], ops["MatMulInteger"]
				contrib := 0
				for op, n := range ops {
					if strings.Contains(op, ".") {
						contrib += n
					}
				}
				want := map[quant.Precision]bool{quant.PrecisionInt8: integer > 0 && contrib == 0, quant.PrecisionInt4: nbits == 1 && contrib == 1 && integer > 0,
					quant.PrecisionFP32: integer == 0 && contrib == 0}[prec]
				if name == "encoder" {
					// The encoder's RNN stays float32 at every precision.
					want = integer == 0 && contrib == 0 && ops[strings.ToUpper(string(cfg.Cell))] == cfg.Layers
				}
				if !want {
					t.Errorf("%v %s %s: operators %v", cfg, prec, name, ops)
				}
			}
			eo, err := enc.Run(encIn)
			if err != nil {
				t.Fatalf("%v %s encoder: %v", cfg, prec, err)
			}
			in := map[string]*onnxrun.Tensor{InInputIDs: onnxrun.NewInt64([]int64{B}, []int64{1, 3, 4}), InHidden: eo[OutHidden],
				InEncoderOutputs: eo[OutEncoder], InSourceLengths: encIn[InSourceLengths]}
			if c, ok := eo[OutCell]; ok {
				in[InCell] = c
			}
			out, err := dec.Run(in)
			if err != nil {
				t.Fatalf("%v %s decoder: %v", cfg, prec, err)
			}
			lp, err := out[OutLogProbs].Float32s()
			if err != nil {
				t.Fatal(err)
			}
			if prec == quant.PrecisionFP32 {
				ref = lp
			} else {
				dev := 0.0
				for k := range lp {
					dev = math.Max(dev, math.Abs(float64(lp[k]-ref[k])))
				}
				if bound := maxDev[prec]; !(dev > 0 && dev <= bound) {
					t.Errorf("%v %s: log_probs deviate by %g from float32's, want in (0, %g]", cfg, prec, dev, bound)
				}
			}
			g, err := gr.Run(map[string]*onnxrun.Tensor{InSourceIDs: encIn[InSourceIDs], InSourceLengths: encIn[InSourceLengths], InMaxLen: onnxrun.Scalar(int64(6))})
			if err != nil {
				t.Fatalf("%v %s greedy: %v", cfg, prec, err)
			}
			toks, _ := g[OutOutputIDs].Int64s()
			for _, tok := range toks {
				if tok < 0 || tok >= int64(cfg.TgtVocab) {
					t.Errorf("%v %s greedy: token %d outside the vocabulary", cfg, prec, tok)
				}
			}
		}
	}
	if err := onnxcheck.CheckFiles(files...); err != nil {
		if testenv.InCI() || onnxcheck.Available() == nil {
			t.Errorf("onnx.checker: %v", err)
		} else {
			t.Logf("the ONNX checker did not run: %v", err)
		}
	}
}

// TestBlockFor: a MatMulNBits block is 128 inputs, or the least power of
// two (at least 16) that holds a narrower layer's inputs; other forms are
// left alone.
func TestBlockFor(t *testing.T) {
	for in, want := range map[int]int{1: 16, 16: 16, 17: 32, 64: 64, 100: 128, 128: 128, 512: 128} {
		if got := blockFor(nbits4, in).BlockSize; got != want {
			t.Errorf("blockFor(%d inputs) = %d, want %d", in, got, want)
		}
	}
	if got := blockFor(dynamicInt8, 7); got != dynamicInt8 {
		t.Errorf("blockFor changed an int8 scheme: %+v", got)
	}
}
