package main

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/attnx/attnx/mtscore"
)

func runScore(args []string) error {
	fs := newFlagSet("score")
	refs := fs.StringArray("ref", nil, "a reference `FILE`, one line per segment (repeatable: several references)")
	metrics := fs.StringSlice("metrics", []string{"bleu", "chrf"}, "metrics to compute: bleu, chrf, rouge (ROUGE-1, ROUGE-2, ROUGE-L: summaries)")
	rougeImpl := fs.String("rouge", mtscore.Rouge155, "whose ROUGE: rouge155 (ROUGE-1.5.5 as files2rouge runs it: stemmed, sentences end at \" .\") or rouge-score (Google's package at its defaults, with ROUGE-Lsum)")
	rougeStem := fs.String("rouge-stem", "default", "stem words with Porter's stemmer: default (the implementation's: yes for rouge155, no for rouge-score), yes or no")
	keepTags := fs.Bool("keep-sentence-tags", false, "ROUGE: keep <t> and </t> (by default removed, as OpenNMT-py's summarization guide does)")
	tagSentences := fs.Bool("rouge-tag-sentences", false, "ROUGE-1.5.5: end sentences at <t> and </t> as well as after \" .\" (by default only after \" .\", as files2rouge on the guide's sed-cleaned text)")
	jsonOut := fs.Bool("json", false, "print sacreBLEU's JSON objects (an array for several metrics)")
	width := fs.Int("width", 2, "decimals of the scores")
	tokenize := fs.String("tokenize", mtscore.Tokenize13a, "BLEU's tokenizer: 13a or none")
	lowercase := fs.Bool("lowercase", false, "score case-insensitively")
	smooth := fs.String("smooth-method", mtscore.SmoothExp, "BLEU's smoothing: exp, none, floor or add-k")
	smoothValue := fs.Float64("smooth-value", -1, "the value of floor (default 0.1) or add-k (default 1) smoothing")
	wordOrder := fs.Int("chrf-word-order", 0, "chrF's word n-gram order (2: chrF++)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case len(*refs) == 0:
		return &usageError{"--ref FILE is required (repeat it for several references)"}
	case fs.NArg() > 1:
		return &usageError{fmt.Sprintf("one HYP file expected, got %d: %s", fs.NArg(), strings.Join(fs.Args(), " "))}
	case *width < 0 || *width > 12:
		return &usageError{fmt.Sprintf("--width %d: want 0..12", *width)}
	case *wordOrder < 0:
		return &usageError{fmt.Sprintf("--chrf-word-order %d: must not be negative", *wordOrder)}
	}
	var metric *mtscore.MetricError
	if errors.As(mtscore.CheckMetrics(*metrics), &metric) {
		return &usageError{fmt.Sprintf("--metrics %s: want bleu, chrf and/or rouge", metric.Name)}
	}
	if *tagSentences && *keepTags {
		return &usageError{"--rouge-tag-sentences splits at the tags it removes: it does not go with --keep-sentence-tags"}
	}
	if *tagSentences && *rougeImpl == mtscore.RougeScore {
		return &usageError{"--rouge-tag-sentences is ROUGE-1.5.5's (--rouge rouge155): rouge-score's ROUGE-Lsum takes the tags' sentences already"}
	}
	co := mtscore.CorpusOptions{Metrics: *metrics,
		BLEU:  mtscore.BLEUOptions{Tokenize: *tokenize, Smooth: *smooth, Lowercase: *lowercase},
		ChrF:  mtscore.ChrFOptions{WordOrder: *wordOrder, Lowercase: *lowercase},
		Rouge: mtscore.RougeOptions{Impl: *rougeImpl, KeepSentenceTags: *keepTags, TagSentences: *tagSentences}}
	switch *rougeStem {
	case "default":
	case "yes", "no":
		stem := *rougeStem == "yes"
		co.Rouge.Stem = &stem
	default:
		return &usageError{fmt.Sprintf("--rouge-stem %q: want default, yes or no", *rougeStem)}
	}
	if *smoothValue >= 0 {
		co.BLEU.SmoothValue = smoothValue
	}
	hyps, refLines, err := readScoredFiles(fs.Args(), *refs)
	if err != nil {
		return err
	}
	if slices.Contains(*metrics, mtscore.MetricRouge) && len(refLines) != 1 {
		return &usageError{"--metrics rouge scores against one --ref"}
	}
	scores, err := mtscore.Corpus(hyps, refLines, co)
	if err != nil {
		return &usageError{err.Error()}
	}
	if *jsonOut {
		return scores.WriteJSON(stdout, *width)
	}
	return scores.WriteText(stdout, *width)
}

// readScoredFiles reads the hypotheses (args' file, else stdin) and the
// references, each with one line per hypothesis, as sacreBLEU reads them.
func readScoredFiles(args, refs []string) ([]string, [][]string, error) {
	hypName := stdinName
	if len(args) == 1 {
		hypName = args[0]
	}
	hyps, err := readScored(hypName)
	if err != nil {
		return nil, nil, err
	}
	var refLines [][]string
	for _, r := range refs {
		lines, err := readScored(r)
		if err != nil {
			return nil, nil, fmt.Errorf("--ref %w", err)
		}
		if len(lines) != len(hyps) {
			return nil, nil, fmt.Errorf("--ref %s has %d lines and %s has %d: a reference needs one line per hypothesis", r, len(lines), hypName, len(hyps))
		}
		refLines = append(refLines, lines)
	}
	return hyps, refLines, nil
}

// readScored reads path ("-": stdin) with mtscore.ReadLines.
func readScored(path string) ([]string, error) {
	if path == stdinName {
		return mtscore.ReadLines(stdin, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return mtscore.ReadLines(f, path)
}
