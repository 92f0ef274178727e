package main

import (
	"bufio"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/attnx/attnx/mtscore"
)

func init() {
	commandDocs["score"] = `
Scores translations against references as sacreBLEU 2.6 does by default:
corpus BLEU (13a tokenization, exponential smoothing, the closest reference
length) and chrF2, one line per segment in each file. --ref is repeatable:
every reference file needs as many lines as HYP. HYP defaults to stdin.

The lines and --json objects are sacreBLEU's (score, precisions, brevity
penalty, lengths, the signature of the settings); the signature's version
field is 2.6.0-attnx, sacreBLEU 2.6.0's algorithm computed by attnx.
Other sacreBLEU settings: --metrics bleu,chrf, --tokenize none,
--lowercase, --smooth-method/--smooth-value, --chrf-word-order 2 (chrF++),
--width.

Example:
  attnx translate --model model/ --src test.de --output pred.en
  attnx score --ref test.en pred.en
  attnx score --ref ref1.en --ref ref2.en --json pred.en`
}

func runScore(args []string) error {
	fs := newFlagSet("score")
	refs := fs.StringArray("ref", nil, "a reference `FILE`, one line per segment (repeatable: several references)")
	metrics := fs.StringSlice("metrics", []string{"bleu", "chrf"}, "metrics to compute: bleu, chrf")
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
	for _, m := range *metrics {
		if m != "bleu" && m != "chrf" {
			return &usageError{fmt.Sprintf("--metrics %s: want bleu and/or chrf", m)}
		}
	}
	hypName := stdinName
	if fs.NArg() == 1 {
		hypName = fs.Arg(0)
	}
	hyps, err := readScored(hypName)
	if err != nil {
		return err
	}
	var refLines [][]string
	for _, r := range *refs {
		lines, err := readScored(r)
		if err != nil {
			return fmt.Errorf("--ref %w", err)
		}
		if len(lines) != len(hyps) {
			return fmt.Errorf("--ref %s has %d lines and %s has %d: a reference needs one line per hypothesis", r, len(lines), hypName, len(hyps))
		}
		refLines = append(refLines, lines)
	}
	bo := mtscore.BLEUOptions{Tokenize: *tokenize, Smooth: *smooth, Lowercase: *lowercase}
	if *smoothValue >= 0 {
		bo.SmoothValue = smoothValue
	}
	var scores []mtscore.Score
	for _, m := range *metrics {
		var s mtscore.Score
		if m == "bleu" {
			s, err = mtscore.BLEU(hyps, refLines, bo)
		} else {
			s, err = mtscore.ChrF(hyps, refLines, mtscore.ChrFOptions{WordOrder: *wordOrder, Lowercase: *lowercase})
		}
		if err != nil {
			return &usageError{err.Error()}
		}
		scores = append(scores, s)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if !*jsonOut {
		for _, s := range scores {
			fmt.Fprintln(w, mtscore.Line(s, *width))
		}
		return nil
	}
	if len(scores) > 1 {
		w.WriteString("[\n")
	}
	for i, s := range scores {
		js, err := mtscore.JSON(s, *width)
		if err != nil {
			return err
		}
		w.Write(js)
		if i < len(scores)-1 {
			w.WriteString(",")
		}
		w.WriteString("\n")
	}
	if len(scores) > 1 {
		w.WriteString("]\n")
	}
	return nil
}

// readScored reads a file to score as sacreBLEU's command does: lines
// end at \n, \r\n or a lone \r (Python's universal newlines), the text
// must be UTF-8, and an empty file is refused, since it usually means that
// the translation failed.
func readScored(path string) ([]string, error) {
	lines, err := readLines(path, universalEnds)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s is empty: nothing to score (a failed translation?)", path)
	}
	for i, l := range lines {
		if !utf8.ValidString(l) {
			return nil, fmt.Errorf("%s line %d: not valid UTF-8 (at byte %d of the line)", path, i+1, invalidAt(l))
		}
	}
	return lines, nil
}

// invalidAt is the offset of s's first byte that is not valid UTF-8.
func invalidAt(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n == 1 {
				return i
			}
		}
	}
	return len(s)
}
