// Package outformat writes translate's results in the output formats of
// the toolkits' translate commands, so that a Go service can answer as
// the command it replaces printed: fairseq-interactive's S-, H-, D- and
// P- lines, onmt_translate -verbose's SENT, PRED and PRED SCORE lines,
// plain lines (one per sentence or per hypothesis, with onmt_translate
// -with_score's tab and score), or attnx's JSON objects.
//
// A Writer is made once for a Translator and writes each result in turn:
//
//	w, err := outformat.NewWriter(os.Stdout, tr, outformat.Options{Format: outformat.Fairseq})
//	...
//	for i, res := range results {
//		if err := w.Write(i, lines[i], res); err != nil { ... }
//	}
package outformat

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// Format is an output format.
type Format string

// The formats.
const (
	// Plain writes each sentence's translation on a line, or its n-best
	// translations on Options.NBest lines (see Options).
	Plain Format = "plain"
	// Fairseq writes what fairseq-interactive prints of each sentence,
	// without its W- timing line: S- the source pieces, then for each
	// hypothesis H- its normalised score in base 2 and its pieces, D- the
	// same score and the detokenized text, P- each token's score in base
	// 2 (</s> included) to four decimals. fairseq's scores are
	// natural-log ones divided by ln 2: the score as a Python float (the
	// float32 score over ln 2 in float64), the positional ones divided in
	// float32.
	Fairseq Format = "fairseq"
	// OpenNMT writes what onmt_translate -verbose logs of each sentence
	// (its logger's time stamps left out): a blank line, SENT n with the
	// source pieces as a Python list, PRED n with the best hypothesis'
	// pieces, PRED SCORE its score to four decimals (OpenNMT-py's scores
	// are natural-log ones after its length penalty, a Hypothesis'
	// NormalizedScore) and, with several hypotheses, BEST HYP with each
	// one's score and pieces.
	OpenNMT Format = "onmt"
)

// Formats lists the formats, for a usage message.
var Formats = []Format{Plain, Fairseq, OpenNMT}

// ParseFormat returns the Format named name, or an error naming the ones
// there are.
func ParseFormat(name string) (Format, error) {
	for _, f := range Formats {
		if string(f) == name {
			return f, nil
		}
	}
	return "", fmt.Errorf("output format %q: want plain, fairseq or onmt", name)
}

// Options says how a Writer writes.
type Options struct {
	// Format is the format; "" means Plain.
	Format Format
	// JSON writes each result as one JSON object (translate.Result's JSON,
	// as attnx serve answers), in place of Plain's lines.
	JSON bool
	// Attention keeps the attention weights in the JSON objects.
	Attention bool
	// NBest, above 1, makes Plain write NBest lines per sentence, one per
	// hypothesis (a blank line where the search found fewer).
	NBest int
	// WithScore ends each Plain line with a tab and the hypothesis'
	// normalized score as Python prints a float, as onmt_translate
	// -with_score writes it.
	WithScore bool
}

// Model is what a Writer needs of the model: *translate.Translator is one.
type Model interface {
	// Info is the model directory's attnx.json.
	Info() modeldir.Info
	// HasTargetVocab says whether outputs have text; without it Plain
	// writes token ids.
	HasTargetVocab() bool
}

// Writer writes results in one format.
type Writer struct {
	w              io.Writer
	o              Options
	prefix, suffix int
	eos            int64
	ids            bool // no target vocabulary: Plain writes token ids
}

// NewWriter returns a Writer of results of m's translations to w.
func NewWriter(w io.Writer, m Model, o Options) (*Writer, error) {
	if o.Format == "" {
		o.Format = Plain
	}
	if _, err := ParseFormat(string(o.Format)); err != nil {
		return nil, err
	}
	if o.JSON && o.Format != Plain {
		return nil, fmt.Errorf("JSON output is a Plain one, not %s", o.Format)
	}
	wr := &Writer{w: w, o: o, ids: !m.HasTargetVocab()}
	if o.Format != Plain {
		// Only the toolkits' logs show pieces (and Info copies the
		// vocabularies).
		info := m.Info()
		wr.prefix, wr.suffix, wr.eos = len(info.SrcPrefix), len(info.SrcSuffix), info.Special.EOS
	}
	return wr, nil
}

// Write writes the result res of sentence i (from 0) of a test set, whose
// text was src.
func (w *Writer) Write(i int, src string, res translate.Result) error {
	var b strings.Builder
	switch {
	case w.o.JSON:
		j := res.JSON(src)
		if !w.o.Attention {
			j.Attention = nil
		}
		// As serve answers it: "<eos>" as it is, not "\u003ceos\u003e".
		enc := json.NewEncoder(w.w)
		enc.SetEscapeHTML(false)
		return enc.Encode(j)
	case w.o.Format == Fairseq:
		w.fairseq(&b, i, res)
	case w.o.Format == OpenNMT:
		w.onmt(&b, i, res)
	default:
		w.plain(&b, res)
	}
	_, err := io.WriteString(w.w, b.String())
	return err
}

// plain writes the translation (token ids without a target vocabulary),
// or the n-best's, one per line.
func (w *Writer) plain(b *strings.Builder, res translate.Result) {
	line := func(tokens []int64, text string, k int) {
		if w.ids {
			text = translate.FormatIDs(tokens)
		}
		// A decoded piece may hold a line break: the line keeps it as a
		// space.
		b.WriteString(strings.NewReplacer("\r", " ", "\n", " ").Replace(text))
		if w.o.WithScore && k < len(res.Hypotheses) {
			b.WriteString("\t" + PythonFloat(float64(res.Hypotheses[k].NormalizedScore)))
		}
		b.WriteByte('\n')
	}
	if w.o.NBest <= 1 {
		line(res.Tokens, res.Text, 0)
		return
	}
	for k := 0; k < w.o.NBest; k++ {
		if k < len(res.Hypotheses) {
			line(res.Hypotheses[k].Tokens, res.Hypotheses[k].Text, k)
		} else {
			line(nil, "", k)
		}
	}
}

func (w *Writer) fairseq(b *strings.Builder, i int, res translate.Result) {
	fmt.Fprintf(b, "S-%d\t%s\n", i, strings.Join(w.sourcePieces(res), " "))
	for _, h := range res.Hypotheses {
		score := PythonFloat(float64(h.NormalizedScore / float32(math.Ln2)))
		fmt.Fprintf(b, "H-%d\t%s\t%s\n", i, score, strings.Join(w.outputPieces(h), " "))
		fmt.Fprintf(b, "D-%d\t%s\t%s\n", i, score, h.Text)
		pos := make([]string, len(h.PositionalScores))
		for k, p := range h.PositionalScores {
			pos[k] = fmt.Sprintf("%.4f", float64(p/float32(math.Ln2)))
		}
		fmt.Fprintf(b, "P-%d\t%s\n", i, strings.Join(pos, " "))
	}
}

func (w *Writer) onmt(b *strings.Builder, i int, res translate.Result) {
	n := i + 1
	fmt.Fprintf(b, "\nSENT %d: %s\n", n, pythonList(w.sourcePieces(res)))
	if len(res.Hypotheses) > 0 {
		best := res.Hypotheses[0]
		fmt.Fprintf(b, "PRED %d: %s\n", n, strings.Join(w.outputPieces(best), " "))
		fmt.Fprintf(b, "PRED SCORE: %.4f\n", float64(best.NormalizedScore))
	}
	if len(res.Hypotheses) > 1 {
		b.WriteString("\nBEST HYP:\n")
		for _, h := range res.Hypotheses {
			fmt.Fprintf(b, "[%.4f] %s\n", float64(h.NormalizedScore), pythonList(w.outputPieces(h)))
		}
	}
}

// sourcePieces are a result's source pieces without the model's source
// prefix and suffix (fairseq's </s>): the sentence as the toolkit's log
// shows it.
func (w *Writer) sourcePieces(res translate.Result) []string {
	src := res.SourceTokens
	if len(src) >= w.prefix {
		src = src[w.prefix:]
	}
	if len(src) >= w.suffix {
		src = src[:len(src)-w.suffix]
	}
	return src
}

// outputPieces are a hypothesis' pieces without EOS.
func (w *Writer) outputPieces(h translate.Hypothesis) []string {
	var out []string
	for k, tok := range h.OutputTokens {
		if h.Tokens[k] != w.eos {
			out = append(out, tok)
		}
	}
	return out
}

// PythonFloat formats v as Python's repr of a float: the shortest digits
// that read back as v, in positional notation with ".0" on a whole number
// when its exponent is from -4 to 15, else in exponent notation with at
// least two exponent digits (1e-05, 1e+16); inf, -inf and nan.
func PythonFloat(v float64) string {
	if s, ok := pythonNonFinite(v); ok {
		return s
	}
	s := strconv.FormatFloat(v, 'e', -1, 64)
	if exp, _ := strconv.Atoi(s[strings.IndexByte(s, 'e')+1:]); exp < -4 || exp >= 16 {
		return s
	}
	s = strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pythonNonFinite spells nan, inf and -inf as Python prints them (repr
// and "%f" alike); ok is false for a finite v.
func pythonNonFinite(v float64) (s string, ok bool) {
	switch {
	case math.IsNaN(v):
		return "nan", true
	case math.IsInf(v, 1):
		return "inf", true
	case math.IsInf(v, -1):
		return "-inf", true
	}
	return "", false
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
