package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/attnx/attnx/joeytest"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// joeyTestSummary is `attnx test`'s line in attnx help.
const joeyTestSummary = "do what `joeynmt test config.yaml` does: decode the config's dev and test sets, score them with its eval_metrics, write its output files and log its lines"

func init() {
	commandDocs["test"] = `
CONFIG is the JoeyNMT config.yaml joeynmt test would read; DIR is what
attnx export wrote from its model_dir's best.ckpt (the config's
load_model is not read: the export is the model). As joeynmt test does,
attnx test reads data.dev and data.test ({path}.{src lang} and, when it
exists, {path}.{trg lang}; relative paths from the working directory),
drops each file's empty lines, refuses a line of white space only, and
decodes each set in the testing section's batches (batch_size sentences,
or batch_type token: sentences x the longest of source and reference + 1)
with its beam_size, beam_alpha, n_best, max_output_length (-1: 1.5 x the
batch's longest source), generate_unk, repetition_penalty and
no_repeat_ngram_size. With references it scores the best hypotheses with
eval_metrics (bleu and chrf as sacreBLEU 2.6 computes them, with
sacrebleu_cfg's keys; token_accuracy; sequence_accuracy). The log lines are
JoeyNMT's (Decoding on, Predicting, Generation took, the sacreBLEU
signatures, Evaluation result, Translations saved to), on stderr; with -o
the translations go to PATH.dev and PATH.test (PATH-0..dev, PATH-1..dev,
... with n_best > 1, as JoeyNMT names them). docs/joeytest.md lists what
it refuses (return_prob ref, normalize, a moses pretokenizer, tsv and
Hugging Face datasets) and where its lines differ (timings; sacreBLEU's
version field says 2.6.0-attnx).

Exit status: 0 when both sets were decoded (and written), 1 on a failure,
2 for usage errors.`
}

// runJoeyTest is `attnx test CONFIG --model DIR [-o PATH]`: joeynmt test's
// command line (its --output-path), with the attnx export of the
// config's model.
func runJoeyTest(args []string) error {
	fs := newFlagSet("test")
	model := fs.String("model", "", "the model `DIR` attnx export wrote from the config's checkpoint (default: the config's model_dir, when attnx.json is there)")
	output := fs.StringP("output-path", "o", "", "write each set's translations to `PATH`.dev and PATH.test, as joeynmt test -o names them (PATH-0..dev ... with n_best > 1); without it nothing is written")
	logFile := fs.String("log", "", "append the log lines to `FILE` too (joeynmt test appends them to model_dir/test.log)")
	backend := backendFlag(fs)
	threads := fs.Int("threads", 0, "intra-op threads (0: the backend's default)")
	// joeynmt test's other flags, answered instead of "unknown flag".
	saveAttention := fs.BoolP("save-attention", "a", false, "not supported: attnx test writes no attention plots (attnx translate --json gives the attention)")
	saveScores := fs.BoolP("save-scores", "s", false, "not supported: attnx test writes no .scores and .tokens files (attnx translate --json gives the scores)")
	useDDP := fs.BoolP("use-ddp", "d", false, "not supported: JoeyNMT's test refuses DDP too")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{*saveAttention, "save-attention"}, {*saveScores, "save-scores"}, {*useDDP, "use-ddp"}} {
		if f.set {
			return &usageError{fmt.Sprintf("--%s is %s", f.name, fs.Lookup(f.name).Usage)}
		}
	}
	if fs.NArg() != 1 {
		return &usageError{fmt.Sprintf("one JoeyNMT config.yaml expected, got %d arguments", fs.NArg())}
	}
	if err := checkBackend(*backend, ""); err != nil {
		return err
	}
	if *threads < 0 {
		return &usageError{fmt.Sprintf("--threads %d: want 0 or more", *threads)}
	}
	cfg, err := joeytest.ReadConfig(fs.Arg(0))
	if err != nil {
		return err
	}
	dir := *model
	if dir == "" {
		if _, err := os.Stat(filepath.Join(cfg.ModelDir, modeldir.InfoFile)); err != nil {
			return &usageError{fmt.Sprintf("--model DIR is required: the config's model_dir %q holds no attnx export (%s); export its best.ckpt with `attnx export %s -o DIR`", cfg.ModelDir, modeldir.InfoFile, filepath.Join(cfg.ModelDir, "best.ckpt"))}
		}
		dir = cfg.ModelDir
	}
	log := stderr
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		defer f.Close()
		log = teeWriter{stderr, f}
	}
	_, err = joeytest.Run(context.Background(), dir, translate.Options{Backend: *backend, Threads: *threads}, cfg,
		joeytest.Options{OutputPath: *output, Log: log})
	if err != nil {
		return translateCLIError(err)
	}
	return nil
}

// teeWriter writes to both writers, the first's error first.
type teeWriter [2]interface{ Write([]byte) (int, error) }

func (t teeWriter) Write(p []byte) (int, error) {
	n, err := t[0].Write(p)
	if err != nil {
		return n, err
	}
	return t[1].Write(p)
}
