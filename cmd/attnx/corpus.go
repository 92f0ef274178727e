package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"runtime"
	"time"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/internal/heatmap"
	"github.com/attnx/attnx/outformat"
	"github.com/attnx/attnx/shard"
	"github.com/attnx/attnx/translate"
	"github.com/schollz/progressbar/v3"
)

// corpusJob is attnx translate --src.
type corpusJob struct {
	src, output string
	json        bool
	attention   bool // in the JSON
	nBest       int
	format      string // formatPlain, formatFairseq or formatOnmt
	withScore   bool   // plain lines end with a tab and the score
	plot        string
	opts        translate.CorpusOptions
	// shard, when set, is the shard of src being translated, whose lines
	// are read already: its part file gets the output, and then its
	// record.
	shard *shard.Job
}

// corpusLanes chooses the lanes and the ONNX Runtime threads of each: by
// default one lane per core, each with one thread (measured fastest on
// small batches: ORT's threads gain little inside one decoder step); with
// --threads T the lanes share T.
func corpusLanes(lanes, threads int) (int, int) {
	cores := runtime.NumCPU()
	if lanes == 0 {
		lanes = cores
		if threads > 0 {
			lanes = min(cores, threads)
		}
	}
	total := threads
	if total == 0 {
		total = cores
	}
	return lanes, max(1, total/lanes)
}

// noteSegmented prints a note when one of the first inputs looks
// segmented already (the tokenizer would split it again).
func noteSegmented(tr *translate.Translator, inputs []string) {
	for _, s := range inputs[:min(len(inputs), 100)] {
		if n := tr.LooksSegmented(s); n != "" {
			fmt.Fprintf(stderr, "attnx translate: note: %s\n", n)
			return
		}
	}
}

// corpusEmitted, when set (by tests), hears each sentence of --src once
// it is written.
var corpusEmitted func(i int)

func translateCorpus(tr *translate.Translator, job corpusJob) (err error) {
	if job.shard != nil {
		return translateShard(tr, job)
	}
	lines, err := readSegments(job.src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	noteSegmented(tr, lines)
	var w *bufio.Writer
	var af *atomicfile.File
	if job.output != "" {
		if af, err = atomicfile.Create(job.output, 0o644); err != nil {
			return fmt.Errorf("--output: %w", err)
		}
		defer func() {
			if err != nil {
				af.Discard()
			}
		}()
		w = bufio.NewWriterSize(af, 1<<16)
	} else {
		w = bufio.NewWriter(stdout)
	}
	out, err := outformat.NewWriter(w, tr, job.outOptions())
	if err != nil {
		return &usageError{err.Error()}
	}
	bar := newCorpusBar(len(lines))
	plot := heatmap.Series{Path: job.plot}
	start := time.Now()
	emit := func(i int, res translate.Result) error {
		if err := out.Write(i, lines[i], res); err != nil {
			return err
		}
		if corpusEmitted != nil {
			corpusEmitted(i)
		}
		if job.plot != "" && res.Tokens != nil {
			if err := plot.Add(lines[i], res.SourceTokens, res.OutputTokens, res.Attention); err != nil {
				return err
			}
		}
		if af == nil {
			return w.Flush() // a reader of the pipe may be waiting
		}
		return nil
	}
	st, err := tr.TranslateCorpus(context.Background(), lines, 1, job.opts, emit, func(n, toks int) {
		bar.set(n, toks)
	})
	bar.finish()
	if err != nil {
		return translateCLIError(fmt.Errorf("%s %w", job.src, err))
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if af != nil {
		if err := af.Commit(); err != nil {
			return err
		}
	}
	if err := plot.Close(); err != nil {
		return err
	}
	where := "stdout"
	if job.output != "" {
		where = job.output
	}
	corpusSummary(tr, st, time.Since(start), job.opts.Lanes, where)
	return nil
}

// corpusSummary prints a test set's totals, and the count of pieces that
// went in as the unknown token.
func corpusSummary(tr *translate.Translator, st translate.CorpusStats, took time.Duration, lanes int, where string) {
	secs := took.Seconds()
	lanes = max(lanes, 1)
	fmt.Fprintf(stderr, "attnx translate: %d %s (%d blank) in %.2fs: %.1f sentences/s, %.0f tokens/s out (%d source, %d output tokens), %d %s on %d %s -> %s\n",
		st.Sentences, plural(int64(st.Sentences), "sentence", "sentences"), st.Empty, secs, float64(st.Sentences)/secs, float64(st.OutputTokens)/secs, st.SourceTokens, st.OutputTokens,
		st.Batches, plural(int64(st.Batches), "batch", "batches"), lanes, plural(int64(lanes), "lane", "lanes"), where)
	if n := tr.UnknownPieces(); n > 0 {
		fmt.Fprintf(stderr, "attnx translate: note: %d source %s not in the model's vocabulary and went in as the unknown token\n", n, plural(n, "piece was", "pieces were"))
	}
}

// Output formats of translate --src (--format).
const (
	formatPlain   = string(outformat.Plain)
	formatFairseq = string(outformat.Fairseq)
	formatOnmt    = string(outformat.OpenNMT)
)

// outOptions are the output format's options.
func (job corpusJob) outOptions() outformat.Options {
	return outformat.Options{Format: outformat.Format(job.format), JSON: job.json, Attention: job.attention, NBest: job.nBest, WithScore: job.withScore}
}

// writeCorpusResult writes one sentence's translation as job says (the
// plain format or JSON: the toolkits' formats number the sentences).
func writeCorpusResult(w io.Writer, tr *translate.Translator, src string, res translate.Result, job corpusJob) error {
	out, err := outformat.NewWriter(w, tr, job.outOptions())
	if err != nil {
		return err
	}
	return out.Write(0, src, res)
}

// corpusBar shows sentences done of the total, sentences/s and the time
// left on stderr when it is a terminal.
type corpusBar struct {
	bar   *progressbar.ProgressBar
	start time.Time
}

func newCorpusBar(total int) *corpusBar {
	b := &corpusBar{start: time.Now()}
	if !isTerminal(stderr) || total == 0 {
		return b
	}
	b.bar = progressbar.NewOptions(total,
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("translating"),
		progressbar.OptionSetWidth(30),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("sent"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish(),
	)
	return b
}

func (b *corpusBar) set(sentences, outTokens int) {
	if b.bar == nil {
		return
	}
	secs := time.Since(b.start).Seconds()
	b.bar.Describe(fmt.Sprintf("translating (%.0f tok/s)", float64(outTokens)/max(secs, 1e-9)))
	b.bar.Set(sentences)
}

func (b *corpusBar) finish() {
	if b.bar != nil {
		b.bar.Finish()
	}
}
