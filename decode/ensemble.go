package decode

import (
	"errors"
	"fmt"
	"math"

	"github.com/attnx/attnx/internal/kernel"
)

// Combine is how an ensemble's members' log_probs make the one
// distribution its search ranks, as each toolkit computes it in float32.
type Combine uint8

const (
	// MeanLogProbs is OpenNMT-py 2.x's default (EnsembleGenerator over
	// generators that end in LogSoftmax): the mean of the members'
	// log-probs, their float32 sum divided by N.
	MeanLogProbs Combine = iota
	// LogMeanProbs is OpenNMT-py 2.x's -avg_raw_probs: log(mean(exp(lp))),
	// the log of the members' mean probability.
	LogMeanProbs
	// LogSumExpMinusLogN is fairseq's EnsembleModel.forward_decoder:
	// logsumexp over the members minus log N, the same quantity as
	// LogMeanProbs computed the way torch.logsumexp computes it (the
	// largest member's value plus the log of the sum of exp of each
	// member's distance to it).
	LogSumExpMinusLogN
	// LogSoftmaxOfMean is OpenNMT-py 3.x's default: its generators give
	// logits, EnsembleGenerator takes their mean and the translator its
	// log_softmax. As log_softmax ignores a shift of each member's row,
	// that is the log_softmax of the mean of the members' log-probs, which
	// this computes as torch does (x - max - log(sum(exp(x - max)))).
	LogSoftmaxOfMean
)

// String names the rule by the toolkit that uses it.
func (c Combine) String() string {
	switch c {
	case MeanLogProbs:
		return "mean of log-probs (OpenNMT-py)"
	case LogMeanProbs:
		return "log of mean probabilities (OpenNMT-py -avg_raw_probs)"
	case LogSumExpMinusLogN:
		return "logsumexp minus log N (fairseq)"
	case LogSoftmaxOfMean:
		return "log_softmax of the mean (OpenNMT-py 3.x)"
	}
	return fmt.Sprintf("Combine(%d)", uint8(c))
}

// ensemble is what a Batch of several executors keeps besides its first
// one: the other members, the rule and the combined outputs' buffers.
type ensemble struct {
	members []*Executor // the 2nd..Nth members
	combine Combine
	lp, att []float32
}

// NewEnsembleBatch returns an empty Batch whose rows are decoded by every
// executor of exs at once (an ensemble of their models): each step runs
// every member's decoder, the Searches see the members' log_probs combined
// by c and their attention averaged, and each member's states follow the
// same parents. The members must share the target vocabulary size; copy
// models are refused (their extended vocabularies are per member). The
// Batch resets every executor.
func NewEnsembleBatch(exs []*Executor, c Combine) (*Batch, error) {
	if len(exs) == 0 {
		return nil, errors.New("decode: an ensemble needs at least one executor")
	}
	if c > LogSoftmaxOfMean {
		return nil, fmt.Errorf("decode: unknown ensemble rule %v", c)
	}
	V := exs[0].m.vocab
	for i, ex := range exs {
		if ex.m.copy {
			return nil, fmt.Errorf("decode: ensemble member %d has copy attention, which an ensemble does not decode (its vocabulary is extended per sentence)", i+1)
		}
		if ex.m.vocab != V {
			return nil, fmt.Errorf("decode: ensemble member %d has a target vocabulary of %d, member 1 of %d: members must share it", i+1, ex.m.vocab, V)
		}
		for _, prev := range exs[:i] {
			if prev == ex {
				return nil, fmt.Errorf("decode: ensemble member %d is an executor given twice", i+1)
			}
		}
	}
	b := &Batch{ex: exs[0]}
	if len(exs) > 1 {
		b.ens = &ensemble{members: exs[1:], combine: c}
	}
	b.Reset()
	return b, nil
}

// each runs f on every member of the batch after its first executor.
func (b *Batch) each(f func(*Executor) error) error {
	if b.ens == nil {
		return nil
	}
	for _, ex := range b.ens.members {
		if err := f(ex); err != nil {
			return err
		}
	}
	return nil
}

// step runs one decoder step on every member and returns the log_probs and
// attention the searches see: the first executor's own for a single model,
// else the combined ones.
func (b *Batch) step() (lp, att []float32, err error) {
	if err := b.ex.Step(); err != nil {
		return nil, nil, err
	}
	if err := b.each((*Executor).Step); err != nil {
		return nil, nil, err
	}
	lp, att = b.ex.LogProbs(), b.ex.Attention()
	if b.ens == nil {
		return lp, att, nil
	}
	e := b.ens
	if cap(e.lp) < len(lp) {
		e.lp = make([]float32, len(lp))
	}
	if cap(e.att) < len(att) {
		e.att = make([]float32, len(att))
	}
	e.lp, e.att = e.lp[:len(lp)], e.att[:len(att)]
	lps := make([][]float32, 0, 1+len(e.members))
	lps = append(lps, lp)
	copy(e.att, att)
	for _, ex := range e.members {
		lps = append(lps, ex.LogProbs())
		for j, a := range ex.Attention() {
			e.att[j] += a
		}
	}
	n := float32(len(lps))
	for j := range e.att {
		e.att[j] /= n
	}
	CombineLogProbs(e.lp, lps, b.ex.m.vocab, e.combine)
	return e.lp, e.att, nil
}

// CombineLogProbs writes to dst the members' log-probs lps (each as long
// as dst, rows of vocab values) combined by c, in float32 as the toolkit
// computes it.
func CombineLogProbs(dst []float32, lps [][]float32, vocab int, c Combine) {
	n := float32(len(lps))
	switch c {
	case MeanLogProbs, LogSoftmaxOfMean:
		copy(dst, lps[0])
		for _, lp := range lps[1:] {
			for j, x := range lp {
				dst[j] += x
			}
		}
		for j := range dst {
			dst[j] /= n
		}
		if c == LogSoftmaxOfMean {
			for r := 0; r+vocab <= len(dst); r += vocab {
				logSoftmax(dst[r : r+vocab])
			}
		}
	case LogMeanProbs:
		for j := range dst {
			var s float32
			for _, lp := range lps {
				s += float32(math.Exp(float64(lp[j])))
			}
			dst[j] = float32(math.Log(float64(s / n)))
		}
	case LogSumExpMinusLogN:
		logN := float32(math.Log(float64(len(lps))))
		for j := range dst {
			m := lps[0][j]
			for _, lp := range lps[1:] {
				m = max(m, lp[j])
			}
			if math.IsInf(float64(m), 0) {
				// torch.logsumexp: all -inf gives -inf (no inf - inf).
				dst[j] = m - logN
				continue
			}
			var s float32
			for _, lp := range lps {
				s += float32(math.Exp(float64(lp[j] - m)))
			}
			dst[j] = m + float32(math.Log(float64(s))) - logN
		}
	}
}

// logSoftmax replaces row by its log_softmax in float32, as torch's CPU
// kernel computes it: the maximum m, the sum s of exp(x - m), then
// x - m - log(s) (the sum by the vector kernel, each term to about one
// float32 ulp).
func logSoftmax(row []float32) {
	if len(row) == 0 {
		return
	}
	m := kernel.Max(row)
	if math.IsInf(float64(m), 0) || m != m {
		return
	}
	ls := float32(math.Log(kernel.ExpSum(row, m)))
	for j, x := range row {
		row[j] = x - m - ls
	}
}
