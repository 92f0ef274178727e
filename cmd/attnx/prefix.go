package main

import (
	"bufio"
	"context"
	"fmt"
	"io"

	"github.com/attnx/attnx/outformat"
	"github.com/attnx/attnx/translate"
)

// tgtPrefixUsage is translate --tgt-prefix's help.
const tgtPrefixUsage = "with --src FILE: force each line of `FILE` (target text, one per source line; blank for none) as the start of its translation, the search going on from it and its log-probs in the score (OpenNMT-py 3.5.1's -tgt FILE -tgt_file_prefix, 2.3.0's -tgt FILE -tgt_prefix)"

// translatePrefixed translates job's --src lines with each line of
// prefixFile forced as the start of its translation
// (translate.CallOptions.Prefixes), the lines taken as a test set (their
// output limits those of the toolkit's batches), and writes them as
// translateCorpus does, once every line is decoded.
func translatePrefixed(tr *translate.Translator, job corpusJob, prefixFile string) error {
	if job.plot != "" || job.shard != nil {
		return &usageError{"--tgt-prefix goes with --src, --output, --json, --n-best, --with-score and --format, not with --plot or --shard"}
	}
	src, err := readSegments(job.src)
	if err != nil {
		return fmt.Errorf("--src: %w", err)
	}
	lines, err := readSegments(prefixFile)
	if err != nil {
		return fmt.Errorf("--tgt-prefix: %w", err)
	}
	if len(lines) != len(src) {
		return &usageError{fmt.Sprintf("--tgt-prefix %s has %d lines, --src %s %d: want one prefix per source line (blank for none)", prefixFile, len(lines), job.src, len(src))}
	}
	prefixes, err := tr.EncodePrefixes(lines)
	if err != nil {
		return translateCLIError(fmt.Errorf("--tgt-prefix %s: %w", prefixFile, err))
	}
	res, err := tr.TranslateCall(context.Background(), src, translate.CallOptions{AsTestSet: true, Prefixes: prefixes, WithoutAttention: !job.attention})
	if err != nil {
		return translateCLIError(fmt.Errorf("%s with --tgt-prefix %s: %w", job.src, prefixFile, err))
	}
	return writeOutput(job.output, func(w io.Writer) error {
		bw := bufio.NewWriter(w)
		out, err := outformat.NewWriter(bw, tr, job.outOptions())
		if err != nil {
			return err
		}
		for i := range src {
			if err := out.Write(i, src[i], res[i]); err != nil {
				return err
			}
		}
		return bw.Flush()
	})
}
