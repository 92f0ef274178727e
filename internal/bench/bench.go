// Package bench measures decoding speed, on the same weights and inputs,
// for five ways of running an attnx model (see Engines): PyTorch
// eager (the reference modules through reference/bench.py),
// torch.onnx.export's graphs in a step loop, attnx's graphs in a step loop,
// attnx's in-graph loop (greedy.onnx, one run per batch) and a floor (the
// LSTM cell and the classifier product alone). The attnx engines run once
// per weights precision asked for (Config.Weights: fp32, int8, int4), each
// on the model exported at that precision. It is a benchmark, not a timed
// test: `attnx bench` and `make bench` print its table and JSON.
//
// PyTorch's figure depends on the BLAS it calls: Debian's python3-torch
// calls whatever the libblas.so.3 alternative is, and the reference BLAS
// makes its classifier product many times slower than OpenBLAS does. The
// report says which one bench.py loaded, and warns when it was the
// reference BLAS.
//
// Beside greedy decoding it measures beam search (Config.Beams) on the
// engines that have it: the decoding core, translate's steps engine, its
// loop engine (beam.onnx, exported beside greedy.onnx) and PyTorch's
// reference beam search (bench.py --beam), each next to its own greedy
// decoding.
//
// Every engine decodes exactly Config.Steps steps: the model's classifier
// bias at EOS is set to -1e9 (see SuppressEOS), so greedy decoding never
// stops early, and max_len is Config.Steps; PyTorch runs a fixed number of
// steps without an EOS check.
package bench

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/quant"
)

// Engine names, in the order they run and print.
const (
	// EngineLean is attnx's decoding core (package decode: IoBinding,
	// reused tensors, argmax in Go) run alone over attnx's encoder.onnx and
	// decoder.onnx, without translate's per-call work.
	EngineLean = "attnx-steps-lean"
	// EngineSteps is package translate's "steps" engine over the same graphs.
	EngineSteps = "attnx-steps"
	// EngineLoop is package translate's "loop" engine: greedy.onnx, the
	// whole greedy decoding in one ONNX Loop, one run per batch (beam.onnx
	// for beam search).
	EngineLoop = "attnx-loop"
	// EngineLeanGo is EngineLean on the native Go evaluator (backend "go")
	// instead of ONNX Runtime: the same graphs, the same decoding core.
	EngineLeanGo = "attnx-steps-lean-go"
	// EngineLoopGo is EngineLoop on the native Go evaluator.
	EngineLoopGo = "attnx-loop-go"
	// EngineTorchONNX is torch.onnx.export's encoder and decoder step
	// (reference.py export-onnx) run by the lean step loop; batch 1 only.
	EngineTorchONNX = "torch-onnx-steps"
	// EnginePyTorch is PyTorch eager, the reference modules (bench.py).
	EnginePyTorch = "pytorch-eager"
	// EngineFloor is the floor graph (see floorModel) in a step loop.
	EngineFloor = "floor"
)

// Engines lists every engine in run order.
var Engines = []string{EngineLean, EngineSteps, EngineLoop, EngineLeanGo, EngineLoopGo, EngineTorchONNX, EnginePyTorch, EngineFloor}

// nativeOf maps each native-backend engine to the ONNX Runtime engine it
// mirrors.
var nativeOf = map[string]string{EngineLeanGo: EngineLean, EngineLoopGo: EngineLoop}

// Config is what to measure.
type Config struct {
	// Checkpoint is a PyTorch or safetensors checkpoint; "" means a random
	// model of Archs, Hidden, Layers and Vocab.
	Checkpoint string
	// Archs are the random models' architectures (ignored with Checkpoint).
	Archs []attention.Arch
	// Cell is the random models' cell; "" means LSTM for the article's
	// architectures and GRU for the tutorial's (ignored with Checkpoint).
	Cell attention.Cell
	// Hidden, Layers and Vocab (both vocabularies) size the random models.
	Hidden, Layers, Vocab int
	// SrcLens, Batches and Threads span the measured configurations.
	SrcLens, Batches, Threads []int
	// Steps is the number of decoder steps (tokens per row).
	Steps int
	// Beams are the beam widths K (>= 2) measured beside greedy decoding;
	// nil measures greedy decoding only.
	Beams []int
	// Warmup runs precede the measured ones; measuring stops once MinReps
	// runs and MinTime have passed, or at MaxReps.
	Warmup, MinReps, MaxReps int
	MinTime                  time.Duration
	// Engines selects engines by name; nil means all.
	Engines []string
	// Weights lists the precisions the attnx engines (attnx-steps-lean,
	// attnx-steps, attnx-loop) run at, each on the model exported at that
	// precision; nil means fp32 alone. The other engines are float32.
	Weights []quant.Precision
	// Python is the interpreter with torch (/usr/bin/python3) and RefDir
	// the directory of reference.py and bench.py ("": the copy embedded in
	// the binary, see package reference).
	Python, RefDir string
	// WorkDir holds the models and inputs; "" means a temporary directory
	// removed afterwards.
	WorkDir string
	// CPUProfile, when set, receives a CPU profile of the lean step loop at
	// the first configuration with batch 1 and 1 thread.
	CPUProfile string
	// Seed seeds the random model and inputs.
	Seed uint64
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// DefaultConfig is the default: H=256, V=10000, L=1, Bahdanau and
// Luong general, source lengths 12 and 50, batch 1 and 32, 1 and 2
// threads, 20 steps.
func DefaultConfig() Config {
	return Config{
		Archs:  []attention.Arch{attention.Bahdanau, attention.LuongGeneral},
		Hidden: 256, Layers: 1, Vocab: 10000,
		SrcLens: []int{12, 50}, Batches: []int{1, 32}, Threads: []int{1, 2},
		Steps:  20,
		Beams:  []int{4, 8},
		Warmup: 3, MinReps: 10, MaxReps: 2000, MinTime: time.Second,
		Python: "/usr/bin/python3", RefDir: "", // "": the embedded reference
		Seed: 1,
	}
}

// weights returns the precisions the attnx engines run at.
func (c *Config) weights() []quant.Precision {
	if len(c.Weights) == 0 {
		return []quant.Precision{quant.PrecisionFP32}
	}
	return c.Weights
}

// perWeights reports whether engine e runs once per weights precision:
// the attnx engines, which run the exported model directories.
func perWeights(e string) bool {
	return e == EngineLean || e == EngineSteps || e == EngineLoop || nativeOf[e] != ""
}

func (c *Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

func (c *Config) enabled(engine string) bool {
	if c.Engines == nil {
		return true
	}
	for _, e := range c.Engines {
		if e == engine {
			return true
		}
	}
	return false
}

// Validate checks the configuration.
func (c *Config) Validate() error {
	if c.Checkpoint == "" && len(c.Archs) == 0 {
		return errors.New("bench: no architecture to measure (give --arch or --checkpoint)")
	}
	for _, l := range [][]int{c.SrcLens, c.Batches, c.Threads} {
		if len(l) == 0 {
			return errors.New("bench: source lengths, batch sizes and thread counts must each list at least one value")
		}
		for _, v := range l {
			if v < 1 {
				return fmt.Errorf("bench: source lengths, batch sizes and thread counts must be >= 1, got %d", v)
			}
		}
	}
	if c.Steps < 1 || c.MinReps < 1 || c.MaxReps < c.MinReps || c.Warmup < 0 {
		return fmt.Errorf("bench: steps %d, min reps %d, max reps %d, warmup %d: want steps >= 1, 1 <= min reps <= max reps, warmup >= 0", c.Steps, c.MinReps, c.MaxReps, c.Warmup)
	}
	for _, w := range c.Weights {
		if _, err := quant.ParsePrecision(string(w)); err != nil || w == "" {
			return fmt.Errorf("bench: weights %q: want fp32, int8 or int4", w)
		}
	}
	for _, k := range c.Beams {
		if k < 2 {
			return fmt.Errorf("bench: beam width %d: want K >= 2 (greedy decoding is always measured)", k)
		}
	}
	for _, e := range c.Engines {
		ok := false
		for _, k := range Engines {
			ok = ok || e == k
		}
		if !ok {
			return fmt.Errorf("bench: unknown engine %q (want some of %v)", e, Engines)
		}
	}
	return nil
}
