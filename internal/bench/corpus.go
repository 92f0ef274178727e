package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/cpuprofile"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/reference"
	"github.com/attnx/attnx/translate"
	"github.com/attnx/attnx/verify"
)

// CorpusConfig describes the file-translation benchmark: a test set of
// Sentences random sources of MinSrc..MaxSrc tokens translated by a
// toolkit-shaped model, by attnx (translate.TranslateCorpus: sorted,
// batched, on lanes) and by the PyTorch reference batched the way
// OpenNMT-py's translator batches (bench.py --corpus), greedy and with beam
// search, at each thread count and weights precision.
type CorpusConfig struct {
	Arch                      attention.Arch
	Hidden, Layers, Vocab     int
	Sentences, MinSrc, MaxSrc int
	// OutLen is the tokens every output has: EOS is suppressed in the
	// weights, so every sentence decodes OutLen steps (max_len).
	OutLen     int
	BatchSents int
	Beams      []int
	Threads    []int
	Weights    []quant.Precision
	Seed       uint64
	Python     string
	RefDir     string
	Work       string
	Log        io.Writer
	// SkipPyTorch leaves PyTorch out (attnx rows only, no speed-ups).
	SkipPyTorch bool
	// Backends lists the engines attnx runs on ("ort", "go"); nil means
	// onnxrun.DefaultBackend alone.
	Backends []string
	// Rules is the search attnx runs (translate.Options.Rules); "" means
	// the architecture's toolkit's, what attnx translate uses by default
	// for that toolkit's models (OpenNMT-py's for onmt-*, JoeyNMT's for
	// joey-*, fairseq's for fairseq-*, the spec's for the others).
	Rules string
	// Summary makes the model OpenNMT-py's RNN summarization recipe's
	// (config-rnn-summarization.yml): embeddings of 128, the relu bridge,
	// copy attention reusing the decoder's, coverage_attn; Hidden, Layers
	// and Vocab (shared) stay as set.
	Summary bool
	// CPUProfile, when set, is the prefix of one CPU profile per attnx row
	// on the native backend: PREFIX.WEIGHTS-beamK-Tt-Ll.pprof (weights,
	// beam, threads, lanes), of the timed translation alone.
	CPUProfile string
}

// CorpusRow is one measured configuration.
type CorpusRow struct {
	Engine string `json:"engine"` // attnx or pytorch
	// Backend is the attnx row's engine: ort or go.
	Backend string `json:"backend,omitempty"`
	Weights string `json:"weights"`
	Beam    int    `json:"beam"`
	Threads int    `json:"threads"`
	Lanes   int    `json:"lanes,omitempty"`
	// Rules is the search the attnx row ran (spec, opennmt, joeynmt,
	// fairseq).
	Rules   string  `json:"rules,omitempty"`
	Seconds float64 `json:"seconds"`
	// SentencesPerS and TokensPerS are output rates over the whole set.
	SentencesPerS float64 `json:"sentences_per_s"`
	TokensPerS    float64 `json:"tokens_per_s"`
	PeakRSSMB     float64 `json:"peak_rss_mb"`
	// VsPyTorch is the speed-up over PyTorch at the same beam and threads.
	VsPyTorch float64 `json:"vs_pytorch,omitempty"`
	// Identical counts sentences whose tokens equal PyTorch's (fp32 rows).
	Identical int `json:"identical"`
	// Differ lists the sentences (0-based) whose tokens differ from
	// PyTorch's, at most 20.
	Differ []int  `json:"differ,omitempty"`
	Note   string `json:"note,omitempty"`
	tokens [][]int64
}

// CorpusReport is the benchmark's result.
type CorpusReport struct {
	Model     attention.Config `json:"model"`
	Sentences int              `json:"sentences"`
	MinSrc    int              `json:"min_source_tokens"`
	MaxSrc    int              `json:"max_source_tokens"`
	SrcTokens int              `json:"source_tokens"`
	OutLen    int              `json:"output_tokens_per_sentence"`
	Rows      []CorpusRow      `json:"rows"`
	Torch     string           `json:"torch,omitempty"`
	BLAS      *BLASInfo        `json:"blas,omitempty"`
}

// rules is the search attnx runs: Rules, or the architecture's toolkit's.
func (c *CorpusConfig) rules() string {
	if c.Rules != "" {
		return c.Rules
	}
	switch c.Arch.Toolkit() {
	case "OpenNMT-py":
		return translate.RulesOpenNMT
	case "JoeyNMT":
		return translate.RulesJoeyNMT
	case "fairseq":
		return translate.RulesFairseq
	}
	return translate.RulesSpec
}

func (c *CorpusConfig) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// RunCorpus runs the file-translation benchmark.
func RunCorpus(c CorpusConfig) (*CorpusReport, error) {
	cfg := ToolkitConfig(attention.Config{Arch: c.Arch, Cell: attention.LSTM, Hidden: c.Hidden, Layers: c.Layers, SrcVocab: c.Vocab, TgtVocab: c.Vocab})
	if c.Summary {
		cfg.Embedding, cfg.Bridge, cfg.CopyAttention, cfg.CopyPad, cfg.Coverage = 128, "relu-linear", "reuse", int(attention.DefaultSpecial.PAD), true
	}
	sd, err := RandomStateDict(cfg, c.Seed)
	if err != nil {
		return nil, err
	}
	sp := attention.DefaultSpecial
	if sd, err = SuppressEOS(sd, sp.EOS); err != nil {
		return nil, err
	}
	work := c.Work
	if work == "" {
		if work, err = os.MkdirTemp("", "attnx-bench-corpus-"); err != nil {
			return nil, err
		}
		defer os.RemoveAll(work)
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return nil, fmt.Errorf("bench: --work-dir: %w", err)
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	ckpt := filepath.Join(work, "checkpoint.safetensors")
	c.logf("bench: writing the %s checkpoint (H=%d L=%d V=%d) and exporting", cfg.Arch, cfg.Hidden, cfg.Layers, cfg.SrcVocab)
	if err := checkpoint.WriteSafetensors(ckpt, sd, map[string]string{modeldir.ConfigMetadata: string(js)}); err != nil {
		return nil, err
	}
	dirs := map[quant.Precision]string{}
	for _, w := range c.Weights {
		dir := filepath.Join(work, "model-"+string(w))
		res, err := modeldir.Export(ckpt, dir, modeldir.Options{Greedy: !cfg.HasCopy(), Force: true, Weights: w, SOS: &sp.SOS, EOS: &sp.EOS, PAD: &sp.PAD, UNK: &sp.UNK})
		if err != nil {
			return nil, fmt.Errorf("bench: exporting with %s weights: %w", w, err)
		}
		cfg = res.Config
		dirs[w] = dir
	}
	rows := corpusSources(c.Sentences, c.MinSrc, c.MaxSrc, c.Vocab, c.Seed)
	rep := &CorpusReport{Model: cfg, Sentences: len(rows), OutLen: c.OutLen, MinSrc: c.MinSrc, MaxSrc: c.MaxSrc}
	for _, r := range rows {
		rep.SrcTokens += len(r)
	}
	in := filepath.Join(work, "corpus.safetensors")
	if err := verify.WriteInputs(in, rows); err != nil {
		return nil, err
	}
	py := map[[2]int]*CorpusRow{}
	for _, k := range c.Beams {
		for _, th := range c.Threads {
			if !c.SkipPyTorch {
				r, info, err := c.pytorchCorpus(ckpt, in, k, th, len(rows))
				if err != nil {
					return nil, fmt.Errorf("bench: PyTorch, beam %d, %d threads: %w", k, th, err)
				}
				rep.Torch, rep.BLAS = info.Version, info.BLAS
				rep.Rows = append(rep.Rows, r)
				py[[2]int{k, th}] = &rep.Rows[len(rep.Rows)-1]
			}
			for _, w := range c.Weights {
				for _, lanes := range laneChoices(th) {
					for _, be := range c.backends() {
						r, err := c.attnxCorpus(dirs[w], w, rows, k, th, lanes, be)
						if err != nil {
							return nil, fmt.Errorf("bench: attnx %s on %s, beam %d, %d threads: %w", w, be, k, th, err)
						}
						rep.Rows = append(rep.Rows, r)
					}
				}
			}
		}
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		p := py[[2]int{r.Beam, r.Threads}]
		if r.Engine == "pytorch" || p == nil {
			continue
		}
		r.VsPyTorch = r.SentencesPerS / p.SentencesPerS
		for s := range r.tokens {
			if slices.Equal(r.tokens[s], p.tokens[s]) {
				r.Identical++
			} else if len(r.Differ) < 20 {
				r.Differ = append(r.Differ, s)
			}
		}
	}
	return rep, nil
}

// laneChoices: at 1 thread one lane; at T threads, T lanes of one thread
// and one lane of T threads.
func laneChoices(threads int) []int {
	if threads == 1 {
		return []int{1}
	}
	return []int{threads, 1}
}

// corpusSources returns n random sources of lengths uniform in [lo, hi],
// ids avoiding the special ids 0..3.
func corpusSources(n, lo, hi, vocab int, seed uint64) [][]int64 {
	rng := rand.New(rand.NewPCG(seed, 11))
	rows := make([][]int64, n)
	for i := range rows {
		rows[i] = make([]int64, lo+rng.IntN(hi-lo+1))
		for j := range rows[i] {
			rows[i][j] = int64(4 + rng.IntN(vocab-4))
		}
	}
	return rows
}

// backends is Backends, or the default backend alone.
func (c *CorpusConfig) backends() []string {
	if len(c.Backends) == 0 {
		return []string{onnxrun.DefaultBackend}
	}
	return c.Backends
}

func (c *CorpusConfig) attnxCorpus(dir string, w quant.Precision, rows [][]int64, beam, threads, lanes int, backend string) (CorpusRow, error) {
	r := CorpusRow{Engine: "attnx", Backend: backend, Weights: string(w), Beam: beam, Threads: threads, Lanes: lanes, Rules: c.rules()}
	c.logf("bench: attnx %s on %s, beam %d under %s rules, %d threads on %d lanes", w, backend, beam, r.Rules, threads, lanes)
	resetPeakRSS()
	opt := translate.Options{Backend: backend, Threads: max(1, threads/lanes), MaxLen: c.OutLen, BatchSize: c.BatchSents, Beam: beam, NoModelDefaults: true, Rules: r.Rules}
	if c.Summary {
		// The recipe's onmt_translate flags: -stepwise_penalty
		// -coverage_penalty summary -beta 5 -length_penalty wu -alpha 0.9
		// -block_ngram_repeat 3 (-min_length 35 changes nothing here:
		// EOS is suppressed).
		alpha := 0.9
		opt.Rules, opt.OpenNMTPenalty, opt.LengthPenalty = translate.RulesOpenNMT, "wu", &alpha
		opt.CoveragePenalty, opt.Beta, opt.StepwisePenalty, opt.BlockNgram = "summary", 5, true, 3
		r.Note = "the recipe's flags; "
	}
	tr, err := translate.Open(dir, opt)
	if err != nil {
		return r, err
	}
	defer tr.Close()
	co := translate.CorpusOptions{BatchSize: c.BatchSents, Lanes: lanes}
	// one warm-up batch, as PyTorch gets
	if _, err := tr.TranslateIDs(context.Background(), rows[:min(len(rows), c.BatchSents)]); err != nil {
		return r, err
	}
	r.tokens = make([][]int64, len(rows))
	// A CPU profile of the timed translation, native rows only (ONNX
	// Runtime's time shows as one cgo call).
	var prof *cpuprofile.Profile
	if c.CPUProfile != "" && r.Backend == onnxrun.BackendGo {
		path := fmt.Sprintf("%s.%s-beam%d-%dt-%dl.pprof", c.CPUProfile, r.Weights, r.Beam, r.Threads, r.Lanes)
		if prof, err = cpuprofile.Start(path); err != nil {
			return r, fmt.Errorf("bench: %w", err)
		}
		defer prof.Discard()
		c.logf("bench: CPU profile of this row to %s", path)
	}
	start := time.Now()
	st, err := tr.TranslateCorpusIDs(context.Background(), rows, co, func(i int, res translate.Result) error {
		r.tokens[i] = res.Tokens
		return nil
	}, nil)
	r.Seconds = time.Since(start).Seconds()
	if err != nil {
		return r, err
	}
	if prof != nil {
		if err := prof.Stop(); err != nil {
			return r, fmt.Errorf("bench: %w", err)
		}
	}
	r.SentencesPerS = float64(len(rows)) / r.Seconds
	r.TokensPerS = float64(st.OutputTokens) / r.Seconds
	r.PeakRSSMB = peakRSSMB()
	r.Note += "engine " + tr.Engine()
	return r, nil
}

func (c *CorpusConfig) pytorchCorpus(ckpt, in string, beam, threads, n int) (CorpusRow, pyTorchInfo, error) {
	r := CorpusRow{Engine: "pytorch", Weights: string(quant.PrecisionFP32), Beam: beam, Threads: threads}
	c.logf("bench: PyTorch, beam %d, %d threads", beam, threads)
	out, err := reference.Runner{Python: c.Python, Dir: c.RefDir}.Run(context.Background(), reference.BenchScript,
		"--corpus", "--checkpoint", ckpt, "--inputs", in, "--steps", strconv.Itoa(c.OutLen), "--threads", strconv.Itoa(threads),
		"--beam", strconv.Itoa(beam), "--eos", strconv.FormatInt(attention.DefaultSpecial.EOS, 10), "--batch-sents", strconv.Itoa(c.BatchSents))
	var none pyTorchInfo
	if err != nil {
		return r, none, err
	}
	var p struct {
		Seconds   float64   `json:"seconds"`
		Tokens    [][]int64 `json:"tokens"`
		Threads   int       `json:"threads"`
		PeakRSSMB float64   `json:"peak_rss_mb"`
		Torch     string    `json:"torch"`
		BLAS      *BLASInfo `json:"blas"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return r, none, fmt.Errorf("bench.py printed %q, not its JSON: %w", lastLine(out), err)
	}
	if len(p.Tokens) != n || p.Seconds <= 0 {
		return r, none, fmt.Errorf("bench.py returned %d rows in %gs, want %d", len(p.Tokens), p.Seconds, n)
	}
	r.Seconds, r.PeakRSSMB, r.tokens = p.Seconds, p.PeakRSSMB, p.Tokens
	toks := 0
	for _, t := range p.Tokens {
		toks += translate.OutputLen(t, attention.DefaultSpecial.EOS)
	}
	r.SentencesPerS = float64(n) / p.Seconds
	r.TokensPerS = float64(toks) / p.Seconds
	r.Note = "bench.py --corpus: torch " + p.Torch
	if p.BLAS != nil {
		r.Note += ", BLAS " + p.BLAS.Kind
	}
	return r, pyTorchInfo{Version: p.Torch, BLAS: p.BLAS}, nil
}

// WriteCorpusTable prints the report as a table.
func WriteCorpusTable(w io.Writer, rep *CorpusReport) {
	c := rep.Model
	fmt.Fprintf(w, "file translation: %d sentences (%d source tokens, %d-%d each), %d output tokens each; %s %s H=%d E=%d L=%d bidirectional encoder, input feed, Vs=Vt=%d\n",
		rep.Sentences, rep.SrcTokens, rep.MinSrc, rep.MaxSrc, rep.OutLen, c.Arch, c.Cell, c.Hidden, c.WithDefaults().Embedding, c.Layers, c.SrcVocab)
	if rep.Torch != "" {
		blas := "?"
		if rep.BLAS != nil {
			blas = rep.BLAS.Kind
		}
		fmt.Fprintf(w, "PyTorch %s on %s BLAS, batches of sentences sorted by length as OpenNMT-py's translator makes them\n", rep.Torch, blas)
	}
	fmt.Fprintf(w, "%-9s %-7s %4s %-8s %7s %5s %9s %10s %10s %9s %10s %s\n", "engine", "weights", "beam", "rules", "threads", "lanes", "seconds", "sent/s", "tokens/s", "vs torch", "identical", "peak RSS")
	for _, r := range rep.Rows {
		vs, ident, lanes := "", "", ""
		if r.VsPyTorch > 0 {
			vs = fmt.Sprintf("%.2fx", r.VsPyTorch)
			ident = fmt.Sprintf("%d/%d", r.Identical, rep.Sentences)
		}
		if r.Lanes > 0 {
			lanes = strconv.Itoa(r.Lanes)
		}
		engine := r.Engine
		if r.Backend != "" {
			engine += "-" + r.Backend
		}
		rules := r.Rules
		if rules == "" {
			rules = "-" // PyTorch's reference search
		}
		fmt.Fprintf(w, "%-9s %-7s %4d %-8s %7d %5s %9.2f %10.1f %10.0f %9s %10s %.0f MiB\n", engine, r.Weights, r.Beam, rules, r.Threads, lanes, r.Seconds, r.SentencesPerS, r.TokensPerS, vs, ident, r.PeakRSSMB)
	}
}
