package outformat

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/translate"
)

// Gold writes what onmt_translate -tgt FILE -verbose logs of given
// translations: after each sentence's PRED SCORE its reference's GOLD n
// and GOLD SCORE lines, and at the end of the test set the summary lines
// of the predictions' and the references' scores. Its numbers follow the
// model's release of OpenNMT-py (attnx.json's rules_version): 3.x sums
// the scores in Python floats, 2.x in float32 tensors.
type Gold struct {
	v2       bool
	eos, pad string
	// pred and gold are the running sums: float64 for 3.x, float32
	// (held in float64) for 2.x.
	pred, gold float64
	n          int
}

// NewGold returns a Gold for a test set translated and scored by a model
// whose attnx.json is info.
func NewGold(info modeldir.Info) *Gold {
	g := &Gold{v2: info.Defaults != nil && info.Defaults.RulesVersion == 2}
	tok := func(id int64) string {
		if id >= 0 && int(id) < len(info.TgtTokens) {
			return info.TgtTokens[id]
		}
		return ""
	}
	g.eos, g.pad = tok(info.Special.EOS), tok(info.Special.PAD)
	return g
}

// WriteSentence writes sentence i's (from 0) GOLD lines and adds its
// best prediction's score (res) and its reference's (p) to the sums.
// 3.x's GOLD line shows the reference as its batch's target tensor holds
// it (PairScore.BatchReferenceLength): EOS, then padding up to the
// batch's longest reference, the last token dropped only when it is EOS;
// 2.x's stops before EOS.
func (g *Gold) WriteSentence(w io.Writer, i int, res translate.Result, p translate.PairScore) error {
	toks := append([]string(nil), p.OutputTokens...)
	if g.v2 {
		if k := slices.Index(toks, g.eos); k >= 0 {
			toks = toks[:k]
		}
	} else {
		for len(toks) < p.BatchReferenceLength {
			toks = append(toks, g.pad)
		}
		if len(toks) > 0 && toks[len(toks)-1] == g.eos {
			toks = toks[:len(toks)-1]
		}
	}
	g.add(res, p)
	_, err := fmt.Fprintf(w, "GOLD %d: %s\nGOLD SCORE: %s\n", i+1, strings.Join(toks, " "), fixed(float64(p.Score), 4))
	return err
}

func (g *Gold) add(res translate.Result, p translate.PairScore) {
	var pred float32
	if len(res.Hypotheses) > 0 {
		pred = res.Hypotheses[0].NormalizedScore
	}
	g.n++
	if g.v2 {
		g.pred = float64(float32(g.pred) + pred)
		g.gold = float64(float32(g.gold) + p.Score)
		return
	}
	g.pred += float64(pred)
	g.gold += float64(p.Score)
}

// WriteSummary writes the summary lines onmt_translate logs at the end:
// "PRED SCORE: s, PRED PPL: p NB SENTENCES: n" and the same of GOLD, s
// the mean score per sentence and p exp(-s).
func (g *Gold) WriteSummary(w io.Writer) error {
	for _, x := range []struct {
		name  string
		total float64
	}{{"PRED", g.pred}, {"GOLD", g.gold}} {
		if _, err := io.WriteString(w, g.summary(x.name, x.total)+"\n"); err != nil {
			return err
		}
	}
	return nil
}

// summary is _report_score's line: 2.x divides the float32 total by the
// count in float32 for the score and in float64 for the perplexity.
func (g *Gold) summary(name string, total float64) string {
	if g.n == 0 {
		return name + " No translations"
	}
	score := total / float64(g.n)
	if g.v2 {
		score = float64(float32(total) / float32(g.n))
	}
	ppl := math.Exp(-total / float64(g.n))
	return fmt.Sprintf("%s SCORE: %s, %s PPL: %s NB SENTENCES: %d", name, fixed(score, 4), name, fixed(ppl, 2), g.n)
}

// fixed formats v as Python's "%.<prec>f" does: inf, -inf and nan as
// Python spells them.
func fixed(v float64, prec int) string {
	if s, ok := pythonNonFinite(v); ok {
		return s
	}
	return strconv.FormatFloat(v, 'f', prec, 64)
}
