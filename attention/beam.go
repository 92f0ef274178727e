package attention

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// Names of beam.onnx's inputs and outputs beyond greedy.onnx's (InMaxLen,
// OutOutputIDs and OutAttentions are shared; see Beam for the shapes).
const (
	// InBeamSize is K, the number of hypotheses per row: an int64 scalar,
	// at least 1.
	InBeamSize = "beam_size"
	// InLengthPenalty is alpha: a float64 (double) scalar, finite and at
	// least 0. It is float64 because the normalized score is computed in
	// float64 (docs/models.md, "Beam search"), and a float32 alpha such as 0.6
	// would not be the alpha the caller meant.
	InLengthPenalty = "length_penalty"
	// OutLengths is int64 [batch, beam]: each hypothesis' length in
	// tokens, its EOS included; 0 for a missing hypothesis.
	OutLengths = "lengths"
	// OutScores is float32 [batch, beam]: each hypothesis' raw score, the
	// float32 sum of its tokens' log_probs in step order; -Inf for a
	// missing hypothesis.
	OutScores = "scores"
	// OutNormalizedScores is float32 [batch, beam]: float32(score /
	// length^alpha), computed in float64; -Inf for a missing hypothesis.
	OutNormalizedScores = "normalized_scores"
	// DimBeam is the symbolic number of hypotheses per row, K.
	DimBeam = "beam"
)

// Beam builds beam.onnx: the encoder and the whole beam search of
// docs/models.md ("Beam search") in one graph, with the decoder step
// inside an ONNX Loop that runs the rows' K hypotheses as one batch of
// batch*K rows.
//
// Inputs: source_ids int64 [batch, src_len], source_lengths int64 [batch],
// max_len (int64 scalar, >= 1), beam_size (K, int64 scalar, >= 1) and
// length_penalty (alpha, float64 scalar, finite and >= 0). The graph does
// not check them: a caller refuses max_len or K below 1 and a negative or
// non-finite alpha before running it. (K below 1 runs as 1, because ONNX
// has no way to fail cleanly and ONNX Runtime aborts the process on some
// selections of zero elements; max_len 0 makes ONNX Runtime return an
// error; a bad alpha gives meaningless normalized scores and order.)
// K is an input, not fixed at export, so that one file serves every beam
// size, K = 1 included.
//
// Outputs, per row the K best hypotheses in the final order of "Beam
// search" (normalized score descending, ties in insertion order; the first
// is the translation):
//
//   - output_ids int64 [batch, beam, out_len]: each hypothesis' tokens (EOS
//     included when it finished), padded with sp.PAD past its length;
//   - lengths int64 [batch, beam];
//   - scores float32 [batch, beam];
//   - normalized_scores float32 [batch, beam];
//   - attention float32 [batch, out_len, src_len]: the best hypothesis'
//     attention at each of its steps, zero past its length.
//
// out_len is the number of steps the search ran: at most max_len, fewer
// when every row stopped before. A hypothesis is missing (length 0, every
// token sp.PAD, both scores -Inf) only when a row has fewer than K
// hypotheses at the end, which happens only when K*Vt is too small for
// the search to keep K live hypotheses (a tiny target vocabulary).
//
// Each step adds every live hypothesis' score (-Inf for a missing one, so
// that at the first step only hypothesis 0 counts and no duplicates start
// the beam) to its log_probs and takes the row's 2K best candidates with
// TopK, flattened as i*Vt + v: ONNX TopK returns equal values in ascending
// index order, which is the order "score descending, then i ascending,
// then v ascending" of "Beam search". EOS candidates of rank < K finish; the
// first K others live on, their states gathered from their parents' slots.
// The loop carries only the live scores and states and each row's count
// of finished hypotheses (a row that stops gets -Inf live scores, and the
// loop ends when no row has a finite one); each step emits the
// finishing candidates' scores and indices, every new live slot's token and
// parent slot, and every slot's attention. After the loop, a row's
// finished hypotheses are those records in step order, then rank order:
// insertion order. The final order is a TopK over them followed by (when
// a row has fewer than K finished) its live ones, so TopK's tie order is
// insertion order. A second Loop reads each result
// hypothesis' tokens and the best one's attention back along the parent
// slots, from its last step to its first.
func Beam(wt *Weights, sp Special, opt BuildOptions) (*builder.Model, error) {
	if err := validate(wt, opt); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	if err := sp.Check(wt.Config); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	if err := noCopy(wt.Config); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	if err := opt.Rules.Check(wt.Config); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	ar, _ := Lookup(wt.Config.Arch) // Validate checked the name
	s := newModelGraph("attnx_beam_"+string(wt.Config.Arch), wt, opt)
	g := s.g
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	maxLen := g.Input(InMaxLen, builder.Int64, builder.Scalar())
	k := g.Input(InBeamSize, builder.Int64, builder.Scalar())
	alpha := g.Input(InLengthPenalty, builder.Double, builder.Scalar())

	enc, states := s.encoder(ar, ids, lens)
	// ONNX Runtime aborts the process on some selections of zero
	// hypotheses: K below 1 runs as 1.
	b := newBeamGraph(s, sp, ids, ops.Max(k, s.c.scalarInt(1)))
	// Per sentence, then repeated for each of its K slots.
	mask := b.perSlot(s.lengthMask(enc, lens), 0)
	pre := ar.precompute(s, enc)
	if pre != nil {
		pre = b.perSlot(pre, 0)
	}
	enc = b.perSlot(enc, 0)
	for i := range states {
		// Every state has the batch on axis 1 (StateSpec).
		states[i] = b.perSlot(states[i], 1)
	}

	search := b.search(ar, maxLen, states, stepInputs{enc: enc, mask: mask, pre: pre})
	res := b.results(search, alpha)
	toks, attn := b.backtrack(search, res)

	g.OutputAs(OutOutputIDs, toks, builder.Dims(DimBatch, DimBeam, DimOutLen))
	g.OutputAs(OutLengths, res.lengths, builder.Dims(DimBatch, DimBeam))
	g.OutputAs(OutScores, res.scores, builder.Dims(DimBatch, DimBeam))
	g.OutputAs(OutNormalizedScores, res.normalized, builder.Dims(DimBatch, DimBeam))
	g.OutputAs(OutAttentions, attn, builder.Dims(DimBatch, DimOutLen, DimSrcLen))
	m, err := s.finish(fmt.Sprintf("attnx %s beam search in one graph (%s)", s.cfg.Arch, s.cfg))
	if err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	setSpecialMetadata(m, sp)
	return m, nil
}

// beamGraph holds what the parts of beam.onnx share: the special tokens,
// the sizes computed at run time and the constants.
type beamGraph struct {
	s       *modelGraph
	sp      Special
	k       *builder.Value // K, int64 scalar
	k1      *builder.Value // [K]
	v       *builder.Value // Vt, int64 scalar
	bk      *builder.Value // [batch, K], a shape
	rowBase *builder.Value // int64 [batch, 1]: the first slot of each row, b*K
	slotRow *builder.Value // int64 [batch*K]: each slot's row
	// slotBase int64 [batch*K]: the first slot of each slot's row.
	slotBase *builder.Value
	negInf   *builder.Value // float32 scalar
	flat     *builder.Value // [-1], a shape
	r        ops.ReshapeOpts
}

func newBeamGraph(s *modelGraph, sp Special, ids, k *builder.Value) *beamGraph {
	c := s.c
	zero, one := c.scalarInt(0), c.scalarInt(1)
	b1 := ops.Shape(ids, ops.ShapeOpts{End: ops.Int(1)}) // [batch]
	k1 := ops.Unsqueeze(k, c.ints(0))
	batch := ops.Squeeze(b1, c.ints(0))
	slots := ops.Range(zero, ops.Mul(batch, k), one) // [batch*K]
	return &beamGraph{
		s: s, sp: sp, k: k, k1: k1,
		v:        c.scalarInt(int64(s.cfg.TgtVocab)),
		bk:       ops.Concat(0, b1, k1),
		rowBase:  ops.Unsqueeze(ops.Mul(ops.Range(zero, batch, one), k), c.ints(1)),
		slotRow:  ops.Div(slots, k),
		slotBase: ops.Mul(ops.Div(slots, k), k),
		negInf:   c.scalarFloat(float32(math.Inf(-1))),
		flat:     c.ints(-1),
	}
}

// perSlot repeats x's rows (along axis) for each of their K slots: row b
// becomes slots b*K .. b*K+K-1.
func (b *beamGraph) perSlot(x *builder.Value, axis int64) *builder.Value {
	return ops.Gather(x, b.slotRow, axis)
}

// beamState is what the search loop carries from step to step.
type beamState struct {
	// ids [batch*K]: each slot's next input; states: each slot's
	// recurrent states, whatever they mean.
	ids    *builder.Value
	states decState
	// score float32 [batch*K, 1]: each live hypothesis' score; -Inf for a
	// missing one and for all of a row whose search has stopped, so that
	// its candidates are -Inf too and it finishes nothing more.
	score *builder.Value
	// count int64 [batch, 1]: the row's finished hypotheses.
	count *builder.Value
}

func (st beamState) values() []*builder.Value {
	vs := append([]*builder.Value{st.ids}, st.states...)
	return append(vs, st.score, st.count)
}

func beamStateOf(vs []*builder.Value, nStates int) beamState {
	st := beamState{ids: vs[0], states: decState(vs[1 : 1+nStates])}
	vs = vs[1+nStates:]
	st.score, st.count = vs[0], vs[1]
	return st
}

// beamStep is what one step emits (the Loop stacks each over the steps).
type beamStep struct {
	// finScore float32 [batch, C]: the score of each of the row's C best
	// candidates that finishes (an EOS of rank < K, not -Inf), -Inf for
	// the others; idx int64 [batch, C]: their indices i*Vt + v.
	finScore, idx *builder.Value
	// ids and parents int64 [batch*K]: each new live slot's token and the
	// slot it came from; attn float32 [batch*K, src_len]: each slot's
	// attention at this step.
	ids, parents, attn *builder.Value
}

// values lists what the Loop stacks: ids are computed after the loop from
// the stacked selected indices (sel, int64 [batch*K]), since the next
// inputs are the same tokens and a value cannot leave the body twice
// without a copy.
func (bs beamStep) values(sel *builder.Value) []*builder.Value {
	return []*builder.Value{bs.finScore, bs.idx, sel, bs.parents, bs.attn}
}

// searchResult is the search loop's final state and its per-step records,
// stacked over the steps run.
type searchResult struct {
	final beamState
	steps beamStep
}

// search builds the loop over the decoder steps.
func (b *beamGraph) search(ar Architecture, maxLen *builder.Value, states decState, in stepInputs) searchResult {
	s, c := b.s, b.s.c
	zero := c.scalarInt(0)
	kRange := ops.Range(zero, b.k, c.scalarInt(1))
	// Only hypothesis 0 exists before the first step.
	score := ops.Expand(ops.Where(ops.Equal(kRange, zero), c.scalarFloat(0), b.negInf), b.bk)
	b1 := ops.Slice(b.bk, c.ints(0), c.ints(1), nil, nil)
	start := beamState{
		ids:    ops.Reshape(ops.Expand(c.scalarInt(b.sp.SOS), b.bk), b.flat, b.r),
		states: states,
		score:  ops.Reshape(score, c.ints(-1, 1), b.r),
		count:  ops.Expand(zero, ops.Concat(0, b1, c.ints(1))), // [batch, 1]
	}
	n := len(states)
	final, scans := ops.Loop(s.g, maxLen, c.scalarBool(true), start.values(),
		func(_ *builder.Graph, iter, _ *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			st := beamStateOf(carried, n)
			in.ids, in.states = st.ids, st.states
			out := ar.step(s, in)
			out.logProbs = s.applyRules(s.opt.Rules, out.logProbs, iter, b.sp.EOS, true)
			next, rec, sel := b.step(st, out.logProbs)
			rec.attn = out.attn
			// Each new slot continues its parent's states: every state
			// has the batch on axis 1.
			for _, v := range out.states {
				next.states = append(next.states, ops.Gather(v, rec.parents, 1))
			}
			// Go on while any row has a live hypothesis.
			running := ops.Greater(ops.ReduceMax(next.score, ops.ReduceOpts{NoKeepDims: true}), b.negInf)
			return running, next.values(), rec.values(sel)
		}, ops.LoopOpts{})
	res := searchResult{final: beamStateOf(final, n)}
	if len(scans) == 5 {
		ids := ops.Mod(scans[2], b.v, ops.ModOpts{})
		res.steps = beamStep{finScore: scans[0], idx: scans[1], ids: ids, parents: scans[3], attn: scans[4]}
	}
	return res
}

// step builds one step's selection from the slots' log_probs [batch*K,
// Vt]: the next state but the recurrent one, the step's records but the
// attention and the ids, and the selected candidates' indices [batch*K].
func (b *beamGraph) step(st beamState, logProbs *builder.Value) (next beamState, rec beamStep, selIdx *builder.Value) {
	c := b.s.c
	// The candidates score_i + log_probs_i[v], flattened as i*Vt + v, and
	// the row's C = min(2K, K*Vt) best in the order of "Beam search".
	// -Inf marks the candidates of missing hypotheses (log_probs are
	// finite) and of rows that stopped.
	vt := ops.Unsqueeze(b.v, c.ints(0))
	nCand := ops.Min(ops.Mul(b.k1, c.ints(2)), ops.Mul(b.k1, vt)) // [C]
	cand := ops.Reshape(ops.Add(logProbs, st.score), ops.Concat(0, c.ints(-1), ops.Mul(b.k1, vt)), b.r)
	vals, idx := ops.TopK(cand, nCand, ops.TopKOpts{Axis: ops.Int(1)}) // [batch, C]
	rank := ops.Range(c.scalarInt(0), ops.Squeeze(nCand, c.ints(0)), c.scalarInt(1))
	eos := ops.Equal(ops.Mod(idx, b.v, ops.ModOpts{}), c.scalarInt(b.sp.EOS))

	// An EOS of rank < K finishes.
	rec.finScore = ops.Where(ops.And(eos, ops.Less(rank, b.k)), vals, b.negInf)
	rec.idx = idx
	finished := ops.Cast(ops.Greater(rec.finScore, b.negInf), builder.Int64)
	next.count = ops.Add(st.count, ops.ReduceSum(finished, c.ints(1), ops.ReduceSumOpts{}))

	// The first K other candidates live on: the K largest of C - rank
	// over them (0 for EOS). Each hypothesis has one EOS candidate, so at
	// least K of the 2K are others. Those of missing hypotheses come after
	// all the rest: one is taken only when fewer than K others exist, and
	// stays missing (-Inf).
	key := ops.Where(eos, c.scalarFloat(0), ops.Cast(ops.Sub(nCand, rank), builder.Float))
	_, sel := ops.TopK(key, b.k1, ops.TopKOpts{Axis: ops.Int(1)}) // [batch, K]
	selIdx = ops.Reshape(ops.GatherElements(idx, sel, 1), b.flat, b.r)
	next.ids = ops.Mod(selIdx, b.v, ops.ModOpts{})
	rec.parents = ops.Add(ops.Div(selIdx, b.v), b.slotBase)
	// A row with K finished stops: its live hypotheses become -Inf.
	score := ops.Where(ops.Less(next.count, b.k), ops.GatherElements(vals, sel, 1), b.negInf) // [batch, K]
	next.score = ops.Reshape(score, c.ints(-1, 1), b.r)
	return next, rec, selIdx
}

// beamResults are the K result hypotheses of each row, in the final order:
// [batch, K] each, and flattened to [batch*K], the slot at each one's last
// step and its last token.
type beamResults struct {
	lengths, scores, normalized *builder.Value
	lastSlot, lastToken         *builder.Value
}

// results builds the end rules: a row's finished hypotheses in insertion
// order, then, when it has fewer than K, its live ones; the normalized
// score; the final order.
func (b *beamGraph) results(sr searchResult, alpha *builder.Value) beamResults {
	c := b.s.c
	st, rec := sr.final, sr.steps
	t1 := ops.Shape(rec.ids, ops.ShapeOpts{End: ops.Int(1)}) // [steps run]
	steps := ops.Squeeze(t1, c.ints(0))
	// The finishing candidates all have rank < K: [steps, batch, K] in
	// insertion order once the steps are inside each row.
	byRow := func(x *builder.Value) *builder.Value {
		x = ops.Slice(x, c.ints(0), b.k1, c.ints(2), nil)
		return ops.Reshape(ops.Transpose(x, []int64{1, 0, 2}), ops.Concat(0, c.ints(0), c.ints(-1)), b.r) // [batch, steps*K]
	}
	finScore, finIdx := byRow(rec.finScore), byRow(rec.idx)
	stepNo := ops.Range(c.scalarInt(1), ops.Add(steps, c.scalarInt(1)), c.scalarInt(1)) // [steps]: 1, 2, ...
	finLen := ops.Reshape(ops.Expand(ops.Unsqueeze(stepNo, c.ints(1)), ops.Concat(0, t1, b.k1)), c.ints(1, -1), b.r)
	last := func(x *builder.Value) *builder.Value { // the last step's [batch*K] as [batch, K]
		return ops.Reshape(ops.Gather(x, ops.Sub(steps, c.scalarInt(1)), 0), b.bk, b.r)
	}
	// A row that stopped with K finished has -Inf live scores: only rows
	// with fewer add their live hypotheses.
	score := ops.Concat(1, finScore, ops.Reshape(st.score, b.bk, b.r))
	valid := ops.Greater(score, b.negInf)
	length := ops.Concat(1, ops.Expand(finLen, ops.Shape(finScore, ops.ShapeOpts{})), ops.Expand(steps, b.bk))
	slot := ops.Concat(1, ops.Add(ops.Div(finIdx, b.v), b.rowBase), last(rec.parents))
	lastTok := ops.Concat(1, ops.Expand(c.scalarInt(b.sp.EOS), ops.Shape(finIdx, ops.ShapeOpts{})), last(rec.ids))

	// float32(score / length^alpha), computed in float64.
	norm := ops.Div(ops.Cast(score, builder.Double), ops.Pow(ops.Cast(length, builder.Double), alpha))
	norm = ops.Where(valid, ops.Cast(norm, builder.Float), b.negInf)
	sorted, order := ops.TopK(norm, b.k1, ops.TopKOpts{Axis: ops.Int(1)}) // [batch, K]
	present := ops.Greater(sorted, b.negInf)
	return beamResults{
		lengths:    ops.Where(present, ops.GatherElements(length, order, 1), c.scalarInt(0)),
		scores:     ops.Where(present, ops.GatherElements(score, order, 1), b.negInf),
		normalized: sorted,
		lastSlot:   ops.Reshape(ops.GatherElements(slot, order, 1), b.flat, b.r),
		lastToken:  ops.Reshape(ops.GatherElements(lastTok, order, 1), b.flat, b.r),
	}
}

// backtrack reads the result hypotheses' tokens ([batch, K, steps]) and
// the best one's attention ([batch, steps, src_len]) back from the search's
// per-step records: a Loop from the last step to the first follows each
// hypothesis' slots through the parent links.
func (b *beamGraph) backtrack(sr searchResult, res beamResults) (tokens, attn *builder.Value) {
	s, c := b.s, b.s.c
	rec := sr.steps
	t1 := ops.Shape(rec.ids, ops.ShapeOpts{End: ops.Int(1)}) // [steps]
	lastStep := ops.Sub(ops.Squeeze(t1, c.ints(0)), c.scalarInt(1))
	lengths := ops.Reshape(res.lengths, b.flat, b.r)
	lastAt := ops.Sub(lengths, c.scalarInt(1))  // the 0-based step of each hypothesis' last token
	best := ops.Reshape(b.rowBase, b.flat, b.r) // each row's first result
	_, scans := ops.Loop(s.g, ops.Add(lastStep, c.scalarInt(1)), nil, []*builder.Value{res.lastSlot},
		func(_ *builder.Graph, iter, _ *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			// At step u a hypothesis has its last token when u is its
			// length - 1; before, its token at u is the one that made its
			// slot at step u+1 (carried), from the parent slot that ran
			// step u. Past its length the values are masked below.
			u := ops.Sub(lastStep, iter)
			after := carried[0]
			atEnd := ops.Equal(lastAt, u)
			tok := ops.Where(atEnd, res.lastToken, ops.Gather(ops.Gather(rec.ids, u, 0), after, 0))
			slot := ops.Where(atEnd, res.lastSlot, ops.Gather(ops.Gather(rec.parents, u, 0), after, 0))
			a := ops.Gather(ops.Gather(rec.attn, u, 0), ops.Gather(slot, best, 0), 0) // [batch, src_len]
			return nil, []*builder.Value{slot}, []*builder.Value{tok, a}
		}, ops.LoopOpts{})
	if len(scans) != 2 {
		return nil, nil
	}
	// The scans run from the last step to the first: reverse them, and
	// mask the steps past each hypothesis' length.
	reverse := func(x *builder.Value) *builder.Value {
		return ops.Slice(x, c.ints(-1), c.ints(math.MinInt64), c.ints(0), c.ints(-1))
	}
	stepNo := ops.Range(c.scalarInt(0), ops.Squeeze(t1, c.ints(0)), c.scalarInt(1)) // [steps]
	tokens = ops.Transpose(reverse(scans[0]), []int64{1, 0})                        // [batch*K, steps]
	tokens = ops.Where(ops.Less(stepNo, ops.Unsqueeze(lengths, c.ints(1))), tokens, c.scalarInt(b.sp.PAD))
	tokens = ops.Reshape(tokens, ops.Concat(0, b.bk, c.ints(-1)), b.r)
	bestLen := ops.Slice(res.lengths, c.ints(0), c.ints(1), c.ints(1), nil) // [batch, 1]
	inside := ops.Unsqueeze(ops.Less(stepNo, bestLen), c.ints(2))           // [batch, steps, 1]
	attn = ops.Where(inside, ops.Transpose(reverse(scans[1]), []int64{1, 0, 2}), c.scalarFloat(0))
	return tokens, attn
}

// setSpecialMetadata records the special tokens a decoding graph uses.
func setSpecialMetadata(m *builder.Model, sp Special) {
	m.Metadata["attnx.sos"] = fmt.Sprint(sp.SOS)
	m.Metadata["attnx.eos"] = fmt.Sprint(sp.EOS)
	m.Metadata["attnx.pad"] = fmt.Sprint(sp.PAD)
}
