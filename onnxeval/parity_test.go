//go:build cgo

package onnxeval_test

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/bench"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/verify"
)

// parityConfigs are small random models of every architecture and cell,
// the toolkits' with their usual encoder, bridge and input feeding.
func parityConfigs() []attention.Config {
	var out []attention.Config
	for _, arch := range attention.AllArchs {
		for _, cell := range attention.Cells {
			cfg := attention.Config{Arch: arch, Cell: cell, Hidden: 16, Embedding: 12, Layers: 2, SrcVocab: 19, TgtVocab: 23}
			if arch == attention.TutorialLocation {
				cfg.MaxLength = 7
			}
			if arch.IsToolkit() {
				cfg.Embedding = 0
				cfg = bench.ToolkitConfig(cfg)
				if strings.HasPrefix(string(arch), "chatbot-") {
					cfg.SrcVocab = cfg.TgtVocab // one vocabulary for both sides
				}
				if cfg.Cell != cell {
					continue // the toolkit's own cell only
				}
			}
			out = append(out, cfg)
		}
	}
	return out
}

// TestNativeMatchesORT exports every architecture and cell at every
// weights precision and runs each graph on ONNX Runtime and on the native
// evaluator with the same inputs: encoder.onnx and decoder.onnx (one step,
// from the same states: step-isolated) must agree within the spec's
// float32 tolerance, and greedy.onnx and beam.onnx must run and give the
// same shapes, their identical rows counted (random weights leave logits
// nearly tied, so a last-bit difference may pick another token; the live
// parity suites compare tokens with PyTorch on both backends, near ties
// counted).
func TestNativeMatchesORT(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := t.TempDir()
	var table []string
	for i, cfg := range parityConfigs() {
		sd, err := bench.RandomStateDict(cfg, uint64(10+i))
		if err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ckpt := filepath.Join(dir, fmt.Sprintf("%02d.safetensors", i))
		meta := map[string]string{}
		if cfg.Arch.IsToolkit() { // their configuration comes with the weights
			meta[modeldir.ConfigMetadata] = string(js)
		}
		if err := checkpoint.WriteSafetensors(ckpt, sd, meta); err != nil {
			t.Fatal(err)
		}
		for _, w := range []quant.Precision{quant.PrecisionFP32, quant.PrecisionInt8, quant.PrecisionInt4} {
			name := fmt.Sprintf("%s/%s/%s", cfg.Arch, cfg.Cell, w)
			t.Run(name, func(t *testing.T) {
				md := filepath.Join(dir, fmt.Sprintf("%02d-%s", i, w))
				sp := attention.DefaultSpecial
				if _, err := modeldir.Export(ckpt, md, modeldir.Options{Greedy: true, Beam: w == quant.PrecisionFP32, Weights: w,
					SOS: &sp.SOS, EOS: &sp.EOS, PAD: &sp.PAD, UNK: &sp.UNK}); err != nil {
					t.Fatal(err)
				}
				worst, rows := compareGraphs(t, md, cfg)
				table = append(table, fmt.Sprintf("| %s | %s | %s | %.1e | %s |", cfg.Arch, cfg.Cell, w, worst, rows))
			})
		}
	}
	t.Logf("native vs ONNX Runtime (max abs difference over encoder.onnx and decoder.onnx outputs; loop graphs' rows identical):\n| arch | cell | weights | max abs diff | greedy / beam rows identical |\n|---|---|---|---|---|\n%s", strings.Join(table, "\n"))
}

// compareGraphs runs md's graphs on both backends; it returns the largest
// float difference of the encoder's and decoder's outputs and a summary of
// the loop graphs' identical rows.
func compareGraphs(t *testing.T, md string, cfg attention.Config) (float64, string) {
	t.Helper()
	rng := rand.New(rand.NewPCG(7, 8))
	const B, S = 3, 6
	lens := []int64{S, 2, 4}
	ids := make([]int64, B*S)
	for j := range ids {
		if j%S < int(lens[j/S]) {
			ids[j] = 4 + rng.Int64N(int64(cfg.SrcVocab-4))
		}
	}
	src := onnxrun.NewInt64([]int64{B, S}, ids)
	srcLens := onnxrun.NewInt64([]int64{B}, lens)
	open := func(file, backend string) *onnxrun.Session {
		s, err := onnxrun.Open(filepath.Join(md, file), onnxrun.Options{Backend: backend, IntraOpThreads: 1})
		if err != nil {
			t.Fatalf("%s on %s: %v", file, backend, err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	run := func(file string, in map[string]*onnxrun.Tensor) (a, b map[string]*onnxrun.Tensor) {
		ro, err := open(file, onnxrun.BackendORT).Run(in)
		if err != nil {
			t.Fatalf("%s on ort: %v", file, err)
		}
		rn, err := open(file, onnxrun.BackendGo).Run(in)
		if err != nil {
			t.Fatalf("%s on go: %v", file, err)
		}
		return ro, rn
	}
	worst := 0.0
	floats := func(file string, a, b map[string]*onnxrun.Tensor) {
		for name, x := range a {
			y := b[name]
			if y == nil || !slices.Equal(x.Shape, y.Shape) {
				t.Fatalf("%s %s: shapes %v (ort) and %v (go)", file, name, x.Shape, y)
			}
			xf, err1 := x.Float32s()
			yf, err2 := y.Float32s()
			if err1 != nil || err2 != nil {
				continue
			}
			for k := range xf {
				d := math.Abs(float64(xf[k] - yf[k]))
				worst = max(worst, d)
				if d > verify.Tolerance.ATol+verify.Tolerance.RTol*math.Abs(float64(xf[k])) {
					t.Errorf("%s %s[%d]: ort %v, go %v (difference %.2g beyond the spec's float32 tolerance)", file, name, k, xf[k], yf[k], d)
					return
				}
			}
		}
	}
	enc, encGo := run(modeldir.EncoderFile, map[string]*onnxrun.Tensor{attention.InSourceIDs: src, attention.InSourceLengths: srcLens})
	floats(modeldir.EncoderFile, enc, encGo)
	// One decoder step from ORT's encoder outputs and states, on both.
	dec := map[string]*onnxrun.Tensor{
		attention.InInputIDs:       onnxrun.NewInt64([]int64{B}, []int64{1, 5, 6}),
		attention.InEncoderOutputs: enc[attention.OutEncoder],
		attention.InSourceLengths:  srcLens,
	}
	for name, v := range enc {
		if name != attention.OutEncoder {
			dec[name] = v
		}
	}
	a, b := run(modeldir.DecoderFile, dec)
	floats(modeldir.DecoderFile, a, b)

	var rows []string
	loop := map[string]*onnxrun.Tensor{attention.InSourceIDs: src, attention.InSourceLengths: srcLens, attention.InMaxLen: onnxrun.Scalar(int64(8))}
	ga, gb := run(modeldir.GreedyFile, loop)
	rows = append(rows, identicalRows(t, "greedy", ga, gb))
	if fileExists(filepath.Join(md, modeldir.BeamFile)) {
		loop[attention.InBeamSize] = onnxrun.Scalar(int64(3))
		loop[attention.InLengthPenalty] = onnxrun.Scalar(1.0)
		ba, bb := run(modeldir.BeamFile, loop)
		rows = append(rows, identicalRows(t, "beam", ba, bb))
	}
	return worst, strings.Join(rows, " / ")
}

func identicalRows(t *testing.T, what string, a, b map[string]*onnxrun.Tensor) string {
	t.Helper()
	x, y := a[attention.OutOutputIDs], b[attention.OutOutputIDs]
	if x == nil || y == nil || !slices.Equal(x.Shape, y.Shape) {
		t.Fatalf("%s output_ids: ort %v, go %v", what, x, y)
	}
	xi, _ := x.Int64s()
	yi, _ := y.Int64s()
	n := int(x.Shape[0])
	per := len(xi) / n
	same := 0
	for r := 0; r < n; r++ {
		if slices.Equal(xi[r*per:(r+1)*per], yi[r*per:(r+1)*per]) {
			same++
		}
	}
	return fmt.Sprintf("%d/%d", same, n)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}
