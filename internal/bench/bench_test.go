package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
)

func TestQuantile(t *testing.T) {
	cases := []struct {
		v    []float64
		q    float64
		want float64
	}{
		{nil, 0.5, 0},
		{[]float64{3}, 0.9, 3},
		{[]float64{4, 1, 3, 2}, 0, 1},
		{[]float64{4, 1, 3, 2}, 0.5, 2.5},
		{[]float64{4, 1, 3, 2}, 1, 4},
		{[]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, 0.9, 9.1},
	}
	for _, c := range cases {
		if got := quantile(c.v, c.q); got < c.want-1e-9 || got > c.want+1e-9 {
			t.Errorf("quantile(%v, %g) = %g, want %g", c.v, c.q, got, c.want)
		}
	}
}

func TestRandomStateDictConvertsAndSuppressesEOS(t *testing.T) {
	for _, arch := range attention.StateDictArchs {
		for _, cell := range attention.Cells {
			cfg := attention.Config{Arch: arch, Cell: cell, Hidden: 8, Embedding: 8, Layers: 2, SrcVocab: 11, TgtVocab: 13}
			if arch == attention.TutorialLocation {
				cfg.MaxLength = 6
			}
			name := string(arch) + "/" + string(cell)
			sd, err := RandomStateDict(cfg, 1)
			if err != nil {
				t.Fatal(err)
			}
			sup, err := SuppressEOS(sd, 2)
			if err != nil {
				t.Fatal(err)
			}
			w, _, err := attention.FromStateDict(sup, attention.Options{})
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if w.Config != cfg {
				t.Errorf("%s: converted to %s", name, w.Config)
			}
			bias := "decoder.classifier.bias"
			if arch.IsTutorial() {
				bias = "decoder.out.bias"
			}
			b, _ := sup[bias].Float32s()
			orig, _ := sd[bias].Float32s()
			if b[2] != suppressedBias || b[1] != orig[1] || orig[2] == suppressedBias {
				t.Errorf("%s: bias %v from %v: want only [2] = %g, and the original untouched", name, b[:3], orig[:3], float64(suppressedBias))
			}
			if sup["decoder.embedding.weight"] != sd["decoder.embedding.weight"] {
				t.Errorf("%s: SuppressEOS copied tensors other than the bias", name)
			}
		}
	}
	if _, err := RandomStateDict(attention.Config{Arch: "luong-bogus", Hidden: 8, Layers: 1, SrcVocab: 5, TgtVocab: 5}, 1); err == nil || !strings.Contains(err.Error(), "unknown architecture") {
		t.Errorf("bogus arch: %v", err)
	}
	sd, _ := RandomStateDict(attention.Config{Arch: attention.Bahdanau, Hidden: 4, Layers: 1, SrcVocab: 5, TgtVocab: 5}, 1)
	if _, err := SuppressEOS(sd, 5); err == nil || !strings.Contains(err.Error(), "outside the target vocabulary [0, 5)") {
		t.Errorf("EOS out of range: %v", err)
	}
	delete(sd, "decoder.classifier.bias")
	if _, err := SuppressEOS(sd, 1); err == nil || err.Error() != "bench: checkpoint has no decoder.classifier.bias or decoder.out.bias or generator.bias or decoder.fc_out.bias or generator.linear.bias to suppress EOS with" {
		t.Errorf("no classifier bias: %v", err)
	}
}

func TestValidate(t *testing.T) {
	bad := []func(*Config){
		func(c *Config) { c.Archs = nil },
		func(c *Config) { c.Batches = nil },
		func(c *Config) { c.SrcLens = []int{0} },
		func(c *Config) { c.Steps = 0 },
		func(c *Config) { c.MaxReps = 1; c.MinReps = 2 },
		func(c *Config) { c.Engines = []string{"warp-drive"} },
	}
	for i, f := range bad {
		c := DefaultConfig()
		f(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("case %d: Validate accepted %+v", i, c)
		}
	}
	c := DefaultConfig()
	if err := c.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
}

func haveTorch() bool {
	return exec.Command("/usr/bin/python3", "-c", "import torch, onnx").Run() == nil
}

// TestRunSmall runs every engine on a tiny model, the attnx engines at
// every weights precision, greedily and with beam search of width 3: all
// fp32 engines decode the same tokens as PyTorch (with beam search, the
// best hypothesis of PyTorch's reference beam search), torch.onnx's graphs
// are n/a at batch 2, the reduced rows carry their precision, model bytes
// and speed-up over fp32, beam rows their ratio to greedy, PyTorch's BLAS
// is named, and the JSON has the documented shape.
func TestRunSmall(t *testing.T) {
	if !onnxrun.HasORT {
		t.Skip("compares the ONNX Runtime engines with the others: a build with cgo")
	}
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	testenv.ORT(t, onnxrun.Init())
	c := DefaultConfig()
	c.Archs = []attention.Arch{attention.LuongGeneral}
	// 12 steps: translate's engines are timed whole, less the lean loop's encoder
	// median, which must stay well below a whole decode on a loaded machine.
	// H=32: large enough for the weights to be most of each graph file,
	// so that int8 and int4 files are smaller than float32's (at H=8 the
	// per-row quantization's nodes outweighed the bytes saved).
	c.Hidden, c.Vocab, c.Steps = 32, 30, 12
	c.SrcLens, c.Batches, c.Threads, c.Beams = []int{3}, []int{1, 2}, []int{1}, []int{3}
	c.Warmup, c.MinReps, c.MaxReps, c.MinTime = 1, 2, 5, time.Millisecond
	c.Weights = quant.Precisions
	c.CPUProfile = t.TempDir() + "/cpu.pprof"
	c.Log = tlog{t, time.Now()}
	torch := haveTorch()
	if !torch {
		testenv.MissingPart(t, "PyTorch or onnx for /usr/bin/python3 (the PyTorch and torch.onnx engines)", "apt-get install python3-torch python3-onnx (or make deps)", nil)
		c.Engines = []string{EngineLean, EngineSteps, EngineLoop, EngineLeanGo, EngineLoopGo, EngineFloor}
	}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	// Per batch: every engine greedily, the five attnx engines (three on
	// ONNX Runtime, two on the native backend) at two more precisions, and
	// beam 3 of each engine with beam search at each of its precisions.
	const attnxEngines = 5
	beamJobs := attnxEngines*len(quant.Precisions) + 1
	want := len(Engines) + 2*attnxEngines + beamJobs
	if c.Engines != nil {
		want = len(c.Engines) + 2*attnxEngines + beamJobs - 1
	}
	if len(rep.Results) != 2*want {
		t.Fatalf("%d results, want %d", len(rep.Results), 2*want)
	}
	bytes := map[string]int64{}
	beamRows := 0
	for _, r := range rep.Results {
		if perWeights(r.Name) {
			switch {
			case r.Beam == 0:
				bytes[r.Name+" "+r.Weights] = r.ModelBytes
			case r.Name == EngineLoop:
				bytes[r.Name+" beam "+r.Weights] = r.ModelBytes
			}
			if r.NA == "" && (r.ModelBytes <= 0 || (r.Weights != "fp32") != (r.SpeedupVsFP32 > 0)) {
				t.Errorf("%s %s B=%d K=%d: model bytes %d, speed-up vs fp32 %g", r.Name, r.Weights, r.Batch, r.Beam, r.ModelBytes, r.SpeedupVsFP32)
			}
		} else if r.Weights != "fp32" {
			t.Errorf("%s: weights %q, want fp32", r.Name, r.Weights)
		}
		switch {
		case r.Name == EngineTorchONNX && r.Batch == 2:
			if r.NA == "" {
				t.Errorf("torch-onnx-steps at batch 2 ran; want n/a")
			}
		case r.NA != "":
			t.Errorf("%s B=%d: n/a: %s", r.Name, r.Batch, r.NA)
		case r.MsPerTokenMedian <= 0 || r.MsPerTokenP90 < r.MsPerTokenMedian || r.MsPerTokenMin > r.MsPerTokenMedian || r.Reps < 2 || r.PeakRSSMB <= 0:
			t.Errorf("%s B=%d: implausible figures %+v", r.Name, r.Batch, r)
		case r.Name != EnginePyTorch && r.Name != EngineFloor && r.Weights == "fp32" && torch && (r.TokensMatchPyTorch == nil || !*r.TokensMatchPyTorch):
			t.Errorf("%s B=%d beam %d: tokens differ from PyTorch's", r.Name, r.Batch, r.Beam)
		case r.Beam == 3 && r.VsGreedy <= 0:
			t.Errorf("%s %s B=%d beam 3: no ratio to greedy", r.Name, r.Weights, r.Batch)
		}
		if r.Beam == 3 && r.NA == "" {
			beamRows++
		}
	}
	// Measured beam rows: the five attnx engines at each precision, and
	// PyTorch, at both batches.
	if wantBeam := 2 * (attnxEngines*len(quant.Precisions) + 1); !torch && beamRows != wantBeam-2 || torch && beamRows != wantBeam {
		t.Errorf("%d beam rows measured", beamRows)
	}
	for _, e := range []string{EngineLean, EngineLoop, EngineLoop + " beam"} {
		if !(bytes[e+" int4"] < bytes[e+" int8"] && bytes[e+" int8"] < bytes[e+" fp32"]) {
			t.Errorf("%s model bytes %d (fp32), %d (int8), %d (int4): want each smaller", e, bytes[e+" fp32"], bytes[e+" int8"], bytes[e+" int4"])
		}
	}
	if _, ok := rep.Ratios["luong-general S=3 B=1 T=1"]["attnx-loop_int8_vs_fp32"]; !ok {
		t.Errorf("ratios lack attnx-loop_int8_vs_fp32: %v", rep.Ratios)
	}
	if torch && (rep.Config.TorchBLAS == nil || rep.Config.TorchBLAS.Kind == "" || len(rep.Config.TorchBLAS.Libraries) == 0) {
		t.Errorf("PyTorch's BLAS not reported: %+v", rep.Config.TorchBLAS)
	}
	if _, ok := rep.Ratios["luong-general S=3 B=1 T=1"]["loop_vs_steps"]; !ok {
		t.Errorf("ratios lack loop_vs_steps: %v", rep.Ratios)
	}
	for _, k := range []string{"lean_go_vs_ort_fp32", "lean_go_vs_ort_int4", "loop_go_vs_ort_int8", "lean_go_vs_ort_fp32_beam3"} {
		if v := rep.Ratios["luong-general S=3 B=2 T=1"][k]; v <= 0 {
			t.Errorf("ratios lack %s (native backend over ONNX Runtime): %v", k, rep.Ratios)
		}
	}
	if p := rep.ProfileGo; p == nil || p.Steps == 0 || p.Backend != "go" {
		t.Errorf("no CPU profile of the native backend: %+v", p)
	} else if st, err := os.Stat(p.Path); err != nil || st.Size() == 0 || p.Path == c.CPUProfile {
		t.Errorf("native CPU profile file %s: %v", p.Path, err)
	}
	if rep.Profile == nil || rep.Profile.Steps == 0 {
		t.Errorf("no CPU profile summary: %+v", rep.Profile)
	} else if st, err := os.Stat(c.CPUProfile); err != nil || st.Size() == 0 {
		t.Errorf("CPU profile file: %v", err)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Config  map[string]any   `json:"config"`
		Results []map[string]any `json:"results"`
		Ratios  map[string]any   `json:"ratios"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"name", "weights", "ms_per_token_median", "ms_per_token_p90", "tokens_per_s", "peak_rss_mb", "model_bytes"} {
		if _, ok := shape.Results[0][k]; !ok {
			t.Errorf("JSON result lacks %q: %v", k, shape.Results[0])
		}
	}
	if shape.Config["hidden"] != 32.0 || len(shape.Ratios) != 2 {
		t.Errorf("JSON config/ratios: %v / %v", shape.Config, shape.Ratios)
	}
	var sb strings.Builder
	if err := WriteTable(&sb, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"attnx-steps-lean", "attnx-loop", "floor", "targets (batch 1, 1 thread)", "ORT fixed costs", "int4", "vs fp32", "attnx-loop int8 vs fp32"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, sb.String())
		}
	}
}

// tlog sends progress lines to the test log, with the time since start.
type tlog struct {
	t     *testing.T
	start time.Time
}

func (l tlog) Write(p []byte) (int, error) {
	l.t.Logf("%5.1fs %s", time.Since(l.start).Seconds(), strings.TrimSpace(string(p)))
	return len(p), nil
}

// TestAnnotateAndTargetsPerWeights: on one configuration's results, the
// reduced rows get their speed-up over the same engine's fp32 row, the
// engine ratios use the fp32 rows only, and the int8 and int4 targets are
// checked per engine.
func TestAnnotateAndTargetsPerWeights(t *testing.T) {
	row := func(name, w string, ms float64) Result {
		return Result{Name: name, Weights: w, Arch: "luong-general", SrcLen: 12, Batch: 1, Threads: 1, MsPerTokenMedian: ms}
	}
	rs := []Result{
		row(EngineLean, "fp32", 2), row(EngineLean, "int8", 0.5), row(EngineLean, "int4", 0.8),
		row(EngineLoop, "fp32", 1.6), row(EngineLoop, "int8", 0.4),
		row(EnginePyTorch, "fp32", 4), row(EngineFloor, "fp32", 1),
	}
	annotate(rs)
	for i, want := range []float64{0, 4, 2.5, 0, 4, 0, 0} {
		if d := rs[i].SpeedupVsFP32 - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s %s: speed-up vs fp32 %g, want %g", rs[i].Name, rs[i].Weights, rs[i].SpeedupVsFP32, want)
		}
	}
	if rs[1].SpeedupVsPyTorch != 8 || rs[1].RatioToFloor != 0.5 {
		t.Errorf("int8 lean: vs PyTorch %g, vs floor %g; want 8, 0.5", rs[1].SpeedupVsPyTorch, rs[1].RatioToFloor)
	}
	r := ratios(rs)
	if r["lean_vs_pytorch"] != 2 || r["loop_vs_steps"] != 1.25 || r["best_vs_floor"] != 1.6 || r["attnx-steps-lean_int4_vs_fp32"] != 2.5 {
		t.Errorf("ratios %v: want lean_vs_pytorch 2, loop_vs_steps 1.25, best_vs_floor 1.6 (fp32 rows only), attnx-steps-lean_int4_vs_fp32 2.5", r)
	}
	rep := &Report{Ratios: map[string]map[string]float64{configKey("luong-general", 12, 1, 1): r}}
	met := map[string]bool{}
	for _, tg := range targets(rep) {
		met[tg.Name] = tg.Met
	}
	for name, want := range map[string]bool{
		"attnx-steps-lean int8 vs fp32": true, "attnx-steps-lean int4 vs fp32": false, "attnx-loop int8 vs fp32": true,
	} {
		if got, ok := met[name]; !ok || got != want {
			t.Errorf("target %q: met %v (present %v), want %v", name, got, ok, want)
		}
	}
	if _, ok := met["attnx-loop int4 vs fp32"]; ok {
		t.Errorf("a target for attnx-loop int4, which did not run")
	}
}

// TestTableWarnsOfReferenceBLAS: a PyTorch that computed with the
// reference BLAS is named at the top of the table, with a WARNING.
func TestTableWarnsOfReferenceBLAS(t *testing.T) {
	ref := &BLASInfo{Kind: "reference", Libraries: []string{"/usr/lib/x86_64-linux-gnu/blas/libblas.so.3"}}
	for _, b := range []*BLASInfo{nil, {Kind: "openblas"}, {Kind: "mkl"}} {
		if w := blasWarning(b); w != "" {
			t.Errorf("%+v: warning %q", b, w)
		}
	}
	for _, b := range []*BLASInfo{ref, {Kind: "unknown", Build: "BLAS_INFO=generic"}} {
		if w := blasWarning(b); !strings.HasPrefix(w, "PyTorch computed with the "+b.Kind+" BLAS") {
			t.Errorf("%+v: warning %q", b, w)
		}
	}
	rep := &Report{Warnings: []string{blasWarning(ref)}}
	rep.Config.TorchBLAS = ref
	var sb strings.Builder
	if err := WriteTable(&sb, rep); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(sb.String(), "\n")
	if !strings.HasPrefix(lines[0], "WARNING: PyTorch computed with the reference BLAS") || !strings.Contains(lines[1], "PyTorch's BLAS reference (/usr/lib/x86_64-linux-gnu/blas/libblas.so.3)") {
		t.Errorf("table head:\n%s", strings.Join(lines[:2], "\n"))
	}
}
