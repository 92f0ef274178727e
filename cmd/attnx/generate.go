package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/attnx/attnx/fairseqdata"
	"github.com/attnx/attnx/fairseqgen"
	"github.com/attnx/attnx/translate"
	"github.com/spf13/pflag"
)

// generateSummary is `attnx generate`'s line in attnx help.
const generateSummary = "decode a fairseq data-bin split as fairseq-generate does (S-, T-, H-, D-, P- lines, its BLEU line)"

// runGenerate is `attnx generate DATA-BIN --model DIR`: fairseq-generate's
// flags, by its names, mapped to fairseqgen.Options and translate.Options.
func runGenerate(args []string) error {
	fs := newFlagSet("generate")
	model := fs.String("model", "", "the model `DIR` attnx export wrote from the fairseq checkpoint (fairseq-generate's --path)")
	subset := fs.String("gen-subset", "test", "the `SPLIT` to decode")
	seed := fs.Uint32("seed", 1, "the seed of numpy's generator with which fairseq shuffles a split other than test before sorting it")
	srcLang := fs.StringP("source-lang", "s", "", "source language (default: from the data-bin's file names)")
	tgtLang := fs.StringP("target-lang", "t", "", "target language (default: from the data-bin's file names)")
	impl := fs.String("dataset-impl", "", "the split's format: mmap, lazy, cached or raw (default: as fairseq infers it from the files)")
	maxTokens := fs.Int("max-tokens", 0, "at most `N` tokens in a batch (sentences x the longest), as fairseq batches (0: no bound)")
	batchSize := fs.Int("batch-size", 0, "at most `N` sentences in a batch (0: no bound)")
	fs.IntVar(batchSize, "max-sentences", 0, "the same as --batch-size")
	multiple := fs.Int("required-batch-size-multiple", 8, "batches are cut at a size below `N` or a multiple of it, as fairseq's")
	beam := fs.Int("beam", 5, "beam size")
	nbest := fs.Int("nbest", 1, "hypotheses printed per sentence")
	fs.Float64("lenpen", 1, "length penalty: scores divided by length**lenpen")
	fs.Float64("unkpen", 0, "unknown-word penalty")
	fs.Float64("max-len-a", 0, "output limit a x (the batch's longest source) + b")
	fs.Int("max-len-b", 200, "output limit a x (the batch's longest source) + b")
	fs.Int("min-len", 1, "shortest output, </s> excluded")
	fs.Float64("temperature", 1, "divide the logits by T")
	fs.Bool("match-source-len", false, "each output exactly as long as its source (LengthConstrainedBeamSearch)")
	fs.Int("diverse-beam-groups", -1, "diverse beam search with `G` groups (G divides --beam; -1: none)")
	fs.Float64("diverse-beam-strength", 0.5, "with --diverse-beam-groups: the penalty per earlier group's choice of a token")
	fs.Float64("diversity-rate", -1, "above -1: diverse siblings search, each hypothesis' j-th best continuation less j x `R`")
	postProcess := fs.String("post-process", "", "remove the subword `SYMBOL`s from the printed lines and score without them: subword_nmt, \"@@ \", sentencepiece, ...")
	fs.StringVar(postProcess, "remove-bpe", "", "the same as --post-process (alone: subword_nmt)")
	fs.Lookup("remove-bpe").NoOptDefVal = "subword_nmt"
	fs.Lookup("post-process").NoOptDefVal = "subword_nmt"
	bpe := fs.String("bpe", "", "the data's subword `KIND` (subword_nmt or sentencepiece), undone on the S-, T- and D- lines as fairseq's decode_fn does")
	tokenizer := fs.String("tokenizer", "", "the data's `TOKENIZER` (moses), undone on the S-, T- and D- lines by the target language's detokenizer")
	fs.String("bpe-codes", "", "accepted for fairseq-generate's command lines: undoing subword_nmt needs no codes")
	quiet := fs.Bool("quiet", false, "print only the BLEU line")
	printAlignment := fs.String("print-alignment", "", "after each hypothesis an A- line of its alignment to the source from the search's attention: hard (alone: source-target position pairs, </s> left out) or soft (the attention rows)")
	fs.Lookup("print-alignment").NoOptDefVal = fairseqgen.AlignHard
	scoreRef := fs.Bool("score-reference", false, "no search: score each reference by teacher forcing and print it as the hypothesis (H-/D- its mean log-prob per token in base 2, P- its tokens'), as fairseq-generate --score-reference")
	prefixSize := fs.Int("prefix-size", 0, "force each sentence's first `N` reference tokens as the start of its hypotheses, their log-probs in the score, as fairseq-generate --prefix-size")
	scoring := fs.String("scoring", fairseqgen.ScoringBLEU, "bleu (fairseq's BLEU of token ids) or sacrebleu (sacreBLEU's of the 13a-tokenized lines)")
	args = joinOptional(args, "--print-alignment", fairseqgen.AlignHard, fairseqgen.AlignSoft)
	for _, f := range []string{"--remove-bpe", "--post-process"} {
		args = joinOptional(args, f, postProcessNames...)
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case fs.NArg() != 1:
		return &usageError{fmt.Sprintf("one DATA-BIN directory expected, got %d", fs.NArg())}
	case *model == "":
		return &usageError{"--model DIR is required: the directory `attnx export checkpoint_best.pt -o DIR` wrote"}
	case *nbest < 1 || *nbest > *beam:
		return &usageError{fmt.Sprintf("--nbest %d with --beam %d: want 1 <= nbest <= beam", *nbest, *beam)}
	case *scoring != fairseqgen.ScoringBLEU && *scoring != fairseqgen.ScoringSacreBLEU:
		return &usageError{fmt.Sprintf("--scoring %q: want bleu or sacrebleu", *scoring)}
	case *impl != "" && !strings.Contains(","+strings.Join(fairseqdata.Impls, ",")+",", ","+*impl+","):
		return &usageError{fmt.Sprintf("--dataset-impl %q: want one of %s", *impl, strings.Join(fairseqdata.Impls, ", "))}
	case *prefixSize < 0:
		return &usageError{fmt.Sprintf("--prefix-size %d: want 0 or more", *prefixSize)}
	case *maxTokens < 0 || *batchSize < 0 || *multiple < 1:
		return &usageError{"--max-tokens and --batch-size must not be negative, --required-batch-size-multiple at least 1"}
	}
	if err := checkGenerateValues(*bpe, *printAlignment, *tokenizer, *postProcess); err != nil {
		return err
	}
	topt := generateOptions(fs, *beam, *nbest)
	tr, err := translate.Open(*model, topt)
	if err != nil {
		return generateOptionError(err)
	}
	defer tr.Close()
	// The lines are held until the split is done, so that an error part
	// way (a batch the search refuses) leaves no half-written output.
	var w bytes.Buffer
	start := time.Now()
	sum, err := fairseqgen.Generate(context.Background(), tr, fs.Arg(0), fairseqgen.Options{
		Subset: *subset, Seed: seed, SrcLang: *srcLang, TgtLang: *tgtLang, DatasetImpl: *impl,
		MaxTokens: *maxTokens, BatchSize: *batchSize, Multiple: *multiple,
		NBest: *nbest, PostProcess: *postProcess, BPE: *bpe, Tokenizer: *tokenizer, Quiet: *quiet, Scoring: *scoring, Beam: *beam,
		PrintAlignment: *printAlignment, ScoreReference: *scoreRef, PrefixSize: *prefixSize,
	}, &w)
	if err != nil {
		return err
	}
	if _, err := w.WriteTo(stdout); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	fmt.Fprintf(stderr, "attnx generate: %s %s-%s (%s): translated %d sentences (%d tokens) in %d batches in %.1fs (%.2f sentences/s)\n",
		*subset, sum.SrcLang, sum.TgtLang, sum.Impl, sum.Sentences, sum.Tokens, sum.Batches, secs, float64(sum.Sentences)/secs)
	return nil
}

// checkGenerateValues refuses the values of generate's flags that name
// one of a few choices, naming the flag and the choices.
func checkGenerateValues(bpe, printAlignment, tokenizer, postProcess string) error {
	if bpe != "" && bpe != "subword_nmt" && bpe != "sentencepiece" {
		return &usageError{fmt.Sprintf("--bpe %q: want subword_nmt or sentencepiece", bpe)}
	}
	if printAlignment != "" && printAlignment != fairseqgen.AlignHard && printAlignment != fairseqgen.AlignSoft {
		return &usageError{fmt.Sprintf("--print-alignment %q: want hard or soft", printAlignment)}
	}
	if tokenizer != "" && tokenizer != "moses" {
		return &usageError{fmt.Sprintf("--tokenizer %q: want moses", tokenizer)}
	}
	if _, err := fairseqdata.PostProcess("", postProcess); err != nil {
		return &usageError{strings.TrimPrefix(err.Error(), "fairseqdata: ")}
	}
	return nil
}

// generateOptions are the translate.Options of generate's search flags:
// beam and nbest always, the others only where given, so that the model's
// fairseq defaults hold otherwise.
func generateOptions(fs *pflag.FlagSet, beam, nbest int) translate.Options {
	topt := translate.Options{Beam: beam, NBest: nbest}
	float := func(name string) float64 { v, _ := fs.GetFloat64(name); return v }
	integer := func(name string) int { v, _ := fs.GetInt(name); return v }
	if fs.Changed("lenpen") {
		v := float("lenpen")
		topt.LengthPenalty = &v
	}
	if fs.Changed("unkpen") {
		topt.UnkPenalty = float("unkpen")
	}
	if fs.Changed("max-len-a") {
		topt.MaxLenA = float("max-len-a")
	}
	if fs.Changed("max-len-b") {
		topt.MaxLen = integer("max-len-b") + 1 // attnx's limit counts </s>
	}
	if fs.Changed("min-len") {
		topt.MinLen = integer("min-len")
	}
	if fs.Changed("temperature") {
		topt.Temperature = float("temperature")
	}
	fairseqSearches(fs, &topt)
	return topt
}

// generateFlags are generate's flags for translate.Options' fields, by
// fairseq's names, for its refusals.
var generateFlags = map[string]string{"Beam": "--beam", "NBest": "--nbest", "LengthPenalty": "--lenpen", "UnkPenalty": "--unkpen",
	"MaxLenA": "--max-len-a", "MinLen": "--min-len", "Temperature": "--temperature", "MatchSourceLen": "--match-source-len",
	"DiverseBeamGroups": "--diverse-beam-groups", "DiverseBeamStrength": "--diverse-beam-strength", "DiversityRate": "--diversity-rate"}

// generateOptionError words a refusal of generate's settings with its
// flags (translate's names its Options fields); other errors as translate
// words them.
func generateOptionError(err error) error {
	var req *translate.RequestError
	var lacks *translate.RulesError
	if errors.As(err, &req) && req.Row < 0 || errors.As(err, &lacks) {
		return &usageError{translate.OptionNames(err.Error(), func(o translate.DecodingOption) string { return generateFlags[o.Go] })}
	}
	return translateCLIError(err)
}

// fairseqSearches sets topt's search as fairseq's build_generator picks
// it from --match-source-len, --diverse-beam-groups (with
// --diverse-beam-strength) and --diversity-rate: a rate from -1 to 0
// alongside another of them gives way to it, as there; a rate above 0
// with another is refused (translate's check: fairseq's "mutually
// exclusive").
func fairseqSearches(fs *pflag.FlagSet, topt *translate.Options) {
	topt.MatchSourceLen, _ = fs.GetBool("match-source-len")
	if g, _ := fs.GetInt("diverse-beam-groups"); g > 0 {
		s, _ := fs.GetFloat64("diverse-beam-strength")
		topt.DiverseBeamGroups, topt.DiverseBeamStrength = g, &s
	}
	if r, _ := fs.GetFloat64("diversity-rate"); r > 0 || r > -1 && !topt.MatchSourceLen && topt.DiverseBeamGroups == 0 {
		topt.DiversityRate = &r
	}
}

// postProcessNames are the values of fairseq's --remove-bpe/--post-process
// that its post_process names (fairseq/data/data_utils.py), the ones
// joinOptional takes from the next argument as argparse's nargs="?" does:
// "--remove-bpe sentencepiece" is that symbol, not a second DATA-BIN.
var postProcessNames = []string{"subword_nmt", "@@ ", "@@", "sentencepiece", "wordpiece", "letter", "silence", "_EOW"}

// joinOptional writes "FLAG VALUE" as "FLAG=VALUE" where VALUE is one of
// values: fairseq's argparse takes an optional value (nargs="?") from the
// next argument, where pflag's NoOptDefVal takes it only after "=".
func joinOptional(args []string, flag string, values ...string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		if args[i] == "--" {
			return append(out, args[i:]...)
		}
		if args[i] == flag && i+1 < len(args) && slices.Contains(values, args[i+1]) {
			out = append(out, flag+"="+args[i+1])
			i++
			continue
		}
		out = append(out, args[i])
	}
	return out
}
