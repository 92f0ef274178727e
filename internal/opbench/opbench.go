// Package opbench measures the candidate graphs of a reduced-precision
// decoder step on ONNX Runtime: the classifier product and one LSTM or GRU
// cell, in float32 and in each quantized form of package qlayer, for speed
// (median time per run over interleaved rounds) and for deviation from the
// float32 graph on the same inputs. Its table is how the export's forms
// are chosen; `make opbench` prints it.
package opbench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/qlayer"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/ops"
)

// Case is one graph to time. The first case of a group is its reference:
// the others are compared with it, output by output.
type Case struct {
	// Group names what is computed ("classifier B=1 [1,512]x[512,10000]").
	Group string
	// Name names how ("fp32 Gemm", "4-bit MatMulNBits block 32 acc 4").
	Name string
	// Model is the graph.
	Model *builder.Model
	// Inputs are the inputs every run is fed.
	Inputs map[string]*onnxrun.Tensor
	// Bytes is the size of the weights the case reads every run.
	Bytes int
}

// Result is one case's measurement.
type Result struct {
	Group string `json:"group"`
	Name  string `json:"name"`
	// MedianMs and MinMs are the median and the fastest of the rounds'
	// mean time per run, in milliseconds.
	MedianMs float64 `json:"median_ms"`
	MinMs    float64 `json:"min_ms"`
	// Speedup is the group reference's median over this one's.
	Speedup float64 `json:"speedup"`
	// MaxAbsDev is the largest |this - reference| over all outputs, and
	// RefMaxAbs the largest |reference| (the outputs' scale).
	MaxAbsDev float64 `json:"max_abs_dev"`
	RefMaxAbs float64 `json:"ref_max_abs"`
	// Bytes is the weights' size.
	Bytes int `json:"bytes"`
}

// Options sets how long to measure.
type Options struct {
	// Rounds is the number of timed rounds (each case runs once per round,
	// cases interleaved so that load changes hit all of them alike).
	Rounds int
	// RoundTime is roughly how long each case runs per round.
	RoundTime time.Duration
	// Threads is ONNX Runtime's intra-op thread count.
	Threads int
	// Progress, when not nil, receives a line per group.
	Progress io.Writer
}

// Report is a whole run.
type Report struct {
	// LoadBefore and LoadAfter are /proc/loadavg's first three fields.
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	// ORT is the ONNX Runtime version.
	ORT     string   `json:"onnxruntime"`
	Threads int      `json:"threads"`
	Rounds  int      `json:"rounds"`
	Results []Result `json:"results"`
}

// runner is one opened case: a session bound to its inputs and outputs.
type runner struct {
	c       Case
	sess    *onnxrun.Session
	bind    *onnxrun.Binding
	outputs map[string][]float32
	times   []float64 // ms per run, one per round
	iters   int
}

func (r *runner) close() {
	if r.bind != nil {
		r.bind.Close()
	}
	if r.sess != nil {
		r.sess.Close()
	}
}

func open(c Case, threads int) (r *runner, err error) {
	r = &runner{c: c, outputs: map[string][]float32{}}
	defer func() {
		if err != nil {
			r.close()
			r = nil
		}
	}()
	data, err := onnxfile.Marshal(c.Model)
	if err != nil {
		return nil, fmt.Errorf("opbench: %s / %s: %w", c.Group, c.Name, err)
	}
	if r.sess, err = onnxrun.OpenBytes(data, onnxrun.Options{IntraOpThreads: threads, InterOpThreads: 1}); err != nil {
		return nil, fmt.Errorf("opbench: %s / %s: %w", c.Group, c.Name, err)
	}
	outs, err := r.sess.Run(c.Inputs)
	if err != nil {
		return nil, fmt.Errorf("opbench: %s / %s: %w", c.Group, c.Name, err)
	}
	if r.bind, err = r.sess.NewBinding(); err != nil {
		return nil, err
	}
	bindAll := func(m map[string]*onnxrun.Tensor, bind func(string, *onnxrun.Tensor) error) error {
		for name, t := range m {
			if err := bind(name, t); err != nil {
				return err
			}
		}
		return nil
	}
	if err := bindAll(c.Inputs, r.bind.BindInputTensor); err != nil {
		return nil, err
	}
	if err := bindAll(outs, r.bind.BindOutputTensor); err != nil {
		return nil, err
	}
	for name, t := range outs {
		if r.outputs[name], err = t.Float32s(); err != nil {
			return nil, fmt.Errorf("opbench: %s / %s: output %s: %w", c.Group, c.Name, name, err)
		}
	}
	return r, nil
}

// timeRuns runs the case n times and returns the mean time per run in ms.
func (r *runner) timeRuns(n int) (float64, error) {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := r.bind.Run(); err != nil {
			return 0, fmt.Errorf("opbench: %s / %s: %w", r.c.Group, r.c.Name, err)
		}
	}
	return float64(time.Since(t0).Nanoseconds()) / 1e6 / float64(n), nil
}

// Run measures the cases, group by group, in order.
func Run(cases []Case, opt Options) (*Report, error) {
	if opt.Rounds <= 0 {
		opt.Rounds = 15
	}
	if opt.RoundTime <= 0 {
		opt.RoundTime = 20 * time.Millisecond
	}
	if opt.Threads <= 0 {
		opt.Threads = 1
	}
	if err := onnxrun.Init(); err != nil {
		return nil, err
	}
	rep := &Report{LoadBefore: loadAvg(), ORT: onnxrun.Version(), Threads: opt.Threads, Rounds: opt.Rounds}
	for start := 0; start < len(cases); {
		end := start + 1
		for end < len(cases) && cases[end].Group == cases[start].Group {
			end++
		}
		res, err := runGroup(cases[start:end], opt)
		if err != nil {
			return nil, err
		}
		rep.Results = append(rep.Results, res...)
		if opt.Progress != nil {
			fmt.Fprintf(opt.Progress, "opbench: %s: %d cases measured\n", cases[start].Group, end-start)
		}
		start = end
	}
	rep.LoadAfter = loadAvg()
	return rep, nil
}

func runGroup(cases []Case, opt Options) ([]Result, error) {
	var rs []*runner
	defer func() {
		for _, r := range rs {
			r.close()
		}
	}()
	for _, c := range cases {
		r, err := open(c, opt.Threads)
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
		// Calibrate: enough runs to fill RoundTime, after a warm-up.
		ms, err := r.timeRuns(3)
		if err != nil {
			return nil, err
		}
		r.iters = max(1, int(float64(opt.RoundTime.Nanoseconds())/1e6/max(ms, 1e-3)))
	}
	for round := 0; round < opt.Rounds; round++ {
		for _, r := range rs {
			ms, err := r.timeRuns(r.iters)
			if err != nil {
				return nil, err
			}
			r.times = append(r.times, ms)
		}
	}
	ref := rs[0]
	var out []Result
	for _, r := range rs {
		res := Result{Group: r.c.Group, Name: r.c.Name, MedianMs: median(r.times), MinMs: slices.Min(r.times), Bytes: r.c.Bytes}
		for name, want := range ref.outputs {
			got, ok := r.outputs[name]
			if !ok || len(got) != len(want) {
				return nil, fmt.Errorf("opbench: %s / %s: output %s missing or of another size than the reference's", r.c.Group, r.c.Name, name)
			}
			for i := range want {
				res.MaxAbsDev = max(res.MaxAbsDev, math.Abs(float64(got[i])-float64(want[i])))
				res.RefMaxAbs = max(res.RefMaxAbs, math.Abs(float64(want[i])))
			}
		}
		out = append(out, res)
	}
	for i := range out {
		out[i].Speedup = out[0].MedianMs / out[i].MedianMs
	}
	return out, nil
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// Markdown writes the report as one table per group.
func (rep *Report) Markdown(w io.Writer) {
	fmt.Fprintf(w, "ONNX Runtime %s, %d thread(s), median of %d interleaved rounds; load average before %s, after %s\n",
		rep.ORT, rep.Threads, rep.Rounds, rep.LoadBefore, rep.LoadAfter)
	group := ""
	for _, r := range rep.Results {
		if r.Group != group {
			group = r.Group
			fmt.Fprintf(w, "\n### %s\n\n| graph | median ms | min ms | speed-up | max abs dev (ref max %.3g) | weight bytes |\n|---|---|---|---|---|---|\n", group, r.RefMaxAbs)
		}
		fmt.Fprintf(w, "| %s | %.3f | %.3f | %.2fx | %.3g | %s |\n", r.Name, r.MedianMs, r.MinMs, r.Speedup, r.MaxAbsDev, mb(r.Bytes))
	}
}

// JSON writes the report as indented JSON.
func (rep *Report) JSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

func mb(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.2f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
}

// uniform returns n values uniform in [-a, a].
func uniform(rng *rand.Rand, n int, a float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32((rng.Float64()*2 - 1) * a)
	}
	return v
}

// ClassifierCases returns the classifier product x [batch, features] ·
// Wᵀ + b, W [vocab, features] initialised as PyTorch's Linear, in float32
// (Gemm, and MatMul on a 3-D input) and every reduced form. QLinearMatMul's
// output range is the exact result's: its best case.
func ClassifierCases(batch, features, vocab int, seed uint64) []Case {
	rng := rand.New(rand.NewPCG(seed, 1))
	bound := 1 / math.Sqrt(float64(features))
	l := qlayer.Layer{W: uniform(rng, vocab*features, bound), B: uniform(rng, vocab, bound), Out: vocab, In: features}
	x := uniform(rng, batch*features, 1)
	lo, hi := 0.0, 0.0
	for i := 0; i < batch; i++ {
		for j := 0; j < vocab; j++ {
			s := float64(l.B[j])
			for k := 0; k < features; k++ {
				s += float64(x[i*features+k]) * float64(l.W[j*features+k])
			}
			lo, hi = min(lo, s), max(hi, s)
		}
	}
	group := fmt.Sprintf("classifier B=%d [%d,%d]x[%d,%d]", batch, batch, features, features, vocab)
	var cases []Case
	add := func(name string, s qlayer.Scheme, rank3 bool) {
		g := builder.New("classifier")
		shape := []int64{int64(batch), int64(features)}
		dims := builder.Dims("batch", features)
		if rank3 {
			shape, dims = append([]int64{1}, shape...), builder.Dims(1, "batch", features)
		}
		xv := g.Input("x", builder.Float, dims)
		b := qlayer.Linear(g, "classifier", xv, l, s)
		// The reference is 2-D; a 3-D variant's output is reshaped to match.
		y := b.Y
		if rank3 {
			y = ops.Reshape(y, g.Init("", builder.Int64Tensor([]int64{2}, []int64{int64(batch), int64(vocab)})), ops.ReshapeOpts{})
		}
		g.Output("y", y)
		if name == "" {
			name = s.String()
		}
		cases = append(cases, Case{Group: group, Name: name, Model: builder.NewModel(g), Bytes: b.Bytes,
			Inputs: map[string]*onnxrun.Tensor{"x": onnxrun.NewFloat32(shape, x)}})
	}
	add("fp32 Gemm (transB)", qlayer.Scheme{Form: qlayer.Float}, false)
	add("fp32 MatMul+Add (3-D input)", qlayer.Scheme{Form: qlayer.Float}, true)
	for _, s := range reducedSchemes([2]float32{float32(lo), float32(hi)}, true) {
		add("", s, false)
	}
	return cases
}

// reducedSchemes lists the reduced forms measured; all includes the slow
// and the less likely ones.
func reducedSchemes(outRange [2]float32, all bool) []qlayer.Scheme {
	nb := func(bits, block, level int, asym bool) qlayer.Scheme {
		return qlayer.Scheme{Form: qlayer.NBits, Bits: bits, BlockSize: block, AccuracyLevel: level, Asymmetric: asym}
	}
	// Per-row int8 (attnx's) beside the per-tensor form it replaced,
	// whose rows depend on each other.
	s := []qlayer.Scheme{{Form: qlayer.DynamicInt8}, {Form: qlayer.DynamicInt8, Asymmetric: true}, {Form: qlayer.DynamicInt8, PerTensor: true}}
	if all {
		s = append([]qlayer.Scheme{{Form: qlayer.Dequantize}}, s...)
		s = append(s, qlayer.Scheme{Form: qlayer.DynamicInt8, Uint8Weights: true}, qlayer.Scheme{Form: qlayer.QLinear, OutRange: outRange},
			nb(8, 32, 0, false))
	}
	s = append(s, nb(8, 32, 4, false))
	if all {
		s = append(s, nb(8, 128, 4, false), nb(4, 32, 0, false))
	}
	s = append(s, nb(4, 32, 4, false))
	if all {
		s = append(s, nb(4, 32, 4, true), nb(4, 64, 4, false), nb(4, 128, 4, false))
	}
	return s
}

// CellCases returns one decoder step's recurrent cell (LSTM, or GRU with
// linear_before_reset=1) with input size in and hidden size hidden, at the
// given batch: the ONNX operator, then the cell as products plus gates in
// float32 (one product of [x ; h], two products) and reduced forms. Inputs
// and states are [1, batch, .], as in the decoder step.
func CellCases(kind string, batch, in, hidden int, seed uint64) []Case {
	rng := rand.New(rand.NewPCG(seed, 2))
	gates := 4
	if kind == "GRU" {
		gates = 3
	}
	bound := 1 / math.Sqrt(float64(hidden))
	w := qlayer.RNNWeights{W: uniform(rng, gates*hidden*in, bound), R: uniform(rng, gates*hidden*hidden, bound),
		B: uniform(rng, 2*gates*hidden, bound), In: in, Hidden: hidden}
	b, h := int64(batch), int64(hidden)
	inputs := map[string]*onnxrun.Tensor{
		"x": onnxrun.NewFloat32([]int64{1, b, int64(in)}, uniform(rng, batch*in, 1)),
		"h": onnxrun.NewFloat32([]int64{1, b, h}, uniform(rng, batch*hidden, 1)),
	}
	if kind == "LSTM" {
		inputs["c"] = onnxrun.NewFloat32([]int64{1, b, h}, uniform(rng, batch*hidden, 1))
	}
	group := fmt.Sprintf("%s cell B=%d input %d hidden %d", kind, batch, in, hidden)
	var cases []Case
	build := func(name string, f func(g *builder.Graph, x, hv, cv *builder.Value) (outs []*builder.Value, bytes int)) {
		g := builder.New("cell")
		x := g.Input("x", builder.Float, builder.Dims(1, "batch", in))
		hv := g.Input("h", builder.Float, builder.Dims(1, "batch", hidden))
		var cv *builder.Value
		if kind == "LSTM" {
			cv = g.Input("c", builder.Float, builder.Dims(1, "batch", hidden))
		}
		outs, bytes := f(g, x, hv, cv)
		for i, o := range outs {
			g.Output([]string{"next_h", "next_c"}[i], o)
		}
		cases = append(cases, Case{Group: group, Name: name, Model: builder.NewModel(g), Inputs: inputs, Bytes: bytes})
	}
	build("fp32 "+kind+" operator", func(g *builder.Graph, x, hv, cv *builder.Value) ([]*builder.Value, int) {
		W := g.Init("W", builder.FloatTensor([]int64{1, int64(gates) * h, int64(in)}, w.W))
		R := g.Init("R", builder.FloatTensor([]int64{1, int64(gates) * h, h}, w.R))
		B := g.Init("B", builder.FloatTensor([]int64{1, 2 * int64(gates) * h}, w.B))
		bytes := 4 * (len(w.W) + len(w.R) + len(w.B))
		if kind == "LSTM" {
			_, yh, yc := ops.LSTM(x, W, R, ops.LSTMOpts{RNNOpts: ops.RNNOpts{B: B, InitialH: hv, OmitY: true}, InitialC: cv})
			return []*builder.Value{yh, yc}, bytes
		}
		_, yh := ops.GRU(x, W, R, ops.GRUOpts{RNNOpts: ops.RNNOpts{B: B, InitialH: hv, OmitY: true}, LinearBeforeReset: true})
		return []*builder.Value{yh}, bytes
	})
	cell := func(s qlayer.Scheme, two bool) {
		name := s.String() + ", one product of [x ; h]"
		if two {
			name = s.String() + ", two products"
		}
		build(name, func(g *builder.Graph, x, hv, cv *builder.Value) ([]*builder.Value, int) {
			o := qlayer.CellOpts{TwoProducts: two}
			if kind == "LSTM" {
				h2, c2, bytes := qlayer.LSTMCell(g, "cell", x, hv, cv, w, s, o)
				return []*builder.Value{h2, c2}, bytes
			}
			h2, bytes := qlayer.GRUCell(g, "cell", x, hv, w, s, o)
			return []*builder.Value{h2}, bytes
		})
	}
	for _, s := range append([]qlayer.Scheme{{Form: qlayer.Float}}, reducedSchemes([2]float32{}, false)...) {
		cell(s, false)
		cell(s, true)
	}
	return cases
}
