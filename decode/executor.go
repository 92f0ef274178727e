package decode

import (
	"container/list"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxrun"
)

// maxBindings bounds the IoBindings an Executor caches, one per batch shape
// and ping-pong parity; past it the least recently used is closed to make
// room (making one costs a few ORT calls, tens of microseconds; a cache
// emptied when full thrashed under mixed traffic: 64 rows x 256 source
// lengths are 16k shapes). A Scheduler's
// batch meets every (rows, source length) pair up to its slots: 64 rows of
// up to 30 tokens are 3,840 decoder shapes, and a bound of 256 rebuilt
// bindings all the time (5% of attnx serve's CPU at 32 clients). A binding
// holds tensor views, not copies: a few hundred bytes each.
const maxBindings = 4096

// ErrCapacity is wrapped by the errors of an Executor asked to hold more
// slots or slot-positions than it has reserved.
var ErrCapacity = errors.New("decode: executor capacity exceeded")

// Executor runs decoder.onnx one step at a time for a batch of slots (one
// hypothesis of one row each), over preallocated buffers bound to ONNX
// Runtime with IoBindings: it is the only code in attnx that binds tensors
// for decoding. Per slot it holds input_ids, source_lengths, the encoder
// outputs (padded to the batch's longest source, src_len) and the recurrent
// states; every step writes log_probs [slots, Vt], the next states and
// attention [slots, src_len].
//
// Between steps the batch changes shape with Next (slots continue from
// parent slots: finished rows leave, a beam reorders or expands its
// hypotheses) and Join (new rows are encoded and appended). Buffers are Go
// slices viewed by ORT tensors of each batch shape; a view and its binding
// are made the first time a shape occurs and cached, so once the shapes of a
// workload have been seen nothing is allocated per step.
//
// Rows keep their order: Join appends, Next may drop rows and change a row's
// slots but not move rows past each other. An Executor is for one goroutine
// at a time.
type Executor struct {
	m   *Model
	ns  int // number of states
	err error

	capSlots, capCells int
	b, s               int // live slots, padded source length
	cur                int // the state parity the next step reads
	nextRow            RowID

	ids, lens, lensTmp []int64
	srcIDs, srcLens    []int64
	enc, attn, lp      []float32
	copyP              []float32 // copy_probs [slots, src_len], copy models
	states             [][2][]float32
	rowOf, rowTmp      []RowID
	idx                []int // 0, 1, 2, ...: the identity parents

	// staging for rows joining a non-empty batch, grown on demand
	stEnc    []float32
	stStates [][]float32

	// bindings caches the IoBindings by shape, least recently used at
	// lru's back; hits and misses count lookups.
	bindings     map[bindKey]*list.Element // of *bound
	lru          list.List
	maxBindings  int
	hits, misses atomic.Uint64
}

// BindingStats returns how often a decoder or encoder run found its
// IoBinding cached (hits) and had to make one (misses). It may be called
// from any goroutine.
func (e *Executor) BindingStats() (hits, misses uint64) { return e.hits.Load(), e.misses.Load() }

// RowID identifies a row joined to an Executor: ids increase with every
// Join and are never reused. It is 64 bits wide so that a long-running
// server cannot exhaust it (2^63 rows at a million a second is 290,000
// years); a 32-bit id wrapped after 2^31 rows, 2.6 days of continuous
// batching at 9.5k sentences/s, and every step failed after.
type RowID int64

type bindKind uint8

const (
	bindDecoder bindKind = iota
	bindEncoderDirect
	bindEncoderStaged
)

type bindKey struct {
	kind   bindKind
	parity uint8
	b, s   int32
}

// bound is one cached binding of tensor views over the executor's buffers.
type bound struct {
	key bindKey
	b   *onnxrun.Binding
}

func (x *bound) close() {
	if x.b != nil {
		x.b.Close()
	}
}

// NewExecutor returns an empty Executor of m with room for slots slots and
// cells slot-positions (slots times src_len); Reserve grows it.
func (m *Model) NewExecutor(slots, cells int) (*Executor, error) {
	e := &Executor{m: m, ns: len(m.states), bindings: map[bindKey]*list.Element{}, maxBindings: maxBindings}
	e.states = make([][2][]float32, e.ns)
	e.stStates = make([][]float32, e.ns)
	if err := e.Reserve(slots, cells); err != nil {
		return nil, err
	}
	return e, nil
}

// Model returns the executor's model.
func (e *Executor) Model() *Model { return e.m }

// Len returns the number of live slots.
func (e *Executor) Len() int { return e.b }

// SrcLen returns the batch's padded source length.
func (e *Executor) SrcLen() int { return e.s }

// Capacity returns the slots and slot-positions reserved.
func (e *Executor) Capacity() (slots, cells int) { return e.capSlots, e.capCells }

// Bytes returns the memory held by the executor's buffers.
func (e *Executor) Bytes() int64 {
	n := e.m.Bytes(e.capSlots, e.capCells) + 4*int64(cap(e.stEnc))
	for _, s := range e.stStates {
		n += 4 * int64(cap(s))
	}
	return n
}

// Reserve makes room for at least slots slots and cells slot-positions,
// keeping the live batch. Growing drops the cached bindings (their views
// point at the old buffers).
func (e *Executor) Reserve(slots, cells int) error {
	if slots < 1 || cells < slots {
		return fmt.Errorf("decode: reserving %d slots and %d slot-positions: want slots >= 1 and positions >= slots", slots, cells)
	}
	if slots <= e.capSlots && cells <= e.capCells {
		return nil
	}
	slots, cells = max(slots, e.capSlots), max(cells, e.capCells)
	e.dropBindings()
	C, V := e.m.width, e.m.vocab
	growI := func(old []int64, n int) []int64 { x := make([]int64, n); copy(x, old); return x }
	growF := func(old []float32, n int) []float32 { x := make([]float32, n); copy(x, old); return x }
	e.ids, e.lens, e.lensTmp = growI(e.ids, slots), growI(e.lens, slots), make([]int64, slots)
	e.srcIDs, e.srcLens = make([]int64, cells), make([]int64, slots)
	e.enc = growF(e.enc, cells*C)
	e.attn, e.lp = make([]float32, cells), make([]float32, slots*V)
	if e.m.copy {
		e.copyP = make([]float32, cells)
	}
	for k := range e.states {
		// States are [rows, b, width]: the layout depends on b, not on
		// the capacity, so a plain copy keeps them.
		for p := 0; p < 2; p++ {
			e.states[k][p] = growF(e.states[k][p], e.m.stateSize(k, slots))
		}
	}
	rows := make([]RowID, slots)
	copy(rows, e.rowOf)
	e.rowOf, e.rowTmp = rows, make([]RowID, slots)
	e.idx = make([]int, slots)
	for i := range e.idx {
		e.idx[i] = i
	}
	e.capSlots, e.capCells = slots, cells
	return nil
}

// Reset empties the batch, keeping buffers and cached bindings.
func (e *Executor) Reset() {
	e.b, e.s, e.cur, e.err = 0, 0, 0, nil
}

// Close releases the cached bindings and tensor views. The executor must
// not be used afterwards.
func (e *Executor) Close() {
	e.dropBindings()
	e.b, e.capSlots, e.capCells = 0, 0, 0
	e.err = errors.New("decode: executor is closed")
}

func (e *Executor) dropBindings() {
	for k, el := range e.bindings {
		el.Value.(*bound).close()
		e.lru.Remove(el)
		delete(e.bindings, k)
	}
}

// binding returns the cached binding of key, making it on first use and
// closing the least recently used one when the cache is full.
func (e *Executor) binding(key bindKey) (*onnxrun.Binding, error) {
	if el, ok := e.bindings[key]; ok {
		e.hits.Add(1)
		e.lru.MoveToFront(el)
		return el.Value.(*bound).b, nil
	}
	e.misses.Add(1)
	if len(e.bindings) >= e.maxBindings {
		old := e.lru.Back()
		x := old.Value.(*bound)
		x.close()
		e.lru.Remove(old)
		delete(e.bindings, x.key)
	}
	x, err := e.bind(key)
	if err != nil {
		return nil, err
	}
	x.key = key
	e.bindings[key] = e.lru.PushFront(x)
	return x.b, nil
}

func (e *Executor) bind(key bindKey) (x *bound, err error) {
	B, S := int64(key.b), int64(key.s)
	C, V := int64(e.m.width), int64(e.m.vocab)
	sh := func(k int) (int64, int64) { return int64(e.m.shapes[k].Rows), int64(e.m.shapes[k].Width) }
	x = &bound{}
	defer func() {
		if err != nil {
			x.close()
			x = nil
		}
	}()
	type io struct {
		input bool
		name  string
		t     *onnxrun.Tensor
	}
	var ios []io
	f32 := func(input bool, name string, data []float32, dims ...int64) {
		ios = append(ios, io{input, name, onnxrun.NewFloat32(dims, data[:builder.NumElements(dims)])})
	}
	i64 := func(input bool, name string, data []int64, dims ...int64) {
		ios = append(ios, io{input, name, onnxrun.NewInt64(dims, data[:builder.NumElements(dims)])})
	}
	var sess *onnxrun.Session
	switch key.kind {
	case bindDecoder:
		sess = e.m.dec
		p := int(key.parity)
		i64(true, attention.InInputIDs, e.ids, B)
		f32(true, attention.InEncoderOutputs, e.enc, B, S, C)
		i64(true, attention.InSourceLengths, e.lens, B)
		f32(false, attention.OutLogProbs, e.lp, B, V)
		f32(false, attention.OutAttention, e.attn, B, S)
		if e.m.copy {
			f32(false, attention.OutCopyProbs, e.copyP, B, S)
		}
		for k, name := range e.m.states {
			R, W := sh(k)
			f32(true, name, e.states[k][p], R, B, W)
			f32(false, NextPrefix+name, e.states[k][1-p], R, B, W)
		}
	case bindEncoderDirect, bindEncoderStaged:
		sess = e.m.enc
		i64(true, attention.InSourceIDs, e.srcIDs, B, S)
		i64(true, attention.InSourceLengths, e.srcLens, B)
		if key.kind == bindEncoderDirect {
			f32(false, attention.OutEncoder, e.enc, B, S, C)
			for k, name := range e.m.states {
				R, W := sh(k)
				f32(false, name, e.states[k][0], R, B, W)
			}
		} else {
			f32(false, attention.OutEncoder, e.stEnc, B, S, C)
			for k, name := range e.m.states {
				R, W := sh(k)
				f32(false, name, e.stStates[k], R, B, W)
			}
		}
	}
	if x.b, err = sess.NewBinding(); err != nil {
		return nil, fmt.Errorf("decode: %w", err)
	}
	for _, b := range ios {
		if b.input {
			err = x.b.BindInputTensor(b.name, b.t)
		} else {
			err = x.b.BindOutputTensor(b.name, b.t)
		}
		if err != nil {
			return nil, fmt.Errorf("decode: binding %s: %w", b.name, err)
		}
	}
	return x, nil
}

// Join encodes sources (one row of source token ids each, 1 <= length)
// and appends them to the batch as new rows of one slot each, whose first
// input ids are first. padTo, when larger than every length, is the
// source length the encoder runs at (0 for the longest row). When the batch
// is empty the encoder writes straight into the decoder's buffers; otherwise
// into staging buffers, from which the rows are copied in, the batch's
// encoder outputs being re-laid out when a longer source joins. It returns
// the first new row's id; the new rows have consecutive ids (see Row),
// larger than those of every earlier Join.
func (e *Executor) Join(sources [][]int64, first []int64, padTo int) (firstRow RowID, err error) {
	if e.err != nil {
		return 0, e.err
	}
	n := len(sources)
	if n == 0 {
		return e.nextRow, nil
	}
	if len(first) != n {
		return 0, fmt.Errorf("decode: Join got %d first input ids for %d sources", len(first), n)
	}
	sn := padTo
	for r, row := range sources {
		if len(row) == 0 {
			return 0, fmt.Errorf("decode: source row %d is empty; every row needs at least one token", r)
		}
		sn = max(sn, len(row))
	}
	b2, s2 := e.b+n, max(e.s, sn)
	if b2 > e.capSlots || b2*s2 > e.capCells {
		return 0, fmt.Errorf("%w: joining %d rows of up to %d tokens to %d slots of %d needs %d slots and %d positions, have %d and %d",
			ErrCapacity, n, sn, e.b, e.s, b2, b2*s2, e.capSlots, e.capCells)
	}
	for r, row := range sources {
		line := e.srcIDs[r*sn : (r+1)*sn]
		copy(line, row)
		// Padding: any valid source id does, positions past the length are
		// masked; 0 is valid in every vocabulary.
		clear(line[len(row):])
		e.srcLens[r] = int64(len(row))
	}
	direct := e.b == 0
	kind := bindEncoderStaged
	if direct {
		kind = bindEncoderDirect
		e.cur = 0
	} else {
		e.reserveStaging(n, sn)
	}
	bd, err := e.binding(bindKey{kind: kind, b: int32(n), s: int32(sn)})
	if err != nil {
		return 0, err
	}
	if err := bd.Run(); err != nil {
		return 0, fmt.Errorf("decode: encoder: %w", err)
	}
	H := e.m.width
	firstRow = e.nextRow
	if direct {
		for r := range n {
			e.rowOf[r] = firstRow + RowID(r)
			e.zeroPast(e.enc, r, int(e.srcLens[r]), sn)
		}
		copy(e.lens, e.srcLens[:n])
		copy(e.ids, first)
		e.b, e.s = n, sn
		e.nextRow += RowID(n)
		return firstRow, nil
	}
	// Existing slots: widen the encoder outputs to s2 (H is C here), and
	// the states of the current parity from [R, b, W] to [R, b2, W] (rows
	// move up, from the top one down).
	if s2 > e.s {
		relayout(e.enc, e.rowOf[:e.b], e.s*H, e.rowOf[:e.b], e.idx[:e.b], s2*H)
	}
	for k := range e.states {
		st, stg := e.states[k][e.cur], e.stStates[k]
		R, W := e.m.shapes[k].Rows, e.m.shapes[k].Width
		for l := R - 1; l >= 0; l-- {
			copy(st[l*b2*W:(l*b2+e.b)*W], st[l*e.b*W:(l+1)*e.b*W])
			copy(st[(l*b2+e.b)*W:(l+1)*b2*W], stg[l*n*W:(l+1)*n*W])
		}
	}
	for r := range n {
		j := e.b + r
		d := e.enc[j*s2*H : (j+1)*s2*H]
		copy(d, e.stEnc[r*sn*H:(r+1)*sn*H])
		clear(d[sn*H:])
		e.zeroPast(e.enc, j, int(e.srcLens[r]), s2)
		e.rowOf[j] = firstRow + RowID(r)
		e.lens[j] = e.srcLens[r]
		e.ids[j] = first[r]
	}
	e.b, e.s = b2, s2
	e.nextRow += RowID(n)
	return firstRow, nil
}

// zeroPast zeroes slot j's encoder outputs past position n (of stride s).
// The spec's encoder already writes zeros there; graphs of other origins
// may not, and padding must never reach the attention sum.
func (e *Executor) zeroPast(buf []float32, j, n, s int) {
	H := e.m.width
	clear(buf[(j*s+n)*H : (j+1)*s*H])
}

// reserveStaging makes the staging buffers hold n rows of sn positions.
func (e *Executor) reserveStaging(n, sn int) {
	if need := n * sn * e.m.width; cap(e.stEnc) < need {
		e.dropStagedBindings()
		e.stEnc = make([]float32, need)
	}
	for k := range e.stStates {
		if need := e.m.stateSize(k, n); cap(e.stStates[k]) < need {
			e.dropStagedBindings()
			e.stStates[k] = make([]float32, need)
		}
	}
	e.stEnc = e.stEnc[:cap(e.stEnc)]
	for k := range e.stStates {
		e.stStates[k] = e.stStates[k][:cap(e.stStates[k])]
	}
}

func (e *Executor) dropStagedBindings() {
	for k, el := range e.bindings {
		if k.kind == bindEncoderStaged {
			el.Value.(*bound).close()
			e.lru.Remove(el)
			delete(e.bindings, k)
		}
	}
}

// Inputs returns the live slots' input_ids, which the next Step feeds: write
// the tokens there (Next does it for a Batch).
func (e *Executor) Inputs() []int64 { return e.ids[:e.b] }

// SourceLength returns slot j's own source length.
func (e *Executor) SourceLength(j int) int { return int(e.lens[j]) }

// Row returns the id of slot j's row (as Join returned it).
func (e *Executor) Row(j int) RowID { return e.rowOf[j] }

// Step runs decoder.onnx once for every live slot. Afterwards LogProbs,
// Attention and State hold its outputs (the states are the next ones).
func (e *Executor) Step() error {
	if e.err != nil {
		return e.err
	}
	if e.b == 0 {
		return errors.New("decode: Step on an empty batch")
	}
	bd, err := e.binding(bindKey{kind: bindDecoder, parity: uint8(e.cur), b: int32(e.b), s: int32(e.s)})
	if err != nil {
		return err
	}
	if err := bd.Run(); err != nil {
		return fmt.Errorf("decode: decoder step: %w", err)
	}
	e.cur = 1 - e.cur
	return nil
}

// LogProbs returns the last step's log_probs [slots, Vt].
func (e *Executor) LogProbs() []float32 { return e.lp[:e.b*e.m.vocab] }

// Attention returns the last step's attention [slots, src_len].
func (e *Executor) Attention() []float32 { return e.attn[:e.b*e.s] }

// CopyProbs returns the last step's copy_probs [slots, src_len] (nil for
// a model without copy attention): p_copy times the copy attention.
func (e *Executor) CopyProbs() []float32 {
	if !e.m.copy {
		return nil
	}
	return e.copyP[:e.b*e.s]
}

// EncoderOutputs returns the live slots' encoder outputs [slots, src_len, C].
func (e *Executor) EncoderOutputs() []float32 { return e.enc[:e.b*e.s*e.m.width] }

// State returns recurrent state k (in the order of Model.States) of the
// live slots, [rows, slots, width]: the encoder's after Join, the last step's next
// state after Step.
func (e *Executor) State(k int) []float32 {
	return e.states[k][e.cur][:e.m.stateSize(k, e.b)]
}

// Next makes the next step's batch: next slot j continues from current slot
// parents[j] (its states, its row's encoder outputs and source length) with
// input id inputs[j]. len(parents) may be smaller (finished rows or
// hypotheses leave) or larger (a beam expands) than Len(), within the
// reserved capacity; rows must keep their order and their slots stay
// together. When parents is the identity nothing but the inputs is written;
// otherwise the states are gathered into the other ping-pong buffer and the
// encoder outputs move only for slots whose row changed (and are cut to the
// longest remaining source).
func (e *Executor) Next(parents []int, inputs []int64) error {
	if e.err != nil {
		return e.err
	}
	nb := len(parents)
	if len(inputs) != nb {
		return fmt.Errorf("decode: Next got %d inputs for %d slots", len(inputs), nb)
	}
	if nb > e.capSlots {
		return fmt.Errorf("%w: %d slots, %d reserved", ErrCapacity, nb, e.capSlots)
	}
	same := nb == e.b
	for j, p := range parents {
		if p < 0 || p >= e.b {
			return fmt.Errorf("decode: Next: parent %d of slot %d is not a live slot (0..%d)", p, j, e.b-1)
		}
		if j > 0 && e.rowOf[p] < e.rowOf[parents[j-1]] {
			return fmt.Errorf("decode: Next: slot %d continues row %d after row %d: rows must keep their order", j, e.rowOf[p], e.rowOf[parents[j-1]])
		}
		same = same && p == j
	}
	if same {
		copy(e.ids, inputs)
		return nil
	}
	H := e.m.width
	s2 := 0
	for j, p := range parents {
		e.rowTmp[j] = e.rowOf[p]
		e.lensTmp[j] = e.lens[p]
		s2 = max(s2, int(e.lens[p]))
	}
	if nb > 0 {
		relayout(e.enc, e.rowOf[:e.b], e.s*H, e.rowTmp[:nb], parents, s2*H)
	}
	for k := range e.states {
		src, dst := e.states[k][e.cur], e.states[k][1-e.cur]
		R, W := e.m.shapes[k].Rows, e.m.shapes[k].Width
		for l := 0; l < R; l++ {
			for j, p := range parents {
				copy(dst[(l*nb+j)*W:(l*nb+j+1)*W], src[(l*e.b+p)*W:(l*e.b+p+1)*W])
			}
		}
	}
	copy(e.ids, inputs)
	copy(e.lens, e.lensTmp[:nb])
	e.rowOf, e.rowTmp = e.rowTmp, e.rowOf
	e.cur = 1 - e.cur
	e.b, e.s = nb, s2
	return nil
}
