package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/runtime"
	"github.com/attnx/attnx/verify"
)

func init() {
	commandDocs["verify"] = `
Runs the PyTorch reference (testdata/reference/reference.py, through
/usr/bin/python3 with torch) and the model directory's ONNX graphs through
ONNX Runtime on the same inputs, and compares every output of the encoder
and of every decoder step (fed the same input ids) against the spec's
tolerance |a - b| <= 1e-05 + 1.3e-06 * |b|. Then it compares greedy decoding:
the per-step argmax tokens, a free-running greedy decode with decoder.onnx
and, when the directory has it, greedy.onnx.

Inputs are random (reference.py random-inputs with --batch, --src-len and
--seed; ragged lengths when --batch > 1) unless --inputs names a safetensors
file with source_ids and source_lengths.

reference.py is found through ATTNX_REFERENCE, else as
testdata/reference/reference.py above the attnx executable or the current
directory.

Exit status: 0 when everything matches, 1 on a mismatch or error, 2 for
usage errors.

Example:
  attnx export model.pt -o model/
  attnx verify --model model/ --checkpoint model.pt --steps 20 --batch 4`
}

// EnvReference overrides where verify finds reference.py.
const EnvReference = "ATTNX_REFERENCE"

// pythonPath is the interpreter with torch (Debian's); a variable for tests.
var pythonPath = "/usr/bin/python3"

const referenceRel = "testdata/reference/reference.py"

// verifyOutcome is verify's JSON output.
type verifyOutcome struct {
	Model      string             `json:"model"`
	Checkpoint string             `json:"checkpoint"`
	Config     attention.Config   `json:"config"`
	Batch      int                `json:"batch"`
	SrcLen     int                `json:"src_len"`
	Steps      int                `json:"steps"`
	Tolerance  map[string]float64 `json:"tolerance"`
	Outputs    []outputSummary    `json:"outputs"`
	Rows       []verify.Row       `json:"rows,omitempty"`
	// StepTokensIdentical: the argmax of every step equals PyTorch's.
	StepTokensIdentical bool `json:"step_tokens_identical"`
	// Greedy holds free-running greedy decodes compared with PyTorch's.
	Greedy []greedyCheck `json:"greedy"`
	OK     bool          `json:"ok"`
}

// outputSummary is the worst error of one output over all steps.
type outputSummary struct {
	Output    string  `json:"output"`
	Steps     int     `json:"steps"`
	MaxAbs    float64 `json:"max_abs_err"`
	MaxRel    float64 `json:"max_rel_err"`
	WorstStep int     `json:"worst_step"`
	Failed    int     `json:"failed_steps"`
	OK        bool    `json:"ok"`
	Detail    string  `json:"detail"`
}

// greedyCheck compares one greedy decode with the reference's.
type greedyCheck struct {
	Graph     string    `json:"graph"`
	Identical bool      `json:"identical"`
	Tokens    [][]int64 `json:"tokens"`
	Detail    string    `json:"detail,omitempty"`
}

func runVerify(args []string) error {
	fs := newFlagSet("verify")
	model := fs.String("model", "", "model directory written by attnx export (required)")
	ckpt := fs.String("checkpoint", "", "the PyTorch checkpoint it came from (required)")
	steps := fs.Int("steps", 10, "decoder steps to compare (also the greedy max_len)")
	batch := fs.Int("batch", 2, "rows of random input")
	srcLen := fs.Int("src-len", 9, "source length of random input")
	seed := fs.Int("seed", 0, "seed of the random input")
	inputs := fs.String("inputs", "", "safetensors file with source_ids [batch, src_len] and source_lengths [batch], instead of random input")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	verbose := fs.Bool("verbose", false, "print every output of every step, not one line per output")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return &usageError{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	case *model == "":
		return &usageError{"missing --model DIR"}
	case *ckpt == "":
		return &usageError{"missing --checkpoint CKPT"}
	case *steps < 1:
		return &usageError{fmt.Sprintf("--steps must be at least 1, got %d", *steps)}
	case *batch < 1:
		return &usageError{fmt.Sprintf("--batch must be at least 1, got %d", *batch)}
	case *srcLen < 1:
		return &usageError{fmt.Sprintf("--src-len must be at least 1, got %d", *srcLen)}
	}

	info, err := readModelDir(*model)
	if err != nil {
		return err
	}
	sd, err := checkpoint.Load(*ckpt)
	if err != nil {
		return fmt.Errorf("reading checkpoint: %w", err)
	}
	w, _, err := attention.FromStateDict(sd.Tensors, attention.Options{AllowNonFinite: true})
	if err != nil {
		return fmt.Errorf("%s: %w", *ckpt, err)
	}
	if w.Config != info.Config {
		return fmt.Errorf("checkpoint %s is a %v model, but %s describes a %v model: they are not the same model",
			*ckpt, w.Config, filepath.Join(*model, modeldir.InfoFile), info.Config)
	}
	sd, w = nil, nil

	// Load the graphs before PyTorch starts: a corrupt file or a missing
	// ONNX Runtime is reported at once, not after the reference has run.
	if err := runtime.Init(); err != nil {
		return err
	}
	sessions := map[string]*runtime.Session{}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	for role, file := range info.Files {
		s, err := runtime.Open(filepath.Join(*model, file), runtime.Options{IntraOpThreads: 1})
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(*model, file), err)
		}
		sessions[role] = s
	}

	script, err := findReference()
	if err != nil {
		return err
	}
	if err := checkPython(); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "attnx-verify-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bar := newProgress(4, "verify")
	defer bar.Finish()

	in := *inputs
	if in != "" {
		// Inputs with step_input_ids fix the number of steps.
		sd, err := checkpoint.LoadSafetensors(in)
		if err != nil {
			return fmt.Errorf("--inputs: %w", err)
		}
		if si := sd.Tensors["step_input_ids"]; si != nil && len(si.Dims) == 2 && int(si.Dims[0]) != *steps {
			if fs.Changed("steps") {
				return &usageError{fmt.Sprintf("%s has step_input_ids for %d steps, but --steps is %d; drop --steps or pass --steps %d", in, si.Dims[0], *steps, si.Dims[0])}
			}
			*steps = int(si.Dims[0])
		}
	} else {
		in = filepath.Join(tmp, "inputs.safetensors")
		bar.Set(0, "PyTorch: random inputs")
		a := []string{"random-inputs", "--batch", strconv.Itoa(*batch), "--src-len", strconv.Itoa(*srcLen),
			"--src-vocab", strconv.Itoa(info.SrcVocab), "--seed", strconv.Itoa(*seed), "--out", in}
		if *batch > 1 {
			a = append(a, "--ragged")
		}
		if err := reference(script, a...); err != nil {
			return err
		}
	}
	outPath := filepath.Join(tmp, "expected.safetensors")
	bar.Set(1, "PyTorch: reference run")
	sp := info.Special
	if err := reference(script, "run", "--checkpoint", *ckpt, "--inputs", in, "--steps", strconv.Itoa(*steps),
		"--sos", strconv.FormatInt(sp.SOS, 10), "--eos", strconv.FormatInt(sp.EOS, 10), "--pad", strconv.FormatInt(sp.PAD, 10),
		"--out", outPath); err != nil {
		return err
	}

	bar.Set(2, "ONNX Runtime: steps")
	inSD, err := checkpoint.LoadSafetensors(in)
	if err != nil {
		return err
	}
	ids, lens, err := sourceInputs(inSD.Tensors, in)
	if err != nil {
		return err
	}
	exp, err := checkpoint.LoadSafetensors(outPath)
	if err != nil {
		return fmt.Errorf("reading the reference's output: %w", err)
	}
	stepIDs, err := stepInputs(exp.Tensors["step_input_ids"])
	if err != nil {
		return err
	}
	tr, err := verify.Run(sessions["encoder"], sessions["decoder"], ids, lens, stepIDs)
	if err != nil {
		return err
	}
	rep, err := verify.Compare(tr, exp.Tensors, verify.Tolerance)
	if err != nil {
		return fmt.Errorf("comparing with the reference: %w", err)
	}

	bar.Set(3, "ONNX Runtime: greedy")
	refTokens, err := referenceGreedy(exp.Tensors)
	if err != nil {
		return err
	}
	out := verifyOutcome{Model: *model, Checkpoint: *ckpt, Config: info.Config, Batch: len(lens), SrcLen: int(ids.Shape[1]),
		Steps: len(stepIDs), Tolerance: map[string]float64{"rtol": verify.Tolerance.RTol, "atol": verify.Tolerance.ATol},
		Outputs: summarizeRows(rep.Rows), StepTokensIdentical: rep.TokensIdentical, OK: rep.OK}
	if *verbose || *asJSON {
		out.Rows = rep.Rows
	}
	got, err := greedyWithDecoder(sessions["encoder"], sessions["decoder"], ids, lens, sp, *steps)
	if err != nil {
		return err
	}
	out.Greedy = append(out.Greedy, compareGreedy(modeldir.DecoderFile+" (step by step)", got, refTokens))
	if g := sessions["greedy"]; g != nil {
		got, err := greedyWithGraph(g, ids, lens, sp, *steps)
		if err != nil {
			return fmt.Errorf("%s: %w", info.Files["greedy"], err)
		}
		out.Greedy = append(out.Greedy, compareGreedy(info.Files["greedy"], got, refTokens))
	}
	for _, g := range out.Greedy {
		out.OK = out.OK && g.Identical
	}
	bar.Finish()
	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printVerify(stdout, out, *verbose)
	}
	if !out.OK {
		return &exitError{exitFailure}
	}
	return nil
}

// readModelDir reads DIR/attnx.json with an error that says what DIR is.
func readModelDir(dir string) (*modeldir.Info, error) {
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("--model %s is not a directory (want a model directory written by attnx export)", dir)
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, modeldir.InfoFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s is not a model directory: it has no %s (attnx export writes one)", dir, modeldir.InfoFile)
	}
	return info, err
}

// findReference locates reference.py: $ATTNX_REFERENCE, else
// testdata/reference/reference.py in the executable's directory or one
// above it, else in the current directory or one above it.
func findReference() (string, error) {
	if p := os.Getenv(EnvReference); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", EnvReference, p, err)
		}
		return p, nil
	}
	var starts []string
	if exe, err := os.Executable(); err == nil {
		if r, err := filepath.EvalSymlinks(exe); err == nil {
			exe = r
		}
		starts = append(starts, filepath.Dir(exe))
	}
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	for _, dir := range starts {
		for {
			p := filepath.Join(dir, referenceRel)
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			up := filepath.Dir(dir)
			if up == dir {
				break
			}
			dir = up
		}
	}
	return "", fmt.Errorf("cannot find %s above the attnx executable or the current directory; run attnx from the attnx repository or set %s=/path/to/reference.py", referenceRel, EnvReference)
}

// torchHint says how to get PyTorch for pythonPath.
func torchHint() string {
	return fmt.Sprintf("verify needs PyTorch for %s: install it with `apt-get install python3-torch` (or `make deps`)", pythonPath)
}

// checkPython checks that pythonPath exists; whether it has torch shows
// when reference.py imports it (saving a separate interpreter start).
func checkPython() error {
	if _, err := os.Stat(pythonPath); err != nil {
		return fmt.Errorf("%s is missing; %s", pythonPath, torchHint())
	}
	return nil
}

func lastLine(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return err.Error()
}

// reference runs reference.py with args, turning its errors into one line.
func reference(script string, args ...string) error {
	cmd := exec.Command(pythonPath, append([]string{script}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "No module named 'torch'") {
		return errors.New(torchHint())
	}
	if err != nil {
		return fmt.Errorf("PyTorch reference (%s %s) failed: %s", filepath.Base(script), args[0], lastLine(out, err))
	}
	return nil
}

// sourceInputs takes source_ids and source_lengths from an inputs file.
func sourceInputs(t map[string]*builder.Tensor, path string) (*runtime.Tensor, []int64, error) {
	ids, ok := t["source_ids"]
	if !ok || len(ids.Dims) != 2 {
		return nil, nil, fmt.Errorf("%s: want source_ids int64 [batch, src_len]", path)
	}
	lt, ok := t["source_lengths"]
	if !ok || len(lt.Dims) != 1 || lt.Dims[0] != ids.Dims[0] {
		return nil, nil, fmt.Errorf("%s: want source_lengths int64 [batch] beside source_ids %v", path, ids.Dims)
	}
	iv, err := ids.Int64s()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: source_ids: %w", path, err)
	}
	lens, err := lt.Int64s()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: source_lengths: %w", path, err)
	}
	return runtime.NewInt64(ids.Dims, iv), lens, nil
}

func stepInputs(t *builder.Tensor) ([][]int64, error) {
	if t == nil || len(t.Dims) != 2 {
		return nil, fmt.Errorf("the reference's output lacks step_input_ids [steps, batch]")
	}
	flat, err := t.Int64s()
	if err != nil {
		return nil, err
	}
	T, B := int(t.Dims[0]), int(t.Dims[1])
	out := make([][]int64, T)
	for s := range out {
		out[s] = flat[s*B : (s+1)*B]
	}
	return out, nil
}

// referenceGreedy returns PyTorch's greedy tokens per row, cut to each
// row's length.
func referenceGreedy(t map[string]*builder.Tensor) ([][]int64, error) {
	toks, lens := t["greedy_tokens"], t["greedy_lengths"]
	if toks == nil || lens == nil || len(toks.Dims) != 2 {
		return nil, fmt.Errorf("the reference's output lacks greedy_tokens and greedy_lengths")
	}
	tv, err := toks.Int64s()
	if err != nil {
		return nil, err
	}
	lv, err := lens.Int64s()
	if err != nil {
		return nil, err
	}
	n := int(toks.Dims[1])
	out := make([][]int64, len(lv))
	for r, l := range lv {
		out[r] = tv[r*n : r*n+int(l)]
	}
	return out, nil
}

// greedyWithDecoder decodes greedily as the spec says, one decoder.onnx
// step at a time: SOS first, argmax fed back, a row stops at EOS
// (included), all stop after maxLen steps.
func greedyWithDecoder(enc, dec *runtime.Session, ids *runtime.Tensor, lens []int64, sp attention.Special, maxLen int) ([][]int64, error) {
	B := int64(len(lens))
	lt := runtime.NewInt64([]int64{B}, lens)
	eo, err := enc.Run(map[string]*runtime.Tensor{attention.InSourceIDs: ids, attention.InSourceLengths: lt})
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	hidden, cell := eo[attention.OutHidden], eo[attention.OutCell]
	in := make([]int64, B)
	for i := range in {
		in[i] = sp.SOS
	}
	out := make([][]int64, B)
	done := make([]bool, B)
	for t := 0; t < maxLen; t++ {
		res, err := dec.Run(map[string]*runtime.Tensor{
			attention.InInputIDs: runtime.NewInt64([]int64{B}, append([]int64(nil), in...)), attention.InHidden: hidden, attention.InCell: cell,
			attention.InEncoderOutputs: eo[attention.OutEncoder], attention.InSourceLengths: lt,
		})
		if err != nil {
			return nil, fmt.Errorf("greedy step %d: %w", t, err)
		}
		lp, err := res[attention.OutLogProbs].Float32s()
		if err != nil {
			return nil, err
		}
		tok := verify.Argmax(lp, int(B))
		all := true
		for r := range tok {
			if !done[r] {
				out[r] = append(out[r], tok[r])
				done[r] = tok[r] == sp.EOS
			}
			all = all && done[r]
		}
		if all {
			break
		}
		in = tok
		hidden, cell = res[attention.OutNextHidden], res[attention.OutNextCell]
	}
	return out, nil
}

// greedyWithGraph runs greedy.onnx and cuts each row after EOS.
func greedyWithGraph(g *runtime.Session, ids *runtime.Tensor, lens []int64, sp attention.Special, maxLen int) ([][]int64, error) {
	B := int64(len(lens))
	res, err := g.Run(map[string]*runtime.Tensor{
		attention.InSourceIDs: ids, attention.InSourceLengths: runtime.NewInt64([]int64{B}, lens),
		attention.InMaxLen: runtime.NewInt64(nil, []int64{int64(maxLen)}),
	})
	if err != nil {
		return nil, err
	}
	ot := res[attention.OutOutputIDs]
	if ot == nil || len(ot.Shape) != 2 {
		return nil, fmt.Errorf("no %s [batch, out_len] output", attention.OutOutputIDs)
	}
	v, err := ot.Int64s()
	if err != nil {
		return nil, err
	}
	n := int(ot.Shape[1])
	out := make([][]int64, B)
	for r := range out {
		row := v[r*n : (r+1)*n]
		for i, t := range row {
			if t == sp.EOS {
				row = row[:i+1]
				break
			}
		}
		out[r] = row
	}
	return out, nil
}

func compareGreedy(graph string, got, want [][]int64) greedyCheck {
	c := greedyCheck{Graph: graph, Identical: true, Tokens: got}
	for r := range want {
		var g []int64
		if r < len(got) {
			g = got[r]
		}
		if !slices.Equal(g, want[r]) {
			c.Identical = false
			c.Detail = fmt.Sprintf("row %d: got %v, PyTorch %v", r, g, want[r])
			break
		}
	}
	return c
}

// summarizeRows folds the per-step rows into one line per output.
func summarizeRows(rows []verify.Row) []outputSummary {
	idx := map[string]int{}
	var out []outputSummary
	for _, r := range rows {
		if r.Output == "tokens" {
			continue
		}
		i, ok := idx[r.Output]
		if !ok {
			i = len(out)
			idx[r.Output] = i
			out = append(out, outputSummary{Output: r.Output, OK: true, WorstStep: r.Step, Detail: r.Detail})
		}
		s := &out[i]
		s.Steps++
		if r.MaxAbs > s.MaxAbs || (s.Steps == 1) {
			s.MaxAbs, s.WorstStep = r.MaxAbs, r.Step
			if s.OK {
				s.Detail = r.Detail
			}
		}
		s.MaxRel = max(s.MaxRel, r.MaxRel)
		if !r.OK {
			if s.OK {
				s.Detail = fmt.Sprintf("step %d: %s", r.Step, r.Detail)
			}
			s.OK = false
			s.Failed++
		}
	}
	order := map[string]int{"encoder_outputs": 0, "hidden": 1, "cell": 2, "log_probs": 3, "next_hidden": 4, "next_cell": 5, "attention": 6}
	sort.SliceStable(out, func(i, j int) bool { return order[out[i].Output] < order[out[j].Output] })
	return out
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "MISMATCH"
}

func printVerify(w io.Writer, o verifyOutcome, verbose bool) {
	c := o.Config
	fmt.Fprintf(w, "verify %s against %s\n", o.Model, filepath.Base(o.Checkpoint))
	fmt.Fprintf(w, "  model %s H=%d L=%d Vs=%d Vt=%d; batch %d, src_len %d, %d steps; tolerance |a-b| <= %g + %g*|b|\n\n",
		c.Arch, c.Hidden, c.Layers, c.SrcVocab, c.TgtVocab, o.Batch, o.SrcLen, o.Steps, o.Tolerance["atol"], o.Tolerance["rtol"])
	fmt.Fprintf(w, "  %-16s %5s  %-11s %-11s %5s  %s\n", "output", "steps", "max abs", "max rel", "worst", "verdict")
	for _, s := range o.Outputs {
		worst := "enc"
		if s.WorstStep >= 0 {
			worst = strconv.Itoa(s.WorstStep)
		}
		v := verdict(s.OK)
		if !s.OK {
			v = fmt.Sprintf("MISMATCH in %d of %d: %s", s.Failed, s.Steps, s.Detail)
		}
		fmt.Fprintf(w, "  %-16s %5d  %-11.3e %-11.3e %5s  %s\n", s.Output, s.Steps, s.MaxAbs, s.MaxRel, worst, v)
	}
	if verbose {
		fmt.Fprintf(w, "\n  every step:\n")
		for _, r := range o.Rows {
			step := "enc"
			if r.Step >= 0 {
				step = strconv.Itoa(r.Step)
			}
			fmt.Fprintf(w, "  %5s %-16s %s\n", step, r.Output, r.Detail)
		}
	}
	fmt.Fprintln(w)
	same := func(b bool) string {
		if b {
			return "identical"
		}
		return "DIFFERENT"
	}
	fmt.Fprintf(w, "  step argmax tokens: %s\n", same(o.StepTokensIdentical))
	for _, g := range o.Greedy {
		fmt.Fprintf(w, "  greedy decoding, %s: %s", g.Graph, same(g.Identical))
		if g.Detail != "" {
			fmt.Fprintf(w, " (%s)", g.Detail)
		}
		fmt.Fprintln(w)
	}
	if o.OK {
		fmt.Fprintf(w, "\nOK: the ONNX graphs compute what PyTorch computes\n")
	} else {
		fmt.Fprintf(w, "\nMISMATCH: the ONNX graphs differ from PyTorch\n")
	}
}
