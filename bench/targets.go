package bench

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/quant"
)

// annotate fills the ratios to PyTorch, to the floor and to the same
// engine's fp32 model, and the token comparison with PyTorch, within one
// configuration's results.
func annotate(rs []Result) {
	var py, fl *Result
	fp32 := map[string]float64{}
	for i := range rs {
		switch rs[i].Name {
		case EnginePyTorch:
			py = &rs[i]
		case EngineFloor:
			fl = &rs[i]
		}
		if rs[i].Weights == string(quant.PrecisionFP32) && rs[i].NA == "" {
			fp32[rs[i].Name] = rs[i].MsPerTokenMedian
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
		if f := fp32[r.Name]; f > 0 && r.Weights != string(quant.PrecisionFP32) {
			r.SpeedupVsFP32 = f / r.MsPerTokenMedian
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

// ratios computes the named ratios of one configuration: those between
// engines over the fp32 models, and each attnx engine's speed-up at each
// reduced precision over its fp32 figure.
func ratios(rs []Result) map[string]float64 {
	ms := map[string]float64{}
	out := map[string]float64{}
	for _, r := range rs {
		switch {
		case r.NA != "" || r.MsPerTokenMedian <= 0:
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
	}
	return out
}
