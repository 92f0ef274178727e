package shard

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/internal/segments"
	"github.com/attnx/attnx/translate"
)

// SpecError is a shard that cannot be run as asked (a count other than
// the recorded shards', a part that would overwrite the source): the
// caller's mistake, not a failure of the run.
type SpecError struct{ Msg string }

// Error says what about the shard cannot be run and why.
func (e *SpecError) Error() string { return e.Msg }

// CheckCount refuses spec, worked out by Parse from "auto", when records of
// another count lie beside output: a Slurm task resubmitted alone (sbatch
// --array=I) is an array of its own, whose variables make it shard 1/1.
func CheckCount(output string, spec Spec) error {
	counts, err := RecordedCounts(output)
	if err != nil {
		return fmt.Errorf("shard auto: %w", err)
	}
	for _, n := range counts {
		if n != spec.N {
			return &SpecError{fmt.Sprintf("shard auto works out shard %v from the Slurm array's variables, but records of %d shards lie beside %s: a task resubmitted alone makes an array of its own; give --shard auto/%d (task I is then shard I+1 of %d)", spec, n, output, n, n)}
		}
	}
	return nil
}

// JobConfig names a shard to translate.
type JobConfig struct {
	// Source is the file a shard of which is translated, Output the file
	// the shards are merged into: the part is Part(Output, Spec), in
	// Output's folder, which is made when missing.
	Source, Output string
	Spec           Spec
	// Fields are the settings the part is translated with
	// (Settings.Fields), kept in its record.
	Fields map[string]string
	// LinesPerSentence is how many lines TranslateOptions.Write writes for
	// each sentence: 1, or an n-best's n.
	LinesPerSentence int
}

// Job is a shard being translated (OpenJob): its source lines are read,
// and Translate writes its part and then its record.
type Job struct {
	// Part is the part file, Lines the shard's source lines.
	Part  string
	Lines []string
	// Done says the part is finished already with these settings (its
	// record matches): there is nothing to translate. Again, when not
	// "", is why a part found there is translated again.
	Done  bool
	Again string

	rec Record
	src *Source
}

// OpenJob reads the lines of the shard c names and finds out whether its
// part is finished already (Job.Done). Close the Job when done with it.
func OpenJob(c JobConfig) (*Job, error) {
	if c.LinesPerSentence < 1 {
		return nil, fmt.Errorf("shard %v: %d lines per sentence: want 1 or more", c.Spec, c.LinesPerSentence)
	}
	// A Kubernetes Job's pods share the output folder, and its image has
	// no shell to make it: the shards make it (as the sbatch script does).
	if err := os.MkdirAll(filepath.Dir(c.Output), 0o755); err != nil {
		return nil, fmt.Errorf("output %s: making the folder of the shards' parts: %w", c.Output, err)
	}
	part := Part(c.Output, c.Spec)
	for _, p := range []string{part, RecordFile(part)} {
		if err := atomicfile.SameFile(p, c.Source); err != nil {
			return nil, &SpecError{"shard: " + err.Error()}
		}
	}
	in, err := OpenSource(c.Source, c.Spec)
	if err != nil {
		return nil, err
	}
	lines, err := segments.Read(in.Reader(), c.Source)
	if err != nil {
		in.Close()
		return nil, fmt.Errorf("shard %v: %w", c.Spec, err)
	}
	j := &Job{Part: part, Lines: lines, rec: in.Record(c.Fields, len(lines), c.LinesPerSentence), src: in}
	if j.Done, j.Again, err = Finished(part, j.rec); err != nil {
		in.Close()
		return nil, err
	}
	return j, nil
}

// Record returns the record the part gets once written (its counts of
// the part's bytes still 0).
func (j *Job) Record() Record { return j.rec }

// Source is the shard of the source file, as read.
func (j *Job) Source() *Source { return j.src }

// Close closes the source file.
func (j *Job) Close() error { return j.src.Close() }

// TranslateOptions configures Job.Translate.
type TranslateOptions struct {
	// Corpus is how the shard's lines are translated (its AnyOrder is
	// set: the Job puts the results in order).
	Corpus translate.CorpusOptions
	// Write writes sentence i's result (i from 0, of the shard): exactly
	// the Job's LinesPerSentence lines. It must not keep w.
	Write func(w io.Writer, i int, res translate.Result) error
	// Progress, when not nil, hears the sentences and output tokens done
	// so far after each batch.
	Progress func(sentences, outTokens int)
	// MaxHeldBytes bounds the bytes of written results held in memory
	// while they wait for the sentences before them: 0 means
	// DefaultMaxHeld, below 0 none (all wait in the spill file).
	MaxHeldBytes int64
	// Written, when not nil, hears each sentence once it is written to
	// the part, in order.
	Written func(i int)
}

// Stats are Job.Translate's totals.
type Stats struct {
	translate.CorpusStats
	// PeakHeldBytes is the most bytes of results held in memory at once,
	// Spilled the sentences that waited in the spill file.
	PeakHeldBytes int64
	Spilled       int
}

// Translate translates the shard's lines with tr into its part, written
// atomically as the sentences finish: each result is written out at once
// (TranslateOptions.Write) and goes to the part as soon as the sentences
// before it have, waiting until then in memory (up to MaxHeldBytes) or in
// a spill file, so that the memory does not grow with the shard's results.
// Once the part is complete its record is written, which makes the shard
// done; a run that fails or is killed leaves no part and no record (only,
// when killed, the part's temporary file, .PART.tmp-*). A bad line is
// named by its line in the whole source file and in the shard.
func (j *Job) Translate(ctx context.Context, tr *translate.Translator, opt TranslateOptions) (st Stats, err error) {
	if opt.Write == nil {
		return st, fmt.Errorf("shard %s: TranslateOptions.Write is nil: it writes each sentence's result", j.rec.Shard)
	}
	maxHeld := opt.MaxHeldBytes
	if maxHeld == 0 {
		maxHeld = DefaultMaxHeld
	}
	af, err := atomicfile.Create(j.Part, 0o644)
	if err != nil {
		return st, fmt.Errorf("shard %s: %w", j.rec.Shard, err)
	}
	counted := NewCounter(af)
	bw := bufio.NewWriterSize(counted, 1<<16)
	ord := newOrderer(bw, len(j.Lines), maxHeld, filepath.Dir(j.Part), opt.Written)
	defer func() {
		ord.close()
		if err != nil {
			af.Discard()
		}
	}()
	co := opt.Corpus
	co.AnyOrder = true
	var buf bytes.Buffer
	emit := func(i int, res translate.Result) error {
		buf.Reset()
		if err := opt.Write(&buf, i, res); err != nil {
			return err
		}
		if n := bytes.Count(buf.Bytes(), newline); n != j.rec.LinesPerSentence {
			return fmt.Errorf("shard %s: sentence %d written as %d lines, want %d", j.rec.Shard, i+1, n, j.rec.LinesPerSentence)
		}
		return ord.put(i, buf.Bytes())
	}
	st.CorpusStats, err = tr.TranslateCorpus(ctx, j.Lines, 1, co, emit, opt.Progress)
	st.PeakHeldBytes, st.Spilled = ord.peakHeld, ord.spilled
	if err != nil {
		return st, j.lineInFile(err)
	}
	if err := ord.finish(); err != nil {
		return st, fmt.Errorf("shard %s: %w", j.rec.Shard, err)
	}
	if err := bw.Flush(); err != nil {
		return st, fmt.Errorf("shard %s: writing %s: %w", j.rec.Shard, j.Part, err)
	}
	if err := af.Commit(); err != nil {
		return st, fmt.Errorf("shard %s: %w", j.rec.Shard, err)
	}
	// The part is complete: its record makes the shard done.
	return st, WriteRecord(j.Part, j.rec, counted)
}

// lineInFile rewords a bad line's place in the shard ("line 7") as its
// line in the whole file, counting the lines before the shard (read only
// now, for the message).
func (j *Job) lineInFile(err error) error {
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
