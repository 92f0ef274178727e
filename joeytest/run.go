package joeytest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
	"github.com/attnx/attnx/translate"
)

// Options configures Run.
type Options struct {
	// OutputPath is joeynmt test's --output-path: the translations of each
	// set go to {OutputPath}.{set} ({stem}-{n}..{set} with n_best > 1, as
	// JoeyNMT's save_hypothese names them); "" writes no file, as joeynmt
	// test without -o.
	OutputPath string
	// Base is the folder relative data paths are read from ("" the working
	// directory, as JoeyNMT reads them).
	Base string
	// Log hears each log line, JoeyNMT's format ("2006-01-02
	// 15:04:05,000 - INFO - joeynmt.prediction - ..."); nil drops them.
	Log io.Writer
	// Now is the clock of the log lines and the timings (nil: time.Now).
	Now func() time.Time
}

// Line is one of JoeyNMT's log lines: its logger and message.
type Line struct {
	Level, Logger, Msg string
}

// SetResult is one set's outcome.
type SetResult struct {
	Name string
	// Hypotheses are the translations, n_best per source line in order.
	Hypotheses []string
	// Scores are the eval_metrics' values as JoeyNMT holds them (chrf as
	// a fraction, the others in percent), nil without references.
	Scores map[string]float64
	// Files are the files written.
	Files []string
}

// Result is Run's outcome: each set's, and every log line in order.
type Result struct {
	Sets  []SetResult
	Lines []Line
}

// Run does joeynmt test with the attnx export of the config's model in
// dir, opened with topt (its Engine the steps engine, which decodes with
// each batch's settings): it loads the dev and test sets first (a bad file
// fails before anything is decoded), then decodes, scores and writes each
// in turn, dev first.
func Run(ctx context.Context, dir string, topt translate.Options, c *Config, o Options) (*Result, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	info, err := translate.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if info.Toolkit == nil || info.Toolkit.Name != "JoeyNMT" {
		return nil, fmt.Errorf("joeytest: %s was not exported from a JoeyNMT checkpoint (its attnx.json names no JoeyNMT toolkit): joeynmt test's settings would not mean the same there", dir)
	}
	if info.SrcTokens == nil || info.TgtTokens == nil {
		return nil, fmt.Errorf("joeytest: %s has no vocabularies: JoeyNMT's test sets are text", dir)
	}
	tok, err := targetTokenizer(dir, info, c)
	if err != nil {
		return nil, err
	}
	var sets []*Set
	for _, s := range []struct{ name, path string }{{"dev", c.Dev}, {"test", c.Test}} {
		if s.path == "" {
			continue
		}
		set, err := LoadSet(c, s.name, s.path, o.Base)
		if err != nil {
			return nil, err
		}
		sets = append(sets, set)
	}
	topt.Engine = translate.EngineSteps
	t, err := translate.Open(dir, topt)
	if err != nil {
		return nil, err
	}
	defer t.Close()
	r := &run{t: t, c: c, o: o, res: &Result{}, trgTok: tok}
	for _, s := range sets {
		sr, err := r.decode(ctx, s)
		if err != nil {
			return nil, err
		}
		r.res.Sets = append(r.res.Sets, *sr)
	}
	return r.res, nil
}

type run struct {
	t      *translate.Translator
	c      *Config
	o      Options
	res    *Result
	trgTok func(string) []string
}

func (r *run) log(logger, format string, a ...any) {
	l := Line{Level: "INFO", Logger: logger, Msg: fmt.Sprintf(format, a...)}
	r.res.Lines = append(r.res.Lines, l)
	if r.o.Log != nil {
		ts := r.o.Now()
		fmt.Fprintf(r.o.Log, "%s,%03d - %s - %s - %s\n", ts.Format("2006-01-02 15:04:05"), ts.Nanosecond()/1e6, l.Level, l.Logger, l.Msg)
	}
}

const predictionLog = "joeynmt.prediction"

func pyBool(b bool) string {
	if b {
		return "True"
	}
	return "False"
}

// decode is prediction.test's loop body for one set.
func (r *run) decode(ctx context.Context, s *Set) (*SetResult, error) {
	tc := r.c.Testing
	device := r.t.Device()
	nGPU := 0
	if device == "cuda" {
		nGPU = 1
	}
	r.log(predictionLog, "Decoding on %s set... (device: %s, n_gpu: %d, use_ddp: False, fp16: False)", s.Name, device, nGPU)
	desc := " (Greedy decoding with "
	if tc.BeamSize >= 2 {
		desc = fmt.Sprintf(" (Beam search with beam_size=%d, beam_alpha=%s, n_best=%d, ", tc.BeamSize, tc.BeamAlpha, tc.NBest)
	}
	desc += fmt.Sprintf("min_output_length=%s, max_output_length=%s, return_prob='%s', generate_unk=%s, repetition_penalty=%s, no_repeat_ngram_size=%s)",
		tc.MinOutputLength, tc.MaxOutputLength, tc.ReturnProb, pyBool(tc.GenerateUnk), tc.RepetitionPenalty, tc.NoRepeatNgramSize)
	r.log(predictionLog, "Predicting %d example(s)...%s", len(s.Src), desc)

	start := r.o.Now()
	rows, err := r.t.SourceRowsContext(ctx, s.Src, false)
	if err != nil {
		return nil, fmt.Errorf("%s set %s: %w", s.Name, s.SrcFile, err)
	}
	var trgLens []int
	if s.HasTrg() {
		for _, t := range s.Trg {
			trgLens = append(trgLens, len(r.trgTok(t)))
		}
	}
	nbest := 1
	if tc.BeamSize > 1 {
		nbest = tc.NBest
	}
	hyps := make([]string, 0, len(s.Src)*nbest)
	for _, b := range Batches(rows, trgLens, tc.BatchSize, tc.BatchType == "token") {
		texts := make([]string, len(b))
		longest := 0
		for k, i := range b {
			texts[k] = s.Src[i]
			longest = max(longest, len(rows[i]))
		}
		res, err := r.t.TranslateCall(ctx, texts, r.callOptions(longest))
		if err != nil {
			return nil, fmt.Errorf("%s set %s: %w", s.Name, s.SrcFile, err)
		}
		for _, x := range res {
			for n := 0; n < nbest; n++ {
				text := ""
				if n < len(x.Hypotheses) {
					text = x.Hypotheses[n].Text
				}
				if text == "" {
					// JoeyNMT's post_process asserts a non-empty line and
					// predict puts the unknown token in its place.
					text = r.unkToken()
				}
				hyps = append(hyps, text)
			}
		}
	}
	r.log(predictionLog, "Generation took %.4f[sec].", r.o.Now().Sub(start).Seconds())

	out := &SetResult{Name: s.Name, Hypotheses: hyps}
	if s.HasTrg() {
		if out.Scores, err = r.evaluate(s, hyps, nbest); err != nil {
			return nil, err
		}
	}
	if r.o.OutputPath != "" {
		if out.Files, err = r.save(s.Name, hyps, nbest); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// callOptions are the testing section's search settings for a batch whose
// longest source (</s> included) has longest tokens: max_output_length,
// or int(longest x 1.5) when it is -1, as JoeyNMT's search sets it.
func (r *run) callOptions(longest int) translate.CallOptions {
	tc := r.c.Testing
	limit := int(tc.MaxOutputLength.V)
	if limit < 0 {
		limit = int(float64(longest) * 1.5)
	}
	o := translate.CallOptions{MaxLen: limit, Beam: tc.BeamSize, Rules: translate.RulesJoeyNMT}
	banUNK := !tc.GenerateUnk
	o.BanUNK = &banUNK
	if tc.BeamSize > 1 {
		o.NBest = tc.NBest
		alpha, wu := tc.BeamAlpha.V, true
		if alpha <= 0 {
			alpha, wu = 0, false
		}
		o.LengthPenalty, o.LengthPenaltyWu = &alpha, &wu
	}
	ngram := 0
	if n := int(tc.NoRepeatNgramSize.V); n > 1 {
		ngram = n
	}
	o.NoRepeatNgram = &ngram
	pen := 0.0
	if p := tc.RepetitionPenalty.V; p > 1 {
		pen = p
	}
	o.RepetitionPenalty = &pen
	return o
}

func (r *run) unkToken() string {
	info := r.t.Info()
	if u := info.Special.UNK; u >= 0 && int(u) < len(info.TgtTokens) {
		return info.TgtTokens[u]
	}
	return "<unk>"
}

// Batches cuts a set's rows (source ids, </s> included) in file order as
// JoeyNMT 2.3's batch samplers do in test mode: size sentences, or with
// tokens until sentences x the longest of max(source, reference + 1)
// reaches size (trgLens: the references' pieces, nil without references).
func Batches(rows [][]int64, trgLens []int, size int, tokens bool) [][]int {
	var out [][]int
	var cur []int
	longest := 0
	for i, row := range rows {
		cur = append(cur, i)
		n := len(row)
		if trgLens != nil {
			n = max(n, trgLens[i]+1)
		}
		longest = max(longest, n)
		fill := len(cur)
		if tokens {
			fill *= longest
		}
		if fill >= size {
			out, cur, longest = append(out, cur), nil, 0
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// evaluate is prediction.evaluate: the eval_metrics on the 1-best
// hypotheses against the references, logged as JoeyNMT logs them.
func (r *run) evaluate(s *Set, hyps []string, nbest int) (map[string]float64, error) {
	tc := r.c.Testing
	best := hyps
	if nbest > 1 {
		best = nil
		for i := 0; i < len(hyps); i += nbest {
			best = append(best, hyps[i])
		}
	}
	start := r.o.Now()
	scores := map[string]float64{}
	for _, m := range tc.EvalMetrics {
		switch m {
		case "bleu":
			v, sig, err := bleu(best, s.Trg, tc.SacreBLEU)
			if err != nil {
				return nil, fmt.Errorf("%s set: bleu: %w", s.Name, err)
			}
			r.log("joeynmt.metrics", "%s", sig)
			scores[m] = v
		case "chrf":
			v, sig, err := chrf(best, s.Trg, tc.SacreBLEU)
			if err != nil {
				return nil, fmt.Errorf("%s set: chrf: %w", s.Name, err)
			}
			r.log("joeynmt.metrics", "%s", sig)
			scores[m] = v
		case "token_accuracy":
			scores[m] = TokenAccuracy(best, s.Trg, r.trgTok)
		case "sequence_accuracy":
			scores[m] = SequenceAccuracy(best, s.Trg)
		}
	}
	var parts []string
	for _, m := range tc.EvalMetrics {
		if !math.IsNaN(scores[m]) {
			parts = append(parts, fmt.Sprintf("%s: %6.2f", m, scores[m]))
		}
	}
	search := "greedy"
	if tc.BeamSize > 1 {
		search = "beam search"
	}
	r.log(predictionLog, "Evaluation result (%s): %s, %.4f[sec]", search, strings.Join(parts, ", "), r.o.Now().Sub(start).Seconds())
	return scores, nil
}

// save writes a set's translations as JoeyNMT's save_hypothese does, each
// file whole (a temporary file renamed), and logs it.
func (r *run) save(set string, hyps []string, nbest int) ([]string, error) {
	p := pyPath(r.o.OutputPath + "." + set)
	var files []string
	write := func(path string, lines []string) error {
		var b bytes.Buffer
		for _, l := range lines {
			b.WriteString(l)
			b.WriteByte('\n')
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
		if err != nil {
			return fmt.Errorf("output path: %w", err)
		}
		_, err = tmp.Write(b.Bytes())
		if cerr := tmp.Close(); err == nil {
			err = cerr
		}
		if err == nil {
			err = os.Rename(tmp.Name(), path)
		}
		if err != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("output path: %w", err)
		}
		files = append(files, path)
		return nil
	}
	if nbest > 1 {
		dir, base := filepath.Split(p)
		ext := filepath.Ext(base)
		stem := strings.TrimSuffix(base, ext)
		for n := 0; n < nbest; n++ {
			var lines []string
			for i := n; i < len(hyps); i += nbest {
				lines = append(lines, hyps[i])
			}
			// Path.parent / f"{stem}-{n}.{suffix}": the suffix keeps its
			// dot, so the name has two.
			if err := write(filepath.Join(dir, fmt.Sprintf("%s-%d.%s", stem, n, ext)), lines); err != nil {
				return nil, err
			}
		}
	} else if err := write(p, hyps); err != nil {
		return nil, err
	}
	r.log(predictionLog, "Translations saved to: %s.", p)
	return files, nil
}

// pyPath is str(pathlib.Path(p)): repeated slashes and "." parts dropped,
// no trailing slash; ".." is kept.
func pyPath(p string) string {
	abs := strings.HasPrefix(p, "/")
	var parts []string
	for _, s := range strings.Split(p, "/") {
		if s != "" && s != "." {
			parts = append(parts, s)
		}
	}
	out := strings.Join(parts, "/")
	if abs {
		return "/" + out
	}
	if out == "" {
		return "."
	}
	return out
}

// targetTokenizer is the target side's tokenizer as JoeyNMT's token
// accuracy calls it (the tokenizer's __call__: no preprocessing, the
// subword model restricted to the vocabulary as the export records it;
// level word: split at single spaces; char: each character).
func targetTokenizer(dir string, info *modeldir.Info, c *Config) (func(string) []string, error) {
	if spec := info.TgtTokenizer; spec != nil {
		s := *spec
		s.Lowercase, s.Pretokenizer = false, subword.PretokenizeNone
		tok, err := subword.Open(s, dir, info.TgtTokens)
		if err != nil {
			return nil, fmt.Errorf("joeytest: the target tokenizer: %w", err)
		}
		return tok.Encode, nil
	}
	switch c.Trg.Level {
	case "char":
		return func(s string) []string {
			var out []string
			for _, r := range strings.ReplaceAll(s, " ", "\u2581") {
				out = append(out, string(r))
			}
			return out
		}, nil
	case "word", "":
		return func(s string) []string { return strings.Split(s, " ") }, nil
	}
	return nil, fmt.Errorf("joeytest: %s: data.trg.level %q but the model directory records no target tokenizer", c.Path, c.Trg.Level)
}
