package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/reference"
	"github.com/attnx/attnx/translate"
	"github.com/attnx/attnx/verify"
	"github.com/spf13/pflag"
)

// reducedBatch is verify's default number of random sentences for a model
// with reduced-precision weights.
const reducedBatch = 200

// referenceRunner runs the PyTorch reference; a variable for tests.
var referenceRunner reference.Runner

// verifyFlags are verify's flags.
type verifyFlags struct {
	fs                              *pflag.FlagSet
	model, ckpt, encoder, decoder   *string
	maps                            renameFlags
	steps, batch, srcLen, seed      *int
	inputs, torchModule, rules, src *string
	backend                         *string
	asJSON, verbose                 *bool
	minAgreement, alpha             *float64
	beam, nBest                     *int
	refs                            *[]string
}

func newVerifyFlags() *verifyFlags {
	fs := newFlagSet("verify")
	f := &verifyFlags{fs: fs}
	f.model = fs.String("model", "", "model directory written by attnx export (required)")
	f.ckpt = fs.String("checkpoint", "", "the PyTorch checkpoint it came from (or --encoder and --decoder)")
	f.encoder = fs.String("encoder", "", "the encoder's checkpoint, for a model saved as two files (with --decoder)")
	f.decoder = fs.String("decoder", "", "the decoder's checkpoint, for a model saved as two files (with --encoder)")
	fs.Var(&f.maps, "map", "rename keys starting with FROM to start with TO, as attnx export --map (repeatable)")
	f.steps = fs.Int("steps", 10, "decoder steps to compare (also the greedy max_len)")
	f.batch = fs.Int("batch", 2, fmt.Sprintf("rows of random input (%d for int8/int4 weights)", reducedBatch))
	f.srcLen = fs.Int("src-len", 9, "source length of random input")
	f.seed = fs.Int("seed", 0, "seed of the random input")
	f.inputs = fs.String("inputs", "", "safetensors file with source_ids [batch, src_len] and source_lengths [batch], instead of random input")
	f.asJSON = fs.Bool("json", false, "print the outcome as one JSON object")
	f.backend = backendFlag(fs)
	f.verbose = fs.Bool("verbose", false, "print every output of every step, not one line per output")
	f.torchModule = fs.String("torch-module", "", "FILE.py defining build(config) -> (encoder, decoder): compare with your own modules instead of attnx's reference")
	f.minAgreement = fs.Float64("min-agreement", verify.DefaultMinAgreement, "for int8/int4 weights: the fraction of sentences whose greedy decode must equal float32 PyTorch's")
	f.beam = fs.Int("beam", 0, "also compare beam search of width `K` (0: no beam search)")
	f.alpha = fs.Float64("length-penalty", 1.0, "beam search's length penalty `A` (score / length ** A; OpenNMT-py's -alpha, JoeyNMT's beam_alpha under their rules)")
	f.rules = fs.String("rules", "", "with --beam: whose beam search both sides run: spec, opennmt, joeynmt or fairseq (default: the model's, from attnx.json's defaults, else spec)")
	f.nBest = fs.Int("n-best", 0, "with --beam: the hypotheses compared per input (0: K)")
	f.src = fs.String("src", "", "a test set `FILE` (one sentence per line, raw text the model's tokenizer splits): decode it with the graphs and with PyTorch, compare every step, count identical sentences and score BLEU")
	f.refs = fs.StringArray("ref", nil, "with --src: a reference translation `FILE` to score both decodes against (repeatable)")
	return f
}

// check refuses flags that do not go together, naming them.
func (f *verifyFlags) check() error {
	fs := f.fs
	if *f.src == "" && len(*f.refs) > 0 {
		return &usageError{"--ref goes with --src FILE"}
	}
	if *f.src != "" && (*f.inputs != "" || fs.Changed("src-len") || fs.Changed("seed")) {
		return &usageError{"--src decodes the file's own sentences: drop --inputs, --src-len and --seed"}
	}
	rules := *f.rules
	switch {
	case fs.NArg() > 0:
		return &usageError{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	case *f.model == "":
		return &usageError{"missing --model DIR"}
	case *f.ckpt == "" && *f.encoder == "" && *f.decoder == "":
		return &usageError{"missing --checkpoint CKPT (or --encoder ENC --decoder DEC)"}
	case *f.steps < 1:
		return &usageError{fmt.Sprintf("--steps must be at least 1, got %d", *f.steps)}
	case *f.batch < 1:
		return &usageError{fmt.Sprintf("--batch must be at least 1, got %d", *f.batch)}
	case *f.srcLen < 1:
		return &usageError{fmt.Sprintf("--src-len must be at least 1, got %d", *f.srcLen)}
	case !(*f.minAgreement > 0 && *f.minAgreement <= 1):
		return &usageError{fmt.Sprintf("--min-agreement must be a fraction in (0, 1], got %v", *f.minAgreement)}
	case (fs.Changed("length-penalty") || fs.Changed("rules") || fs.Changed("n-best")) && !fs.Changed("beam"):
		return &usageError{"--length-penalty, --rules and --n-best are beam search's: give --beam K too"}
	case rules != "" && rules != translate.RulesSpec && rules != translate.RulesOpenNMT && rules != translate.RulesJoeyNMT && rules != translate.RulesFairseq:
		return &usageError{fmt.Sprintf("--rules %q: want %s", rules, translate.RulesList())}
	case *f.nBest < 0 || *f.nBest > *f.beam:
		return &usageError{fmt.Sprintf("--n-best %d: want 1 to --beam %d (0: all of them)", *f.nBest, *f.beam)}
	case fs.Changed("beam") && *f.torchModule != "":
		return &usageError{"--beam compares with attnx's reference, not with --torch-module: drop one of them"}
	case fs.Changed("beam"):
		if err := checkBeamFlags(*f.beam, 1, *f.alpha); err != nil {
			return err
		}
	}
	if *f.torchModule != "" {
		if _, err := os.Stat(*f.torchModule); err != nil {
			return fmt.Errorf("--torch-module: %w", err)
		}
	}
	return nil
}

// modelDecoding makes --src check what translate does with the file: the
// model's own decoding, resolved as translate resolves it, beam search and
// the hypotheses it keeps included (OpenNMT-py's search stops sooner for
// one than for K).
func (f *verifyFlags) modelDecoding(info *modeldir.Info) {
	fs := f.fs
	var given translate.Options
	if fs.Changed("beam") {
		given.Beam = *f.beam
	}
	if fs.Changed("n-best") {
		given.NBest = *f.nBest
	}
	if fs.Changed("length-penalty") {
		given.LengthPenalty = f.alpha
	}
	given.Rules = *f.rules
	r := translate.ResolveDecoding(given, info.Defaults)
	if r.Beam > 1 {
		*f.beam = r.Beam
		if !fs.Changed("n-best") {
			*f.nBest = max(r.NBest, 1)
		}
	}
	if r.LengthPenalty != nil {
		*f.alpha = *r.LengthPenalty
	}
}

// options are verify.Options from the flags, for the model info.
func (f *verifyFlags) options(info *modeldir.Info) (verify.Options, error) {
	fs := f.fs
	if info.Weights.Reduced() && *f.beam > 0 {
		return verify.Options{}, &usageError{fmt.Sprintf("--beam: %s has %s weights, whose beam search cannot meet the float32 tolerance; verify compares its greedy decoding (drop --beam)", *f.model, info.Weights)}
	}
	if *f.src != "" && !info.Weights.Reduced() {
		f.modelDecoding(info)
	}
	if info.Weights.Reduced() && !fs.Changed("batch") {
		// Agreement is a rate: two sentences cannot measure it.
		*f.batch = reducedBatch
	}
	files := checkpoint.Files{Path: *f.ckpt, Encoder: *f.encoder, Decoder: *f.decoder}
	if err := files.Check(); err != nil {
		return verify.Options{}, &usageError{err.Error()}
	}
	if err := checkBackend(*f.backend, ""); err != nil {
		return verify.Options{}, err
	}
	opt := verify.Options{ModelDir: *f.model, Info: info, Checkpoint: files, Maps: f.maps, Inputs: *f.inputs, Batch: *f.batch, SrcLen: *f.srcLen, Seed: *f.seed,
		Reference: referenceRunner, Rows: *f.verbose || *f.asJSON, TorchModule: *f.torchModule, MinAgreement: *f.minAgreement,
		Beam: *f.beam, Backend: *f.backend}
	opt.Search, opt.LengthPenalty = verify.ModelBeamSearch(info, *f.rules, *f.nBest, *f.alpha, fs.Changed("length-penalty"))
	if fs.Changed("steps") || *f.inputs == "" {
		opt.Steps = *f.steps
	}
	return opt, nil
}

func runVerify(args []string) error {
	f := newVerifyFlags()
	if err := parseFlags(f.fs, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	info, err := readModelDir(*f.model)
	if err != nil {
		return err
	}
	opt, err := f.options(info)
	if err != nil {
		return err
	}
	if *f.src != "" {
		sv := srcVerify{src: *f.src, refs: *f.refs, chunk: *f.batch}
		if !f.fs.Changed("batch") {
			sv.chunk = verify.DefaultChunk
		}
		if f.fs.Changed("steps") {
			sv.steps = *f.steps
		}
		return runVerifySrc(opt, sv, *f.asJSON)
	}
	stages := 4
	if opt.Beam > 0 {
		stages++
	}
	bar := newProgress(stages, "verify")
	defer bar.Finish()
	opt.Progress = bar.Set
	out, err := verify.Check(opt)
	var mismatch *verify.StepsMismatchError
	if errors.As(err, &mismatch) {
		return &usageError{fmt.Sprintf("%s has step_input_ids for %d steps, but --steps is %d; drop --steps or pass --steps %d",
			mismatch.Inputs, mismatch.InputSteps, mismatch.Steps, mismatch.InputSteps)}
	}
	if err != nil {
		return err
	}
	bar.Finish()
	if *f.asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		out.WriteText(stdout, *f.verbose)
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
