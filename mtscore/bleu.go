package mtscore

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Smoothing methods (sacreBLEU's --smooth-method).
const (
	SmoothExp   = "exp"
	SmoothNone  = "none"
	SmoothFloor = "floor"
	SmoothAddK  = "add-k"
)

// BLEUOptions are BLEU's settings; the zero value is sacreBLEU's default
// (13a, exp smoothing, 4-grams, mixed case).
type BLEUOptions struct {
	// Tokenize is "13a" (or "") or "none".
	Tokenize string
	// Smooth is "exp" (or ""), "none", "floor" or "add-k"; SmoothValue is
	// floor's (default 0.1) or add-k's (default 1) value, nil for the
	// default.
	Smooth      string
	SmoothValue *float64
	// MaxOrder is the largest n-gram order; 0 means 4.
	MaxOrder int
	// EffectiveOrder stops at the largest order with matches (for
	// sentence-level scores).
	EffectiveOrder bool
	// Lowercase scores case-insensitively.
	Lowercase bool
}

func (o BLEUOptions) withDefaults() (BLEUOptions, error) {
	if o.Tokenize == "" {
		o.Tokenize = Tokenize13a
	}
	if o.Smooth == "" {
		o.Smooth = SmoothExp
	}
	if o.MaxOrder == 0 {
		o.MaxOrder = 4
	}
	switch {
	case o.Tokenize != Tokenize13a && o.Tokenize != TokenizeNone:
		return o, fmt.Errorf("tokenizer %q: want 13a or none", o.Tokenize)
	case o.Smooth != SmoothExp && o.Smooth != SmoothNone && o.Smooth != SmoothFloor && o.Smooth != SmoothAddK:
		return o, fmt.Errorf("smoothing %q: want exp, none, floor or add-k", o.Smooth)
	case o.MaxOrder < 1:
		return o, fmt.Errorf("n-gram order %d: want at least 1", o.MaxOrder)
	}
	return o, nil
}

func (o BLEUOptions) smoothValue() float64 {
	if o.SmoothValue != nil {
		return *o.SmoothValue
	}
	switch o.Smooth {
	case SmoothFloor:
		return 0.1
	case SmoothAddK:
		return 1
	}
	return 0
}

// BLEUScore is a corpus BLEU score and its statistics.
type BLEUScore struct {
	Score      float64   // 0..100
	Counts     []int     // matching n-grams per order
	Totals     []int     // hypothesis n-grams per order
	Precisions []float64 // per order, in percent
	BP         float64   // brevity penalty
	SysLen     int
	RefLen     int
	NRefs      int // references per segment, -1 when it varies
	opts       BLEUOptions
}

// ErrLength is returned when the hypotheses and a reference stream have
// different numbers of lines.
var ErrLength = errors.New("the hypotheses and references have different numbers of lines")

// CheckStreams checks that every reference stream has a line per
// hypothesis.
func CheckStreams(hyps []string, refs [][]string) error {
	if len(refs) == 0 {
		return errors.New("no references")
	}
	for i, r := range refs {
		if len(r) != len(hyps) {
			return fmt.Errorf("%w: %d hypotheses, reference %d has %d lines", ErrLength, len(hyps), i+1, len(r))
		}
	}
	return nil
}

// BLEU scores hypotheses against reference streams: refs[k][i] is the k-th
// reference of hypothesis i.
func BLEU(hyps []string, refs [][]string, opts BLEUOptions) (*BLEUScore, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := CheckStreams(hyps, refs); err != nil {
		return nil, err
	}
	N := o.MaxOrder
	correct, total := make([]float64, N), make([]float64, N)
	sysLen, refLen := 0, 0
	for i, hyp := range hyps {
		refNgrams := make([]map[string]int, N)
		for n := range refNgrams {
			refNgrams[n] = map[string]int{}
		}
		var refLens []int
		for k := range refs {
			toks := fields(o.preprocess(refs[k][i]))
			refLens = append(refLens, len(toks))
			for n, m := range ngrams(toks, N) {
				for ng, c := range m {
					refNgrams[n][ng] = max(refNgrams[n][ng], c)
				}
			}
		}
		toks := fields(o.preprocess(hyp))
		sysLen += len(toks)
		refLen += closestRefLen(len(toks), refLens)
		for n, m := range ngrams(toks, N) {
			for ng, c := range m {
				total[n] += float64(c)
				correct[n] += float64(min(c, refNgrams[n][ng]))
			}
		}
	}
	s := o.compute(correct, total, sysLen, refLen)
	s.NRefs = len(refs)
	return s, nil
}

func (o BLEUOptions) preprocess(s string) string {
	if o.Lowercase {
		s = lower(s)
	}
	s = strings.TrimRightFunc(s, isSpace)
	if o.Tokenize == Tokenize13a {
		return tokenize13a(s)
	}
	return s
}

// ngrams counts the k-grams of toks for k = 1..n, one map per order.
func ngrams(toks []string, n int) []map[string]int {
	out := make([]map[string]int, n)
	for k := 1; k <= n; k++ {
		m := map[string]int{}
		for i := 0; i+k <= len(toks); i++ {
			m[strings.Join(toks[i:i+k], " ")]++
		}
		out[k-1] = m
	}
	return out
}

// closestRefLen is the reference length closest to the hypothesis', the
// shorter on ties.
func closestRefLen(hyp int, refs []int) int {
	best, bestDiff := -1, -1
	for _, r := range refs {
		d := hyp - r
		if d < 0 {
			d = -d
		}
		if bestDiff == -1 || d < bestDiff || (d == bestDiff && r < best) {
			best, bestDiff = r, d
		}
	}
	return best
}

// compute is BLEU from its sufficient statistics (sacreBLEU's compute_bleu).
func (o BLEUOptions) compute(correct, total []float64, sysLen, refLen int) *BLEUScore {
	N := len(correct)
	s := &BLEUScore{BP: 1, SysLen: sysLen, RefLen: refLen, Precisions: make([]float64, N), opts: o}
	if sysLen < refLen {
		s.BP = 0
		if sysLen > 0 {
			s.BP = math.Exp(1 - float64(refLen)/float64(sysLen))
		}
	}
	s.Counts, s.Totals = make([]int, N), make([]int, N)
	for i := range correct {
		s.Counts[i], s.Totals[i] = int(correct[i]), int(total[i])
	}
	anyMatch := false
	for _, c := range correct {
		anyMatch = anyMatch || c != 0
	}
	if !anyMatch {
		return s
	}
	smoothMteval := 1.0
	effOrder := N
	v := o.smoothValue()
	for n := 1; n <= N; n++ {
		if o.Smooth == SmoothAddK && n > 1 {
			correct[n-1] += v
			total[n-1] += v
		}
		if total[n-1] == 0 {
			break
		}
		if o.EffectiveOrder {
			effOrder = n
		}
		switch {
		case correct[n-1] != 0:
			s.Precisions[n-1] = 100 * correct[n-1] / total[n-1]
		case o.Smooth == SmoothExp:
			smoothMteval *= 2
			s.Precisions[n-1] = 100 / (smoothMteval * total[n-1])
		case o.Smooth == SmoothFloor:
			s.Precisions[n-1] = 100 * v / total[n-1]
		}
	}
	sum := 0.0
	for _, p := range s.Precisions[:effOrder] {
		if p == 0 {
			sum += -9999999999
		} else {
			sum += math.Log(p)
		}
	}
	s.Score = s.BP * math.Exp(sum/float64(effOrder))
	return s
}

// Signature is sacreBLEU's reproducibility signature of the settings.
func (s *BLEUScore) Signature() string {
	o := s.opts
	smooth := o.Smooth
	if o.Smooth == SmoothFloor || o.Smooth == SmoothAddK {
		smooth += fmt.Sprintf("[%.2f]", o.smoothValue())
	}
	return fmt.Sprintf("nrefs:%s|case:%s|eff:%s|tok:%s|smooth:%s|version:%s",
		nrefs(s.NRefs), caseName(o.Lowercase), yesNo(o.EffectiveOrder), o.Tokenize, smooth, Version)
}

// Verbose is the part of the score line after the score: the precisions,
// the brevity penalty, the length ratio and the lengths.
func (s *BLEUScore) Verbose() string {
	p := make([]string, len(s.Precisions))
	for i, x := range s.Precisions {
		p[i] = fmt.Sprintf("%.1f", x)
	}
	ratio := 0.0
	if s.RefLen > 0 {
		ratio = float64(s.SysLen) / float64(s.RefLen)
	}
	return fmt.Sprintf("%s (BP = %.3f ratio = %.3f hyp_len = %d ref_len = %d)", strings.Join(p, "/"), s.BP, ratio, s.SysLen, s.RefLen)
}

// Name is "BLEU".
func (s *BLEUScore) Name() string { return "BLEU" }

// Value is the score.
func (s *BLEUScore) Value() float64 { return s.Score }
