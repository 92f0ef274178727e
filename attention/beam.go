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
	// float64 (spec: "Beam search"), and a float32 alpha such as 0.6
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
// shared/spec/models.md ("Beam search") in one graph, with the decoder step
// inside an ONNX Loop that runs the rows' K hypotheses as one batch of
// batch*K rows.
//
// Inputs: source_ids int64 [batch, src_len], source_lengths int64 [batch],
// max_len (int64 scalar, >= 1), beam_size (K, int64 scalar, >= 1) and
// length_penalty (alpha, float64 scalar, finite and >= 0). The graph does
// not check them: a caller refuses max_len or K below 1 and a negative or
// non-finite alpha before running it (with them the outputs are undefined).
// K is an input, not fixed at export, so that one file serves every beam
// size, K = 1 included.
//
// Outputs, per row the K best hypotheses in the spec's final order
// (normalized score descending, ties in insertion order; the first is the
// translation):
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
// What the loop carries, per row: the K live hypotheses' scores (-Inf for
// a missing one, so at the first step only hypothesis 0 counts and no
// duplicates start the beam) and states, and the finished list, up to 2K-1
// entries (a row stops once it holds K or more, and one step adds at most
// K). Each step takes the row's 2K best candidates (score_i +
// log_probs_i[v], flattened as i*Vt + v: ONNX TopK returns equal values in
// ascending index order, which is the spec's order "score descending, then
// i ascending, then v ascending"), finishes the EOS candidates of rank < K,
// keeps the first K others as the new live hypotheses and reorders the
// states with Gather. Each step also emits, per new live slot, its token
// and parent slot, and every slot's attention; after the loop, each result
// hypothesis' tokens and the best one's attention are read back along the
// parent slots, from its last step to its first, in a second Loop. The
// final order is a TopK over the finished entries followed by (when a row
// has fewer than K finished) its live ones: the index in that list is the
// insertion order, so TopK's tie order is the spec's.
func Beam(wt *Weights, sp Special) (*builder.Model, error) {
	if err := wt.Validate(); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	if err := sp.Check(wt.Config); err != nil {
		return nil, fmt.Errorf("beam: %w", err)
	}
	ar, _ := Lookup(wt.Config.Arch) // Validate checked the name
	s := newModelGraph("attnx_beam_"+string(wt.Config.Arch), wt)
	g := s.g
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	maxLen := g.Input(InMaxLen, builder.Int64, builder.Scalar())
	k := g.Input(InBeamSize, builder.Int64, builder.Scalar())
	alpha := g.Input(InLengthPenalty, builder.Double, builder.Scalar())

	enc, state := s.encoder(ids, lens)
	b := newBeamGraph(s, sp, ids, k)
	// Per sentence, then repeated for each of its K slots.
	mask := b.perSlot(s.lengthMask(enc, lens), 0)
	pre := ar.precompute(s, enc)
	if pre != nil {
		pre = b.perSlot(pre, 0)
	}
	enc = b.perSlot(enc, 0)
	state.h = b.perSlot(state.h, 1)
	if state.c != nil {
		state.c = b.perSlot(state.c, 1)
	}

	search := b.search(ar, maxLen, state, stepInputs{enc: enc, mask: mask, pre: pre})
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
	negInf  *builder.Value // float32 scalar
	zeroI   *builder.Value // int64 scalar 0
	flat    *builder.Value // [-1], a shape
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
		v:       c.scalarInt(int64(s.cfg.TgtVocab)),
		bk:      ops.Concat(0, b1, k1),
		rowBase: ops.Unsqueeze(ops.Mul(ops.Range(zero, batch, one), k), c.ints(1)),
		slotRow: ops.Div(slots, k),
		negInf:  c.scalarFloat(float32(math.Inf(-1))),
		zeroI:   zero,
		flat:    c.ints(-1),
	}
}

// perSlot repeats x's rows (along axis) for each of their K slots: row b
// becomes slots b*K .. b*K+K-1.
func (b *beamGraph) perSlot(x *builder.Value, axis int64) *builder.Value {
	return ops.Gather(x, b.slotRow, axis)
}

// beamState is what the search loop carries from step to step.
type beamState struct {
	// ids [batch*K]: the next input of each slot; state: each slot's state.
	ids   *builder.Value
	state rnnState
	// live: float32 [batch, K] scores (-Inf: no hypothesis), int64 [batch,
	// K] parent slots (at the step that made them) and last tokens.
	score, parent, token *builder.Value
	// finished entries, [batch, 2K-1]: float32 score (-Inf: empty), int64
	// step (1-based, = length) and the slot that chose EOS at that step;
	// count [batch] of them; done [batch].
	finScore, finStep, finSlot, count, done *builder.Value
}

func (st beamState) values() []*builder.Value {
	vs := []*builder.Value{st.ids, st.state.h}
	if st.state.c != nil {
		vs = append(vs, st.state.c)
	}
	return append(vs, st.score, st.parent, st.token, st.finScore, st.finStep, st.finSlot, st.count, st.done)
}

func beamStateOf(vs []*builder.Value, hasCell bool) beamState {
	st := beamState{ids: vs[0], state: rnnState{h: vs[1]}}
	vs = vs[2:]
	if hasCell {
		st.state.c, vs = vs[0], vs[1:]
	}
	st.score, st.parent, st.token = vs[0], vs[1], vs[2]
	st.finScore, st.finStep, st.finSlot, st.count, st.done = vs[3], vs[4], vs[5], vs[6], vs[7]
	return st
}

// searchResult is the search loop's final state and its per-step records,
// each stacked over the steps run: the token and parent slot of each new
// live slot (int64 [steps, batch*K]) and each slot's attention (float32
// [steps, batch*K, src_len]).
type searchResult struct {
	final                  beamState
	tokens, parents, attns *builder.Value
}

// search builds the loop over the decoder steps.
func (b *beamGraph) search(ar Architecture, maxLen *builder.Value, state rnnState, in stepInputs) searchResult {
	s, c := b.s, b.s.c
	f1 := ops.Sub(ops.Mul(b.k1, c.ints(2)), c.ints(1)) // [2K-1]
	bf := ops.Concat(0, ops.Slice(b.bk, c.ints(0), c.ints(1), nil, nil), f1)
	kRange := ops.Range(b.zeroI, b.k, c.scalarInt(1))
	start := beamState{
		ids:   ops.Reshape(ops.Expand(c.scalarInt(b.sp.SOS), b.bk), b.flat, ops.ReshapeOpts{}),
		state: state,
		// Only hypothesis 0 exists before the first step.
		score:    ops.Expand(ops.Where(ops.Equal(kRange, b.zeroI), c.scalarFloat(0), b.negInf), b.bk),
		parent:   ops.Expand(b.zeroI, b.bk),
		token:    ops.Expand(b.zeroI, b.bk),
		finScore: ops.Expand(b.negInf, bf),
		finStep:  ops.Expand(b.zeroI, bf),
		finSlot:  ops.Expand(b.zeroI, bf),
		// count and done are [batch]: column 0 of [batch, K] expansions.
		count: ops.Gather(ops.Expand(b.zeroI, b.bk), b.zeroI, 1),
		done:  ops.Gather(ops.Expand(c.scalarBool(false), b.bk), b.zeroI, 1),
	}
	hasCell := state.c != nil
	final, scans := ops.Loop(s.g, maxLen, c.scalarBool(true), start.values(),
		func(_ *builder.Graph, iter, _ *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			st := beamStateOf(carried, hasCell)
			in.ids, in.state = st.ids, st.state
			out := ar.step(s, in)
			next, parents := b.step(st, out.logProbs, ops.Add(iter, c.scalarInt(1)), f1)
			next.state = rnnState{h: ops.Gather(out.state.h, parents, 1)}
			if hasCell {
				next.state.c = ops.Gather(out.state.c, parents, 1)
			}
			running := ops.ReduceMax(ops.Cast(ops.Not(next.done), builder.Int64), ops.ReduceOpts{NoKeepDims: true})
			return ops.Cast(running, builder.Bool), next.values(), []*builder.Value{next.ids, parents, out.attn}
		}, ops.LoopOpts{})
	res := searchResult{final: beamStateOf(final, hasCell)}
	if len(scans) == 3 {
		res.tokens, res.parents, res.attns = scans[0], scans[1], scans[2]
	}
	return res
}

// step builds one step's selection from the slots' log_probs [batch*K,
// Vt]; stepNo is the 1-based step (int64 scalar) and f1 [2K-1]. It returns
// the next state but the recurrent one (next.ids holds the new live slots'
// tokens) and the new live slots' parent slots, [batch*K].
func (b *beamGraph) step(st beamState, logProbs, stepNo, f1 *builder.Value) (next beamState, parents *builder.Value) {
	c := b.s.c
	axis1 := c.ints(1)
	r := ops.ReshapeOpts{}
	// Candidates score_i + log_probs_i[v], flattened as i*Vt + v; the
	// row's 2K best (K*Vt when fewer) in the spec's order.
	vt := ops.Unsqueeze(b.v, c.ints(0))
	lp := ops.Reshape(logProbs, ops.Concat(0, b.bk, vt), r)                  // [batch, K, Vt]
	cand := ops.Add(ops.Unsqueeze(st.score, c.ints(2)), lp)                  // [batch, K, Vt]
	cand = ops.Reshape(cand, ops.Concat(0, c.ints(0), ops.Mul(b.k1, vt)), r) // [batch, K*Vt]
	nCand := ops.Min(ops.Mul(b.k1, c.ints(2)), ops.Mul(b.k1, vt))            // [C]
	vals, idx := ops.TopK(cand, nCand, ops.TopKOpts{Axis: ops.Int(1)})       // [batch, C]
	hyp := ops.Div(idx, b.v)
	tok := ops.Sub(idx, ops.Mul(hyp, b.v))
	rank := ops.Range(b.zeroI, ops.Squeeze(nCand, c.ints(0)), c.scalarInt(1))

	// -Inf marks the candidates of missing hypotheses: log_probs are
	// finite. EOS at rank < K finishes (in a row still running); the
	// first K others live on.
	valid := ops.Greater(vals, b.negInf)
	eos := ops.Equal(tok, c.scalarInt(b.sp.EOS))
	running := ops.Unsqueeze(ops.Not(st.done), axis1) // [batch, 1]
	fin := ops.And(ops.And(valid, eos), ops.And(ops.Less(rank, b.k), running))
	other := ops.And(valid, ops.Not(eos))
	otherRank := ops.CumSum(ops.Cast(other, builder.Int64), c.scalarInt(1), ops.CumSumOpts{Exclusive: true})
	keep := ops.And(other, ops.Less(otherRank, b.k))

	// The new live hypotheses: the kept candidates in rank order, found by
	// a TopK over C - rank (0 for the others).
	key := ops.Where(keep, ops.Cast(ops.Sub(nCand, rank), builder.Float), c.scalarFloat(0))
	selKey, sel := ops.TopK(key, b.k1, ops.TopKOpts{Axis: ops.Int(1)}) // [batch, K]
	selValid := ops.Greater(selKey, c.scalarFloat(0))
	next.score = ops.Where(selValid, ops.GatherElements(vals, sel, 1), b.negInf)
	next.parent = ops.Add(ops.GatherElements(hyp, sel, 1), b.rowBase)
	next.token = ops.GatherElements(tok, sel, 1)

	// Finished entries go to the row's list in rank order, from position
	// count on: position f takes the candidate whose place is f.
	finI := ops.Cast(fin, builder.Int64)
	place := ops.Add(ops.CumSum(finI, c.scalarInt(1), ops.CumSumOpts{Exclusive: true}), ops.Unsqueeze(st.count, axis1))
	fRange := ops.Unsqueeze(ops.Range(b.zeroI, ops.Squeeze(f1, c.ints(0)), c.scalarInt(1)), axis1) // [2K-1, 1]
	match := ops.Cast(ops.And(ops.Unsqueeze(fin, axis1), ops.Equal(ops.Unsqueeze(place, axis1), fRange)), builder.Float)
	hit := ops.Greater(ops.ReduceMax(match, ops.ReduceOpts{Axes: []int64{2}, NoKeepDims: true}), c.scalarFloat(0)) // [batch, 2K-1]
	which := ops.ArgMax(match, 2, ops.ArgOpts{NoKeepDims: true})
	next.finScore = ops.Where(hit, ops.GatherElements(vals, which, 1), st.finScore)
	next.finStep = ops.Where(hit, stepNo, st.finStep)
	next.finSlot = ops.Where(hit, ops.Add(ops.GatherElements(hyp, which, 1), b.rowBase), st.finSlot)
	next.count = ops.Add(st.count, ops.ReduceSum(finI, axis1, ops.ReduceSumOpts{NoKeepDims: true}))

	anyLive := ops.ReduceMax(ops.Cast(selValid, builder.Int64), ops.ReduceOpts{Axes: []int64{1}, NoKeepDims: true})
	stop := ops.Or(ops.GreaterOrEqual(next.count, b.k), ops.Equal(anyLive, b.zeroI))
	next.done = ops.Or(st.done, stop)
	next.ids = ops.Reshape(next.token, b.flat, r)
	return next, ops.Reshape(next.parent, b.flat, r)
}

// beamResults are the K result hypotheses of each row, in the final order:
// [batch, K] each, and flattened to [batch*K], the slot at each one's last
// step and its last token.
type beamResults struct {
	lengths, scores, normalized *builder.Value
	lastSlot, lastToken         *builder.Value
}

// results builds the end rules: a row with fewer than K finished adds its
// live hypotheses after them; the normalized score; the final order.
func (b *beamGraph) results(sr searchResult, alpha *builder.Value) beamResults {
	c := b.s.c
	st := sr.final
	steps := ops.Shape(sr.tokens, ops.ShapeOpts{End: ops.Int(1)}) // [steps run]
	shortRow := ops.Unsqueeze(ops.Less(st.count, b.k), c.ints(1))
	valid := ops.Concat(1, ops.Greater(st.finScore, b.negInf), ops.And(shortRow, ops.Greater(st.score, b.negInf)))
	score := ops.Concat(1, st.finScore, st.score)
	length := ops.Concat(1, st.finStep, ops.Expand(ops.Squeeze(steps, c.ints(0)), b.bk))
	slot := ops.Concat(1, st.finSlot, st.parent)
	last := ops.Concat(1, ops.Expand(c.scalarInt(b.sp.EOS), ops.Shape(st.finSlot, ops.ShapeOpts{})), st.token)

	// float32(score / length^alpha), computed in float64.
	norm := ops.Div(ops.Cast(score, builder.Double), ops.Pow(ops.Cast(length, builder.Double), alpha))
	norm = ops.Where(valid, ops.Cast(norm, builder.Float), b.negInf)
	sorted, order := ops.TopK(norm, b.k1, ops.TopKOpts{Axis: ops.Int(1)}) // [batch, K]
	present := ops.Greater(sorted, b.negInf)
	r := ops.ReshapeOpts{}
	return beamResults{
		lengths:    ops.Where(present, ops.GatherElements(length, order, 1), b.zeroI),
		scores:     ops.Where(present, ops.GatherElements(score, order, 1), b.negInf),
		normalized: sorted,
		lastSlot:   ops.Reshape(ops.GatherElements(slot, order, 1), b.flat, r),
		lastToken:  ops.Reshape(ops.GatherElements(last, order, 1), b.flat, r),
	}
}

// backtrack reads the result hypotheses' tokens ([batch, K, steps]) and
// the best one's attention ([batch, steps, src_len]) back from the search's
// per-step records: a Loop from the last step to the first follows each
// hypothesis' slots through the parent links.
func (b *beamGraph) backtrack(sr searchResult, res beamResults) (tokens, attn *builder.Value) {
	s, c := b.s, b.s.c
	r := ops.ReshapeOpts{}
	steps := ops.Squeeze(ops.Shape(sr.tokens, ops.ShapeOpts{End: ops.Int(1)}), c.ints(0))
	lengths := ops.Reshape(res.lengths, b.flat, r)
	pad := c.scalarInt(b.sp.PAD)
	_, scans := ops.Loop(s.g, steps, nil, []*builder.Value{res.lastSlot},
		func(_ *builder.Graph, iter, _ *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			// At step u (0-based) a hypothesis of length n has its
			// last token when u = n-1; before, its token at u is the one
			// that made its slot at step u+1 (carried), from the parent
			// slot that ran step u.
			u := ops.Sub(ops.Sub(steps, c.scalarInt(1)), iter)
			after := carried[0]
			atEnd := ops.Equal(lengths, ops.Add(u, c.scalarInt(1)))
			inside := ops.Less(u, lengths)
			tok := ops.Gather(ops.Gather(sr.tokens, u, 0), after, 0)
			tok = ops.Where(atEnd, res.lastToken, ops.Where(inside, tok, pad))
			slot := ops.Where(atEnd, res.lastSlot, ops.Gather(ops.Gather(sr.parents, u, 0), after, 0))
			// The best hypothesis is each row's first.
			bestSlot := ops.Gather(ops.Reshape(slot, b.bk, r), b.zeroI, 1)
			bestInside := ops.Gather(ops.Reshape(inside, b.bk, r), b.zeroI, 1)
			a := ops.Gather(ops.Gather(sr.attns, u, 0), bestSlot, 0) // [batch, src_len]
			a = ops.Where(ops.Unsqueeze(bestInside, c.ints(1)), a, c.scalarFloat(0))
			return nil, []*builder.Value{slot}, []*builder.Value{tok, a}
		}, ops.LoopOpts{})
	if len(scans) != 2 {
		return nil, nil
	}
	// The scans run from the last step to the first: reverse them.
	reverse := func(x *builder.Value) *builder.Value {
		return ops.Slice(x, c.ints(-1), c.ints(math.MinInt64), c.ints(0), c.ints(-1))
	}
	tokens = ops.Transpose(reverse(scans[0]), []int64{1, 0}) // [batch*K, steps]
	tokens = ops.Reshape(tokens, ops.Concat(0, b.bk, c.ints(-1)), r)
	return tokens, ops.Transpose(reverse(scans[1]), []int64{1, 0, 2})
}

// setSpecialMetadata records the special tokens a decoding graph uses.
func setSpecialMetadata(m *builder.Model, sp Special) {
	m.Metadata["attnx.sos"] = fmt.Sprint(sp.SOS)
	m.Metadata["attnx.eos"] = fmt.Sprint(sp.EOS)
	m.Metadata["attnx.pad"] = fmt.Sprint(sp.PAD)
}
