// Package bench measures greedy decoding speed, on the same weights and
// inputs, for five ways of running an attnx model (see Engines): PyTorch
// eager (the reference modules through reference/bench.py),
// torch.onnx.export's graphs in a step loop, attnx's graphs in a step loop,
// attnx's in-graph loop (greedy.onnx, one run per batch) and a floor (the
// LSTM cell and the classifier product alone). It is a benchmark, not a
// timed test: `attnx bench` and `make bench` print its table and JSON.
//
// Every engine decodes exactly Config.Steps steps: the model's classifier
// bias at EOS is set to -1e9 (see SuppressEOS), so greedy decoding never
// stops early, and max_len is Config.Steps; PyTorch runs a fixed number of
// steps without an EOS check.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/reference"
	"github.com/attnx/attnx/runtime"
	"github.com/attnx/attnx/translate"
)

// Engine names, in the order they run and print.
const (
	// EngineLean is bench's own lean step loop over attnx's encoder.onnx
	// and decoder.onnx (IoBinding, reused tensors, hidden/cell ping-pong,
	// argmax in Go).
	EngineLean = "attnx-steps-lean"
	// EngineSteps is package translate's "steps" engine over the same graphs.
	EngineSteps = "attnx-steps"
	// EngineLoop is package translate's "loop" engine: greedy.onnx, the
	// whole greedy decoding in one ONNX Loop, one run per batch.
	EngineLoop = "attnx-loop"
	// EngineTorchONNX is torch.onnx.export's encoder and decoder step
	// (reference.py export-onnx) run by the lean step loop; batch 1 only.
	EngineTorchONNX = "torch-onnx-steps"
	// EnginePyTorch is PyTorch eager, the reference modules (bench.py).
	EnginePyTorch = "pytorch-eager"
	// EngineFloor is the floor graph (see floorModel) in a step loop.
	EngineFloor = "floor"
)

// Engines lists every engine in run order.
var Engines = []string{EngineLean, EngineSteps, EngineLoop, EngineTorchONNX, EnginePyTorch, EngineFloor}

// Config is what to measure.
type Config struct {
	// Checkpoint is a PyTorch or safetensors checkpoint; "" means a random
	// model of Archs, Hidden, Layers and Vocab.
	Checkpoint string
	// Archs are the random models' architectures (ignored with Checkpoint).
	Archs []attention.Arch
	// Hidden, Layers and Vocab (both vocabularies) size the random models.
	Hidden, Layers, Vocab int
	// SrcLens, Batches and Threads span the measured configurations.
	SrcLens, Batches, Threads []int
	// Steps is the number of decoder steps (tokens per row).
	Steps int
	// Warmup runs precede the measured ones; measuring stops once MinReps
	// runs and MinTime have passed, or at MaxReps.
	Warmup, MinReps, MaxReps int
	MinTime                  time.Duration
	// Engines selects engines by name; nil means all.
	Engines []string
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
		Warmup: 3, MinReps: 10, MaxReps: 2000, MinTime: time.Second,
		Python: "/usr/bin/python3", RefDir: "", // "": the embedded reference
		Seed: 1,
	}
}

// Result is one engine at one configuration. Times are wall-clock; a token
// is one row's output at one step, so a step of batch B makes B tokens.
type Result struct {
	Name    string `json:"name"`
	Arch    string `json:"arch"`
	SrcLen  int    `json:"src_len"`
	Batch   int    `json:"batch"`
	Threads int    `json:"threads"`
	// MsPerTokenMedian and MsPerTokenP90 are the decode time (encoder
	// excluded) per token over the repetitions.
	MsPerTokenMedian float64 `json:"ms_per_token_median"`
	MsPerTokenP90    float64 `json:"ms_per_token_p90"`
	// MsPerTokenMin is the fastest repetition's: the least disturbed by
	// other load on a shared machine.
	MsPerTokenMin float64 `json:"ms_per_token_min"`
	// MsPerStepMedian is MsPerTokenMedian * Batch.
	MsPerStepMedian float64 `json:"ms_per_step_median"`
	// TokensPerS is 1000 / MsPerTokenMedian.
	TokensPerS float64 `json:"tokens_per_s"`
	// EncoderMsMedian is the encoder's time per batch (0 for the floor).
	EncoderMsMedian float64 `json:"encoder_ms_median"`
	// PeakRSSMB is the peak resident set while the engine ran: bench.py's
	// own process for PyTorch, this process (reset before each engine) for
	// the others.
	PeakRSSMB float64 `json:"peak_rss_mb"`
	Reps      int     `json:"reps"`
	// SpeedupVsPyTorch is PyTorch eager's ms per token over this engine's.
	SpeedupVsPyTorch float64 `json:"speedup_vs_pytorch,omitempty"`
	// RatioToFloor is this engine's ms per token over the floor's.
	RatioToFloor float64 `json:"ratio_to_floor,omitempty"`
	// TokensMatchPyTorch tells whether the tokens equal PyTorch's.
	TokensMatchPyTorch *bool `json:"tokens_match_pytorch,omitempty"`
	// NA, when set, says why the engine could not run here ("n/a").
	NA string `json:"na,omitempty"`
	// Note adds how the figure was obtained, where it differs.
	Note string `json:"note,omitempty"`

	tokens []int64 // step-major [steps*B], first repetition
}

// Target is one of the goals, checked at batch 1 and 1 thread.
type Target struct {
	Config string  `json:"config"`
	Name   string  `json:"name"`
	Want   string  `json:"want"`
	Got    float64 `json:"got"`
	Met    bool    `json:"met"`
	Detail string  `json:"detail"`
}

// Report is the benchmark's outcome, as printed with --json.
type Report struct {
	Config struct {
		Checkpoint string   `json:"checkpoint,omitempty"`
		Archs      []string `json:"archs"`
		Hidden     int      `json:"hidden"`
		Layers     int      `json:"layers"`
		SrcVocab   int      `json:"src_vocab"`
		TgtVocab   int      `json:"tgt_vocab"`
		SrcLens    []int    `json:"src_lens"`
		Batches    []int    `json:"batches"`
		Threads    []int    `json:"threads"`
		Steps      int      `json:"steps"`
		EOS        int64    `json:"eos"`
		EOSMethod  string   `json:"eos_method"`
		MinReps    int      `json:"min_reps"`
		MinTimeS   float64  `json:"min_time_s"`
		ORT        string   `json:"onnxruntime"`
		Torch      string   `json:"torch,omitempty"`
	} `json:"config"`
	Results []Result `json:"results"`
	// Ratios maps "ARCH S=.. B=.. T=.." to named ratios at that configuration:
	// lean_vs_pytorch, steps_vs_pytorch, loop_vs_pytorch (speedups),
	// steps_vs_torch_onnx (torch-onnx ms / best attnx step loop ms),
	// loop_vs_steps (best step loop ms / loop ms), best_vs_floor (best attnx
	// ms / floor ms).
	Ratios  map[string]map[string]float64 `json:"ratios"`
	Targets []Target                      `json:"targets"`
	Notes   []string                      `json:"notes,omitempty"`
	// Profile summarises the CPU profile, when one was taken.
	Profile *ProfileSummary `json:"profile,omitempty"`
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

// model is one architecture's prepared files.
type model struct {
	arch     attention.Arch
	cfg      attention.Config
	ckpt     string // safetensors with EOS suppressed
	dir      string // attnx model directory
	torchDir string // torch.onnx.export graphs, "" when unavailable
	torchNA  string
}

// Run measures every enabled engine at every configuration.
func Run(ctx context.Context, c Config) (*Report, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if err := runtime.Init(); err != nil {
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
	rc.EOSMethod = fmt.Sprintf("decoder.classifier.bias[%d] = %g in the benchmarked copy of the weights, so EOS is never the argmax; max_len = steps", rc.EOS, float64(suppressedBias))
	rc.MinReps, rc.MinTimeS, rc.ORT = c.MinReps, c.MinTime.Seconds(), runtime.Version()

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
					if torchVer != "" {
						rc.Torch = torchVer
					}
					key := configKey(string(m.arch), S, B, T)
					rep.Ratios[key] = ratios(rs)
					rep.Results = append(rep.Results, rs...)
					if !profiled && B == 1 && T == 1 {
						profiled = true
						ps, err := c.profile(m, S)
						if err != nil {
							return nil, err
						}
						rep.Profile = ps
					}
				}
			}
		}
	}
	rep.Targets = targets(rep)
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
	}
	var srcs []src
	if c.Checkpoint != "" {
		sd, err := checkpoint.Load(c.Checkpoint)
		if err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		w, _, err := attention.FromStateDict(sd.Tensors, attention.Options{AllowNonFinite: true})
		if err != nil {
			return nil, fmt.Errorf("bench: %s: %w", c.Checkpoint, err)
		}
		srcs = append(srcs, src{w.Config.Arch, sd.Tensors})
	} else {
		for i, a := range c.Archs {
			sd, err := RandomStateDict(a, c.Hidden, c.Layers, c.Vocab, c.Vocab, c.Seed+uint64(i))
			if err != nil {
				return nil, err
			}
			srcs = append(srcs, src{a, sd})
		}
	}
	var models []*model
	for _, s := range srcs {
		sd, err := SuppressEOS(s.sd, attention.DefaultSpecial.EOS)
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
		if err := checkpoint.WriteSafetensors(m.ckpt, sd, nil); err != nil {
			return nil, fmt.Errorf("bench: %w", err)
		}
		m.dir = filepath.Join(base, "model")
		res, err := modeldir.Export(m.ckpt, m.dir, modeldir.Options{Greedy: true, Force: true})
		if err != nil {
			return nil, fmt.Errorf("bench: exporting %s: %w", s.arch, err)
		}
		m.cfg = res.Config
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

// sessionOptions are the ORT options every attnx engine runs with.
func sessionOptions(threads int) runtime.Options {
	return runtime.Options{IntraOpThreads: threads, InterOpThreads: 1}
}

// runner is one engine set up at one configuration.
type runner struct {
	name string
	// run decodes one batch. withEncoder means dec includes the encoder
	// (translate's engines time them together); enc is then 0.
	run         func() (enc, dec time.Duration, err error)
	withEncoder bool
	close       func()
	tokens      []int64 // step-major [steps*B], filled by the first run
	note        string
}

// measure runs the enabled engines at one configuration. The ORT engines
// are timed interleaved, one batch of each in turn, so that the load of a
// shared machine falls on all of them alike; each one's peak RSS is taken
// before, with that engine alone loaded. PyTorch runs in its own process.
func (c *Config) measure(ctx context.Context, work string, m *model, S, B, T int) ([]Result, string, error) {
	H, L, V := m.cfg.Hidden, m.cfg.Layers, m.cfg.TgtVocab
	ids, lens := randomSources(B, S, m.cfg.SrcVocab, c.Seed+uint64(1000*S+B))
	rows := make([][]int64, B)
	for r := range rows {
		rows[r] = ids[r*S : (r+1)*S]
	}
	key := configKey(string(m.arch), S, B, T)
	mk := func(name string) Result {
		return Result{Name: name, Arch: string(m.arch), SrcLen: S, Batch: B, Threads: T}
	}
	c.logf("bench: %s", key)
	steps := c.Steps

	lean := func(name, dir string) (*runner, error) {
		enc, err := runtime.Open(filepath.Join(dir, "encoder.onnx"), sessionOptions(T))
		if err != nil {
			return nil, err
		}
		dec, err := runtime.Open(filepath.Join(dir, "decoder.onnx"), sessionOptions(T))
		if err != nil {
			enc.Close()
			return nil, err
		}
		l, err := newStepLoop(enc, dec, B, S, H, L, V)
		if err != nil {
			enc.Close()
			dec.Close()
			return nil, err
		}
		l.setSources(ids, lens)
		r := &runner{name: name, close: func() { l.close(); enc.Close(); dec.Close() }}
		r.run = func() (time.Duration, time.Duration, error) {
			var toks []int64
			if r.tokens == nil {
				r.tokens = make([]int64, steps*B)
				toks = r.tokens
			}
			return l.run(steps, attention.DefaultSpecial.SOS, toks)
		}
		return r, nil
	}
	translated := func(name, engine string) (*runner, error) {
		tr, err := translate.Open(m.dir, translate.Options{Threads: T, Engine: engine, MaxLen: steps, BatchSize: B})
		if err != nil {
			return nil, err
		}
		r := &runner{name: name, withEncoder: true, close: func() { tr.Close() },
			note: "decode = whole TranslateIDs call minus " + EngineLean + "'s encoder median"}
		r.run = func() (time.Duration, time.Duration, error) {
			t0 := time.Now()
			res, err := tr.TranslateIDs(ctx, rows)
			if err != nil {
				return 0, 0, err
			}
			d := time.Since(t0)
			if r.tokens == nil {
				r.tokens = make([]int64, steps*B)
				for b, x := range res {
					if len(x.Tokens) != steps {
						return 0, 0, fmt.Errorf("row %d decoded %d tokens, want %d (EOS suppression failed?)", b, len(x.Tokens), steps)
					}
					for s, t := range x.Tokens {
						r.tokens[s*B+b] = t
					}
				}
			}
			return 0, d, nil
		}
		return r, nil
	}
	floor := func(name string) (*runner, error) {
		sess, err := openFloor(m.arch, H, V, sessionOptions(T))
		if err != nil {
			return nil, err
		}
		fl, err := newFloorLoop(sess, m.arch, B, H, V)
		if err != nil {
			sess.Close()
			return nil, err
		}
		return &runner{name: name, close: func() { fl.close(); sess.Close() }, run: func() (time.Duration, time.Duration, error) {
			d, err := fl.run(steps)
			return 0, d, err
		}}, nil
	}
	setup := func(e string) (*runner, string, error) {
		switch e {
		case EngineLean:
			r, err := lean(e, m.dir)
			return r, "", err
		case EngineSteps:
			r, err := translated(e, translate.EngineSteps)
			return r, "", err
		case EngineLoop:
			r, err := translated(e, translate.EngineLoop)
			return r, "", err
		case EngineTorchONNX:
			switch {
			case m.torchDir == "":
				return nil, "torch.onnx.export failed: " + m.torchNA, nil
			case B != 1:
				return nil, "torch.onnx.export fixes the decoder's batch at the traced size 1 (LSTM initial state and attention reshapes are specialised), so it runs at batch 1 only", nil
			}
			r, err := lean(e, m.torchDir)
			return r, "", err
		case EngineFloor:
			r, err := floor(e)
			return r, "", err
		}
		return nil, "", fmt.Errorf("unknown engine %q", e)
	}

	// Peak RSS, each ORT engine alone: set up, warm up, read, close.
	rss := map[string]float64{}
	na := map[string]string{}
	var ortEngines []string
	for _, e := range Engines {
		if !c.enabled(e) || e == EnginePyTorch {
			continue
		}
		resetPeakRSS()
		r, why, err := setup(e)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
		}
		if why != "" {
			na[e] = why
			continue
		}
		for i := 0; i < max(1, c.Warmup); i++ {
			if _, _, err := r.run(); err != nil {
				r.close()
				return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
			}
		}
		rss[e] = peakRSSMB()
		r.close()
		ortEngines = append(ortEngines, e)
	}

	// Timing, interleaved.
	var runners []*runner
	defer func() {
		for _, r := range runners {
			r.close()
		}
	}()
	for _, e := range ortEngines {
		r, _, err := setup(e)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", e, key, err)
		}
		runners = append(runners, r)
	}
	encs := make([][]float64, len(runners))
	decs := make([][]float64, len(runners))
	for i := 0; i < c.Warmup; i++ {
		for _, r := range runners {
			if _, _, err := r.run(); err != nil {
				return nil, "", fmt.Errorf("bench: %s at %s: %w", r.name, key, err)
			}
		}
	}
	start := time.Now()
	for n := 0; n < c.MaxReps && (n < c.MinReps || time.Since(start) < c.MinTime*time.Duration(max(1, len(runners)))); n++ {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		for i, r := range runners {
			e, d, err := r.run()
			if err != nil {
				return nil, "", fmt.Errorf("bench: %s at %s: %w", r.name, key, err)
			}
			encs[i] = append(encs[i], float64(e)/1e6)
			decs[i] = append(decs[i], float64(d)/1e6)
		}
	}
	var encMs float64
	for i, r := range runners {
		if r.name == EngineLean {
			encMs = quantile(encs[i], 0.5)
		}
	}
	byName := map[string]Result{}
	for i, r := range runners {
		res := mk(r.name)
		if r.withEncoder {
			for j := range decs[i] {
				decs[i][j] -= encMs
				encs[i][j] = encMs
			}
		}
		res.fill(encs[i], decs[i], steps)
		res.PeakRSSMB = rss[r.name]
		res.tokens = r.tokens
		res.Note = r.note
		byName[r.name] = res
	}

	var torchVer string
	if c.enabled(EnginePyTorch) {
		res, ver, err := c.pytorch(work, m, S, B, T, ids, lens)
		if err != nil {
			return nil, "", fmt.Errorf("bench: %s at %s: %w", EnginePyTorch, key, err)
		}
		res.Arch, res.SrcLen, res.Batch, res.Threads = string(m.arch), S, B, T
		byName[EnginePyTorch], torchVer = res, ver
	}
	var out []Result
	for _, e := range Engines {
		if why, ok := na[e]; ok {
			r := mk(e)
			r.NA = why
			out = append(out, r)
		} else if r, ok := byName[e]; ok {
			out = append(out, r)
		}
	}
	annotate(out)
	for _, r := range out {
		c.logf("bench:   %-18s %s", r.Name, r.brief())
	}
	return out, torchVer, nil
}

// fill sets the time fields from per-repetition encoder and decode times.
func (r *Result) fill(encs, decs []float64, steps int) {
	per := make([]float64, len(decs))
	for i, d := range decs {
		per[i] = d / float64(steps*r.Batch)
	}
	r.Reps = len(decs)
	r.MsPerTokenMedian = quantile(per, 0.5)
	r.MsPerTokenP90 = quantile(per, 0.9)
	r.MsPerTokenMin = quantile(per, 0)
	r.MsPerStepMedian = r.MsPerTokenMedian * float64(r.Batch)
	if r.MsPerTokenMedian > 0 {
		r.TokensPerS = 1000 / r.MsPerTokenMedian
	}
	r.EncoderMsMedian = quantile(encs, 0.5)
}

// quantile returns the q-quantile (linear interpolation) of v.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	return s[lo] + (s[hi]-s[lo])*(pos-float64(lo))
}

func (r Result) brief() string {
	if r.NA != "" {
		return "n/a: " + r.NA
	}
	return fmt.Sprintf("%.4f ms/token (p90 %.4f), encoder %.3f ms, %d reps, peak RSS %.0f MB", r.MsPerTokenMedian, r.MsPerTokenP90, r.EncoderMsMedian, r.Reps, r.PeakRSSMB)
}

// annotate fills the ratios to PyTorch and to the floor, and the token
// comparison with PyTorch, within one configuration's results.
func annotate(rs []Result) {
	var py, fl *Result
	for i := range rs {
		switch rs[i].Name {
		case EnginePyTorch:
			py = &rs[i]
		case EngineFloor:
			fl = &rs[i]
		}
	}
	for i := range rs {
		r := &rs[i]
		if r.NA != "" || r.MsPerTokenMedian <= 0 {
			continue
		}
		if py != nil && py.NA == "" && r != py {
			r.SpeedupVsPyTorch = py.MsPerTokenMedian / r.MsPerTokenMedian
		}
		if fl != nil && fl.NA == "" && r != fl {
			r.RatioToFloor = r.MsPerTokenMedian / fl.MsPerTokenMedian
		}
		if py != nil && py.tokens != nil && r.tokens != nil && r != py {
			eq := len(py.tokens) == len(r.tokens)
			for j := 0; eq && j < len(r.tokens); j++ {
				eq = py.tokens[j] == r.tokens[j]
			}
			r.TokensMatchPyTorch = &eq
		}
	}
}

// ratios computes the named ratios of one configuration.
func ratios(rs []Result) map[string]float64 {
	ms := map[string]float64{}
	for _, r := range rs {
		if r.NA == "" && r.MsPerTokenMedian > 0 {
			ms[r.Name] = r.MsPerTokenMedian
		}
	}
	out := map[string]float64{}
	div := func(name string, a, b float64) {
		if a > 0 && b > 0 {
			out[name] = a / b
		}
	}
	py := ms[EnginePyTorch]
	div("lean_vs_pytorch", py, ms[EngineLean])
	div("steps_vs_pytorch", py, ms[EngineSteps])
	div("loop_vs_pytorch", py, ms[EngineLoop])
	div("torch_onnx_vs_pytorch", py, ms[EngineTorchONNX])
	best := bestSteps(ms)
	div("best_steps_vs_pytorch", py, best)
	div("steps_vs_torch_onnx", ms[EngineTorchONNX], best)
	div("loop_vs_steps", best, ms[EngineLoop])
	bestAll := best
	if l := ms[EngineLoop]; l > 0 && (bestAll == 0 || l < bestAll) {
		bestAll = l
	}
	div("best_vs_floor", bestAll, ms[EngineFloor])
	return out
}

// bestSteps is the faster of the two attnx step loops' ms per token.
func bestSteps(ms map[string]float64) float64 {
	a, b := ms[EngineLean], ms[EngineSteps]
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	return min(a, b)
}

// targets checks the goals at batch 1 and 1 thread.
func targets(rep *Report) []Target {
	var out []Target
	keys := make([]string, 0, len(rep.Ratios))
	for k := range rep.Ratios {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var B, T int
		for _, f := range strings.Fields(k) {
			if v, ok := strings.CutPrefix(f, "B="); ok {
				B, _ = strconv.Atoi(v)
			}
			if v, ok := strings.CutPrefix(f, "T="); ok {
				T, _ = strconv.Atoi(v)
			}
		}
		if B != 1 || T != 1 {
			continue
		}
		r := rep.Ratios[k]
		add := func(name, want string, key string, ok func(float64) bool, detail string) {
			v, have := r[key]
			if !have {
				return
			}
			out = append(out, Target{Config: k, Name: name, Want: want, Got: v, Met: ok(v), Detail: detail})
		}
		add("attnx step loop vs PyTorch eager", ">= 4x faster", "best_steps_vs_pytorch", func(v float64) bool { return v >= 4 }, "PyTorch ms/token over the faster attnx step loop's")
		add("attnx step loop vs torch.onnx.export graphs", "no slower (>= 1x)", "steps_vs_torch_onnx", func(v float64) bool { return v >= 1 }, "torch-onnx-steps ms/token over the faster attnx step loop's")
		add("in-graph loop vs attnx step loop", ">= 1.3x faster", "loop_vs_steps", func(v float64) bool { return v >= 1.3 }, "faster step loop ms/token over attnx-loop's")
		add("best attnx engine vs floor", "within 2x (<= 2)", "best_vs_floor", func(v float64) bool { return v <= 2 }, "best attnx ms/token over the floor's")
	}
	return out
}
