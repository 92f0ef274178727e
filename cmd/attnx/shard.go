package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/attnx/attnx/shard"
	"github.com/attnx/attnx/translate"
)

func init() {
	commandDocs["merge"] = `
Joins the parts that attnx translate --src FILE --output OUTPUT --shard K/N
wrote (OUTPUT.shard-K-of-N, each with its record OUTPUT.shard-K-of-N.json)
into OUTPUT, in order, after checking that all N shards are finished, that
they are of the same source file, with the same model and settings, that
their byte ranges follow on from each other over the whole file, that
those bytes of the source as it is now are the ones each shard was
translated from (it reads the source: --src FILE names it when it is not
where the records say), and that each part has the lines and the bytes
its record says. OUTPUT appears
complete or not at all. The parts are left in place, or with
--remove-parts removed once OUTPUT is written.`
}

// openShard opens the shard the --shard flag names (shard.OpenJob), and
// says whether its part is finished already (skip) with the settings
// given.
func openShard(flag, src, output string, settings map[string]string, linesPerSentence int) (job *shard.Job, skip bool, err error) {
	spec, err := shard.Parse(flag, os.Getenv)
	if err != nil {
		return nil, false, &usageError{"--" + err.Error()}
	}
	if flag == "auto" {
		if err := shard.CheckCount(output, spec); err != nil {
			return nil, false, shardCLIError(err)
		}
	}
	job, err = shard.OpenJob(shard.JobConfig{Source: src, Output: output, Spec: spec, Fields: settings, LinesPerSentence: linesPerSentence})
	if err != nil {
		return nil, false, shardCLIError(err)
	}
	in := job.Source()
	switch {
	case job.Done:
		fmt.Fprintf(stderr, "attnx translate: shard %s of %s (%d sentences, bytes %d-%d) is done already (%s, %s): skipped\n",
			spec, src, len(job.Lines), in.Start, in.End, job.Part, filepath.Base(shard.RecordFile(job.Part)))
		job.Close()
		return nil, true, nil
	case job.Again != "":
		fmt.Fprintf(stderr, "attnx translate: note: shard %s: translating it again: %s\n", spec, job.Again)
	}
	return job, false, nil
}

// shardCLIError makes a shard's SpecError a usage error (exit status 2).
func shardCLIError(err error) error {
	var se *shard.SpecError
	if errors.As(err, &se) {
		return &usageError{"--" + se.Msg}
	}
	return err
}

// translateShard is translateCorpus for a shard: shard.Job.Translate
// writes its part as the sentences finish, and then its record.
func translateShard(tr *translate.Translator, job corpusJob) error {
	sj := job.shard
	if tr.BatchDependentLimits() {
		fmt.Fprintf(stderr, "attnx translate: note: the model's output limits depend on its toolkit's batches (attnx.json's defaults.batching): shard %s is batched as the toolkit would batch it alone, so a sentence near its edges may get another limit than in one run over the whole file; --max-len N --max-len-ratio 0 gives every sentence the same limit in any shard\n",
			sj.Record().Shard)
	}
	noteSegmented(tr, sj.Lines)
	bar := newCorpusBar(len(sj.Lines))
	start := time.Now()
	st, err := sj.Translate(context.Background(), tr, shard.TranslateOptions{
		Corpus: job.opts,
		Write: func(w io.Writer, i int, res translate.Result) error {
			return writeCorpusResult(w, tr, sj.Lines[i], res, job)
		},
		Progress: bar.set,
		Written:  corpusEmitted,
	})
	bar.finish()
	if err != nil {
		return translateCLIError(fmt.Errorf("%s %w", job.src, err))
	}
	corpusSummary(tr, st.CorpusStats, time.Since(start), job.opts.Lanes, sj.Part)
	return nil
}

// shardSettings returns the settings fields of a shard's record
// (shard.Settings): the model directory's files, the options it is
// translated with and how its lines are written.
func shardSettings(model string, topt translate.Options, co translate.CorpusOptions, job corpusJob) (map[string]string, error) {
	files, err := shard.ModelFiles(model)
	if err != nil {
		return nil, fmt.Errorf("--model: %w", err)
	}
	s := shard.Settings{Model: files, Options: topt, Corpus: co, Output: map[string]string{
		"json": strconv.FormatBool(job.json), "attention": strconv.FormatBool(job.attention),
		"n_best": strconv.Itoa(job.nBest), "with_score": strconv.FormatBool(job.withScore), "format": job.format,
	}}
	return s.Fields()
}

func runMerge(args []string) error {
	fs := newFlagSet("merge")
	remove := fs.Bool("remove-parts", false, "remove the parts and their records once OUTPUT is written")
	src := fs.String("src", "", "the source `FILE` the shards were translated from, read to check each shard's bytes (default: the --src their records name)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &usageError{"want one OUTPUT: the --output that attnx translate --shard K/N wrote its parts beside"}
	}
	out := fs.Arg(0)
	m, err := shard.Merge(out, shard.MergeOptions{Source: *src})
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "attnx merge: %d shards of %s, %d sentences, %d lines (%d bytes) -> %s\n", m.Shards, m.Source, m.Sentences, m.Lines, m.Bytes, out)
	if *remove {
		return shard.RemoveParts(out, m.Shards)
	}
	return nil
}
