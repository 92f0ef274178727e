package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/reference"
)

// needTorch ends the test when Debian's PyTorch or ONNX Runtime is absent
// (a skip, or a failure under CI: see package testenv).
func needTorch(t *testing.T) {
	t.Helper()
	testenv.Torch(t)
	testenv.ORT(t, onnxrun.Init())
}

func exportFixture(t *testing.T, name string, extra ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if code, _, errs := attnx(append([]string{"export", fixtureCkpt(name), "-o", dir}, extra...)...); code != 0 {
		t.Fatal(errs)
	}
	return dir
}

func TestVerifySucceedsOnFixture(t *testing.T) {
	needTorch(t)
	dir := exportFixture(t, "luong-general_b4_l2", "--greedy", "--beam")
	code, out, errs := attnx("verify", "--model", dir, "--checkpoint", fixtureCkpt("luong-general_b4_l2"), "--batch", "3", "--steps", "6", "--beam", "3")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
	for _, want := range []string{
		"  model luong-general H=13 L=2 Vs=19 Vt=23; batch 3, src_len 9, 6 steps; tolerance |a-b| <= 1e-05 + 1.3e-06*|b| + 2 x PyTorch's own float32 rounding in b's row (measured against float64)\n",
		"  step-isolated: every decoder step run on PyTorch's own inputs for that step (the per-step verdict)\n",
		"  free-running drift: the graphs fed their own states, as translate runs them (reported, not judged; largest |difference| per step)\n",
		"  encoder_outputs      1  ", "  log_probs            6  ", "  attention            6  ",
		"  step argmax tokens (step-isolated and free-running): identical\n",
		"  greedy decoding, decoder.onnx (step by step): identical\n",
		"  greedy decoding, greedy.onnx: identical\n",
		"  beam search K=3 alpha=1, decoder.onnx (step by step): identical (9 hypotheses of 3 rows, max score diff ",
		"  beam search K=3 alpha=1, beam.onnx: identical (9 hypotheses of 3 rows, max score diff ",
		"\nOK: the ONNX graphs compute what PyTorch computes\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The step-isolated table, the drift table (a line a step) and the
	// token verdicts.
	if n := strings.Count(out, "\n"); n > 32 {
		t.Errorf("%d lines: the tables should be compact\n%s", n, out)
	}
	// The fixture's own inputs (with teacher-forced step_input_ids, 10
	// steps), as JSON; --steps then must agree.
	code, _, errs = attnx("verify", "--model", dir, "--checkpoint", fixtureCkpt("luong-general_b4_l2"),
		"--inputs", filepath.Join(fixtureRoot, "luong-general_b4_l2", "inputs.safetensors"), "--steps", "3")
	if code != 2 || !strings.Contains(errs, "inputs.safetensors has step_input_ids for 10 steps, but --steps is 3; drop --steps or pass --steps 10") {
		t.Errorf("exit %d, %q", code, errs)
	}
	code, out, errs = attnx("verify", "--json", "--model", dir, "--checkpoint", fixtureCkpt("luong-general_b4_l2"),
		"--inputs", filepath.Join(fixtureRoot, "luong-general_b4_l2", "inputs.safetensors"))
	var o struct {
		OK                  bool
		StepTokensIdentical bool `json:"step_tokens_identical"`
		Batch               int
		Outputs             []struct {
			Output string
			OK     bool
			MaxAbs float64 `json:"max_abs_err"`
		}
		Rows []json.RawMessage
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if !o.StepTokensIdentical || o.Batch != 4 || len(o.Outputs) != 7 || len(o.Rows) != 3+4*10+10 {
		t.Errorf("outcome %+v", o)
	}
	for _, s := range o.Outputs {
		if !s.OK || s.MaxAbs > 1e-5 {
			t.Errorf("%+v", s)
		}
	}
}

func TestVerifyMismatch(t *testing.T) {
	needTorch(t)
	dir := exportFixture(t, "luong-dot_b1_l1")
	// Another fixture's checkpoint with a different config: a clear error.
	other := fixtureCkpt("luong-dot_b4_l2")
	code, _, errs := attnx("verify", "--model", dir, "--checkpoint", other)
	want := "attnx verify: checkpoint " + other + " is a luong-dot H=13 L=2 Vs=19 Vt=23 model, but " +
		filepath.Join(dir, "attnx.json") + " describes a luong-dot H=13 L=1 Vs=19 Vt=23 model: they are not the same model\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q\nwant %q", code, errs, want)
	}
	// Same config, other weights: a numeric mismatch, exit 1.
	ckpt := filepath.Join(t.TempDir(), "other.pt")
	fixtures.Reference(t, "make-model", "--arch", "luong-dot", "--hidden", "13", "--layers", "1",
		"--src-vocab", "19", "--tgt-vocab", "23", "--seed", "4242", "--out", ckpt)
	code, out, errs := attnx("verify", "--model", dir, "--checkpoint", ckpt, "--inputs", filepath.Join(fixtureRoot, "luong-dot_b1_l1", "inputs.safetensors"))
	if code != 1 || !strings.Contains(out, "  log_probs           10  ") || !strings.Contains(out, "MISMATCH in 10 of 10: step 0: ") ||
		!strings.HasSuffix(out, "\nMISMATCH: the ONNX graphs differ from PyTorch\n") || errs != "" {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errs)
	}
}

func TestVerifyErrors(t *testing.T) {
	tmp := t.TempDir()
	ck := fixtureCkpt("luong-dot_b1_l1")
	// An int8 model: --beam is refused before anything runs.
	int8Dir := exportFixture(t, "luong-dot_b1_l1", "--weights", "int8")
	cases := []struct {
		args []string
		env  string
		code int
		err  string
	}{
		{[]string{"verify", "--checkpoint", ck}, "", 2, "attnx verify: missing --model DIR\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp}, "", 2, "attnx verify: missing --checkpoint CKPT (or --encoder ENC --decoder DEC)\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck, "--steps", "0"}, "", 2, "attnx verify: --steps must be at least 1, got 0\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck, "--beam", "0"}, "", 2, "attnx verify: --beam 0: want the beam width K >= 1 (1: greedy decoding)\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck, "--beam", "2", "--length-penalty", "-1"}, "", 2, "attnx verify: --length-penalty -1: want a finite value from 0 to 10\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck, "--length-penalty", "0.5"}, "", 2, "attnx verify: --length-penalty, --rules and --n-best are beam search's: give --beam K too\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck, "--beam", "4", "--torch-module", "m.py"}, "", 2,
			"attnx verify: --beam compares with attnx's reference, not with --torch-module: drop one of them\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", int8Dir, "--checkpoint", ck, "--beam", "4"}, "", 2,
			"attnx verify: --beam: " + int8Dir + " has int8 weights, whose beam search cannot meet the float32 tolerance; verify compares its greedy decoding (drop --beam)\nRun 'attnx help verify' for usage.\n"},
		{[]string{"verify", "--model", tmp, "--checkpoint", ck}, "", 1,
			"attnx verify: " + tmp + " is not a model directory: it has no attnx.json (attnx export writes one)\n"},
		{[]string{"verify", "--model", filepath.Join(tmp, "nope"), "--checkpoint", ck}, "", 1,
			"attnx verify: --model: stat " + filepath.Join(tmp, "nope") + ": no such file or directory\n"},
	}
	for _, c := range cases {
		code, _, errs := attnx(c.args...)
		if code != c.code || errs != c.err {
			t.Errorf("attnx %q: exit %d, stderr %q\nwant exit %d, %q", c.args, code, errs, c.code, c.err)
		}
	}
	dir := exportFixture(t, "luong-dot_b1_l1")
	code, _, errs := attnx("verify", "--model", dir, "--checkpoint", filepath.Join(tmp, "none.pt"))
	if code != 1 || errs != "attnx verify: reading checkpoint: open "+filepath.Join(tmp, "none.pt")+": no such file or directory\n" {
		t.Errorf("missing checkpoint: exit %d, %q", code, errs)
	}
	t.Setenv(reference.EnvReference, filepath.Join(tmp, "ref.py"))
	code, _, errs = attnx("verify", "--model", dir, "--checkpoint", ck)
	if code != 1 || errs != "attnx verify: ATTNX_REFERENCE="+filepath.Join(tmp, "ref.py")+": stat "+filepath.Join(tmp, "ref.py")+": no such file or directory\n" {
		t.Errorf("bad ATTNX_REFERENCE: exit %d, %q", code, errs)
	}
	t.Setenv(reference.EnvReference, "")
	py := filepath.Join(tmp, "python3")
	referenceRunner.Python = py
	defer func() { referenceRunner.Python = "" }()
	code, _, errs = attnx("verify", "--model", dir, "--checkpoint", ck)
	want := "attnx verify: " + py + " is missing: the PyTorch reference needs Python 3 with torch there; " + reference.InstallHint + "\n"
	if code != 1 || errs != want {
		t.Errorf("no python: exit %d, %q", code, errs)
	}
	// A python without torch.
	os.WriteFile(py, []byte("#!/bin/sh\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n"), 0o755)
	code, _, errs = attnx("verify", "--model", dir, "--checkpoint", ck)
	want = "attnx verify: " + py + " has no torch module: the PyTorch reference needs it; " + reference.InstallHint + "\n"
	if code != 1 || errs != want {
		t.Errorf("no torch: exit %d, %q", code, errs)
	}
}

// TestVerifyReducedWeights: verify on an int8 model reports its deviations
// and its agreement with float32 PyTorch (decoder.onnx and greedy.onnx, each
// sentence decoded alone) instead of the float32 verdict; it exits 1 exactly
// when the sentence agreement is below --min-agreement; --batch defaults to
// 200 sentences for such a model.
func TestVerifyReducedWeights(t *testing.T) {
	needTorch(t)
	dir := exportFixture(t, "luong-general_b4_l2", "--greedy", "--weights", "int8")
	ck := fixtureCkpt("luong-general_b4_l2")
	code, out, errs := attnx("verify", "--json", "--model", dir, "--checkpoint", ck, "--steps", "6", "--min-agreement", "0.01")
	var o struct {
		OK        bool    `json:"ok"`
		Weights   string  `json:"weights"`
		Batch     int     `json:"batch"`
		Min       float64 `json:"min_agreement"`
		Agreement []struct {
			Graph       string   `json:"graph"`
			Sentences   int      `json:"sentences"`
			Rate        float64  `json:"sentence_rate"`
			Steps       int      `json:"log_prob_steps"`
			MaxDev      *float64 `json:"max_log_prob_dev"`
			OK          bool     `json:"ok"`
			Divergent   int      `json:"divergent_sentences"`
			Divergences []struct{ Sentence, Step int }
		} `json:"agreement"`
	}
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 0 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if !o.OK || o.Weights != "int8" || o.Batch != 200 || o.Min != 0.01 || len(o.Agreement) != 2 {
		t.Fatalf("outcome %s", out)
	}
	steps, whole := o.Agreement[0], o.Agreement[1]
	if !strings.HasPrefix(steps.Graph, "decoder.onnx") || steps.Sentences != 200 || steps.Steps == 0 || steps.MaxDev == nil || !(*steps.MaxDev > 0) ||
		!strings.HasPrefix(whole.Graph, "greedy.onnx") || whole.Sentences != 200 || whole.Steps != 0 || whole.MaxDev != nil {
		t.Errorf("agreement %+v", o.Agreement)
	}
	rate := steps.Rate
	if steps.Divergent != 200-int(rate*200+0.5) || len(steps.Divergences) != min(steps.Divergent, 10) {
		t.Errorf("divergences %+v", steps)
	}

	// The same agreement against a threshold of 1: exit 1 unless every
	// sentence was identical.
	code, out, _ = attnx("verify", "--model", dir, "--checkpoint", ck, "--steps", "6", "--min-agreement", "1")
	for _, want := range []string{
		"  model luong-general H=13 L=2 Vs=19 Vt=23, int8 weights; batch 200, src_len 9, 6 steps\n",
		"reduced-precision weights cannot meet the float32 tolerance",
		"  greedy decoding, decoder.onnx (step by step, one sentence at a time):\n    sentences identical to PyTorch's ",
		"    largest log-prob deviation ",
		"  greedy decoding, greedy.onnx (one sentence at a time):\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if (code == 1) != (rate < 1) || (code == 1) != strings.Contains(out, "\nBELOW THRESHOLD: the int8 graphs decode as float32 PyTorch does for fewer than 100.00% of the sentences\n") {
		t.Errorf("sentence agreement %g against 1: exit %d\n%s", rate, code, out)
	}
	// The fixture's inputs feed PyTorch's steps (step_input_ids): its
	// log_probs are then not its greedy decode's, and only tokens compare.
	code, out, errs = attnx("verify", "--json", "--model", dir, "--checkpoint", ck, "--min-agreement", "0.01",
		"--inputs", filepath.Join(fixtureRoot, "luong-general_b4_l2", "inputs.safetensors"))
	o.Agreement = nil
	if err := json.Unmarshal([]byte(out), &o); err != nil || code != 0 || len(o.Agreement) != 2 || o.Agreement[0].Sentences != 4 ||
		o.Agreement[0].Steps != 0 || o.Agreement[0].MaxDev != nil {
		t.Errorf("teacher-forced inputs: exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if code, _, errs := attnx("verify", "--model", dir, "--checkpoint", ck, "--min-agreement", "0"); code != 2 || !strings.Contains(errs, "--min-agreement must be a fraction in (0, 1], got 0") {
		t.Errorf("--min-agreement 0: exit %d, %q", code, errs)
	}
}
