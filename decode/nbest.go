package decode

import (
	"cmp"
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

// best reorders c so that its first n elements (all of c when it has
// fewer) are its n first in the order order (a total order: negative when
// a comes first), sorted, and returns them: torch.topk over a step's
// candidates, without sorting all of them. A bounded heap keeps the n
// best so far, the one that comes last on top; each other candidate costs
// one comparison unless it enters.
func best[T any](c []T, n int, order func(a, b T) int) []T {
	n = max(0, min(n, len(c)))
	if n == 0 {
		return c[:0]
	}
	h := c[:n]
	for j := n/2 - 1; j >= 0; j-- {
		siftLast(h, j, order)
	}
	for i := n; i < len(c); i++ {
		if order(c[i], h[0]) < 0 {
			h[0], c[i] = c[i], h[0]
			siftLast(h, 0, order)
		}
	}
	slices.SortFunc(h, order)
	return h
}

// topK keeps the n first values pushed to it in order (a total order):
// best's selection over a stream, holding n values, not all of them.
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
