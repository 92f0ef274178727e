package verify

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/decode"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/reference"
	"github.com/attnx/attnx/translate"
)

// DefaultSteps is the number of decoder steps Check compares when neither
// Options.Steps nor the inputs file fixes it.
const DefaultSteps = 10

// Options says what Check compares.
type Options struct {
	// ModelDir is the model directory and Info its attnx.json.
	ModelDir string
	Info     *modeldir.Info
	// Checkpoint names the PyTorch checkpoint the model came from (one
	// file, or the encoder's and the decoder's), read as attnx export
	// reads it, with Maps renaming key prefixes.
	Checkpoint checkpoint.Files
	Maps       []checkpoint.Rename
	// Steps is the number of decoder steps compared, also the greedy
	// max_len. 0 means the inputs file's step count when it has
	// step_input_ids, else DefaultSteps; a non-zero value that disagrees
	// with the inputs file is a *StepsMismatchError.
	Steps int
	// Inputs is a safetensors file with source_ids [batch, src_len] and
	// source_lengths [batch]; "" means random inputs of Batch rows (ragged
	// when Batch > 1) of SrcLen tokens from Seed.
	Inputs              string
	Batch, SrcLen, Seed int
	// Reference runs the PyTorch reference (package reference). It is
	// handed the weights read here, as safetensors, never the user's file:
	// unpickling a checkpoint in Python could run code.
	Reference reference.Runner
	// TorchModule, when set, is a Python file defining build(config) ->
	// (encoder, decoder): the user's own modules replace the reference as
	// the oracle, loaded with the checkpoint's weights (as read here,
	// before Maps, strict key matching) and run one sentence at a time
	// with the article's or the tutorial's call conventions (see
	// reference/user_module.py for the contract).
	TorchModule string
	// Beam, when at least 1, also compares beam search of width Beam with
	// length penalty LengthPenalty (spec "Beam search", max_len Steps):
	// the decoding core over decoder.onnx and, for Beam >= 2 when the
	// directory has it, beam.onnx (through translate's loop engine)
	// against `reference.py beam`. It needs float32 weights and attnx's
	// reference (no TorchModule).
	Beam          int
	LengthPenalty float64
	// Search chooses whose beam search both sides run (attnx's when
	// zero): a toolkit's, as attnx translate --rules runs it, against the
	// reference's implementation of the same rules.
	Search BeamSearch
	// Rows keeps every output of every step in the Outcome.
	Rows bool
	// MinAgreement is, for a model with reduced-precision weights, the
	// fraction of sentences whose greedy decode must equal PyTorch's float32
	// one for the check to pass; 0 means DefaultMinAgreement. Float32
	// models are held to the float32 tolerance instead.
	MinAgreement float64
	// Backend is the engine that runs the graphs (onnxrun.Options'
	// Backend): "ort", "go", or "" for onnxrun.DefaultBackend.
	Backend string
	// Progress, when set, hears of each of the four stages as it starts.
	Progress func(stage int, desc string)
}

// StepsMismatchError is Options.Steps disagreeing with the inputs file's
// step_input_ids.
type StepsMismatchError struct {
	Inputs            string
	InputSteps, Steps int
}

// Error says how many steps the inputs hold and how many were asked for.
func (e *StepsMismatchError) Error() string {
	return fmt.Sprintf("%s has step_input_ids for %d steps, but %d steps were asked for", e.Inputs, e.InputSteps, e.Steps)
}

// Outcome is what Check found, as `attnx verify --json` prints it.
type Outcome struct {
	Model      string `json:"model"`
	Checkpoint string `json:"checkpoint"`
	// Oracle is what computed the expected outputs: "reference" (attnx's
	// PyTorch reference) or the --torch-module file.
	Oracle    string             `json:"oracle"`
	Config    attention.Config   `json:"config"`
	Batch     int                `json:"batch"`
	SrcLen    int                `json:"src_len"`
	Steps     int                `json:"steps"`
	Tolerance map[string]float64 `json:"tolerance"`
	// ReferenceRounding: the reference measured its own float32 rounding
	// per element (against float64 on the same inputs), and each
	// element's bound is widened by it (compare.Options.Slack).
	ReferenceRounding bool `json:"reference_rounding"`
	// Outputs and Rows are the step-isolated comparison, the per-step
	// verdict (spec "Tolerances"): every decoder step run on PyTorch's own
	// inputs for that step.
	Outputs []OutputSummary `json:"outputs"`
	Rows    []Row           `json:"rows,omitempty"`
	// Drift is the free-running comparison (the graphs fed their own
	// states, as translate runs them) per step, reported and not judged;
	// DriftRows its every row, with Rows.
	Drift     []DriftStep `json:"drift"`
	DriftRows []Row       `json:"drift_rows,omitempty"`
	// StepTokensIdentical: the argmax of every step equals PyTorch's in
	// both comparisons, except at the near ties listed in NearTies.
	StepTokensIdentical bool      `json:"step_tokens_identical"`
	NearTies            []NearTie `json:"near_ties,omitempty"`
	// Greedy holds free-running greedy decodes compared with PyTorch's.
	Greedy []GreedyCheck `json:"greedy"`
	// ReferenceGreedy is PyTorch's greedy decode of every row (EOS
	// included when emitted).
	ReferenceGreedy [][]int64 `json:"reference_greedy"`
	// Weights is the model's weights precision. For a reduced one (int8,
	// int4) the outputs' deviations are reported, not judged against the
	// tolerance: Agreement holds each graph's greedy decodes compared with
	// PyTorch's float32 ones, and OK means every graph reached
	// MinAgreement.
	Weights      quant.Precision  `json:"weights"`
	MinAgreement float64          `json:"min_agreement,omitempty"`
	Agreement    []AgreementCheck `json:"agreement,omitempty"`
	// Beam holds beam searches compared with PyTorch's (Options.Beam).
	Beam []BeamCheck `json:"beam,omitempty"`
	OK   bool        `json:"ok"`
}

// OutputSummary is the worst error of one output over all steps.
type OutputSummary struct {
	Output    string  `json:"output"`
	Steps     int     `json:"steps"`
	MaxAbs    float64 `json:"max_abs_err"`
	MaxRel    float64 `json:"max_rel_err"`
	WorstStep int     `json:"worst_step"`
	Failed    int     `json:"failed_steps"`
	OK        bool    `json:"ok"`
	Detail    string  `json:"detail"`
}

// GreedyCheck compares one greedy decode with the reference's.
type GreedyCheck struct {
	Graph string `json:"graph"`
	// Identical: every row equals PyTorch's, except rows that part from it
	// at a near tie (NearTies).
	Identical bool      `json:"identical"`
	NearTies  []NearTie `json:"near_ties,omitempty"`
	Tokens    [][]int64 `json:"tokens"`
	Detail    string    `json:"detail,omitempty"`
}

// Check runs the PyTorch reference and the model directory's graphs on the
// same inputs and compares every output of the encoder and of every decoder
// step (fed the same input ids) within Tolerance, the per-step argmax
// tokens, and free-running greedy decoding with decoder.onnx and, when the
// directory has it, greedy.onnx. The graphs are opened before PyTorch runs,
// so that a corrupt file or a missing ONNX Runtime is reported at once.
func Check(o Options) (*Outcome, error) {
	info := o.Info
	ro := modeldir.ReadOptions{Maps: o.Maps, Convert: attention.Options{AllowNonFinite: true}}
	var meta map[string]string
	if info.Config.Arch.IsToolkit() {
		// A toolkit's checkpoint does not say everything about the model
		// (OpenNMT-py keeps it in opt, JoeyNMT in config.yaml): attnx.json
		// does, and the reference gets it beside the weights.
		cfg := info.Config
		ro.Config = &cfg
		js, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		meta = map[string]string{modeldir.ConfigMetadata: string(js)}
	}
	read, err := modeldir.ReadModel(o.Checkpoint, ro)
	if err != nil {
		return nil, err
	}
	sd, w := read.StateDict, read.Weights
	if w.Config.WithDefaults() != info.Config.WithDefaults() {
		return nil, fmt.Errorf("checkpoint %s is a %v model, but %s describes a %v model: they are not the same model",
			o.Checkpoint, w.Config, filepath.Join(o.ModelDir, modeldir.InfoFile), info.Config)
	}
	w = nil

	steps, srcLen := o.Steps, o.SrcLen
	if o.Inputs != "" {
		in, err := checkpoint.LoadSafetensors(o.Inputs)
		if err != nil {
			return nil, fmt.Errorf("inputs file: %w", err)
		}
		if si := in.Tensors["step_input_ids"]; si != nil && len(si.Dims) == 2 && int(si.Dims[0]) != steps {
			if steps != 0 {
				return nil, &StepsMismatchError{Inputs: o.Inputs, InputSteps: int(si.Dims[0]), Steps: steps}
			}
			steps = int(si.Dims[0])
		}
		if ids := in.Tensors["source_ids"]; ids != nil && len(ids.Dims) == 2 {
			srcLen = int(ids.Dims[1])
		}
	}
	// A tutorial-location model cannot run a longer src_len (every row is
	// padded to it): refuse before starting Python.
	if err := info.Config.WithDefaults().CheckSourceLength(srcLen); err != nil {
		return nil, fmt.Errorf("inputs of src_len %d: %w", srcLen, err)
	}
	if steps == 0 {
		steps = DefaultSteps
	}
	if o.Beam != 0 {
		b := decode.Beam{K: o.Beam, LengthPenalty: o.LengthPenalty}
		if err := b.Validate(); err != nil {
			return nil, err
		}
		switch {
		case o.TorchModule != "":
			return nil, fmt.Errorf("beam search is compared with attnx's reference only, not with a torch module (%s)", o.TorchModule)
		case info.Weights.Reduced():
			return nil, fmt.Errorf("beam search is compared within the float32 tolerance, which a model with %s weights cannot meet; compare its greedy decoding instead", info.Weights)
		}
	}

	if err := onnxrun.Ready(o.Backend); err != nil {
		return nil, err
	}
	sessions := map[string]*onnxrun.Session{}
	defer func() {
		for _, s := range sessions {
			s.Close()
		}
	}()
	for _, role := range []string{"encoder", "decoder"} {
		path := filepath.Join(o.ModelDir, info.Files[role])
		s, err := onnxrun.Open(path, onnxrun.Options{Backend: o.Backend, IntraOpThreads: 1})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		sessions[role] = s
	}
	var loop, loopBeam *translate.Translator
	if info.Files["greedy"] != "" {
		if loop, err = translate.Open(o.ModelDir, translate.Options{Backend: o.Backend, Threads: 1, Engine: translate.EngineLoop, MaxLen: steps, NoModelDefaults: true}); err != nil {
			return nil, err
		}
		defer loop.Close()
	}
	if o.Beam > 1 && info.Files[modeldir.RoleBeam] != "" {
		alpha := o.LengthPenalty
		if loopBeam, err = translate.Open(o.ModelDir, translate.Options{Backend: o.Backend, Threads: 1, Engine: translate.EngineLoop, MaxLen: steps,
			Beam: o.Beam, NBest: o.Beam, LengthPenalty: &alpha, NoModelDefaults: true}); err != nil {
			return nil, err
		}
		defer loopBeam.Close()
	}
	if err := o.Reference.Check(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "attnx-verify-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	// The reference gets the weights read here, never the user's pickle;
	// the user's own modules get them under the names they have in the
	// file, before any --map.
	if o.TorchModule != "" && len(o.Maps) > 0 {
		if sd, err = checkpoint.LoadModel(o.Checkpoint, nil); err != nil {
			return nil, fmt.Errorf("reading checkpoint: %w", err)
		}
	}
	weights := filepath.Join(tmp, "checkpoint.safetensors")
	if err := checkpoint.WriteSafetensors(weights, sd.Tensors, meta); err != nil {
		return nil, fmt.Errorf("handing the weights to the reference: %w", err)
	}
	sd = nil
	ctx := context.Background()
	ref := func(args ...string) error {
		_, err := o.Reference.Run(ctx, reference.Script, args...)
		return err
	}
	progress := func(stage int, desc string) {
		if o.Progress != nil {
			o.Progress(stage, desc)
		}
	}

	in := o.Inputs
	if in == "" {
		in = filepath.Join(tmp, "inputs.safetensors")
		progress(0, "PyTorch: random inputs")
		a := []string{"random-inputs", "--batch", strconv.Itoa(o.Batch), "--src-len", strconv.Itoa(o.SrcLen),
			"--src-vocab", strconv.Itoa(info.SrcVocab), "--seed", strconv.Itoa(o.Seed), "--out", in}
		if o.Batch > 1 {
			a = append(a, "--ragged")
		}
		if err := ref(a...); err != nil {
			return nil, err
		}
	}
	outPath := filepath.Join(tmp, "expected.safetensors")
	sp := info.Special
	oracle := "reference"
	if o.TorchModule == "" {
		progress(1, "PyTorch: reference run")
		if err := ref("run", "--checkpoint", weights, "--inputs", in, "--steps", strconv.Itoa(steps),
			"--sos", strconv.FormatInt(sp.SOS, 10), "--eos", strconv.FormatInt(sp.EOS, 10), "--pad", strconv.FormatInt(sp.PAD, 10),
			"--rules", rulesArg(info.Decoding), "--rounding", "--out", outPath); err != nil {
			return nil, err
		}
	} else {
		progress(1, "PyTorch: your modules")
		module, err := filepath.Abs(o.TorchModule)
		if err != nil {
			return nil, err
		}
		oracle = o.TorchModule
		if err := ref("run-module", "--module", module, "--checkpoint", weights, "--config", moduleConfig(info), "--inputs", in,
			"--steps", strconv.Itoa(steps), "--pad", strconv.FormatInt(sp.PAD, 10), "--out", outPath); err != nil {
			return nil, err
		}
	}

	progress(2, "ONNX Runtime: steps")
	inSD, err := checkpoint.LoadSafetensors(in)
	if err != nil {
		return nil, err
	}
	ids, lens, err := sourceInputs(inSD.Tensors, in)
	if err != nil {
		return nil, err
	}
	exp, err := checkpoint.LoadSafetensors(outPath)
	if err != nil {
		return nil, fmt.Errorf("reading the reference's output: %w", err)
	}
	stepIDs, err := stepInputs(exp.Tensors["step_input_ids"])
	if err != nil {
		return nil, err
	}
	enc, dec := sessions["encoder"], sessions["decoder"]
	par, err := CheckParity(enc, dec, ids, lens, stepIDs, exp.Tensors)
	if err != nil {
		return nil, fmt.Errorf("comparing with the reference: %w", err)
	}
	rep := par.Isolated

	progress(3, "ONNX Runtime: greedy")
	refTokens, err := referenceGreedy(exp.Tensors)
	if err != nil {
		return nil, err
	}
	out := &Outcome{Model: o.ModelDir, Checkpoint: o.Checkpoint.String(), Oracle: oracle, Config: info.Config, Batch: len(lens), SrcLen: int(ids.Shape[1]),
		Steps: len(stepIDs), Tolerance: map[string]float64{"rtol": Tolerance.RTol, "atol": Tolerance.ATol}, ReferenceGreedy: refTokens,
		Outputs: summarizeRows(rep.Rows), StepTokensIdentical: rep.TokensIdentical && par.Free.TokensIdentical,
		Drift: driftSummary(par.Free.Rows), NearTies: append(append([]NearTie(nil), rep.NearTies...), par.Free.NearTies...),
		OK: rep.OK && par.Free.TokensIdentical}
	if o.Rows {
		out.Rows = rep.Rows
		out.DriftRows = par.Free.Rows
	}
	_, out.ReferenceRounding = exp.Tensors[roundingPrefix+attention.OutLogProbs]
	out.Weights = info.Weights.OrFP32()
	if out.Weights.Reduced() {
		forced := inSD.Tensors["step_input_ids"] != nil
		if err := o.checkReduced(out, enc, dec, loop, ids, lens, exp.Tensors, refTokens, steps, forced); err != nil {
			return nil, err
		}
		return out, nil
	}
	got, err := Greedy(enc, dec, ids, lens, sp.SOS, sp.EOS, steps, info.Decoding)
	if err != nil {
		return nil, err
	}
	out.Greedy = append(out.Greedy, compareGreedy(modeldir.DecoderFile+" (step by step)", got.Tokens, refTokens, par.Free))
	if loop != nil {
		rows, _, err := sourceRows(ids, lens)
		if err != nil {
			return nil, err
		}
		res, err := loop.TranslateIDs(context.Background(), rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", info.Files["greedy"], err)
		}
		toks := make([][]int64, len(res))
		for r := range res {
			toks[r] = res[r].Tokens
		}
		out.Greedy = append(out.Greedy, compareGreedy(info.Files["greedy"], toks, refTokens, par.Free))
	}
	for _, g := range out.Greedy {
		out.OK = out.OK && g.Identical
	}
	if o.Beam > 0 {
		progress(4, "PyTorch and ONNX Runtime: beam search")
		cs, err := checkBeam(o, weights, in, tmp, enc, dec, loopBeam, ids, lens, steps, par.Free.ScoreDrift())
		if err != nil {
			return nil, err
		}
		for _, c := range cs {
			out.Beam = append(out.Beam, c)
			out.OK = out.OK && c.Identical
		}
	}
	return out, nil
}

// rulesArg is a toolkit's decoding rules as reference.py's --rules takes
// them ("" for none).
func rulesArg(r *attention.Rules) string {
	if r == nil {
		return ""
	}
	data, _ := json.Marshal(r) // ids and an int always marshal
	return string(data)
}

// moduleConfig is the config handed to a --torch-module file's build, as
// JSON: the model's sizes in the reference's names, and SOS and EOS.
func moduleConfig(info *modeldir.Info) string {
	c := info.Config.WithDefaults()
	if c.Arch.IsToolkit() {
		// The tutorials' models (reference/user_toolkit.py): attnx.json's
		// own fields.
		var m map[string]any
		js, _ := json.Marshal(c)
		json.Unmarshal(js, &m) // a Config always round-trips
		m["sos"], m["eos"] = info.Special.SOS, info.Special.EOS
		if info.Decoding != nil {
			m["decoding"] = info.Decoding // JoeyNMT's rules, for the greedy decode
		}
		data, _ := json.Marshal(m)
		return string(data)
	}
	m := map[string]any{"arch": c.Arch, "cell": c.Cell, "hidden": c.Hidden, "embedding_size": c.Embedding, "layers": c.Layers,
		"src_vocab": c.SrcVocab, "tgt_vocab": c.TgtVocab, "sos": info.Special.SOS, "eos": info.Special.EOS}
	if c.MaxLength > 0 {
		m["max_length"] = c.MaxLength
	}
	data, _ := json.Marshal(m) // a map of strings and numbers always marshals
	return string(data)
}

// checkBeam runs the reference's beam search on the inputs and compares
// the decoding core's with it, and beam.onnx's when loopBeam (translate's
// loop engine with beam search) is not nil.
func checkBeam(o Options, weights, in, tmp string, enc, dec *onnxrun.Session, loopBeam *translate.Translator, ids *onnxrun.Tensor, lens []int64, steps int, drift float64) ([]BeamCheck, error) {
	sp := o.Info.Special
	outPath := filepath.Join(tmp, "beam.safetensors")
	if _, err := o.Reference.Run(context.Background(), reference.Script, "beam", "--checkpoint", weights, "--inputs", in,
		"--beam", strconv.Itoa(o.Beam), "--max-len", strconv.Itoa(steps),
		"--length-penalty", strconv.FormatFloat(o.LengthPenalty, 'g', -1, 64),
		"--sos", strconv.FormatInt(sp.SOS, 10), "--eos", strconv.FormatInt(sp.EOS, 10), "--pad", strconv.FormatInt(sp.PAD, 10),
		"--rules", rulesArg(o.Info.Decoding), "--out", outPath,
		"--search", o.Search.rules(), "--n-best", strconv.Itoa(o.Search.nBest(o.Beam)), "--onmt-penalty", o.Search.onmtPenalty(),
		"--unk", strconv.FormatInt(max(o.Search.UNK, 0), 10)); err != nil {
		return nil, err
	}
	exp, err := checkpoint.LoadSafetensors(outPath)
	if err != nil {
		return nil, fmt.Errorf("reading the reference's beam search: %w", err)
	}
	want, err := ReferenceBeam(exp.Tensors)
	if err != nil {
		return nil, err
	}
	var got *BeamDecoded
	if o.Search.rules() == "spec" {
		got, err = Beam(enc, dec, ids, lens, sp.SOS, sp.EOS, o.Beam, steps, o.LengthPenalty, o.Info.Decoding)
	} else {
		got, err = ToolkitBeam(enc, dec, ids, lens, sp.SOS, sp.EOS, o.Beam, steps, o.LengthPenalty, o.Info.Decoding, o.Search)
	}
	if err != nil {
		return nil, err
	}
	engine := modeldir.DecoderFile + " (step by step)"
	if r := o.Search.rules(); r != "spec" {
		engine += ", " + r + " rules"
	}
	out := []BeamCheck{CompareBeam(engine, o.Beam, o.LengthPenalty, got.Hypotheses, got.NearestTie, drift, want)}
	if loopBeam == nil || o.Search.rules() != "spec" {
		// beam.onnx has attnx's beam search built in.
		return out, nil
	}
	g, err := LoopBeam(loopBeam, ids, lens)
	if err != nil {
		return nil, err
	}
	// beam.onnx does not report its near ties: the decoding core's, the same
	// float32 sums over the same inputs, stand for them.
	return append(out, CompareBeam(o.Info.Files[modeldir.RoleBeam], o.Beam, o.LengthPenalty, g, got.NearestTie, drift, want)), nil
}

// sourceInputs takes source_ids and source_lengths from an inputs file.
func sourceInputs(t map[string]*builder.Tensor, path string) (*onnxrun.Tensor, []int64, error) {
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
	return onnxrun.NewInt64(ids.Dims, iv), lens, nil
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
	if len(lv) != int(toks.Dims[0]) {
		return nil, fmt.Errorf("the reference's greedy_lengths has %d rows, greedy_tokens %d", len(lv), toks.Dims[0])
	}
	out := make([][]int64, len(lv))
	for r, l := range lv {
		if l < 0 || int(l) > n {
			return nil, fmt.Errorf("the reference's greedy_lengths[%d] = %d: outside [0, %d]", r, l, n)
		}
		out[r] = tv[r*n : r*n+int(l)]
	}
	return out, nil
}

// compareGreedy compares free-running greedy decodes with the reference's.
// A row that parts from the reference's at a step where free-running
// comparison (free, fed the reference's greedy tokens) found a near tie is
// counted in NearTies, not a mismatch; it cannot be compared after that
// step (its tokens no longer follow the same prefix), the other rows are.
func compareGreedy(graph string, got, want [][]int64, free *Report) GreedyCheck {
	c := GreedyCheck{Graph: graph, Identical: true, Tokens: got}
	for r := range want {
		var g []int64
		if r < len(got) {
			g = got[r]
		}
		if slices.Equal(g, want[r]) {
			continue
		}
		p := 0
		for p < len(g) && p < len(want[r]) && g[p] == want[r][p] {
			p++
		}
		if free != nil && p < len(g) && p < len(want[r]) {
			if n, ok := free.NearTieAt(p, r); ok {
				n.Got, n.Want = g[p], want[r][p]
				c.NearTies = append(c.NearTies, n)
				continue
			}
		}
		if c.Identical {
			c.Detail = fmt.Sprintf("row %d: got %v, PyTorch %v", r, g, want[r])
		}
		c.Identical = false
	}
	return c
}

// DriftStep is the free-running drift at one decoder step: the largest
// absolute difference of each output from the reference's.
type DriftStep struct {
	Step   int                `json:"step"`
	MaxAbs map[string]float64 `json:"max_abs_err"`
	MaxRel map[string]float64 `json:"max_rel_err"`
}

// driftSummary folds free-running rows into one DriftStep per step.
func driftSummary(rows []Row) []DriftStep {
	var out []DriftStep
	for _, r := range rows {
		if r.Output == "tokens" || r.Step < 0 {
			continue
		}
		if len(out) == 0 || out[len(out)-1].Step != r.Step {
			out = append(out, DriftStep{Step: r.Step, MaxAbs: map[string]float64{}, MaxRel: map[string]float64{}})
		}
		d := &out[len(out)-1]
		d.MaxAbs[r.Output], d.MaxRel[r.Output] = r.MaxAbs, r.MaxRel
	}
	return out
}

// summarizeRows folds the per-step rows into one line per output.
func summarizeRows(rows []Row) []OutputSummary {
	idx := map[string]int{}
	var out []OutputSummary
	for _, r := range rows {
		if r.Output == "tokens" {
			continue
		}
		i, ok := idx[r.Output]
		if !ok {
			i = len(out)
			idx[r.Output] = i
			out = append(out, OutputSummary{Output: r.Output, OK: true, WorstStep: r.Step, Detail: r.Detail})
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
	// In the order the rows first name the outputs: Compare sorts its rows
	// by step, the encoder's (step -1) first.
	return out
}

// WriteInputs writes rows of source ids (ragged, padded with 0) as the
// inputs file Options.Inputs reads: source_ids [rows, longest] and
// source_lengths [rows].
func WriteInputs(path string, rows [][]int64) error {
	S := 0
	for _, r := range rows {
		S = max(S, len(r))
	}
	ids := make([]int64, len(rows)*S)
	lens := make([]int64, len(rows))
	for i, r := range rows {
		copy(ids[i*S:], r)
		lens[i] = int64(len(r))
	}
	return checkpoint.WriteSafetensors(path, map[string]*builder.Tensor{
		"source_ids":     builder.Int64Tensor([]int64{int64(len(rows)), int64(S)}, ids),
		"source_lengths": builder.Int64Tensor([]int64{int64(len(rows))}, lens),
	}, nil)
}
