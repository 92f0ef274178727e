package decode

import (
	"context"
	"fmt"
	"slices"
)

// Batch drives rows through an Executor, each row by its own Search: after
// every decoder step each live row's Search sees its slots' outputs and says
// what comes next; finished rows leave at once, so a long row does not keep
// short ones running. Decode uses it for one caller's rows; a
// continuous-batching scheduler uses the same loop, adding rows between steps
// (Add) and removing cancelled ones (Remove). A Batch is reusable (Reset) and,
// once its shapes have been seen, allocates nothing per step. It is for one
// goroutine at a time; after an error, Reset it.
type Batch struct {
	ex      *Executor
	rows    []batchRow // live rows, in slot order
	width   int        // slots the live rows may hold at once
	parents []int      // scratch of the next slots, >= width
	inputs  []int64
	done    []Search
	ext     []float32 // a copy row's extended log-probs, slots x Width
	sums    []float32 // copy scratch
	ens     *ensemble // the other members of an ensemble (NewEnsembleBatch)
}

type batchRow struct {
	search Search
	id     RowID
	slots  int // current slots, contiguous, in row order
	width  int
	srcLen int
	copy   *CopyMap // the sentence's dynamic vocabulary (copy models)
}

// NewBatch returns an empty Batch over ex, which it resets.
func NewBatch(ex *Executor) *Batch {
	b := &Batch{ex: ex}
	b.Reset()
	return b
}

// Reset empties the batch and its executor.
func (b *Batch) Reset() {
	b.ex.Reset()
	b.each(func(ex *Executor) error { ex.Reset(); return nil })
	clear(b.rows)
	b.rows, b.width, b.done = b.rows[:0], 0, b.done[:0]
}

// Rows returns the number of live rows.
func (b *Batch) Rows() int { return len(b.rows) }

// Executor returns the batch's executor.
func (b *Batch) Executor() *Executor { return b.ex }

// Add encodes sources and adds them as new rows, row i driven by
// searches[i], which must not be in the batch already. The executor is grown
// to hold every live row at its full Width, so later steps never need to.
func (b *Batch) Add(sources [][]int64, searches []Search) error {
	if len(sources) != len(searches) {
		return fmt.Errorf("decode: Add got %d sources and %d searches", len(sources), len(searches))
	}
	if len(sources) == 0 {
		return nil
	}
	if err := checkCopy(b.ex.m.copy, sources, searches); err != nil {
		return err
	}
	width, srcLen := b.width, b.ex.SrcLen()
	for i, s := range searches {
		w := s.Width()
		if w < 1 {
			return fmt.Errorf("decode: search %d has width %d: want at least 1", i, w)
		}
		width += w
		srcLen = max(srcLen, len(sources[i]))
	}
	reserve := func(ex *Executor) error { return ex.Reserve(width, width*max(srcLen, 1)) }
	if err := reserve(b.ex); err != nil {
		return err
	}
	if err := b.each(reserve); err != nil {
		return err
	}
	if len(b.parents) < width {
		b.parents = make([]int, width)
		b.inputs = make([]int64, width)
	}
	first := b.inputs[:len(sources)]
	for i, s := range searches {
		first[i] = s.First()
	}
	id, err := b.ex.Join(sources, first, 0)
	if err != nil {
		return err
	}
	if err := b.each(func(ex *Executor) error { _, err := ex.Join(sources, first, 0); return err }); err != nil {
		return err
	}
	for i, s := range searches {
		r := batchRow{search: s, id: id + RowID(i), slots: 1, width: s.Width(), srcLen: len(sources[i])}
		if c, ok := s.(copier); ok {
			r.copy = c.copyMap()
		}
		b.rows = append(b.rows, r)
	}
	b.width = width
	return nil
}

// Step runs one decoder step for every live row and advances each row's
// Search. It returns the Searches whose rows finished at this step (a slice
// valid until the next call), which have left the batch.
func (b *Batch) Step() ([]Search, error) {
	b.done = b.done[:0]
	if len(b.rows) == 0 {
		return nil, nil
	}
	ex := b.ex
	lp, att, err := b.step()
	if err != nil {
		return nil, err
	}
	V, S := ex.m.vocab, ex.s
	off, n, keep := 0, 0, 0
	for i := range b.rows {
		r := b.rows[i]
		slots := Slots{logProbs: lp[off*V : (off+r.slots)*V], attention: att[off*S:], n: r.slots, vocab: V, attStride: S, srcLen: r.srcLen}
		if r.copy != nil {
			slots = b.extend(slots, r.copy, ex.CopyProbs()[off*S:], S)
		}
		k := r.search.Advance(slots, b.inputs[n:n+r.width], b.parents[n:n+r.width])
		if k < 0 || k > r.width {
			return nil, fmt.Errorf("decode: a %T returned %d next slots; its width is %d", r.search, k, r.width)
		}
		if r.copy != nil {
			for j := n; j < n+k; j++ {
				b.inputs[j] = r.copy.Input(b.inputs[j])
			}
		}
		for j := n; j < n+k; j++ {
			p := b.parents[j]
			if p < 0 || p >= r.slots {
				return nil, fmt.Errorf("decode: a %T chose parent slot %d of a row with %d", r.search, p, r.slots)
			}
			b.parents[j] = p + off
		}
		off += r.slots
		if k == 0 {
			b.done = append(b.done, r.search)
			b.width -= r.width
			continue
		}
		r.slots = k
		b.rows[keep] = r
		keep++
		n += k
	}
	clear(b.rows[keep:])
	b.rows = b.rows[:keep]
	if err := ex.Next(b.parents[:n], b.inputs[:n]); err != nil {
		return nil, err
	}
	if err := b.each(func(m *Executor) error { return m.Next(b.parents[:n], b.inputs[:n]) }); err != nil {
		return nil, err
	}
	return b.done, nil
}

// extend turns a copy row's slots into slots over its extended
// vocabulary (CopyMap.Extend), in the batch's scratch.
func (b *Batch) extend(s Slots, m *CopyMap, copyP []float32, stride int) Slots {
	w := m.Width()
	if need := s.n * w; cap(b.ext) < need {
		b.ext = make([]float32, need)
	}
	if cap(b.sums) < len(m.Words) {
		b.sums = make([]float32, len(m.Words))
	}
	ext := b.ext[:s.n*w]
	for i := range s.n {
		m.Extend(ext[i*w:(i+1)*w], s.LogProbs(i), copyP[i*stride:], b.sums)
	}
	s.logProbs, s.vocab = ext, w
	return s
}

// Remove takes the row driven by s out of the batch between two steps (a
// cancelled request) and reports whether it was there.
func (b *Batch) Remove(s Search) bool {
	i := slices.IndexFunc(b.rows, func(r batchRow) bool { return r.search == s })
	if i < 0 {
		return false
	}
	off := 0
	for _, r := range b.rows[:i] {
		off += r.slots
	}
	gone := b.rows[i].slots
	ids := b.ex.Inputs()
	n := 0
	for j := range ids {
		if j >= off && j < off+gone {
			continue
		}
		b.parents[n], b.inputs[n] = j, ids[j]
		n++
	}
	if err := b.ex.Next(b.parents[:n], b.inputs[:n]); err != nil {
		// Next fails only on inconsistent arguments, which this cannot
		// build; keep the row rather than corrupt the batch.
		return false
	}
	if err := b.each(func(m *Executor) error { return m.Next(b.parents[:n], b.inputs[:n]) }); err != nil {
		return false
	}
	b.width -= b.rows[i].width
	b.rows = slices.Delete(b.rows, i, i+1)
	return true
}

// Run steps until every row has finished, checking ctx between steps.
func (b *Batch) Run(ctx context.Context) error {
	for len(b.rows) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, err := b.Step(); err != nil {
			return err
		}
	}
	return nil
}

// Decode decodes sources with ex, row i driven by searches[i], until every
// row has finished: the executor is reset, the rows are encoded together,
// and finished rows leave the batch as they finish. Read the results from
// the Searches.
func Decode(ctx context.Context, ex *Executor, sources [][]int64, searches []Search) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b := NewBatch(ex)
	if err := b.Add(sources, searches); err != nil {
		return err
	}
	return b.Run(ctx)
}
