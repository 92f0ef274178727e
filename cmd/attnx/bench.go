package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/internal/bench"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/translate"
)

// intList parses "12,50".
func intList(flagName, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		v, err := strconv.Atoi(f)
		if err != nil || v < 1 {
			return nil, &usageError{fmt.Sprintf("-%s %q: want a comma-separated list of positive integers", flagName, s)}
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, &usageError{fmt.Sprintf("-%s is empty: want a comma-separated list of positive integers", flagName)}
	}
	return out, nil
}

func runBench(args []string) error {
	def := bench.DefaultConfig()
	fs := newFlagSet("bench")
	ckpt := fs.String("checkpoint", "", "PyTorch or safetensors checkpoint to measure (default: random models of -arch)")
	archs := fs.String("arch", "bahdanau,luong-general", "architectures of the random models, comma-separated: "+archNames())
	cell := fs.String("cell", "", "cell of the random models, lstm or gru (default: lstm for the article's architectures, gru for the tutorial's)")
	hidden := fs.Int("hidden", def.Hidden, "hidden size H of the random models")
	vocab := fs.Int("vocab", def.Vocab, "source and target vocabulary size of the random models")
	layers := fs.Int("layers", def.Layers, "recurrent layers of the random models")
	srcLens := fs.String("src-len", "12,50", "source lengths, comma-separated")
	batches := fs.String("batch", "1,32", "batch sizes, comma-separated")
	threads := fs.String("threads", "1,2", "intra-op thread counts (ORT and torch.set_num_threads), comma-separated")
	steps := fs.Int("steps", def.Steps, "decoder steps (tokens per row)")
	beams := fs.String("beam", "4,8", "beam widths K >= 2 measured beside greedy decoding, comma-separated, or none")
	reps := fs.Int("reps", def.MinReps, "minimum measured repetitions per engine and configuration")
	minTime := fs.Duration("min-time", def.MinTime, "minimum measuring time per engine and configuration")
	warmup := fs.Int("warmup", def.Warmup, "unmeasured warm-up runs")
	weights := fs.String("weights", "fp32,int8,int4", "weights precisions the attnx engines run at, comma-separated: fp32, int8, int4")
	engines := fs.String("engines", "", "engines to run, comma-separated (default: all): "+strings.Join(bench.Engines, ","))
	asJSON := fs.Bool("json", false, "print the report as one JSON object instead of the table")
	jsonOut := fs.String("json-out", "", "also write the JSON report to this file")
	python := fs.String("python", def.Python, "Python with torch 1.13 and onnx (Debian's)")
	refDir := fs.String("ref-dir", def.RefDir, "directory of reference.py and bench.py (default: the PyTorch reference embedded in attnx)")
	workDir := fs.String("work-dir", "", "keep the models and inputs here (default: a temporary directory, removed)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the lean step loop (batch 1, 1 thread) to `FILE`; with --corpus, one per native row's timed translation to FILE.WEIGHTS-beamK-Tt-Ll.pprof")
	seed := fs.Uint64("seed", def.Seed, "seed of the random models and inputs")
	quiet := fs.BoolP("quiet", "q", false, "no progress on stderr")
	corpus := fs.Int("corpus", 0, "measure file translation instead: a test set of `N` sentences (see above)")
	summary := fs.Bool("summary", false, "--corpus: OpenNMT-py's RNN summarization recipe's model and shape: onmt-mlp, H=512, E=128, a 50k shared vocabulary, copy attention and coverage, sources of 400 tokens, 60 tokens out, beam 10 (each set otherwise by its own flag)")
	corpusLen := fs.String("corpus-src-len", "10-40", "--corpus: source lengths, MIN-MAX tokens")
	outLen := fs.Int("out-len", 31, "--corpus: output tokens per sentence (max_len; EOS is suppressed)")
	batchSents := fs.Int("batch-sents", 30, "--corpus: sentences per batch (OpenNMT-py's default batch_size)")
	corpusRules := fs.String("rules", "", "--corpus: the search attnx runs: spec, opennmt, joeynmt or fairseq (default: the architecture's toolkit's, as attnx translate decodes that toolkit's models)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return &usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	if *corpus > 0 {
		if *summary {
			if !fs.Changed("corpus-src-len") {
				*corpusLen = "400-400"
			}
			if !fs.Changed("out-len") {
				*outLen = 60
			}
		}
		return runBenchCorpus(fs, *corpus, *corpusLen, *outLen, *batchSents, *quiet, *asJSON, *jsonOut, *summary, *corpusRules)
	}
	c := def
	c.Checkpoint, c.Hidden, c.Vocab, c.Layers, c.Steps = *ckpt, *hidden, *vocab, *layers, *steps
	c.MinReps, c.MinTime, c.Warmup = *reps, *minTime, *warmup
	c.MaxReps = max(c.MaxReps, c.MinReps)
	c.Python, c.RefDir, c.WorkDir, c.CPUProfile, c.Seed = *python, *refDir, *workDir, *cpuProfile, *seed
	if err := benchLists(&c, *archs, *cell, *srcLens, *batches, *threads, *beams); err != nil {
		return err
	}
	var err error
	if *engines != "" {
		c.Engines = strings.Split(*engines, ",")
	}
	if c.Weights, err = quant.ParsePrecisions(*weights); err != nil {
		return &usageError{"-weights: " + err.Error()}
	}
	if *hidden < 1 || *vocab < 1 || *layers < 1 {
		return &usageError{fmt.Sprintf("-hidden %d, -vocab %d, -layers %d: each must be >= 1", *hidden, *vocab, *layers)}
	}
	if err := c.Validate(); err != nil {
		msg := strings.TrimPrefix(err.Error(), "bench: ")
		if strings.HasPrefix(msg, "beam width") {
			msg = "--beam: " + msg
		}
		return &usageError{msg}
	}
	if !*quiet {
		c.Log = stderr
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := bench.Run(ctx, c)
	if err != nil {
		return err
	}
	if done, err := writeBenchJSON(rep, *jsonOut, *asJSON); done || err != nil {
		return err
	}
	return bench.WriteTable(stdout, rep)
}

// benchLists sets the architectures, cell and the lists of lengths,
// batches, threads and beams from their flags' values.
func benchLists(c *bench.Config, archs, cell, srcLens, batches, threads, beams string) error {
	c.Archs = nil
	for _, a := range strings.Split(archs, ",") {
		arch, err := attention.ParseArch(strings.TrimSpace(a))
		if err != nil {
			return &usageError{"-arch: " + err.Error()}
		}
		c.Archs = append(c.Archs, arch)
	}
	if cell != "" {
		cl, err := attention.ParseCell(cell)
		if err != nil {
			return &usageError{"-cell: " + err.Error()}
		}
		c.Cell = cl
	}
	var err error
	if c.SrcLens, err = intList("src-len", srcLens); err != nil {
		return err
	}
	if c.Batches, err = intList("batch", batches); err != nil {
		return err
	}
	if c.Threads, err = intList("threads", threads); err != nil {
		return err
	}
	c.Beams = nil
	if beams != "none" {
		if c.Beams, err = intList("beam", beams); err != nil {
			return err
		}
	}
	return nil
}

// runBenchCorpus is attnx bench --corpus N.
func runBenchCorpus(fs *pflag.FlagSet, n int, srcLen string, outLen, batchSents int, quiet, asJSON bool, jsonOut string, summary bool, rules string) error {
	get := func(name string) string { return fs.Lookup(name).Value.String() }
	changed := fs.Changed
	c := bench.CorpusConfig{Arch: attention.Arch("onmt-general"), Hidden: 512, Layers: 2, Vocab: 16000, Sentences: n,
		OutLen: outLen, BatchSents: batchSents, Beams: []int{5}, Threads: []int{1, 2},
		Weights: []quant.Precision{quant.PrecisionFP32, quant.PrecisionInt8}, Python: get("python"), RefDir: get("ref-dir"), Work: get("work-dir")}
	if summary {
		// The reference's search knows no copy attention: attnx alone,
		// beside OpenNMT-py's translator measured on its own checkpoint
		// (docs/toolkits.md, "Summarization models").
		c.Arch, c.Layers, c.Vocab, c.Beams, c.Summary, c.SkipPyTorch = attention.OpenNMTMLP, 1, 50000, []int{10}, true, true
	}
	var err error
	if changed("arch") {
		if c.Arch, err = attention.ParseArch(get("arch")); err != nil || !c.Arch.IsToolkit() {
			return &usageError{fmt.Sprintf("--arch %s: --corpus measures one toolkit architecture (onmt-general, joey-luong, ...)", get("arch"))}
		}
	}
	for _, f := range []struct {
		name string
		dst  *int
	}{{"hidden", &c.Hidden}, {"layers", &c.Layers}, {"vocab", &c.Vocab}} {
		if changed(f.name) {
			if *f.dst, err = strconv.Atoi(get(f.name)); err != nil || *f.dst < 1 {
				return &usageError{fmt.Sprintf("--%s %s: want a positive integer", f.name, get(f.name))}
			}
		}
	}
	if seed, err := strconv.ParseUint(get("seed"), 10, 64); err == nil {
		c.Seed = seed
	}
	lo, hi, ok := strings.Cut(srcLen, "-")
	if c.MinSrc, err = strconv.Atoi(lo); !ok || err != nil {
		return &usageError{fmt.Sprintf("--corpus-src-len %q: want MIN-MAX", srcLen)}
	}
	if c.MaxSrc, err = strconv.Atoi(hi); err != nil || c.MinSrc < 1 || c.MaxSrc < c.MinSrc {
		return &usageError{fmt.Sprintf("--corpus-src-len %q: want MIN-MAX with 1 <= MIN <= MAX", srcLen)}
	}
	switch rules {
	case "", translate.RulesSpec, translate.RulesOpenNMT, translate.RulesJoeyNMT, translate.RulesFairseq:
		c.Rules = rules
	default:
		return &usageError{fmt.Sprintf("--rules %q: want spec, opennmt, joeynmt or fairseq", rules)}
	}
	if outLen < 1 || batchSents < 1 || c.Vocab < 5 {
		return &usageError{"--out-len and --batch-sents must be >= 1, --vocab >= 5"}
	}
	if changed("beam") {
		// none: greedy decoding only, as without --corpus.
		c.Beams = nil
		if get("beam") != "none" {
			if c.Beams, err = intList("beam", get("beam")); err != nil {
				return err
			}
		}
	}
	c.Beams = append([]int{1}, slices.DeleteFunc(c.Beams, func(k int) bool { return k <= 1 })...)
	if changed("threads") {
		if c.Threads, err = intList("threads", get("threads")); err != nil {
			return err
		}
	}
	if changed("weights") {
		if c.Weights, err = quant.ParsePrecisions(get("weights")); err != nil {
			return &usageError{"-weights: " + err.Error()}
		}
	}
	c.CPUProfile = get("cpuprofile")
	c.SkipPyTorch = c.SkipPyTorch || changed("engines") && !strings.Contains(get("engines"), bench.EnginePyTorch)
	// attnx on each backend this binary can run: --engines names them
	// as the step engines do (attnx-steps-lean: ORT, attnx-steps-lean-go:
	// the native backend).
	for _, be := range []struct{ name, engine string }{{onnxrun.BackendORT, bench.EngineLean}, {onnxrun.BackendGo, bench.EngineLeanGo}} {
		if changed("engines") && !slices.Contains(strings.Split(get("engines"), ","), be.engine) {
			continue
		}
		if onnxrun.Ready(be.name) == nil {
			c.Backends = append(c.Backends, be.name)
		}
	}
	if len(c.Backends) == 0 {
		return &usageError{fmt.Sprintf("--corpus: no attnx engine to run (--engines %s; this binary runs %s)", get("engines"), onnxrun.DefaultBackend)}
	}
	if !quiet {
		c.Log = stderr
	}
	rep, err := bench.RunCorpus(c)
	if err != nil {
		return err
	}
	if done, err := writeBenchJSON(rep, jsonOut, asJSON); done || err != nil {
		return err
	}
	bench.WriteCorpusTable(stdout, rep)
	return nil
}

// writeBenchJSON writes a bench report as JSON to jsonOut (when set) and,
// with asJSON, to stdout, which then is all the output (done).
func writeBenchJSON(rep any, jsonOut string, asJSON bool) (done bool, err error) {
	js, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return false, err
	}
	js = append(js, '\n')
	if jsonOut != "" {
		if err := atomicfile.WriteFile(jsonOut, js, 0o644); err != nil {
			return false, fmt.Errorf("writing the JSON report: %w", err)
		}
	}
	if asJSON {
		_, err := stdout.Write(js)
		return true, err
	}
	return false, nil
}
