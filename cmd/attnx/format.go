package main

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/attnx/attnx/translate"
)

// Output formats of translate --src (--format).
const (
	formatPlain   = "plain"
	formatFairseq = "fairseq"
)

// writeFairseqResult writes sentence i's result as fairseq-interactive
// prints it (without its W- timing line): S- the source pieces, then for
// each hypothesis H- its normalised score in base 2 and its pieces, D- the
// same score and the detokenized text, P- each token's score in base 2
// (</s> included) to four decimals. fairseq's scores are natural-log ones
// divided by ln 2: the score as a Python float (the float32 score over ln
// 2 in float64), the positional ones divided in float32.
func writeFairseqResult(w io.Writer, tr *translate.Translator, i int, res translate.Result) error {
	info := tr.Info()
	src := res.SourceTokens
	if n := len(info.SrcPrefix); len(src) >= n {
		src = src[n:]
	}
	if n := len(info.SrcSuffix); len(src) >= n {
		src = src[:len(src)-n]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "S-%d\t%s\n", i, strings.Join(src, " "))
	for _, h := range res.Hypotheses {
		var pieces []string
		for k, tok := range h.OutputTokens {
			if h.Tokens[k] == info.Special.EOS {
				continue
			}
			pieces = append(pieces, tok)
		}
		score := pythonFloat(float64(h.NormalizedScore) / math.Ln2)
		fmt.Fprintf(&b, "H-%d\t%s\t%s\n", i, score, strings.Join(pieces, " "))
		fmt.Fprintf(&b, "D-%d\t%s\t%s\n", i, score, h.Text)
		pos := make([]string, len(h.PositionalScores))
		for k, p := range h.PositionalScores {
			pos[k] = fmt.Sprintf("%.4f", float64(p/float32(math.Ln2)))
		}
		fmt.Fprintf(&b, "P-%d\t%s\n", i, strings.Join(pos, " "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pythonFloat formats v as Python's repr of a float: the shortest digits
// that read back as v, with ".0" on a whole number.
func pythonFloat(v float64) string {
	s := strconv.FormatFloat(v, 'g', -1, 64)
	if !strings.ContainsAny(s, ".eIN") {
		s += ".0"
	}
	if i := strings.Index(s, "e"); i >= 0 && len(s) > i+2 && (s[i+1] == '-' || s[i+1] == '+') && len(s[i+2:]) == 1 {
		s = s[:i+2] + "0" + s[i+2:] // Python writes two exponent digits: 1e-05
	}
	return s
}
