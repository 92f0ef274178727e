package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

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
their byte ranges follow on from each other over the whole file, that
those bytes of the source as it is now are the ones each shard was
translated from (it reads the source: --src FILE names it when it is not
where the records say), and that each part has the lines and the bytes
its record says. OUTPUT appears
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
func openShard(flag, src, output string, settings map[string]string, linesPerSentence int) (job *shardJob, lines []string, skip bool, err error) {
	spec, err := shard.Parse(flag, os.Getenv)
	if err != nil {
		return nil, nil, false, &usageError{"--" + err.Error()}
	}
	if flag == "auto" {
		if err := checkAutoCount(output, spec); err != nil {
			return nil, nil, false, err
		}
	}
	// A Job's pods share the output folder, and its image has no shell
	// to make it: the shards make it (as the sbatch script does).
	if err := os.MkdirAll(filepath.Dir(output), 0o755); err != nil {
		return nil, nil, false, fmt.Errorf("--output: making the folder of the shards' parts: %w", err)
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

// checkAutoCount refuses --shard auto's spec when records of another
// count lie beside output: a Slurm task resubmitted alone (sbatch
// --array=I) is an array of one task, whose variables make it shard 1/1.
func checkAutoCount(output string, spec shard.Spec) error {
	counts, err := shard.RecordedCounts(output)
	if err != nil {
		return fmt.Errorf("--shard auto: %w", err)
	}
	for _, n := range counts {
		if n != spec.N {
			return &usageError{fmt.Sprintf("--shard auto works out shard %v from the Slurm array's variables, but records of %d shards lie beside %s: a task resubmitted alone makes an array of its own; give --shard auto/%d (task I is then shard I+1 of %d)", spec, n, output, n, n)}
		}
	}
	return nil
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
