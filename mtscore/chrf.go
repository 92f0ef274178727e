package mtscore

import (
	"fmt"
	"strings"
)

// ChrFOptions are chrF's settings; the zero value is sacreBLEU's default
// chrF2 (character 6-grams, no word n-grams, beta 2, white space removed,
// effective order).
type ChrFOptions struct {
	// CharOrder is the character n-gram order; 0 means 6.
	CharOrder int
	// WordOrder is the word n-gram order (2 is chrF++).
	WordOrder int
	// Beta weighs recall against precision; 0 means 2.
	Beta int
	// Lowercase scores case-insensitively; Whitespace keeps white space in
	// character n-grams; EpsSmoothing is chrF++.py's smoothing instead of
	// the effective order.
	Lowercase, Whitespace, EpsSmoothing bool
}

func (o ChrFOptions) withDefaults() ChrFOptions {
	if o.CharOrder == 0 {
		o.CharOrder = 6
	}
	if o.Beta == 0 {
		o.Beta = 2
	}
	return o
}

// ChrFScore is a corpus chrF score.
type ChrFScore struct {
	Score float64 // 0..100
	NRefs int
	opts  ChrFOptions
}

const chrfPunct = "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"

// ChrF scores hypotheses against reference streams (refs[k][i] is the k-th
// reference of hypothesis i): per segment the reference with the best
// F-score counts, and the statistics add up over the corpus.
func ChrF(hyps []string, refs [][]string, opts ChrFOptions) (*ChrFScore, error) {
	o := opts.withDefaults()
	if err := CheckStreams(hyps, refs); err != nil {
		return nil, err
	}
	order := o.CharOrder + o.WordOrder
	sum := make([]float64, 3*order)
	for i, hyp := range hyps {
		h := o.ngrams(o.pre(hyp))
		var best []float64
		bestF := -1.0
		for k := range refs {
			r := o.ngrams(o.pre(refs[k][i]))
			stats := make([]float64, 0, 3*order)
			for n := range h {
				stats = append(stats, matchStats(h[n], r[n])...)
			}
			if f := o.fScore(stats); f > bestF {
				bestF, best = f, stats
			}
		}
		for j := range sum {
			sum[j] += best[j]
		}
	}
	return &ChrFScore{Score: o.fScore(sum), NRefs: len(refs), opts: o}, nil
}

func (o ChrFOptions) pre(s string) string {
	if o.Lowercase {
		return lower(s)
	}
	return s
}

// ngrams counts character 1..CharOrder-grams (white space removed unless
// Whitespace) and word 1..WordOrder-grams (punctuation split off words'
// ends).
func (o ChrFOptions) ngrams(s string) []map[string]int {
	line := s
	if !o.Whitespace {
		line = strings.Join(fields(s), "")
	}
	chars := []rune(line)
	var out []map[string]int
	for n := 1; n <= o.CharOrder; n++ {
		m := map[string]int{}
		for i := 0; i+n <= len(chars); i++ {
			m[string(chars[i:i+n])]++
		}
		out = append(out, m)
	}
	if o.WordOrder > 0 {
		words := splitPunct(s)
		for n := 1; n <= o.WordOrder; n++ {
			m := map[string]int{}
			for i := 0; i+n <= len(words); i++ {
				m[strings.Join(words[i:i+n], " ")]++
			}
			out = append(out, m)
		}
	}
	return out
}

// splitPunct splits words at white space and a punctuation character off
// the end (else the start) of each word longer than one character.
func splitPunct(s string) []string {
	var out []string
	for _, w := range fields(s) {
		r := []rune(w)
		switch {
		case len(r) == 1:
			out = append(out, w)
		case strings.ContainsRune(chrfPunct, r[len(r)-1]):
			out = append(out, string(r[:len(r)-1]), string(r[len(r)-1]))
		case strings.ContainsRune(chrfPunct, r[0]):
			out = append(out, string(r[0]), string(r[1:]))
		default:
			out = append(out, w)
		}
	}
	return out
}

// matchStats is [hypothesis n-grams (0 when the reference has none),
// reference n-grams, matches].
func matchStats(h, r map[string]int) []float64 {
	match, hyp, ref := 0, 0, 0
	for ng, c := range h {
		hyp += c
		match += min(c, r[ng])
	}
	for _, c := range r {
		ref += c
	}
	if len(r) == 0 {
		hyp = 0
	}
	return []float64{float64(hyp), float64(ref), float64(match)}
}

func (o ChrFOptions) fScore(stats []float64) float64 {
	const eps = 1e-16
	factor := float64(o.Beta * o.Beta)
	order := o.CharOrder + o.WordOrder
	score, avgP, avgR := 0.0, 0.0, 0.0
	eff := 0
	for i := 0; i < order; i++ {
		nHyp, nRef, nMatch := stats[3*i], stats[3*i+1], stats[3*i+2]
		p, r := eps, eps
		if nHyp > 0 {
			p = nMatch / nHyp
		}
		if nRef > 0 {
			r = nMatch / nRef
		}
		if d := factor*p + r; d > 0 {
			score += (1 + factor) * p * r / d
		} else {
			score += eps
		}
		if nHyp > 0 && nRef > 0 {
			avgP += p
			avgR += r
			eff++
		}
	}
	if o.EpsSmoothing {
		return 100 * score / float64(order)
	}
	if eff == 0 {
		avgP, avgR = 0, 0
	} else {
		avgP /= float64(eff)
		avgR /= float64(eff)
	}
	if avgP+avgR == 0 {
		return 0
	}
	return 100 * (1 + factor) * avgP * avgR / (factor*avgP + avgR)
}

// Name is "chrF2" (chrF2++ with word n-grams: a + per word order).
func (s *ChrFScore) Name() string {
	return fmt.Sprintf("chrF%d%s", s.opts.Beta, strings.Repeat("+", s.opts.WordOrder))
}

// Value is the score.
func (s *ChrFScore) Value() float64 { return s.Score }

// Verbose is empty: chrF's line has the score alone.
func (s *ChrFScore) Verbose() string { return "" }

// Signature is sacreBLEU's reproducibility signature of the settings.
func (s *ChrFScore) Signature() string {
	o := s.opts
	return fmt.Sprintf("nrefs:%s|case:%s|eff:%s|nc:%d|nw:%d|space:%s|version:%s",
		nrefs(s.NRefs), caseName(o.Lowercase), yesNo(!o.EpsSmoothing), o.CharOrder, o.WordOrder, yesNo(o.Whitespace), Version)
}
