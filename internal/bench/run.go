package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/reference"
)

// model is one architecture's prepared files.
type model struct {
	arch     attention.Arch
	cfg      attention.Config
	ckpt     string                     // safetensors with EOS suppressed
	dirs     map[quant.Precision]string // attnx model directory per weights precision
	bytes    map[quant.Precision]modelBytes
	torchDir string // torch.onnx.export graphs, "" when unavailable
	torchNA  string
}

// modelBytes is the size of the graph files an engine loads: encoder.onnx
// plus decoder.onnx for the step loops, greedy.onnx for the in-graph loop,
// beam.onnx for its beam search (0 when not exported).
type modelBytes struct{ steps, loop, beam int64 }

// fileBytes sums the sizes of the named files of dir.
func fileBytes(dir string, names ...string) (int64, error) {
	var n int64
	for _, name := range names {
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return 0, fmt.Errorf("bench: %w", err)
		}
		n += st.Size()
	}
	return n, nil
}

// Run measures every enabled engine at every configuration.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if !onnxrun.HasORT {
		// Built without cgo: the native engines (and PyTorch) only.
		if c.Engines == nil {
			c.Engines = []string{EngineLeanGo, EngineLoopGo, EnginePyTorch}
		}
		for _, e := range c.Engines {
			if e != EngineLeanGo && e != EngineLoopGo && e != EnginePyTorch {
				return nil, fmt.Errorf("bench: engine %s needs ONNX Runtime, which this attnx (built without cgo) lacks; the native engines are %s and %s", e, EngineLeanGo, EngineLoopGo)
			}
		}
	} else if err := onnxrun.Init(); err != nil {
		return nil, err
	}
	work := c.WorkDir
	if work == "" {
		d, err := os.MkdirTemp("", "attnx-bench-")
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		defer os.RemoveAll(d)
		work = d
	}
	rep := &Report{Ratios: map[string]map[string]float64{}}
	rc := &rep.Config
	rc.Checkpoint, rc.Hidden, rc.Layers = c.Checkpoint, c.Hidden, c.Layers
	rc.SrcLens, rc.Batches, rc.Threads, rc.Steps = c.SrcLens, c.Batches, c.Threads, c.Steps
	rc.EOS = attention.DefaultSpecial.EOS
	rc.EOSMethod = fmt.Sprintf("the classifier's bias[%d] = %g in the benchmarked copy of the weights, so EOS is never the argmax; max_len = steps", rc.EOS, float64(suppressedBias))
	rc.MinReps, rc.MinTimeS, rc.ORT = c.MinReps, c.MinTime.Seconds(), onnxrun.Version()
	for _, w := range c.weights() {
		rc.Weights = append(rc.Weights, string(w))
	}

	models, err := c.prepare(work)
	if err != nil {
		return nil, err
	}
	for _, m := range models {
		rc.Archs = append(rc.Archs, string(m.arch))
		rc.Hidden, rc.Layers, rc.SrcVocab, rc.TgtVocab = m.cfg.Hidden, m.cfg.Layers, m.cfg.SrcVocab, m.cfg.TgtVocab
		if m.torchNA != "" {
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s: torch.onnx.export unavailable: %s", m.arch, m.torchNA))
		}
	}
	profiled := c.CPUProfile == ""
	for _, m := range models {
		for _, S := range c.SrcLens {
			for _, B := range c.Batches {
				for _, T := range c.Threads {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
					rs, torchVer, err := c.measure(ctx, work, m, S, B, T)
					if err != nil {
						return nil, err
					}
					if torchVer.Version != "" {
						rc.Torch = torchVer.Version
						rc.TorchBLAS = torchVer.BLAS
					}
					key := configKey(string(m.arch), S, B, T)
					rep.Ratios[key] = ratios(rs)
					rep.Results = append(rep.Results, rs...)
					if !profiled && B == 1 && T == 1 {
						profiled = true
						if c.enabled(EngineLean) {
							ps, err := c.profile(m, S, onnxrun.BackendORT, c.CPUProfile)
							if err != nil {
								return nil, err
							}
							rep.Profile = ps
						}
						if c.enabled(EngineLeanGo) {
							if rep.ProfileGo, err = c.profile(m, S, onnxrun.BackendGo, nativeProfilePath(c.CPUProfile)); err != nil {
								return nil, err
							}
						}
					}
				}
			}
		}
	}
	rep.Targets = targets(rep)
	for _, r := range rep.Results {
		if r.Weights != string(quant.PrecisionFP32) && r.TokensMatchPyTorch != nil && !*r.TokensMatchPyTorch {
			rep.Notes = append(rep.Notes, "the reduced-precision rows decode other tokens than float32 PyTorch on these models: random weights leave their logits nearly tied, so any rounding moves the argmax; "+
				"attnx verify and make quant-accuracy measure how often it happens on trained models (docs/quantization.md)")
			break
		}
	}
	if w := blasWarning(rc.TorchBLAS); w != "" {
		rep.Warnings = append(rep.Warnings, w)
		c.logf("bench: WARNING: %s", w)
	}
	return rep, nil
}

func configKey(arch string, S, B, T int) string {
	return fmt.Sprintf("%s S=%d B=%d T=%d", arch, S, B, T)
}

// prepare writes each model's benchmark checkpoint (EOS suppressed), its
// attnx model directory and torch.onnx.export's graphs.
func (c *Config) prepare(work string) ([]*model, error) {
	type src struct {
		arch attention.Arch
		sd   map[string]*builder.Tensor
		cfg  attention.Config
	}
	var srcs []src
	longest := slices.Max(c.SrcLens)
	if c.Checkpoint != "" {
		sd, w, _, err := modeldir.ReadCheckpoint(checkpoint.Files{Path: c.Checkpoint}, nil, attention.Options{AllowNonFinite: true})
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		if err := w.Config.CheckSourceLength(longest); err != nil {
			return nil, fmt.Errorf("bench: %s: -src-len %d: %w", c.Checkpoint, longest, err)
		}
		srcs = append(srcs, src{w.Config.Arch, sd.Tensors, w.Config})
	} else {
		for i, a := range c.Archs {
			cfg := attention.Config{Arch: a, Cell: c.Cell, Hidden: c.Hidden, Layers: c.Layers, SrcVocab: c.Vocab, TgtVocab: c.Vocab}
			if cfg.Cell == "" {
				cfg.Cell = attention.LSTM
				if a.IsTutorial() {
					cfg.Cell = attention.GRU
				}
			}
			if a == attention.TutorialLocation {
				cfg.MaxLength = longest // attends over the longest source measured
			}
			if a.IsToolkit() {
				cfg = ToolkitConfig(cfg)
			}
			sd, err := RandomStateDict(cfg, c.Seed+uint64(i))
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, src{a, sd, cfg})
		}
	}
	// Every engine decodes with attnx's special tokens, whatever the
	// architecture's own defaults: EOS is suppressed in the weights.
	sp := attention.DefaultSpecial
	var models []*model
	for _, s := range srcs {
		sd, err := SuppressEOS(s.sd, sp.EOS)
		if err != nil {
			return nil, err
		}
		m := &model{arch: s.arch}
		base := filepath.Join(work, string(s.arch))
		if err := os.MkdirAll(base, 0o755); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		m.ckpt = filepath.Join(base, "checkpoint.safetensors")
		c.logf("bench: %s: writing the benchmark checkpoint and exporting", s.arch)
		// A toolkit's keys do not say everything about its model: its
		// configuration goes into the file's metadata, as attnx verify
		// writes it for the reference.
		var meta map[string]string
		if s.arch.IsToolkit() {
			js, err := json.Marshal(s.cfg)
			if err != nil {
				return nil, err
			}
			meta = map[string]string{modeldir.ConfigMetadata: string(js)}
		}
		if err := checkpoint.WriteSafetensors(m.ckpt, sd, meta); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		m.dirs, m.bytes = map[quant.Precision]string{}, map[quant.Precision]modelBytes{}
		// beam.onnx only when the loop engine measures beam search.
		withBeam := len(c.Beams) > 0 && c.enabled(EngineLoop)
		for _, w := range c.weights() {
			dir := filepath.Join(base, "model-"+string(w))
			res, err := modeldir.Export(m.ckpt, dir, modeldir.Options{Greedy: true, Beam: withBeam, Force: true, Weights: w, SOS: &sp.SOS, EOS: &sp.EOS, PAD: &sp.PAD, UNK: &sp.UNK})
			if err != nil {
				return nil, fmt.Errorf("bench: exporting %s with %s weights: %w", s.arch, w, err)
			}
			var mb modelBytes
			if mb.steps, err = fileBytes(dir, modeldir.EncoderFile, modeldir.DecoderFile); err != nil {
				return nil, err
			}
			if mb.loop, err = fileBytes(dir, modeldir.GreedyFile); err != nil {
				return nil, err
			}
			if withBeam {
				if mb.beam, err = fileBytes(dir, modeldir.BeamFile); err != nil {
					return nil, err
				}
			}
			m.cfg, m.dirs[w], m.bytes[w] = res.Config, dir, mb
		}
		if c.enabled(EngineTorchONNX) {
			td := filepath.Join(base, "torch")
			if out, err := c.python(reference.Script, "export-onnx", "--checkpoint", m.ckpt, "--out-dir", td); err != nil {
				m.torchNA = err.Error()
			} else {
				m.torchDir = td
				c.logf("bench: %s: torch.onnx.export: %s", s.arch, lastLine(out))
			}
		}
		models = append(models, m)
	}
	return models, nil
}

// nativeProfilePath is where the native backend's CPU profile goes: path
// with "-go" before its extension.
func nativeProfilePath(path string) string {
	ext := filepath.Ext(path)
	return strings.TrimSuffix(path, ext) + "-go" + ext
}

// sessionOptions are the options every attnx engine runs with, on backend.
func sessionOptions(threads int, backend string) onnxrun.Options {
	return onnxrun.Options{Backend: backend, IntraOpThreads: threads, InterOpThreads: 1}
}
