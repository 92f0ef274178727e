package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/shard"
	"github.com/attnx/attnx/translate"
)

func init() {
	commandDocs["merge"] = `
Joins the parts that attnx translate --src FILE --output OUTPUT --shard K/N
wrote (OUTPUT.shard-K-of-N, each with its record OUTPUT.shard-K-of-N.json)
into OUTPUT, in order, after checking that all N shards are finished, that
they are of the same source file, with the same model and settings, that
their byte ranges follow on from each other over the whole file, and that
each part has the lines and the bytes its record says. OUTPUT appears
complete or not at all. The parts are left in place, or with
--remove-parts removed once OUTPUT is written.`
}

// shardJob is translate --src FILE --shard K/N: the shard being read and
// the record its part gets.
type shardJob struct {
	src  *shard.Source
	rec  shard.Record
	part string
}

// openShard reads the lines of the shard the --shard flag names, and says
// whether its part is finished already (skip) with the settings given.
func openShard(flag, src, output, settings string, linesPerSentence int) (job *shardJob, lines []string, skip bool, err error) {
	spec, err := shard.Parse(flag, os.Getenv)
	if err != nil {
		return nil, nil, false, &usageError{"--" + err.Error()}
	}
	part := shard.Part(output, spec)
	for _, p := range []string{part, shard.RecordFile(part)} {
		if err := atomicfile.SameFile(p, src); err != nil {
			return nil, nil, false, &usageError{"--shard: " + err.Error()}
		}
	}
	in, err := shard.OpenSource(src, spec)
	if err != nil {
		return nil, nil, false, fmt.Errorf("--src: %w", err)
	}
	lines, err = splitLines(in.Reader(), src, newlineEnds)
	if err != nil {
		in.Close()
		return nil, nil, false, fmt.Errorf("--src: %w", err)
	}
	job = &shardJob{src: in, rec: in.Record(settings, len(lines), linesPerSentence), part: part}
	done, why, err := shard.Finished(job.part, job.rec)
	if err != nil {
		in.Close()
		return nil, nil, false, err
	}
	switch {
	case done:
		fmt.Fprintf(stderr, "attnx translate: shard %s of %s (%d sentences, bytes %d-%d) is done already (%s, %s): skipped\n",
			spec, src, len(lines), in.Start, in.End, job.part, filepath.Base(shard.RecordFile(job.part)))
		in.Close()
		return nil, nil, true, nil
	case why != "":
		fmt.Fprintf(stderr, "attnx translate: note: shard %s: translating it again: %s\n", spec, why)
	}
	return job, lines, false, nil
}

// lineInFile rewords a bad line's place in a shard ("line 7") as its line
// in the whole file, counting the lines before the shard (read only now,
// for the message).
func (j *shardJob) lineInFile(err error) error {
	var bad *translate.BadInputError
	var i int
	if !errors.As(err, &bad) {
		return err
	}
	if _, serr := fmt.Sscanf(bad.Input.Where, "line %d", &i); serr != nil {
		return err
	}
	before, lerr := j.src.LinesBefore()
	if lerr != nil {
		return err
	}
	bad.Input.Where = fmt.Sprintf("line %d (line %d of shard %s)", before+i, i, j.rec.Shard)
	return err
}

// shardSettings is a digest of what decides a shard's translations: the
// model directory's files (their bytes) and the decoding and output
// settings. Threads and lanes, which change nothing in the output, are
// left out, so a retried pod on another machine still skips a finished
// shard.
func shardSettings(model string, topt translate.Options, co translate.CorpusOptions, job corpusJob) (string, error) {
	h := sha256.New()
	entries, err := os.ReadDir(model)
	if err != nil {
		return "", fmt.Errorf("--model: %w", err)
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	for _, name := range names {
		f, err := os.Open(filepath.Join(model, name))
		if err != nil {
			return "", fmt.Errorf("--model: %w", err)
		}
		fmt.Fprintf(h, "file %q\n", name)
		_, err = io.Copy(h, f)
		f.Close()
		if err != nil {
			return "", fmt.Errorf("--model: reading %s: %w", name, err)
		}
	}
	topt.Threads, co.Lanes = 0, 0
	settings, err := json.Marshal(struct {
		Options   translate.Options
		Corpus    translate.CorpusOptions
		JSON      bool
		Attention bool
		NBest     int
		WithScore bool
	}{topt, co, job.json, job.attention, job.nBest, job.withScore})
	if err != nil {
		return "", err
	}
	h.Write(settings)
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func runMerge(args []string) error {
	fs := newFlagSet("merge")
	remove := fs.Bool("remove-parts", false, "remove the parts and their records once OUTPUT is written")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return &usageError{"want one OUTPUT: the --output that attnx translate --shard K/N wrote its parts beside"}
	}
	out := fs.Arg(0)
	m, err := shard.Merge(out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "attnx merge: %d shards of %s, %d sentences, %d lines (%d bytes) -> %s\n", m.Shards, m.Source, m.Sentences, m.Lines, m.Bytes, out)
	if *remove {
		return shard.RemoveParts(out, m.Shards)
	}
	return nil
}
