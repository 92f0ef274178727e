package main

import (
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

func TestBenchUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		err  string
	}{
		{[]string{"bench", "-arch", "transformer"}, `-arch: unknown architecture "transformer"`},
		{[]string{"bench", "-batch", "1,0"}, `-batch "1,0": want a comma-separated list of positive integers`},
		{[]string{"bench", "-src-len", ""}, "-src-len is empty"},
		{[]string{"bench", "-threads", "two"}, `-threads "two"`},
		{[]string{"bench", "-engines", "attnx-loop,warp"}, `unknown engine "warp"`},
		{[]string{"bench", "-weights", "fp32,int3"}, `-weights: unknown weights precision "int3"`},
		{[]string{"bench", "-weights", "int8,int8"}, `-weights: weights precision int8 listed twice`},
		{[]string{"bench", "-steps", "0"}, "want steps >= 1"},
		{[]string{"bench", "-hidden", "0"}, "-hidden 0"},
		{[]string{"bench", "extra"}, `unexpected argument "extra"`},
		{[]string{"bench", "-beam", "1"}, "--beam: beam width 1: want K >= 2 (greedy decoding is always measured)"},
		{[]string{"bench", "-beam", "4,x"}, `-beam "4,x": want a comma-separated list of positive integers`},
	}
	for _, c := range cases {
		code, _, errs := attnx(c.args...)
		if code != 2 || !strings.Contains(errs, c.err) || !strings.Contains(errs, "attnx help bench") {
			t.Errorf("attnx %q: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.err)
		}
	}
	code, out, _ := attnx("help", "bench")
	if code != 0 || !strings.Contains(out, "-1e9") || !strings.Contains(out, "torch-onnx-steps") || !strings.Contains(out, "-cpuprofile") {
		t.Errorf("help bench: exit %d, %q", code, out)
	}
}

// TestBenchJSON runs the ORT engines on a tiny random model (no PyTorch),
// the attnx ones with fp32 and int8 weights, and checks the JSON report's
// shape.
func TestBenchJSON(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	jsonOut := t.TempDir() + "/r.json"
	code, out, errs := attnx("bench", "-q", "-json", "-arch", "bahdanau", "-hidden", "8", "-vocab", "20",
		"-src-len", "3", "-batch", "1", "-threads", "1", "-steps", "3", "-reps", "2", "-min-time", "1ms", "-warmup", "1",
		"-engines", "attnx-steps-lean,attnx-steps,attnx-loop,floor", "-weights", "fp32,int8", "-beam", "3", "-json-out", jsonOut)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	if b, err := os.ReadFile(jsonOut); err != nil || string(b) != out {
		t.Errorf("-json-out file differs from -json's output (%v)", err)
	}
	var rep struct {
		Config struct {
			Hidden int    `json:"hidden"`
			Steps  int    `json:"steps"`
			EOS    int64  `json:"eos"`
			Method string `json:"eos_method"`
		} `json:"config"`
		Results []struct {
			Name    string  `json:"name"`
			Weights string  `json:"weights"`
			Beam    int     `json:"beam"`
			NA      string  `json:"na"`
			Greedy  float64 `json:"vs_greedy"`
			Median  float64 `json:"ms_per_token_median"`
			P90     float64 `json:"ms_per_token_p90"`
			TokS    float64 `json:"tokens_per_s"`
			RSS     float64 `json:"peak_rss_mb"`
		} `json:"results"`
		Ratios  map[string]map[string]float64 `json:"ratios"`
		Targets []struct {
			Name string `json:"name"`
		} `json:"targets"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Config.Hidden != 8 || rep.Config.Steps != 3 || rep.Config.EOS != 2 || !strings.Contains(rep.Config.Method, "bias[2]") {
		t.Errorf("config: %+v", rep.Config)
	}
	var names []string
	for _, r := range rep.Results {
		names = append(names, r.Name+" "+r.Weights+"/"+strconv.Itoa(r.Beam))
		switch {
		case r.NA != "":
			t.Errorf("%s %s beam %d: n/a: %s", r.Name, r.Weights, r.Beam, r.NA)
		case r.Median <= 0 || r.P90 < r.Median || r.TokS <= 0 || r.RSS <= 0:
			t.Errorf("%s: implausible %+v", r.Name, r)
		case r.Beam == 3 && r.Greedy <= 0:
			t.Errorf("%s beam 3: no ratio to greedy: %+v", r.Name, r)
		}
	}
	if got := strings.Join(names, ","); got != "attnx-steps-lean fp32/0,attnx-steps-lean fp32/3,attnx-steps-lean int8/0,attnx-steps-lean int8/3,"+
		"attnx-steps fp32/0,attnx-steps fp32/3,attnx-steps int8/0,attnx-steps int8/3,attnx-loop fp32/0,attnx-loop fp32/3,attnx-loop int8/0,attnx-loop int8/3,floor fp32/0" {
		t.Errorf("results %s", got)
	}
	if r := rep.Ratios["bahdanau S=3 B=1 T=1"]; r["loop_vs_steps"] <= 0 || r["best_vs_floor"] <= 0 || r["lean_beam3_vs_greedy"] <= 0 || r["steps_beam3_vs_greedy"] <= 0 || r["loop_beam3_vs_greedy"] <= 0 {
		t.Errorf("ratios %v", rep.Ratios)
	}
	if len(rep.Targets) != 5 {
		t.Errorf("targets without PyTorch and torch-onnx: %+v, want the loop and floor ones and int8 vs fp32 for each attnx engine", rep.Targets)
	}
}

// TestBenchCorpusGreedyOnly: --beam none with --corpus measures greedy
// decoding alone, as it does without --corpus (it was refused as not a
// list of widths).
func TestBenchCorpusGreedyOnly(t *testing.T) {
	code, out, errs := attnx("bench", "-q", "--json", "--corpus", "3", "--hidden", "8", "--layers", "1", "--vocab", "20", "--out-len", "3",
		"--threads", "1", "--weights", "fp32", "--engines", "attnx-steps-lean-go", "--beam", "none", "--work-dir", t.TempDir())
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Rows []struct {
			Beam    int    `json:"beam"`
			Backend string `json:"backend"`
		} `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) == 0 {
		t.Fatalf("no rows: %s", out)
	}
	for _, r := range rep.Rows {
		if r.Beam != 1 {
			t.Errorf("a beam %d row (%s) with --beam none", r.Beam, r.Backend)
		}
	}
}
