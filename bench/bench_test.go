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
	"github.com/attnx/attnx/runtime"
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
	for _, arch := range []attention.Arch{attention.Bahdanau, attention.LuongDot, attention.LuongGeneral, attention.LuongConcat} {
		sd, err := RandomStateDict(arch, 8, 2, 11, 13, 1)
		if err != nil {
			t.Fatal(err)
		}
		sup, err := SuppressEOS(sd, 2)
		if err != nil {
			t.Fatal(err)
		}
		w, _, err := attention.FromStateDict(sup, attention.Options{})
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if w.Config.Arch != arch || w.Config.Hidden != 8 || w.Config.Layers != 2 || w.Config.SrcVocab != 11 || w.Config.TgtVocab != 13 {
			t.Errorf("%s: converted to %s", arch, w.Config)
		}
		b, _ := sup["decoder.classifier.bias"].Float32s()
		orig, _ := sd["decoder.classifier.bias"].Float32s()
		if b[2] != suppressedBias || b[1] != orig[1] || orig[2] == suppressedBias {
			t.Errorf("%s: bias %v from %v: want only [2] = %g, and the original untouched", arch, b[:3], orig[:3], float64(suppressedBias))
		}
		if sup["decoder.embedding.weight"] != sd["decoder.embedding.weight"] {
			t.Errorf("%s: SuppressEOS copied tensors other than the bias", arch)
		}
	}
	if _, err := RandomStateDict("luong-bogus", 8, 1, 5, 5, 1); err == nil || !strings.Contains(err.Error(), "unknown arch") {
		t.Errorf("bogus arch: %v", err)
	}
	sd, _ := RandomStateDict(attention.Bahdanau, 4, 1, 5, 5, 1)
	if _, err := SuppressEOS(sd, 5); err == nil || !strings.Contains(err.Error(), "outside the target vocabulary [0, 5)") {
		t.Errorf("EOS out of range: %v", err)
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

// TestRunSmall runs every engine on a tiny model: all decode the same
// tokens as PyTorch, torch.onnx's graphs are n/a at batch 2, and the JSON
// has the documented shape.
func TestRunSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("runs PyTorch")
	}
	testenv.ORT(t, runtime.Init())
	c := DefaultConfig()
	c.Archs = []attention.Arch{attention.LuongGeneral}
	c.Hidden, c.Vocab, c.Steps = 8, 30, 4
	c.SrcLens, c.Batches, c.Threads, c.Beams = []int{3}, []int{1, 2}, []int{1}, []int{3}
	c.Warmup, c.MinReps, c.MaxReps, c.MinTime = 1, 2, 5, time.Millisecond
	c.CPUProfile = t.TempDir() + "/cpu.pprof"
	c.Log = tlog{t, time.Now()}
	torch := haveTorch()
	if !torch {
		testenv.MissingPart(t, "PyTorch or onnx for /usr/bin/python3 (the PyTorch and torch.onnx engines)", "apt-get install python3-torch python3-onnx (or make deps)", nil)
		c.Engines = []string{EngineLean, EngineSteps, EngineLoop, EngineFloor}
	}
	rep, err := Run(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	want := len(Engines) + len(beamEngines) // greedy, and beam 3 where there is beam search
	if c.Engines != nil {
		want = len(c.Engines) + 3
	}
	if len(rep.Results) != 2*want {
		t.Fatalf("%d results, want %d", len(rep.Results), 2*want)
	}
	beamRows := 0
	for _, r := range rep.Results {
		switch {
		case r.Name == EngineTorchONNX && r.Batch == 2:
			if r.NA == "" {
				t.Errorf("torch-onnx-steps at batch 2 ran; want n/a")
			}
		case r.Name == EngineLoop && r.Beam == 3:
			if !strings.Contains(r.NA, "beam.onnx") {
				t.Errorf("attnx-loop beam 3: %+v, want n/a for want of beam.onnx", r)
			}
		case r.NA != "":
			t.Errorf("%s B=%d: n/a: %s", r.Name, r.Batch, r.NA)
		case r.MsPerTokenMedian <= 0 || r.MsPerTokenP90 < r.MsPerTokenMedian || r.MsPerTokenMin > r.MsPerTokenMedian || r.Reps < 2 || r.PeakRSSMB <= 0:
			t.Errorf("%s B=%d: implausible figures %+v", r.Name, r.Batch, r)
		case r.Name != EnginePyTorch && r.Name != EngineFloor && torch && (r.TokensMatchPyTorch == nil || !*r.TokensMatchPyTorch):
			t.Errorf("%s B=%d beam %d: tokens differ from PyTorch's", r.Name, r.Batch, r.Beam)
		case r.Beam == 3 && r.VsGreedy <= 0:
			t.Errorf("%s B=%d beam 3: no ratio to greedy", r.Name, r.Batch)
		}
		if r.Beam == 3 && r.NA == "" {
			beamRows++
		}
	}
	if wantBeam := 2 * (len(beamEngines) - 1); !torch && beamRows != wantBeam-2 || torch && beamRows != wantBeam {
		t.Errorf("%d beam rows measured", beamRows)
	}
	if _, ok := rep.Ratios["luong-general S=3 B=1 T=1"]["loop_vs_steps"]; !ok {
		t.Errorf("ratios lack loop_vs_steps: %v", rep.Ratios)
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
	for _, k := range []string{"name", "ms_per_token_median", "ms_per_token_p90", "tokens_per_s", "peak_rss_mb"} {
		if _, ok := shape.Results[0][k]; !ok {
			t.Errorf("JSON result lacks %q: %v", k, shape.Results[0])
		}
	}
	if shape.Config["hidden"] != 8.0 || len(shape.Ratios) != 2 {
		t.Errorf("JSON config/ratios: %v / %v", shape.Config, shape.Ratios)
	}
	var sb strings.Builder
	if err := WriteTable(&sb, rep); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"attnx-steps-lean", "attnx-loop", "floor", "targets (batch 1, 1 thread)", "ORT fixed costs"} {
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
