package bench

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/quant"
)

// annotate fills, within one configuration's results, the ratios to
// PyTorch (of the same beam width) and to the floor (greedy decoding), to
// the same engine's fp32 model (same beam width), beam search's ratio to
// the same engine's greedy decoding (same weights), and the token
// comparison with PyTorch of the same beam width.
func annotate(rs []Result) {
	find := func(name string, w quant.Precision, beam int) *Result {
		for i := range rs {
			if rs[i].Name == name && rs[i].Weights == string(w) && rs[i].Beam == beam && rs[i].NA == "" && rs[i].MsPerTokenMedian > 0 {
				return &rs[i]
			}
		}
		return nil
	}
	fl := find(EngineFloor, quant.PrecisionFP32, 0)
	for i := range rs {
		r := &rs[i]
		if r.NA != "" || r.MsPerTokenMedian <= 0 {
			continue
		}
		py := find(EnginePyTorch, quant.PrecisionFP32, r.Beam)
		if py != nil && r != py {
			r.SpeedupVsPyTorch = py.MsPerTokenMedian / r.MsPerTokenMedian
		}
		if fl != nil && r != fl && r.Beam == 0 {
			r.RatioToFloor = r.MsPerTokenMedian / fl.MsPerTokenMedian
		}
		if f := find(r.Name, quant.PrecisionFP32, r.Beam); f != nil && r != f {
			r.SpeedupVsFP32 = f.MsPerTokenMedian / r.MsPerTokenMedian
		}
		if g := find(r.Name, quant.Precision(r.Weights), 0); g != nil && r.Beam > 0 {
			r.VsGreedy = r.MsPerSentenceMedian / g.MsPerSentenceMedian
		}
		if py != nil && py.tokens != nil && r.tokens != nil && r != py {
			eq := slices.Equal(py.tokens, r.tokens)
			r.TokensMatchPyTorch = &eq
		}
	}
}

// ratios computes the named ratios of one configuration: those between
// engines over the fp32 models, each attnx engine's speed-up at each
// reduced precision over its fp32 figure (greedy decoding), and beam
// search's over greedy decoding and PyTorch (fp32 models).
func ratios(rs []Result) map[string]float64 {
	ms := map[string]float64{}
	out := map[string]float64{}
	for _, r := range rs {
		switch {
		case r.NA != "" || r.MsPerTokenMedian <= 0 || r.Beam > 0:
		case r.Weights == string(quant.PrecisionFP32):
			ms[r.Name] = r.MsPerTokenMedian
		case r.SpeedupVsFP32 > 0:
			out[vsFP32(r.Name, r.Weights)] = r.SpeedupVsFP32
		}
	}
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
	// The native backend against ONNX Runtime, engine by engine, at each
	// precision and beam width: go's ms per token over ort's (<= 1.2 is
	// the goal for float32 at batch 1).
	type key struct {
		name, w string
		beam    int
	}
	byKey := map[key]float64{}
	for _, r := range rs {
		if r.NA == "" && r.MsPerTokenMedian > 0 {
			byKey[key{r.Name, r.Weights, r.Beam}] = r.MsPerTokenMedian
		}
	}
	for k, goMs := range byKey {
		ort, ok := nativeOf[k.name]
		if !ok || byKey[key{ort, k.w, k.beam}] == 0 {
			continue
		}
		name := fmt.Sprintf("%s_go_vs_ort_%s", map[string]string{EngineLeanGo: "lean", EngineLoopGo: "loop"}[k.name], k.w)
		if k.beam > 0 {
			name += fmt.Sprintf("_beam%d", k.beam)
		}
		out[name] = goMs / byKey[key{ort, k.w, k.beam}]
	}
	short := map[string]string{EngineLean: "lean", EngineSteps: "steps", EngineLoop: "loop", EnginePyTorch: "pytorch"}
	for _, r := range rs {
		if r.Weights != string(quant.PrecisionFP32) {
			continue
		}
		if r.Beam > 0 && r.VsGreedy > 0 {
			out[fmt.Sprintf("%s_beam%d_vs_greedy", short[r.Name], r.Beam)] = r.VsGreedy
		}
		if r.Beam > 0 && r.Name == EngineLean && r.SpeedupVsPyTorch > 0 {
			out[fmt.Sprintf("lean_beam%d_vs_pytorch", r.Beam)] = r.SpeedupVsPyTorch
		}
	}
	return out
}

// vsFP32 names the ratio of engine's fp32 ms per token over its ms at
// precision w.
func vsFP32(engine, w string) string { return engine + "_" + w + "_vs_fp32" }

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
		for _, e := range []string{EngineLean, EngineSteps, EngineLoop} {
			for _, w := range []struct {
				p    quant.Precision
				want float64
			}{{quant.PrecisionInt8, 2}, {quant.PrecisionInt4, 3}} {
				add(fmt.Sprintf("%s %s vs fp32", e, w.p), fmt.Sprintf(">= %gx faster", w.want), vsFP32(e, string(w.p)),
					func(v float64) bool { return v >= w.want }, fmt.Sprintf("%s ms/token with fp32 weights over %s's", e, w.p))
			}
		}
		add("beam 4 vs greedy, decoding core", "at most 1.5x", "lean_beam4_vs_greedy", func(v float64) bool { return v <= 1.5 }, "ms per sentence, K = 4 over greedy, same engine and max_len")
		add("beam 8 vs greedy, decoding core", "at most 2x", "lean_beam8_vs_greedy", func(v float64) bool { return v <= 2 }, "ms per sentence, K = 8 over greedy, same engine and max_len")
	}
	return out
}
