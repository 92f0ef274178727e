package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/outformat"
	"github.com/attnx/attnx/translate"
)

// tgtFlagUsage is --tgt's help.
const tgtFlagUsage = "with --src: score the given translations in `FILE` (one per line of --src) by teacher forcing, as onmt_translate -tgt does: plain writes each pair's score (the toolkit's normalized one, natural log), --json its tokens and per-token log-probs, --format onmt what onmt_translate -tgt -verbose logs (SENT, PRED, PRED SCORE, GOLD, GOLD SCORE, and the PRED/GOLD SCORE summary lines)"

// scoreTestSet runs translate --src job.src --tgt tgt: each line's
// reference scored by tr.Score and written as job's format says; with
// --format onmt the lines are translated too (onmtSentences writes
// them), as onmt_translate -tgt translates and scores.
func scoreTestSet(tr *translate.Translator, job corpusJob, tgt string) error {
	switch {
	case job.format == formatFairseq:
		return &usageError{"--tgt with --format fairseq: fairseq-generate --score-reference's lines are not written yet; use --format onmt, the plain format or --json"}
	case job.nBest > 1 || job.withScore || job.plot != "" || job.shard != nil:
		return &usageError{"--tgt goes with --src, --output, --json and --format onmt, not with --n-best, --with-score, --plot or --shard"}
	}
	src, err := readSegments(job.src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	refs, err := readSegments(tgt)
	if err != nil {
		return fmt.Errorf("--tgt: %w", err)
	}
	if len(refs) != len(src) {
		return &usageError{fmt.Sprintf("--tgt %s has %d lines, --src %s %d: want one reference per source line", tgt, len(refs), job.src, len(src))}
	}
	ctx := context.Background()
	scores, err := tr.Score(ctx, src, refs)
	if err != nil {
		return translateCLIError(fmt.Errorf("%s, %s: %w", job.src, tgt, err))
	}
	var res []translate.Result
	if job.format == formatOnmt {
		res = make([]translate.Result, len(src))
		if _, err := tr.TranslateCorpus(ctx, src, 1, job.opts, func(i int, r translate.Result) error { res[i] = r; return nil }, nil); err != nil {
			return translateCLIError(fmt.Errorf("%s %w", job.src, err))
		}
	}
	return writeOutput(job.output, func(w io.Writer) error {
		return writeScores(w, tr, job, src, res, scores)
	})
}

// writeScores writes the pairs' scores in job's format.
func writeScores(w io.Writer, tr *translate.Translator, job corpusJob, src []string, res []translate.Result, scores []translate.PairScore) error {
	bw := bufio.NewWriter(w)
	switch {
	case job.json:
		enc := json.NewEncoder(bw)
		enc.SetEscapeHTML(false)
		for _, p := range scores {
			if err := enc.Encode(p); err != nil {
				return err
			}
		}
	case job.format == formatOnmt:
		pred, err := onmtSentences(bw, tr)
		if err != nil {
			return err
		}
		g := outformat.NewGold(tr.Info())
		for i := range src {
			if res[i].Hypotheses == nil {
				continue // a blank line: onmt_translate skips it
			}
			if err := pred(i, src[i], res[i]); err != nil {
				return err
			}
			if err := g.WriteSentence(bw, i, res[i], scores[i]); err != nil {
				return err
			}
		}
		if err := g.WriteSummary(bw); err != nil {
			return err
		}
	default:
		for _, p := range scores {
			fmt.Fprintln(bw, strconv.FormatFloat(float64(p.NormalizedScore), 'g', -1, 32))
		}
	}
	return bw.Flush()
}

// writeOutput runs write on the file path (written in place when write
// succeeds, none left otherwise) or, when path is "", on stdout.
func writeOutput(path string, write func(io.Writer) error) error {
	if path == "" {
		return write(stdout)
	}
	af, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	if err := write(af); err != nil {
		af.Discard()
		return err
	}
	return af.Commit()
}

// onmtSentences returns what writes a translated sentence's
// onmt_translate -verbose lines (SENT, PRED, PRED SCORE) to w, for
// translate --tgt --format onmt.
func onmtSentences(w io.Writer, tr *translate.Translator) (func(i int, src string, res translate.Result) error, error) {
	out, err := outformat.NewWriter(w, tr, outformat.Options{Format: outformat.OpenNMT})
	if err != nil {
		return nil, err
	}
	return out.Write, nil
}
