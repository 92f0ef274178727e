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
	var b strings.Builder
	fmt.Fprintf(&b, "S-%d\t%s\n", i, strings.Join(sourcePieces(tr, res), " "))
	for _, h := range res.Hypotheses {
		pieces := outputPieces(tr, h)
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

// formatOnmt writes what onmt_translate -verbose logs of each sentence
// (its logger's time stamps left out): a blank line, SENT n with the
// source pieces as a Python list, PRED n with the best hypothesis'
// pieces, PRED SCORE its score to four decimals (OpenNMT-py's scores are
// natural-log ones after its length penalty, attnx's normalized_score), and
// with several hypotheses BEST HYP, each one's score and pieces.
const formatOnmt = "onmt"

func writeOnmtResult(w io.Writer, tr *translate.Translator, i int, res translate.Result) error {
	pieces := func(h translate.Hypothesis) []string { return outputPieces(tr, h) }
	var b strings.Builder
	n := i + 1
	fmt.Fprintf(&b, "\nSENT %d: %s\n", n, pythonList(sourcePieces(tr, res)))
	if len(res.Hypotheses) > 0 {
		best := res.Hypotheses[0]
		fmt.Fprintf(&b, "PRED %d: %s\n", n, strings.Join(pieces(best), " "))
		fmt.Fprintf(&b, "PRED SCORE: %.4f\n", float64(best.NormalizedScore))
	}
	if len(res.Hypotheses) > 1 {
		b.WriteString("\nBEST HYP:\n")
		for _, h := range res.Hypotheses {
			fmt.Fprintf(&b, "[%.4f] %s\n", float64(h.NormalizedScore), pythonList(pieces(h)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// pythonList formats strings as Python's repr of a list of them.
func pythonList(xs []string) string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = pythonStr(x)
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// pythonStr is Python's repr of a string: single quotes, or double ones
// when it holds a single quote and no double one; backslashes, the quote
// and control characters escaped.
func pythonStr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == '\\' || r == rune(q):
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// sourcePieces are a result's source pieces without the model's source
// prefix and suffix (fairseq's </s>): the sentence as the toolkit's log
// shows it.
func sourcePieces(tr *translate.Translator, res translate.Result) []string {
	info := tr.Info()
	src := res.SourceTokens
	if n := len(info.SrcPrefix); len(src) >= n {
		src = src[n:]
	}
	if n := len(info.SrcSuffix); len(src) >= n {
		src = src[:len(src)-n]
	}
	return src
}

// outputPieces are a hypothesis' pieces without EOS.
func outputPieces(tr *translate.Translator, h translate.Hypothesis) []string {
	eos := tr.Info().Special.EOS
	var out []string
	for k, tok := range h.OutputTokens {
		if h.Tokens[k] != eos {
			out = append(out, tok)
		}
	}
	return out
}
