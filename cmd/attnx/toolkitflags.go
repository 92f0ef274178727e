package main

import (
	"strings"

	"github.com/spf13/pflag"
)

// toolkitFlags maps the spellings of fairseq's, OpenNMT-py's and
// JoeyNMT's translate options (underscores and dashes folded, without
// leading dashes) to what attnx says instead: the attnx flag that does it,
// or that attnx does it by default. A user who types their toolkit's
// flag gets the answer, not a bare "unknown flag".
var toolkitFlags = map[string]string{
	"nbest":           "--n-best (fairseq's --nbest)",
	"n-best":          "--n-best",
	"beam-size":       "--beam (fairseq's and OpenNMT-py's beam size)",
	"lenpen":          "--length-penalty (fairseq's --lenpen, under the model's fairseq rules)",
	"alpha":           "--length-penalty (OpenNMT-py's -alpha)",
	"length-penalty":  "--length-penalty-form (OpenNMT-py's -length_penalty none|avg|wu) with --length-penalty for -alpha",
	"unkpen":          "--unk-penalty (fairseq's --unkpen)",
	"max-len-b":       "--max-len-b",
	"max-length":      "--max-len (OpenNMT-py's -max_length)",
	"min-length":      "--min-len (OpenNMT-py's -min_length)",
	"max-len-ratio":   "--max-len-ratio",
	"replace-unk":     "--replace-unk",
	"batch-size":      "--batch (with --src also the toolkit's batch size)",
	"batch-type":      "--batch-tokens N (OpenNMT-py's -batch_type tokens with -batch_size N)",
	"remove-bpe":      "default: the model's subword pieces are joined and the text detokenized as the toolkit's --remove-bpe / --bpe would",
	"bpe":             "default: attnx export finds the model's BPE codes (--tokenizer FILE when it does not)",
	"tokenizer":       "default: attnx export reads the model's tokenizer settings from the checkpoint",
	"ban-unk-token":   "--ban-unk (OpenNMT-py's -ban_unk_token)",
	"block-ngram":     "--block-ngram-repeat",
	"random-sampling": "--sampling (with --rules opennmt: OpenNMT-py's -random_sampling_topk/-topp)",
	"sampling":        "--sampling",
	"gpu":             "--device cuda",
	"cpu":             "--device cpu (the default)",
	"model":           "--model DIR (a directory attnx export wrote, not the checkpoint)",
	"path":            "--model DIR (a directory attnx export wrote from the checkpoint)",
	"output":          "--output (with --src)",
	"src":             "--src",
	"input":           "--src FILE (or - for standard input)",
	"verbose":         "--json (every result with its tokens and scores)",
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
