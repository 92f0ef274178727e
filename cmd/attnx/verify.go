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
)

func init() {
	commandDocs["verify"] = `
Runs the PyTorch reference (reference/reference.py, through
/usr/bin/python3 with torch) and the model directory's ONNX graphs on the
backend translate uses (the native one by default; --backend ort for ONNX
Runtime) on the same inputs, and compares every output of the encoder
and of every decoder step (fed the same input ids) against the spec's
tolerance |a - b| <= 1e-05 + 1.3e-06 * |b|. Then it compares greedy decoding:
the per-step argmax tokens, a free-running greedy decode with decoder.onnx
and, when the directory has it, greedy.onnx. --beam K also compares beam
search of width K (max_len --steps, --length-penalty A) with the
reference's, decoder.onnx step by step and, for K >= 2 when the directory
has it (attnx export --beam), beam.onnx: the n-best lists must be
identical, up to swaps of two candidates whose scores differ by less than
1e-05 (the spec allows them; they are counted and reported), with scores
within 1e-04. --beam needs float32 weights and attnx's reference (not
--torch-module). A toolkit's model is compared under the toolkit's beam
search, the one attnx translate runs by default (attnx.json's defaults:
OpenNMT-py's or JoeyNMT's, each also written in the reference), with
--n-best hypotheses per input (0: K); --rules spec|opennmt|joeynmt chooses
others. beam.onnx has attnx's own search built in and is compared under
spec rules only.

--src FILE verifies on a user's own test set: its lines are tokenised with
the model's tokenizer and vocabulary, decoded by the graphs and by PyTorch
as attnx translate decodes them by default (the model's beam search and
rules from attnx.json's defaults, else greedily; --beam K for another
width) in chunks of --batch sentences (64 by default), every step compared
as above and, with beam search, each sentence's best hypothesis against the
reference's; it reports the sentences identical, BLEU of attnx against
PyTorch (100 when identical) and, with --ref FILE, BLEU of each against the
references. This is the check to run before replacing a Python service.

Inputs are random (reference.py random-inputs with --batch, --src-len and
--seed; ragged lengths when --batch > 1) unless --inputs names a safetensors
file with source_ids and source_lengths.

The checkpoint is read as attnx export reads it (--checkpoint FILE, or
--encoder ENC --decoder DEC, with --map FROM=TO renames), and the reference
gets the weights read here as safetensors: Python never unpickles your file.

The reference (reference/*.py) is embedded in attnx and runs from a private
temporary copy; ATTNX_REFERENCE=path/to/reference.py (or its directory)
runs another copy instead.

--torch-module FILE.py makes your own PyTorch modules the oracle instead of
attnx's reference, so that code that differs from it shows. FILE.py
defines

    def build(config):           # config: arch, cell, hidden, embedding_size,
        return encoder, decoder  # layers, src_vocab, tgt_vocab, max_length, sos, eos

whose state_dict() keys are the checkpoint's under encoder. and decoder.
(before --map), without those prefixes; they are loaded strictly with the
weights read here (never by unpickling your file) and run one sentence at
a time, in eval mode, with the call convention of the model's architecture:
  article (bahdanau, luong-*): out, state = encoder(ids [1,S], encoder.init_hidden());
      log_probs, state, attn = decoder(token [1], state, out)
  tutorial-location (the tutorial's 2017-2023 version): encoder(token [1], hidden)
      per token into a zero [M,H] buffer; log_probs, hidden, attn =
      decoder(token [1,1], hidden, buffer)
  tutorial-bahdanau (its current version): out, hidden = encoder(ids [1,S]);
      logits, hidden, attn = decoder.forward_step(token [1,1], hidden, out)
  bentrevett (tutorial 3/4): build returns the Seq2Seq (or its encoder and
      decoder), keys as the checkpoint's; outputs, hidden = encoder(src [S,1])
      (tutorial 4: encoder(src, len)); prediction, hidden[, a] =
      decoder(token [1], hidden, outputs[, mask]); attention from a or the
      decoder's attention module
  chatbot-* (PyTorch's chatbot tutorial): build returns EncoderRNN and
      LuongAttnDecoderRNN with config's hidden_size, num_layers and
      encoder_layers; outputs, hidden = encoder(ids [S,1], lengths);
      output, hidden = decoder(token [1,1], hidden[:L], outputs); log_probs
      from the decoder's out module, attention from its attn module
  onmt-* (OpenNMT-py 3): build returns the NMTModel (keys as the
      checkpoint's, generator.* included); enc_out, enc_final, _ =
      model.encoder(ids [1,S,1], len); model.decoder.init_state(src,
      enc_out, enc_final); dec_out, attns = model.decoder(token [1,1,1],
      enc_out, src_len=len, step=t); log_probs = log_softmax(
      model.generator(dec_out)); states from model.decoder.state
  joey-* (JoeyNMT 2): build returns the Model; out, hidden =
      model.encoder(model.src_embed(ids [1,S]), len, mask); hidden0 =
      model.decoder._init_hidden(hidden); outputs, hidden, att_probs,
      att_vectors = model.decoder(trg_embed=model.trg_embed(token [1,1]),
      ..., unroll_steps=1, hidden=, prev_att_vector=); greedy decoding
      under the version's rules
  (for the toolkits' and these tutorials' models config is attnx.json's
  model fields plus sos and eos, and decoding for JoeyNMT)
FILE.py is your code and runs as such.

A model exported with --weights int8 or int4 cannot meet that tolerance,
by design: verify then reports the deviations of every output and compares
greedy decoding with the float32 PyTorch model's, each sentence decoded
alone: the sentences and tokens identical, the largest log-probability
deviation over the steps fed the same tokens, and where differing sentences
first diverge. It fails only when fewer than --min-agreement of the
sentences are identical (default 0.9). For such a model --batch defaults
to 200 random sentences; --batch 1000 --steps 20 measures it more closely.

Exit status: 0 when everything matches (for reduced weights: when the
agreement reaches --min-agreement), 1 on a mismatch or error, 2 for usage
errors.

Example:
  attnx export model.pt -o model/
  attnx verify --model model/ --checkpoint model.pt --steps 20 --batch 4
  attnx verify --model model/ --encoder encoder.pt --decoder decoder.pt --torch-module train.py`
}

// reducedBatch is verify's default number of random sentences for a model
// with reduced-precision weights.
const reducedBatch = 200

// referenceRunner runs the PyTorch reference; a variable for tests.
var referenceRunner reference.Runner

func runVerify(args []string) error {
	fs := newFlagSet("verify")
	model := fs.String("model", "", "model directory written by attnx export (required)")
	ckpt := fs.String("checkpoint", "", "the PyTorch checkpoint it came from (or --encoder and --decoder)")
	encoder := fs.String("encoder", "", "the encoder's checkpoint, for a model saved as two files (with --decoder)")
	decoder := fs.String("decoder", "", "the decoder's checkpoint, for a model saved as two files (with --encoder)")
	var maps renameFlags
	fs.Var(&maps, "map", "rename keys starting with FROM to start with TO, as attnx export --map (repeatable)")
	steps := fs.Int("steps", 10, "decoder steps to compare (also the greedy max_len)")
	batch := fs.Int("batch", 2, fmt.Sprintf("rows of random input (%d for int8/int4 weights)", reducedBatch))
	srcLen := fs.Int("src-len", 9, "source length of random input")
	seed := fs.Int("seed", 0, "seed of the random input")
	inputs := fs.String("inputs", "", "safetensors file with source_ids [batch, src_len] and source_lengths [batch], instead of random input")
	asJSON := fs.Bool("json", false, "print the outcome as one JSON object")
	backend := backendFlag(fs)
	verbose := fs.Bool("verbose", false, "print every output of every step, not one line per output")
	torchModule := fs.String("torch-module", "", "FILE.py defining build(config) -> (encoder, decoder): compare with your own modules instead of attnx's reference")
	minAgreement := fs.Float64("min-agreement", verify.DefaultMinAgreement, "for int8/int4 weights: the fraction of sentences whose greedy decode must equal float32 PyTorch's")
	beam := fs.Int("beam", 0, "also compare beam search of width `K` (0: no beam search)")
	alpha := fs.Float64("length-penalty", 1.0, "beam search's length penalty `A` (score / length ** A; OpenNMT-py's -alpha, JoeyNMT's beam_alpha under their rules)")
	rules := fs.String("rules", "", "with --beam: whose beam search both sides run: spec, opennmt, joeynmt or fairseq (default: the model's, from attnx.json's defaults, else spec)")
	nBest := fs.Int("n-best", 0, "with --beam: the hypotheses compared per input (0: K)")
	src := fs.String("src", "", "a test set `FILE` (one sentence per line, raw text the model's tokenizer splits): decode it with the graphs and with PyTorch, compare every step, count identical sentences and score BLEU")
	refs := fs.StringArray("ref", nil, "with --src: a reference translation `FILE` to score both decodes against (repeatable)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *src == "" && len(*refs) > 0 {
		return &usageError{"--ref goes with --src FILE"}
	}
	if *src != "" && (*inputs != "" || fs.Changed("src-len") || fs.Changed("seed")) {
		return &usageError{"--src decodes the file's own sentences: drop --inputs, --src-len and --seed"}
	}
	switch {
	case fs.NArg() > 0:
		return &usageError{"unexpected arguments: " + strings.Join(fs.Args(), " ")}
	case *model == "":
		return &usageError{"missing --model DIR"}
	case *ckpt == "" && *encoder == "" && *decoder == "":
		return &usageError{"missing --checkpoint CKPT (or --encoder ENC --decoder DEC)"}
	case *steps < 1:
		return &usageError{fmt.Sprintf("--steps must be at least 1, got %d", *steps)}
	case *batch < 1:
		return &usageError{fmt.Sprintf("--batch must be at least 1, got %d", *batch)}
	case *srcLen < 1:
		return &usageError{fmt.Sprintf("--src-len must be at least 1, got %d", *srcLen)}
	case !(*minAgreement > 0 && *minAgreement <= 1):
		return &usageError{fmt.Sprintf("--min-agreement must be a fraction in (0, 1], got %v", *minAgreement)}
	case (fs.Changed("length-penalty") || fs.Changed("rules") || fs.Changed("n-best")) && !fs.Changed("beam"):
		return &usageError{"--length-penalty, --rules and --n-best are beam search's: give --beam K too"}
	case *rules != "" && *rules != translate.RulesSpec && *rules != translate.RulesOpenNMT && *rules != translate.RulesJoeyNMT && *rules != translate.RulesFairseq:
		return &usageError{fmt.Sprintf("--rules %q: want %s", *rules, translate.RulesList())}
	case *nBest < 0 || *nBest > *beam:
		return &usageError{fmt.Sprintf("--n-best %d: want 1 to --beam %d (0: all of them)", *nBest, *beam)}
	case fs.Changed("beam") && *torchModule != "":
		return &usageError{"--beam compares with attnx's reference, not with --torch-module: drop one of them"}
	case fs.Changed("beam"):
		if err := checkBeamFlags(*beam, 1, *alpha); err != nil {
			return err
		}
	}

	if *torchModule != "" {
		if _, err := os.Stat(*torchModule); err != nil {
			return fmt.Errorf("--torch-module: %w", err)
		}
	}
	info, err := readModelDir(*model)
	if err != nil {
		return err
	}
	if info.Weights.Reduced() && *beam > 0 {
		return &usageError{fmt.Sprintf("--beam: %s has %s weights, whose beam search cannot meet the float32 tolerance; verify compares its greedy decoding (drop --beam)", *model, info.Weights)}
	}
	if *src != "" && !info.Weights.Reduced() {
		// --src checks what translate does with the file: the model's
		// own decoding, resolved as translate resolves it, beam search
		// and the hypotheses it keeps included (OpenNMT-py's search stops
		// sooner for one than for K).
		var given translate.Options
		if fs.Changed("beam") {
			given.Beam = *beam
		}
		if fs.Changed("n-best") {
			given.NBest = *nBest
		}
		if fs.Changed("length-penalty") {
			given.LengthPenalty = alpha
		}
		given.Rules = *rules
		r := translate.ResolveDecoding(given, info.Defaults)
		if r.Beam > 1 {
			*beam = r.Beam
			if !fs.Changed("n-best") {
				*nBest = max(r.NBest, 1)
			}
		}
		if r.LengthPenalty != nil {
			*alpha = *r.LengthPenalty
		}
	}
	if info.Weights.Reduced() && !fs.Changed("batch") {
		// Agreement is a rate: two sentences cannot measure it.
		*batch = reducedBatch
	}
	files := checkpoint.Files{Path: *ckpt, Encoder: *encoder, Decoder: *decoder}
	if err := files.Check(); err != nil {
		return &usageError{err.Error()}
	}
	if err := checkBackend(*backend, ""); err != nil {
		return err
	}
	opt := verify.Options{ModelDir: *model, Info: info, Checkpoint: files, Maps: maps, Inputs: *inputs, Batch: *batch, SrcLen: *srcLen, Seed: *seed,
		Reference: referenceRunner, Rows: *verbose || *asJSON, TorchModule: *torchModule, MinAgreement: *minAgreement,
		Beam: *beam, LengthPenalty: *alpha, Backend: *backend}
	opt.Search, opt.LengthPenalty = verify.ModelBeamSearch(info, *rules, *nBest, *alpha, fs.Changed("length-penalty"))
	if fs.Changed("steps") || *inputs == "" {
		opt.Steps = *steps
	}
	if *src != "" {
		sv := srcVerify{src: *src, refs: *refs, chunk: *batch}
		if !fs.Changed("batch") {
			sv.chunk = 64
		}
		if fs.Changed("steps") {
			sv.steps = *steps
		}
		return runVerifySrc(opt, sv, *asJSON)
	}
	stages := 4
	if *beam > 0 {
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
	if *asJSON {
		if err := writeJSON(stdout, out); err != nil {
			return err
		}
	} else {
		out.WriteText(stdout, *verbose)
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
