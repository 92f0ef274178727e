package mtscore

import (
	"bufio"
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"unicode/utf8"
)

// The metrics Corpus computes, by name.
const (
	MetricBLEU  = "bleu"
	MetricChrF  = "chrf"
	MetricRouge = "rouge" // ROUGE-1, ROUGE-2, ROUGE-L: summaries
)

// CorpusOptions says which metrics Corpus computes, and how.
type CorpusOptions struct {
	// Metrics are MetricBLEU, MetricChrF and MetricRouge, in the order
	// their scores are reported; ROUGE comes after the others whatever
	// its place.
	Metrics []string
	BLEU    BLEUOptions
	ChrF    ChrFOptions
	Rouge   RougeOptions
}

// CorpusScores are the scores of one system's output.
type CorpusScores struct {
	// Scores are BLEU's and chrF's, in the order of the metrics asked for.
	Scores []Score
	// Rouge holds ROUGE-1, ROUGE-2 and ROUGE-L when asked for, computed by
	// RougeImpl's implementation.
	Rouge     []RougeResult
	RougeImpl string
}

// MetricError is a metric name Corpus does not know.
type MetricError struct{ Name string }

// Error names the unknown metric and the ones Corpus knows.
func (e *MetricError) Error() string {
	return fmt.Sprintf("metric %q: want bleu, chrf and/or rouge", e.Name)
}

// CheckMetrics refuses a metric name Corpus does not know with a
// *MetricError.
func CheckMetrics(metrics []string) error {
	for _, m := range metrics {
		if m != MetricBLEU && m != MetricChrF && m != MetricRouge {
			return &MetricError{Name: m}
		}
	}
	return nil
}

// Corpus scores hyps against refs (one or more references, each with one
// line per hypothesis) with each metric of o.Metrics; ROUGE takes one
// reference.
func Corpus(hyps []string, refs [][]string, o CorpusOptions) (*CorpusScores, error) {
	if err := CheckMetrics(o.Metrics); err != nil {
		return nil, err
	}
	out := &CorpusScores{RougeImpl: cmp.Or(o.Rouge.Impl, Rouge155)}
	for _, m := range o.Metrics {
		var s Score
		var err error
		switch m {
		case MetricRouge:
			if len(refs) != 1 {
				return nil, fmt.Errorf("ROUGE scores against one reference, not %d", len(refs))
			}
			if out.Rouge, err = Rouge(hyps, refs[0], o.Rouge); err != nil {
				return nil, err
			}
			continue
		case MetricBLEU:
			s, err = BLEU(hyps, refs, o.BLEU)
		default:
			s, err = ChrF(hyps, refs, o.ChrF)
		}
		if err != nil {
			return nil, err
		}
		out.Scores = append(out.Scores, s)
	}
	return out, nil
}

// WriteText writes sacreBLEU's line of each score and ROUGE's lines, with
// width decimals.
func (c *CorpusScores) WriteText(w io.Writer, width int) error {
	var b strings.Builder
	for _, s := range c.Scores {
		b.WriteString(Line(s, width) + "\n")
	}
	b.WriteString(RougeLines(c.Rouge, width))
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJSON writes sacreBLEU's JSON object of each score, and ROUGE's
// ({"name": "ROUGE", "implementation", "scores"}) rounded to width
// decimals; an array of them when there are several.
func (c *CorpusScores) WriteJSON(w io.Writer, width int) error {
	var objs [][]byte
	for _, s := range c.Scores {
		js, err := JSON(s, width)
		if err != nil {
			return err
		}
		objs = append(objs, js)
	}
	if c.Rouge != nil {
		scale := math.Pow(10, float64(width))
		r := func(x float64) float64 { return math.Round(x*scale) / scale }
		rouge := make([]RougeResult, len(c.Rouge))
		for i, x := range c.Rouge {
			rouge[i] = x
			rouge[i].Recall, rouge[i].Precision, rouge[i].F = r(x.Recall), r(x.Precision), r(x.F)
		}
		js, err := json.MarshalIndent(map[string]any{"name": "ROUGE", "implementation": c.RougeImpl, "scores": rouge}, "", " ")
		if err != nil {
			return err
		}
		objs = append(objs, js)
	}
	bw := bufio.NewWriter(w)
	if len(objs) > 1 {
		bw.WriteString("[\n")
	}
	for i, js := range objs {
		bw.Write(js)
		if i < len(objs)-1 {
			bw.WriteString(",")
		}
		bw.WriteString("\n")
	}
	if len(objs) > 1 {
		bw.WriteString("]\n")
	}
	return bw.Flush()
}

// ReadLines reads a file to score as sacreBLEU's command does: lines end
// at \n, \r\n or a lone \r (Python's universal newlines), the text must be
// UTF-8, and an empty file is refused, since it usually means that the
// translation failed. name names the file in errors.
func ReadLines(r io.Reader, name string) ([]string, error) {
	var lines []string
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			lines = append(lines, strings.Split(line, "\r")...)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", name, err)
		}
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("%s is empty: nothing to score (a failed translation?)", name)
	}
	for i, l := range lines {
		if !utf8.ValidString(l) {
			return nil, fmt.Errorf("%s line %d: not valid UTF-8 (at byte %d of the line)", name, i+1, invalidAt(l))
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
