package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/attnx/attnx/decode"
	"math"
	"path/filepath"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/internal/heatmap"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/shard"
	"github.com/attnx/attnx/translate"
	"github.com/spf13/pflag"
)

// translateIDsFlag collects --ids values.
type translateIDsFlag [][]int64

func (f *translateIDsFlag) String() string { return "" }

// Type names the value in the help, as pflag.Value requires.
func (f *translateIDsFlag) Type() string { return "ids" }

func (f *translateIDsFlag) Set(s string) error {
	ids, err := translate.ParseIDs(s)
	if err != nil {
		return err
	}
	*f = append(*f, ids)
	return nil
}

// translateFlags are translate's flags.
type translateFlags struct {
	fs             *pflag.FlagSet
	modelDir       modelFlag
	model          *string
	avgRawProbs    *bool
	ids            translateIDsFlag
	batch          *int
	maxLen         *int
	maxLenRatio    *float64
	replaceUnk     *bool
	unkDict        unkDictFlags
	minLen         *int
	maxSrc         *int
	jsonOut        *bool
	withAttention  *bool
	plain          *bool
	plotPath       *string
	device         *string
	backend        *string
	threads        *int
	engine         *string
	format         *string
	withScore      *bool
	pretok         *bool
	unk            *bool
	beam           *int
	nBest          *int
	alpha          *float64
	penaltyForm    *string
	rules          *string
	unkPen         *float64
	maxLenB        *int
	maxLenA        *float64
	sampling       *bool
	samplingTopK   *int
	samplingTopP   *float64
	fsearch        fairseqSearchFlags
	seed           *uint64
	temperature    *float64
	banUNK         *bool
	blockNgram     *int
	noRepeat       *int
	repPenalty     *float64
	covPen         *string
	beta           *float64
	stepwise       *bool
	ratio          *float64
	ignoreBlocking *[]string
	src            *string
	tgt            *string
	tgtPrefix      *string
	output         *string
	batchTokens    *int
	lanes          *int
	shardFlag      *string
}

func newTranslateFlags() *translateFlags {
	f := &translateFlags{}
	fs := newFlagSet("translate")
	f.fs = fs
	fs.Var(&f.modelDir, "model", "model directory (`DIR` with attnx.json, encoder.onnx, decoder.onnx); repeated, an ensemble of the models (OpenNMT-py's -model A B, fairseq's --path A:B), whose first gives the defaults")
	f.model = &f.modelDir.dir
	f.avgRawProbs = fs.Bool("avg-raw-probs", false, "with several --model: combine the ensemble's members by the log of their mean probability (OpenNMT-py's -avg_raw_probs), not the mean of their log-probs")
	fs.Var(&f.ids, "ids", "translate these source token `ids` (\"5 9 2\"); repeatable")
	f.batch = fs.Int("batch", 32, "inputs decoded together; with --src also the toolkit's -batch_size, whose batches decide a toolkit model's output limits")
	f.maxLen = fs.Int("max-len", 0, "most output tokens per input, EOS included (0: the model's limit, else 2n+10 for n source tokens); OpenNMT-py's -max_length, JoeyNMT's max_output_length")
	f.maxLenRatio = fs.Float64("max-len-ratio", 0, "OpenNMT-py's -max_length_ratio `R`: at most min(--max-len or 250, R x n + 5) output tokens, n the longest source of the sentence's onmt_translate batch (0: --max-len or 250 alone)")
	f.replaceUnk = fs.Bool("replace-unk", false, "replace each <unk> of the output with the source token it attends to most (OpenNMT-py's -replace_unk)")
	f.unkDict.add(fs)
	f.minLen = fs.Int("min-len", 0, "no EOS before this many output tokens (OpenNMT-py's -min_length, JoeyNMT's min_output_length; runs on the steps engine)")
	f.maxSrc = fs.Int("max-src-len", 0, "refuse inputs of more than this many source tokens (0: no limit)")
	f.jsonOut = fs.Bool("json", false, "write one JSON object per input")
	f.withAttention = fs.Bool("attention", false, "with --json: include each result's attention (one row per output token)")
	f.plain = fs.Bool("plain", false, "write the translations alone, one line per input (--n-best N: N lines), as --src does: for attnx score")
	f.plotPath = fs.String("plot", "", "draw attention heat maps to `FILE.png` (numbered per input when there are several)")
	f.device = fs.String("device", "cpu", "cpu, cuda or auto (CUDA, else CPU)")
	f.backend = backendFlag(fs)
	f.threads = fs.Int("threads", 0, "intra-op threads (0: one per core)")
	f.engine = fs.String("engine", "", "steps (encoder + one decoder run per step) or loop (greedy.onnx, or beam.onnx with --beam > 1); default loop when greedy.onnx exists and --beam is 1")
	f.format = fs.String("format", formatPlain, "with --src: plain (a line per sentence, or --n-best lines), fairseq (fairseq-interactive's S-, H-, D- and P- lines, scores in base 2 as fairseq prints them; with fairseq's rules) or onmt (onmt_translate -verbose's SENT, PRED and PRED SCORE, and BEST HYP with --n-best)")
	f.withScore = fs.Bool("with-score", false, "with --src: each line (each of --n-best's) ends with a tab and its score, the normalized score in natural log, as onmt_translate -with_score writes it")
	f.pretok = fs.Bool("pretokenized", false, "the inputs are the model's source pieces already, separated by spaces (a test set segmented by the toolkit's scripts, as fairseq-interactive without --bpe reads it): the model's tokenizer is not run")
	f.unk = fs.Bool("unk", false, "map characters or words outside the source vocabulary to <unk> instead of failing")
	f.beam = fs.Int("beam", 1, "beam search of width `K` (1: greedy decoding)")
	f.nBest = fs.Int("n-best", 1, "list the best `N` hypotheses of each input (1 <= N <= --beam)")
	f.alpha = fs.Float64("length-penalty", translate.DefaultLengthPenalty, "beam search ranks by score / length ** `A` (A >= 0; 0: raw log-probability)")
	f.penaltyForm = fs.String("length-penalty-form", "power", "beam search's normalisation: power (score / len ** A) or wu (score / ((5 + len) / 6) ** A: OpenNMT-py's -length_penalty wu, JoeyNMT's beam_alpha; steps engine); with --rules opennmt, OpenNMT-py's none, avg (the default there) or wu")
	f.rules = fs.String("rules", translate.RulesSpec, "beam search's rules: spec (attnx's: K hypotheses until K have finished), opennmt (onmt_translate's BeamSearch: finished candidates take beam slots, a row stops when its best candidate finishes), joeynmt (JoeyNMT 2.3's: finished hypotheses stay in the beam, --length-penalty is beam_alpha) or fairseq (fairseq's SequenceGenerator, greedy included: 2K candidates, K finished hypotheses end a row, --length-penalty is --lenpen); opennmt, joeynmt and fairseq on the steps engine")
	f.unkPen = fs.Float64("unk-penalty", 0, "with --rules fairseq: subtract `P` from the unknown token's log-prob at every step (fairseq's --unkpen)")
	f.maxLenB = fs.Int("max-len-b", 0, "fairseq's --max-len-b `B`: the same as --max-len B+1 (attnx's limit counts </s>, fairseq's does not)")
	f.maxLenA = fs.Float64("max-len-a", 0, "with --rules fairseq: at most int(`A` x n + b) + 1 output tokens, n the source's tokens with </s>, b = --max-len - 1 (fairseq's --max-len-a and --max-len-b; 0: --max-len alone)")
	f.sampling = fs.Bool("sampling", false, "with --rules fairseq or opennmt: each of the --beam hypotheses draws its tokens (fairseq's --sampling; onmt_translate's -random_sampling_topk -1, or with --sampling-topk/-topp its -random_sampling_topk/-topp); attnx's own draws, seeded by --seed: torch's cannot be reproduced")
	f.samplingTopK = fs.Int("sampling-topk", 0, "with --sampling: draw from the `K` most probable tokens (fairseq's --sampling-topk)")
	f.samplingTopP = fs.Float64("sampling-topp", 0, "with --sampling: draw from the most probable tokens up to cumulative probability `P` (fairseq's --sampling-topp)")
	f.fsearch.add(fs)
	f.seed = fs.Uint64("seed", 1, "with --sampling: the random seed (with each sentence's source: the same sentence draws the same samples in any batch)")
	f.temperature = fs.Float64("temperature", 0, "with --rules fairseq: divide the logits by `T` > 0 at every step (fairseq's --temperature; 0: none); with --rules opennmt --sampling: onmt_translate's -random_sampling_temp (0: its default 1)")
	f.banUNK = fs.Bool("ban-unk", false, "never output the unknown token (OpenNMT-py's -ban_unk_token, JoeyNMT's generate_unk: false; steps engine)")
	f.blockNgram = fs.Int("block-ngram-repeat", 0, "with --rules opennmt: no hypothesis repeats an n-gram of `N` tokens (OpenNMT-py's -block_ngram_repeat)")
	f.noRepeat = fs.Int("no-repeat-ngram", 0, "beam search: no hypothesis completes an n-gram of `N` tokens already in it or in its source (JoeyNMT's no_repeat_ngram_size; greedy decoding ignores it, as JoeyNMT's does)")
	f.repPenalty = fs.Float64("repetition-penalty", 0, "beam search: log-probs of tokens already in the hypothesis or the source times `P` (> 1; JoeyNMT's repetition_penalty; greedy decoding ignores it)")
	f.covPen = fs.String("coverage-penalty", "none", "with --rules opennmt: OpenNMT-py's -coverage_penalty: none, wu or summary (of each hypothesis' summed attention)")
	f.beta = fs.Float64("beta", 0, "with --coverage-penalty: its weight `B` (OpenNMT-py's -beta)")
	f.stepwise = fs.Bool("stepwise-penalty", false, "with --coverage-penalty: apply it at every step, not to finished hypotheses only (OpenNMT-py's -stepwise_penalty)")
	f.ratio = fs.Float64("ratio", 0, "with --rules opennmt: OpenNMT-py's -ratio `R`: a sentence may stop once its best candidate's score over R x its source length is no better than the best finished score per token (0: off)")
	f.ignoreBlocking = fs.StringSlice("ignore-when-blocking", nil, "with --block-ngram-repeat: n-grams holding one of these target `TOKENS` may repeat (OpenNMT-py's -ignore_when_blocking)")
	f.src = fs.String("src", "", "translate the test set in `FILE` (one sentence per line), sorted by length into batches; results in the file's order")
	f.tgt = fs.String("tgt", "", tgtFlagUsage)
	f.tgtPrefix = fs.String("tgt-prefix", "", tgtPrefixUsage)
	f.output = fs.String("output", "", "with --src: write the translations to `FILE` (one line per sentence, or --n-best lines; written in place when complete), not stdout")
	f.batchTokens = fs.Int("batch-tokens", 0, "with --src: cut batches by source tokens (sentences x longest <= `N`) instead of --batch sentences")
	f.lanes = fs.Int("lanes", 0, "with --src: batches decoded at the same time (0: one per core, each with --threads / lanes ONNX Runtime threads)")
	f.shardFlag = fs.String("shard", "", "with --src FILE and --output OUT: translate shard `K/N` of FILE's lines (GNU split -n l/K/N's) into OUT.shard-K-of-N, skipped when done already; auto (a Slurm array task's) or auto/N (a Kubernetes Indexed Job pod's, N its completions); attnx merge OUT joins the parts")
	return f
}

// resolve turns --max-len-b into --max-len and fills in the flags the
// command line left to the model (attnx.json's defaults).
func (f *translateFlags) resolve() error {
	fs := f.fs
	if fs.Changed("max-len-b") {
		if fs.Changed("max-len") || *f.maxLenB < 1 {
			return &usageError{fmt.Sprintf("--max-len-b %d: want B >= 1, and not with --max-len (the same limit, counting </s>: --max-len B+1)", *f.maxLenB)}
		}
		*f.maxLen = *f.maxLenB + 1
		fs.Lookup("max-len").Changed = true
	}
	if *f.model != "" {
		applyModelDefaults(fs, *f.model, decodingFlags{beam: f.beam, nBest: f.nBest, minLen: f.minLen, alpha: f.alpha, penaltyForm: f.penaltyForm, replaceUnk: f.replaceUnk, rules: f.rules, banUNK: f.banUNK, maxLenRatio: f.maxLenRatio, noRepeat: f.noRepeat, repPenalty: f.repPenalty})
	}
	return f.unkDict.load(f.replaceUnk)
}

// checkDecoding refuses decoding flags that do not go together, naming
// them, and returns OpenNMT-py's length penalty form for its rules.
func (f *translateFlags) checkDecoding() (onmtPenalty string, err error) {
	fs := f.fs
	switch {
	case *f.rules != translate.RulesSpec && *f.rules != translate.RulesOpenNMT && *f.rules != translate.RulesJoeyNMT && *f.rules != translate.RulesFairseq:
		return "", &usageError{fmt.Sprintf("--rules %q: want %s", *f.rules, translate.RulesList())}
	case (*f.sampling || *f.samplingTopK != 0 || *f.samplingTopP != 0 || fs.Changed("seed")) && (*f.rules != translate.RulesFairseq && *f.rules != translate.RulesOpenNMT || !*f.sampling):
		return "", &usageError{"--sampling-topk, --sampling-topp and --seed go with --sampling, and --sampling with --rules fairseq or opennmt (fairseq's --sampling, onmt_translate's -random_sampling_topk/-topp)"}
	case *f.sampling && *f.rules == translate.RulesFairseq && fs.Changed("n-best") && *f.nBest != *f.beam:
		return "", &usageError{fmt.Sprintf("--sampling lists every sample: --n-best %d must equal --beam %d (fairseq's --sampling requires --nbest equal to --beam)", *f.nBest, *f.beam)}
	case *f.samplingTopK < 0 || *f.samplingTopP < 0 || *f.samplingTopP > 1 || math.IsNaN(*f.samplingTopP) || *f.samplingTopK > 0 && *f.samplingTopP > 0:
		return "", &usageError{fmt.Sprintf("--sampling-topk %d, --sampling-topp %v: give one of them, K >= 1 or P in (0, 1]", *f.samplingTopK, *f.samplingTopP)}
	case *f.temperature != 0 && *f.rules == translate.RulesOpenNMT && !*f.sampling:
		return "", &usageError{"--temperature with --rules opennmt goes with --sampling (onmt_translate's -random_sampling_temp)"}
	case (*f.unkPen != 0 || *f.temperature != 0 && *f.rules != translate.RulesOpenNMT || *f.maxLenA != 0) && *f.rules != translate.RulesFairseq:
		return "", &usageError{"--unk-penalty, --temperature and --max-len-a go with --rules fairseq (fairseq's --unkpen, --temperature and --max-len-a)"}
	case *f.maxLenA < 0 || math.IsNaN(*f.maxLenA) || math.IsInf(*f.maxLenA, 0):
		return "", &usageError{fmt.Sprintf("--max-len-a %v: want a finite value >= 0", *f.maxLenA)}
	case decode.TemperatureRange(*f.temperature) != nil:
		return "", &usageError{fmt.Sprintf("--temperature %v: %v", *f.temperature, decode.TemperatureRange(*f.temperature))}
	case *f.rules == translate.RulesFairseq && (*f.noRepeat >= 2 || *f.repPenalty > 1):
		return "", &usageError{"--no-repeat-ngram and --repetition-penalty are JoeyNMT's rules, not fairseq's (fairseq 0.12.2's --no-repeat-ngram-size blocks nothing on a CPU): use them with --rules spec or joeynmt"}
	case *f.rules == translate.RulesFairseq && fs.Changed("length-penalty-form") && *f.penaltyForm != "power":
		return "", &usageError{fmt.Sprintf("--length-penalty-form %s with --rules fairseq: fairseq ranks by score / len ** lenpen only (its --lenpen, attnx's --length-penalty)", *f.penaltyForm)}
	case *f.rules == translate.RulesJoeyNMT && fs.Changed("length-penalty-form") && *f.penaltyForm != "wu":
		return "", &usageError{fmt.Sprintf("--length-penalty-form %s with --rules joeynmt: JoeyNMT's beam_alpha is Wu's penalty only (score / ((5 + len) / 6) ** A): give wu, or --rules spec for the power form", *f.penaltyForm)}
	case *f.rules == translate.RulesFairseq && *f.engine == translate.EngineLoop:
		return "", &usageError{"--rules fairseq runs on the steps engine (greedy.onnx and beam.onnx have attnx's searches built in): drop --engine loop or use --engine steps"}
	case *f.rules == translate.RulesJoeyNMT && *f.engine == translate.EngineLoop && *f.beam > 1:
		return "", &usageError{"--rules joeynmt runs on the steps engine (beam.onnx has attnx's beam search built in): drop --engine loop or use --engine steps"}
	case *f.rules == translate.RulesOpenNMT:
		onmtPenalty = *f.penaltyForm
		if onmtPenalty == "power" && !fs.Changed("length-penalty-form") {
			onmtPenalty = "avg" // -length_penalty's default
		}
		if onmtPenalty != "none" && onmtPenalty != "avg" && onmtPenalty != "wu" {
			return "", &usageError{fmt.Sprintf("--length-penalty-form %q with --rules opennmt: want none, avg or wu (OpenNMT-py's -length_penalty)", *f.penaltyForm)}
		}
		if *f.engine == translate.EngineLoop && *f.beam > 1 {
			if !fs.Changed("rules") {
				return "", &usageError{fmt.Sprintf("%s decodes with OpenNMT-py's beam search by default (the \"defaults\" of its attnx.json), which runs on the steps engine: drop --engine loop, or add --rules spec for attnx's beam search on beam.onnx", *f.model)}
			}
			return "", &usageError{"--rules opennmt runs on the steps engine (beam.onnx has attnx's beam search built in): drop --engine loop or use --engine steps"}
		}
	case *f.blockNgram != 0 || len(*f.ignoreBlocking) > 0 || *f.ratio != 0 || *f.covPen != "none" || *f.beta != 0 || *f.stepwise:
		return "", &usageError{"--block-ngram-repeat, --ignore-when-blocking, --ratio, --coverage-penalty, --beta and --stepwise-penalty go with --rules opennmt"}
	case *f.penaltyForm != "power" && *f.penaltyForm != "wu":
		return "", &usageError{fmt.Sprintf("--length-penalty-form %q: want power or wu (none and avg with --rules opennmt)", *f.penaltyForm)}
	}
	if *f.engine == translate.EngineLoop {
		// The loop engine's graphs have their decoding rules built in.
		switch {
		case *f.penaltyForm == "wu" && *f.rules == translate.RulesSpec:
			return "", &usageError{"--length-penalty-form wu runs on the steps engine (beam.onnx ranks by score / len ** A): drop --engine loop or use --engine steps"}
		case *f.minLen > 0:
			return "", &usageError{fmt.Sprintf("--min-len %d runs on the steps engine (greedy.onnx and beam.onnx have their stopping rule built in): drop --engine loop or use --engine steps", *f.minLen)}
		}
	}
	return onmtPenalty, nil
}

// checkOutput refuses output flags that do not go together.
func (f *translateFlags) checkOutput() error {
	if *f.withAttention && !*f.jsonOut {
		return &usageError{"--attention goes with --json (the text output has no attention; --plot draws it)"}
	}
	switch {
	case *f.format != formatPlain && *f.format != formatFairseq && *f.format != formatOnmt:
		return &usageError{fmt.Sprintf("--format %q: want plain, fairseq or onmt", *f.format)}
	case *f.withScore && (*f.src == "" || *f.jsonOut || *f.format != formatPlain):
		return &usageError{"--with-score goes with --src FILE and the plain format"}
	case *f.format != formatPlain && (*f.src == "" || *f.jsonOut):
		return &usageError{fmt.Sprintf("--format %s goes with --src FILE (- for standard input), and not with --json", *f.format)}
	case *f.format == formatFairseq && *f.rules != translate.RulesFairseq:
		return &usageError{fmt.Sprintf("--format fairseq writes fairseq's scores, which its search records: it goes with fairseq's rules (the default of a fairseq model), not --rules %s", *f.rules)}
	}
	if *f.tgtPrefix != "" && (*f.src == "" || *f.tgt != "") {
		return &usageError{"--tgt-prefix FILE holds the starts of --src FILE's translations: give --src FILE too, and no --tgt"}
	}
	if *f.tgt != "" && *f.src == "" {
		return &usageError{"--tgt FILE holds the references of --src FILE's lines: give --src FILE too"}
	}
	if *f.src == "" && (*f.output != "" || *f.batchTokens != 0 || *f.lanes != 0 || *f.shardFlag != "") {
		return &usageError{"--output, --batch-tokens, --lanes and --shard go with --src FILE"}
	}
	if *f.shardFlag != "" {
		switch {
		case *f.src == stdinName || *f.output == "" || *f.output == stdinName:
			return &usageError{"--shard K/N reads a byte range of --src FILE and writes its part beside --output OUT: give both as files (not -)"}
		case *f.format != formatPlain:
			return &usageError{fmt.Sprintf("--format %s numbers the sentences from the start of what it reads, which a shard cannot know: use the plain format or --json with --shard", *f.format)}
		case *f.plotPath != "":
			return &usageError{"--plot goes without --shard (a shard's heat maps would be numbered from its own first line)"}
		}
	}
	return nil
}

// checkInputs refuses inputs, limits and files that do not go together.
func (f *translateFlags) checkInputs() error {
	fs := f.fs
	if *f.src != "" && (len(f.ids) > 0 || fs.NArg() > 0) {
		return &usageError{"give --src FILE or inputs (TEXT arguments, --ids), not both"}
	}
	if *f.batchTokens < 0 || *f.lanes < 0 {
		return &usageError{"--batch-tokens and --lanes must not be negative"}
	}
	switch {
	case *f.model == "":
		return &usageError{"--model DIR is required"}
	case len(f.modelDir.dirs) > 1 && *f.shardFlag != "":
		return &usageError{"--shard records one model's settings: translate with an ensemble (several --model) without --shard"}
	case len(f.modelDir.dirs) < 2 && *f.avgRawProbs:
		return &usageError{"--avg-raw-probs combines the members of an ensemble: give several --model"}
	case *f.batch < 1:
		return &usageError{fmt.Sprintf("--batch %d: must be at least 1", *f.batch)}
	case *f.maxLen < 0:
		return &usageError{fmt.Sprintf("--max-len %d: must not be negative", *f.maxLen)}
	case math.IsNaN(*f.maxLenRatio) || math.IsInf(*f.maxLenRatio, 0) || *f.maxLenRatio < 0:
		return &usageError{fmt.Sprintf("--max-len-ratio %v: want a finite value >= 0", *f.maxLenRatio)}
	case *f.maxSrc < 0:
		return &usageError{fmt.Sprintf("--max-src-len %d: must not be negative", *f.maxSrc)}
	case *f.threads < 0:
		return &usageError{fmt.Sprintf("--threads %d: must not be negative", *f.threads)}
	case *f.engine != "" && *f.engine != translate.EngineSteps && *f.engine != translate.EngineLoop:
		return &usageError{fmt.Sprintf("--engine %q: want %s or %s", *f.engine, translate.EngineSteps, translate.EngineLoop)}
	case *f.device != onnxrun.DeviceCPU && *f.device != onnxrun.DeviceCUDA && *f.device != onnxrun.DeviceAuto:
		return &usageError{fmt.Sprintf("--device %q: want cpu, cuda or auto", *f.device)}
	case *f.plotPath != "" && !strings.EqualFold(filepath.Ext(*f.plotPath), ".png"):
		return &usageError{fmt.Sprintf("--plot %s: the file name must end in .png", *f.plotPath)}
	}
	if *f.sampling && *f.rules == translate.RulesFairseq && !fs.Changed("n-best") {
		*f.nBest = *f.beam // every sample, as fairseq lists them
	}
	if err := checkBeamFlags(*f.beam, *f.nBest, *f.alpha); err != nil {
		return err
	}
	for _, o := range []struct{ flag, path string }{{"--output", *f.output}, {"--plot", *f.plotPath}} {
		if err := atomicfile.SameFile(o.path, *f.src); err != nil {
			return &usageError{o.flag + ": " + err.Error()}
		}
	}
	if err := checkBackend(*f.backend, *f.device); err != nil {
		return err
	}
	return nil
}

// options are the Translator's options and the test set's from the flags.
func (f *translateFlags) options(onmtPenalty string) (translate.Options, translate.CorpusOptions) {
	fs := f.fs
	topt := translate.Options{
		Backend: *f.backend, Threads: *f.threads, Device: *f.device, Engine: *f.engine, MaxLen: *f.maxLen, MinLen: *f.minLen, ReplaceUnk: *f.replaceUnk, ReplaceUnkDict: f.unkDict.dict, MaxSourceLen: *f.maxSrc, BatchSize: *f.batch, UnknownToUNK: *f.unk,
		NoModelDefaults: true, // resolved above (applyModelDefaults)
		Pretokenized:    *f.pretok,
		Beam:            *f.beam, NBest: *f.nBest, LengthPenalty: f.alpha, LengthPenaltyWu: *f.penaltyForm == "wu" && *f.rules == translate.RulesSpec,
		Rules: *f.rules, OpenNMTPenalty: onmtPenalty, BanUNK: *f.banUNK, BlockNgram: *f.blockNgram, IgnoreWhenBlocking: *f.ignoreBlocking, Ratio: *f.ratio,
		CoveragePenalty: *f.covPen, Beta: *f.beta, StepwisePenalty: *f.stepwise, UnkPenalty: *f.unkPen, Temperature: *f.temperature, MaxLenA: *f.maxLenA,
		Sampling: *f.sampling, SamplingTopK: *f.samplingTopK, SamplingTopP: *f.samplingTopP,
		NoRepeatNgram: *f.noRepeat, RepetitionPenalty: *f.repPenalty,
	}
	if *f.sampling {
		topt.Seed = *f.seed // the draws' (--seed's default 1 seeds nothing else)
	}
	if fs.Changed("max-len-ratio") {
		topt.MaxLenRatio = f.maxLenRatio
	}
	f.fsearch.set(fs, &topt)
	// Attention only where it is used (--json's alignment, --attention,
	// --plot): a result waits for the sentences before it, and on a large
	// corpus its attention would be most of the memory.
	co := translate.CorpusOptions{BatchSize: *f.batch, BatchTokens: *f.batchTokens, WithoutAttention: !*f.jsonOut && *f.plotPath == ""}
	// --batch and --batch-tokens stand for the toolkit's -batch_size and
	// -batch_type, whose batches decide its output limits.
	switch {
	case fs.Changed("batch-tokens") && *f.batchTokens > 0:
		co.ToolkitBatches = &translate.ToolkitBatches{Size: *f.batchTokens, Tokens: true}
	case fs.Changed("batch"):
		co.ToolkitBatches = &translate.ToolkitBatches{Size: *f.batch}
	}
	return topt, co
}

func runTranslate(args []string) error {
	if err := checkModelArgs(args); err != nil {
		return err
	}
	f := newTranslateFlags()
	fs := f.fs
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.resolve(); err != nil {
		return err
	}
	onmtPenalty, err := f.checkDecoding()
	if err != nil {
		return err
	}
	if err := f.checkOutput(); err != nil {
		return err
	}
	if err := f.checkInputs(); err != nil {
		return err
	}
	topt, co := f.options(onmtPenalty)
	var fileLanes int
	var sj *shard.Job
	if *f.shardFlag != "" {
		settings, err := shardSettings(*f.model, topt, co, corpusJob{json: *f.jsonOut, attention: *f.withAttention, nBest: *f.nBest, withScore: *f.withScore, format: *f.format})
		if err != nil {
			return err
		}
		perSentence := *f.nBest
		if *f.jsonOut {
			perSentence = 1
		}
		var skip bool
		if sj, skip, err = openShard(*f.shardFlag, *f.src, *f.output, settings, perSentence); err != nil || skip {
			return err
		}
		defer sj.Close()
	}
	if *f.src != "" {
		fileLanes, topt.Threads = corpusLanes(*f.lanes, *f.threads)
		if *f.batchTokens > 0 {
			topt.BatchSize = *f.batchTokens // a batch's rows never exceed its tokens
		}
	}
	tr, err := openTranslateModels(f, topt)
	var noGraph *translate.LoopGraphError
	if errors.As(err, &noGraph) && noGraph.Graph == modeldir.BeamFile {
		return &usageError{fmt.Sprintf("--engine loop with --beam %d needs beam.onnx, and %s names no beam model (files.beam): re-export with `attnx export --beam`, or use --engine steps (the default for --beam > 1)",
			*f.beam, filepath.Join(*f.model, "attnx.json"))}
	}
	if err != nil {
		return translateCLIError(err)
	}
	defer tr.Close()
	for _, n := range tr.Notes() {
		fmt.Fprintf(stderr, "attnx translate: note: %s\n", n)
	}
	noteSegmented(tr, fs.Args())

	if *f.src != "" {
		co.Lanes = fileLanes
		job := corpusJob{src: *f.src, output: *f.output, json: *f.jsonOut, attention: *f.withAttention, nBest: *f.nBest, format: *f.format, withScore: *f.withScore, plot: *f.plotPath, opts: co, shard: sj}
		if *f.tgt != "" {
			return scoreTestSet(tr, job, *f.tgt)
		}
		if *f.tgtPrefix != "" {
			return translatePrefixed(tr, job, *f.tgtPrefix)
		}
		return translateCorpus(tr, job)
	}
	return translateInputs(tr, f)
}

// translateInputs translates the TEXT arguments and --ids, else the lines
// of stdin as they come, and writes the results.
func translateInputs(tr *translate.Translator, f *translateFlags) error {
	fs := f.fs
	var err error
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	out := &translateOutput{w: w, json: *f.jsonOut, attention: *f.withAttention, plain: *f.plain, nBest: *f.nBest, plot: heatmap.Series{Path: *f.plotPath}, tr: tr}
	ctx := context.Background()
	if len(f.ids) > 0 || fs.NArg() > 0 {
		var inputs []translate.Input
		for i, row := range f.ids {
			inputs = append(inputs, translate.Input{Where: fmt.Sprintf("--ids #%d", i+1), Shown: translate.FormatIDs(row), IDs: row, IsIDs: true})
		}
		for i, s := range fs.Args() {
			inputs = append(inputs, translate.Input{Where: fmt.Sprintf("argument %d", i+1), Shown: s, Text: s})
		}
		err = tr.TranslateInputs(ctx, inputs, out.write)
	} else {
		bar := newTranslateBar(stdin)
		// Each batch's answers go out as soon as it is decoded: a program
		// on the other end of a pipe may be waiting for them.
		err = tr.Stream(ctx, stdin, out.write, func(bytes int64, lines int) {
			bar.update(bytes, lines)
			// A failed flush sticks: the next write reports it.
			_ = w.Flush()
		})
		bar.close()
	}
	if err != nil {
		return translateCLIError(err)
	}
	if n := tr.UnknownPieces(); n > 0 {
		fmt.Fprintf(stderr, "attnx translate: note: %d source %s not in the model's vocabulary and went in as the unknown token\n", n, plural(n, "piece was", "pieces were"))
	}
	return out.plot.Close()
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// checkBeamFlags checks --beam, --n-best and --length-penalty (also
// verify's), naming the flag and the allowed range.
func checkBeamFlags(k, n int, alpha float64) error {
	switch {
	case k < 1:
		return &usageError{fmt.Sprintf("--beam %d: want the beam width K >= 1 (1: greedy decoding)", k)}
	case n < 1 || n > k:
		return &usageError{fmt.Sprintf("--n-best %d: want 1 <= N <= --beam %d", n, k)}
	case decode.LengthPenaltyRange(alpha) != nil:
		return &usageError{fmt.Sprintf("--length-penalty %v: %v", alpha, decode.LengthPenaltyRange(alpha))}
	}
	return nil
}

// translateCLIError words input errors' remedies with attnx translate's
// flags (the package words them with its Go options) and drops the
// package prefix: report already names the command.
func translateCLIError(err error) error {
	var bad *translate.BadInputError
	if errors.As(err, &bad) {
		msg := bad.Describe(
			func(h translate.UNKHint) string {
				return fmt.Sprintf("pass --unk to map unknown %ss to %s (id %d)", h.What, h.Token, h.ID)
			},
			func(n int) string { return fmt.Sprintf("the limit --max-src-len %d", n) })
		return fmt.Errorf("%s (%q): %s", bad.Input.Where, bad.Input.Shown, msg)
	}
	var noVocab *translate.NoSourceVocabularyError
	if errors.As(err, &noVocab) {
		return errors.New(noVocab.Remedy("give token ids with --ids (or lines of ids on stdin), or export the model again with --src-vocab"))
	}
	var mem *translate.MemoryLimitError
	if errors.As(err, &mem) {
		return errors.New(mem.Remedy("use a smaller --batch or --beam"))
	}
	var lacks *translate.RulesError
	if errors.As(err, &lacks) {
		return &usageError{translate.OptionNames(lacks.Error(), func(o translate.DecodingOption) string { return o.Flag })}
	}
	var copySearch *translate.CopySearchError
	if errors.As(err, &copySearch) {
		return &usageError{translate.OptionNames(copySearch.Error(), func(o translate.DecodingOption) string { return o.Flag })}
	}
	return errors.New(strings.TrimPrefix(cliText(err), "translate: "))
}

// translateOutput writes results as they come.
type translateOutput struct {
	w                      *bufio.Writer
	json, attention, plain bool
	nBest                  int
	plot                   heatmap.Series
	tr                     *translate.Translator
}

// output is a result's text, or its token ids without a target vocabulary.
func (o *translateOutput) output(tokens []int64, text string) string {
	if !o.tr.HasTargetVocab() {
		return translate.FormatIDs(tokens)
	}
	return text
}

func (o *translateOutput) write(in translate.Input, res translate.Result) error {
	if o.json || o.plain || in.Blank {
		// JSON, or the translations alone as --src writes them; a blank
		// line's answer is a blank line in either plain format.
		if err := writeCorpusResult(o.w, o.tr, in.Shown, res, corpusJob{json: o.json, attention: o.attention, nBest: o.nBest}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(o.w, "%s -> %s\n", in.Shown, o.output(res.Tokens, res.Text))
		if len(res.Hypotheses) > 1 {
			for i, h := range res.Hypotheses {
				fmt.Fprintf(o.w, "  %d. %s  (score %.4f, normalized %.4f)\n", i+1, o.output(h.Tokens, h.Text), h.Score, h.NormalizedScore)
			}
		}
	}
	if err := o.w.Flush(); err != nil || in.Blank {
		return err
	}
	return o.plot.Add(in.Shown, res.SourceTokens, res.OutputTokens, res.Attention)
}
