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
		out[i] = Hypothesis{Tokens: t.tokens(nil, h.node), Score: h.raw, NormalizedScore: h.norm}
	}
	return out
}

// reset forgets the hypotheses, keeping the buffer.
func (f *finished) reset() { f.fin, f.done = f.fin[:0], false }
