package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/attnx/attnx/translate"
)

// toolkitFlags maps the spellings of fairseq's, OpenNMT-py's and
// JoeyNMT's translate options (underscores and dashes folded, without
// leading dashes) to what attnx says instead: the attnx flag that does it,
// or that attnx does it by default. A user who types their toolkit's
// flag gets the answer, not a bare "unknown flag".
var toolkitFlags = map[string]string{
	"nbest":                "--n-best (fairseq's --nbest)",
	"n-best":               "--n-best",
	"beam-size":            "--beam (fairseq's and OpenNMT-py's beam size)",
	"lenpen":               "--length-penalty (fairseq's --lenpen, under the model's fairseq rules)",
	"alpha":                "--length-penalty (OpenNMT-py's -alpha)",
	"length-penalty":       "--length-penalty-form (OpenNMT-py's -length_penalty none|avg|wu) with --length-penalty for -alpha",
	"unkpen":               "--unk-penalty (fairseq's --unkpen)",
	"max-len-b":            "--max-len-b",
	"max-length":           "--max-len (OpenNMT-py's -max_length)",
	"min-length":           "--min-len (OpenNMT-py's -min_length)",
	"max-len-ratio":        "--max-len-ratio",
	"replace-unk":          "--replace-unk",
	"batch-size":           "--batch (with --src also the toolkit's batch size)",
	"batch-type":           "--batch-tokens N (OpenNMT-py's -batch_type tokens with -batch_size N)",
	"remove-bpe":           "default: the model's subword pieces are joined and the text detokenized as the toolkit's --remove-bpe / --bpe would",
	"bpe":                  "default: attnx export finds the model's BPE codes (--tokenizer FILE when it does not)",
	"tokenizer":            "default: attnx export reads the model's tokenizer settings from the checkpoint",
	"ban-unk-token":        "--ban-unk (OpenNMT-py's -ban_unk_token)",
	"block-ngram":          "--block-ngram-repeat",
	"random-sampling-topk": "--sampling --sampling-topk K (with --rules opennmt: OpenNMT-py's -random_sampling_topk K; its -1, the whole distribution, is --sampling alone)",
	"random-sampling-topp": "--sampling --sampling-topp P (with --rules opennmt: OpenNMT-py's -random_sampling_topp)",
	"random-sampling-temp": "--sampling --temperature T (with --rules opennmt: OpenNMT-py's -random_sampling_temp)",
	"max-length-ratio":     "--max-len-ratio (OpenNMT-py's -max_length_ratio)",
	"no-repeat-ngram-size": "--no-repeat-ngram (JoeyNMT's no_repeat_ngram_size, with --rules spec or joeynmt; fairseq 0.12.2's --no-repeat-ngram-size blocks nothing on a CPU, so fairseq's rules refuse it)",
	"max-sentences":        "--batch (fairseq's --max-sentences, its --batch-size)",
	"post-process":         "default: the model's subword pieces are joined and the text detokenized as fairseq's --post-process would",
	"unnormalized":         "--length-penalty 0 (fairseq's --unnormalized: hypotheses ranked by their raw scores)",
	"tgt-file-prefix":      "--tgt-prefix FILE with --src FILE (OpenNMT-py 3.5.1's -tgt FILE -tgt_file_prefix; 2.3.0's -tgt FILE -tgt_prefix is --tgt-prefix FILE too)",
	"tgt":                  "--tgt FILE with --src FILE (OpenNMT-py's -tgt: each reference's gold score; --format onmt prints its GOLD lines)",
	"attn-debug":           "--json --attention (each output token's attention over the source; OpenNMT-py's -attn_debug), or --plot FILE.png",
	"report-time":          "default: with --src a final line on stderr gives the time, sentences/s and tokens/s (OpenNMT-py's -report_time)",
	"sampling":             "--sampling",
	"gpu":                  "--device cuda",
	"cpu":                  "--device cpu (the default)",
	"model":                "--model DIR (a directory attnx export wrote, not the checkpoint)",
	"path":                 "--model DIR (a directory attnx export wrote from the checkpoint)",
	"output":               "--output (with --src)",
	"src":                  "--src",
	"input":                "--src FILE (or - for standard input)",
	"verbose":              "--json (every result with its tokens and scores)",
}

// toolkitFlagHint returns what to use instead of an unknown flag spelled
// as a toolkit spells it ("" when it is no toolkit's); the flag's name is
// as the user typed it, dashes included.
func toolkitFlagHint(fs *pflag.FlagSet, typed string) string {
	name := strings.TrimLeft(typed, "-")
	name, _, _ = strings.Cut(name, "=")
	key := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	if f := fs.Lookup(key); f != nil && key != name {
		return "--" + key // the same flag, spelled with dashes
	}
	hint, ok := toolkitFlags[key]
	if !ok {
		return ""
	}
	if strings.HasPrefix(hint, "--") {
		// Only a flag this command has.
		flag, _, _ := strings.Cut(strings.TrimPrefix(hint, "--"), " ")
		if fs.Lookup(flag) == nil {
			return ""
		}
	}
	return hint
}

// modelFlag is translate's --model: a model directory, repeatable. Each
// --model adds a member of an ensemble (OpenNMT-py's -model A B, fairseq's
// --path A:B), where a string flag would silently keep the last; dir is
// the first.
type modelFlag struct {
	dir  string
	dirs []string
}

func (f *modelFlag) String() string { return f.dir }

// Type names the value in the help, as pflag.Value requires.
func (f *modelFlag) Type() string { return "string" }

func (f *modelFlag) Set(s string) error {
	if slices.Contains(f.dirs, s) {
		return fmt.Errorf("%s is given twice: each --model adds a member of an ensemble", s)
	}
	if len(f.dirs) == 0 {
		f.dir = s
	}
	f.dirs = append(f.dirs, s)
	return nil
}

// checkModelArgs refuses OpenNMT-py's spelling of an ensemble, -model A B:
// attnx's --model takes one directory (an ensemble repeats it), and B
// would be translated as a sentence. B counts as a model when it names a file or directory, or a
// checkpoint (.pt); text that does so goes after --.
func checkModelArgs(args []string) error {
	for i, a := range args {
		if a == "--" {
			return nil
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || name != "model" {
			continue
		}
		next := i + 1
		if !hasValue {
			value, next = "", i+2
			if i+1 < len(args) {
				value = args[i+1]
			}
		}
		if next >= len(args) || strings.HasPrefix(args[next], "-") {
			continue
		}
		b := args[next]
		if _, err := os.Stat(b); err == nil || strings.HasSuffix(b, ".pt") {
			typed, _, _ := strings.Cut(a, "=")
			return &usageError{fmt.Sprintf("%s %s %s: attnx's is --model DIR, one model directory (OpenNMT-py's ensemble -model A B is --model A --model B); %q would be translated as a sentence: give each model its own --model, and text that names a file after --", typed, value, b, b)}
		}
	}
	return nil
}

// openTranslateModels opens translate's --model: one directory, or the
// ensemble of several (--avg-raw-probs choosing OpenNMT-py's other rule).
func openTranslateModels(f *translateFlags, topt translate.Options) (*translate.Translator, error) {
	dirs := f.modelDir.dirs
	if len(dirs) < 2 {
		if *f.avgRawProbs {
			return nil, &usageError{"--avg-raw-probs combines the members of an ensemble: give several --model"}
		}
		return translate.Open(*f.model, topt)
	}
	tr, err := translate.OpenEnsemble(dirs, topt, translate.EnsembleOptions{AvgRawProbs: *f.avgRawProbs})
	var bad *translate.RequestError
	if errors.As(err, &bad) && bad.Field == "AvgRawProbs" {
		return nil, &usageError{strings.ReplaceAll(strings.TrimPrefix(err.Error(), "translate: "), "AvgRawProbs", "--avg-raw-probs")}
	}
	return tr, err
}
