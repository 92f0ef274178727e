package decode

import (
	"math"

	"cmp"
	"github.com/attnx/attnx/internal/kernel"
	"slices"
)

// finished is what a toolkit's search keeps of its row's finished
// hypotheses (OpenNMTBeam, OpenNMTSample, FairseqBeam): each one's last
// node in the row's tree, its running score and the normalised score the
// toolkit ranks by. One implementation of the n-best list they share.
type finished struct {
	fin  []finHyp
	done bool
}

type finHyp struct {
	node      int32
	raw, norm float32
}

// add records a finished hypothesis.
func (f *finished) add(node int32, raw, norm float32) {
	f.fin = append(f.fin, finHyp{node: node, raw: raw, norm: norm})
}

// finish orders the finished hypotheses by normalised score, best first,
// stably (Python's sorted(..., reverse=True)), and marks the row done. It
// returns 0, the Advance of a finished row.
func (f *finished) finish() int {
	f.done = true
	slices.SortStableFunc(f.fin, func(x, y finHyp) int { return cmp.Compare(y.norm, x.norm) })
	return 0
}

// count is the number of hypotheses listed once the row is done: at most
// nBest; 0 before.
func (f *finished) count(nBest int) int {
	if !f.done {
		return 0
	}
	return min(len(f.fin), nBest)
}

// list returns the first n of the nBest listed (all when n < 1 or more),
// as new slices: Score the running score, NormalizedScore the ranking one.
func (f *finished) list(t *tree, n, nBest int) []Hypothesis {
	if c := f.count(nBest); n < 1 || n > c {
		n = c
	}
	out := make([]Hypothesis, n)
	for i := range out {
		h := f.fin[i]
		out[i] = Hypothesis{Tokens: t.tokens(nil, h.node), Score: h.raw, NormalizedScore: h.norm, Positional: t.positional(h.node)}
	}
	return out
}

// reset forgets the hypotheses, keeping the buffer.
func (f *finished) reset() { f.fin, f.done = f.fin[:0], false }

// topK keeps the n first values pushed to it in order (a total order):
// torch.topk over a stream, holding n values, not all of them.
type topK[T any] struct {
	h     []T
	n     int
	order func(a, b T) int
}

// reset empties it for a selection of n, keeping its buffer.
func (t *topK[T]) reset(n int, order func(a, b T) int) {
	t.h, t.n, t.order = t.h[:0], max(n, 0), order
}

// push offers c.
func (t *topK[T]) push(c T) {
	switch {
	case len(t.h) < t.n:
		t.h = append(t.h, c)
		if len(t.h) == t.n {
			for j := t.n/2 - 1; j >= 0; j-- {
				siftLast(t.h, j, t.order)
			}
		}
	case t.n > 0 && t.order(c, t.h[0]) < 0:
		t.h[0] = c
		siftLast(t.h, 0, t.order)
	}
}

// threshold returns the value that comes last among the n kept, once n
// are (what a new value must come before to enter).
func (t *topK[T]) threshold() (T, bool) {
	if len(t.h) < t.n || t.n == 0 {
		var zero T
		return zero, false
	}
	return t.h[0], true
}

// result returns the values kept, first in order first (a view, valid
// until the next reset).
func (t *topK[T]) result() []T {
	slices.SortFunc(t.h, t.order)
	return t.h
}

// siftLast moves h[j] down the heap whose top comes last in order.
func siftLast[T any](h []T, j int, order func(a, b T) int) {
	for {
		k := 2*j + 1
		if k >= len(h) {
			return
		}
		if k+1 < len(h) && order(h[k+1], h[k]) > 0 {
			k++
		}
		if order(h[k], h[j]) <= 0 {
			return
		}
		h[j], h[k] = h[k], h[j]
		j = k
	}
}

// scanRow offers the indices of one hypothesis' log-probs whose candidate
// scores (the log-prob plus h, divided by pen when divide) may enter a
// selection, in index order: all of them while bound reports no
// threshold, and then only those above it, which the vector scan finds.
// bound returns the score a candidate must beat, given that every later
// one with an equal or lower score cannot enter (candidates come in the
// selection's order among equals), and that no rule the caller applies
// raises a score; it must not return NaN.
func scanRow(lp []float32, h, pen float32, divide bool, bound func() (float32, bool), offer func(v int)) {
	for v := 0; v < len(lp); {
		thr, ok := bound()
		if !ok {
			offer(v)
			v++
			continue
		}
		v += kernel.FirstAboveOrNaN(lp[v:], rawBound(thr, h, pen, divide))
		if v < len(lp) {
			offer(v)
			v++
		}
	}
}

// rawBound returns a log-prob t whose candidate (t + h, divided by pen
// when divide) does not exceed thr, so that every log-prob up to t scores
// at most thr (the score is monotonic in the log-prob): the algebraic
// inverse, stepped down past its rounding (-Inf, which bounds nothing,
// if that takes long).
func rawBound(thr, h, pen float32, divide bool) float32 {
	score := func(x float32) float32 {
		c := x + h
		if divide {
			c /= pen
		}
		return c
	}
	t := thr
	if divide {
		t *= pen
	}
	t -= h
	for n := 0; t != t || score(t) > thr; n++ {
		if n == 64 || t != t {
			return float32(math.Inf(-1))
		}
		t = math.Nextafter32(t, float32(math.Inf(-1)))
	}
	return t
}
