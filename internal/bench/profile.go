package bench

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/internal/cpuprofile"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/ops"
)

// ProfileSummary describes the CPU profile taken of the lean step loop.
// Read it with `go tool pprof -top BINARY PROFILE`: time inside ONNX
// Runtime shows under runtime.cgocall (with 1 intra-op thread ORT computes
// on the calling thread), the crossing itself under runtime.cgocall's own
// entry and exit (entersyscall/exitsyscall) and onnxruntime_go's wrappers,
// and Go's own work (argmax, binding checks, locks) under bench and
// runtime functions.
type ProfileSummary struct {
	Path string `json:"path"`
	// Backend is the backend the lean loop ran on ("ort" or "go").
	Backend string  `json:"backend"`
	Config  string  `json:"config"`
	Seconds float64 `json:"seconds"`
	Batches int     `json:"batches"`
	Steps   int     `json:"steps"`
	// GoArgmaxMsPerStep is the time of the Go argmax alone per step,
	// measured separately on the bound log_probs.
	GoArgmaxMsPerStep float64 `json:"go_argmax_ms_per_step"`
	// ORTRunOverheadMs is one Binding.Run of a one-Identity graph: the
	// fixed cost (cgo crossing, ORT's run setup) a step loop pays per step.
	ORTRunOverheadMs float64 `json:"ort_run_overhead_ms"`
	// ORTLoopIterationMs is one iteration of an ONNX Loop with an Identity
	// body: the fixed cost the in-graph loop pays per step instead.
	ORTLoopIterationMs float64 `json:"ort_loop_iteration_ms"`
}

// profile runs the lean step loop for max(3*MinTime, 0.1s) under the
// CPU profiler.
func (c *Config) profile(m *model, S int, backend, path string) (*ProfileSummary, error) {
	ids, _ := randomSources(1, S, m.cfg.SrcVocab, c.Seed)
	l, err := newLeanLoop(m.dirs[c.weights()[0]], backend, 1, [][]int64{ids}, c.Steps, 1)
	if err != nil {
		return nil, err
	}
	defer l.close()
	ctx := context.Background()
	for i := 0; i < c.Warmup; i++ {
		if _, _, err := l.run(ctx, nil); err != nil {
			return nil, err
		}
	}
	prof, err := cpuprofile.Start(path)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer prof.Discard()
	dur := max(3*c.MinTime, 100*time.Millisecond)
	start := time.Now()
	n := 0
	for time.Since(start) < dur {
		if _, _, err := l.run(ctx, nil); err != nil {
			return nil, err
		}
		n++
	}
	secs := time.Since(start).Seconds()
	if err := prof.Stop(); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// The argmax alone, on a first step's log_probs.
	l.batch.Reset()
	if err := l.batch.Add(l.rows, l.searches); err != nil {
		return nil, err
	}
	if err := l.ex.Step(); err != nil {
		return nil, err
	}
	V := m.cfg.TgtVocab
	lp := l.ex.LogProbs()
	const k = 2000
	t0 := time.Now()
	var sink int64
	for i := 0; i < k; i++ {
		sink += decode.Argmax(lp[:V])
	}
	_ = sink
	argMs := float64(time.Since(t0)) / 1e6 / k
	var runMs, iterMs float64
	if backend == onnxrun.BackendORT {
		if runMs, iterMs, err = overheads(1); err != nil {
			return nil, fmt.Errorf("bench: measuring ORT's overheads: %w", err)
		}
	}
	c.logf("bench: CPU profile of the lean step loop on %s (%s S=%d B=1 T=1, %.1fs) in %s", backend, m.arch, S, secs, path)
	return &ProfileSummary{Path: path, Backend: backend, Config: configKey(string(m.arch), S, 1, 1), Seconds: secs, Batches: n, Steps: n * c.Steps, GoArgmaxMsPerStep: argMs,
		ORTRunOverheadMs: runMs, ORTLoopIterationMs: iterMs}, nil
}

// overheads measures ONNX Runtime's fixed costs, the floor under any step
// loop and any in-graph loop: one Binding.Run of a graph with a single
// Identity on a [1] tensor, and one iteration of a Loop whose body is that
// Identity (from a Loop of 200 iterations, less one run). Both are the
// fastest of many runs, in ms.
func overheads(threads int) (runMs, iterMs float64, err error) {
	const iters = 200
	build := func(loop bool) (*onnxrun.Session, error) {
		g := builder.New("attnx_overhead")
		x := g.Input("x", builder.Float, builder.Dims(1))
		y := ops.Identity(x)
		if loop {
			n := g.Init("n", builder.ScalarInt64(iters))
			cond := g.Init("cond", builder.BoolTensor(nil, []bool{true}))
			final, _ := ops.Loop(g, n, cond, []*builder.Value{x}, func(bg *builder.Graph, _, c *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
				return ops.Identity(c), []*builder.Value{ops.Identity(carried[0])}, nil
			}, ops.LoopOpts{})
			y = final[0]
		}
		g.Output("y", y)
		data, err := onnxfile.Marshal(builder.NewModel(g))
		if err != nil {
			return nil, err
		}
		return onnxrun.OpenBytes(data, sessionOptions(threads, onnxrun.BackendORT))
	}
	timeRuns := func(s *onnxrun.Session, n int) (float64, error) {
		x := onnxrun.NewFloat32([]int64{1}, []float32{1})
		y := onnxrun.NewFloat32([]int64{1}, []float32{0})
		b, err := s.NewBinding()
		if err != nil {
			return 0, err
		}
		defer b.Close()
		if err := b.BindInputTensor("x", x); err != nil {
			return 0, err
		}
		if err := b.BindOutputTensor("y", y); err != nil {
			return 0, err
		}
		best := math.Inf(1)
		for i := 0; i < n; i++ {
			t0 := time.Now()
			if err := b.Run(); err != nil {
				return 0, err
			}
			best = math.Min(best, float64(time.Since(t0))/1e6)
		}
		return best, nil
	}
	plain, err := build(false)
	if err != nil {
		return 0, 0, err
	}
	defer plain.Close()
	loop, err := build(true)
	if err != nil {
		return 0, 0, err
	}
	defer loop.Close()
	if runMs, err = timeRuns(plain, 3000); err != nil {
		return 0, 0, err
	}
	loopMs, err := timeRuns(loop, 200)
	if err != nil {
		return 0, 0, err
	}
	return runMs, (loopMs - runMs) / iters, nil
}
