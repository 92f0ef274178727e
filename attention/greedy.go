package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// Names of greedy.onnx's inputs and outputs beyond the encoder's.
const (
	InMaxLen      = "max_len"
	OutOutputIDs  = "output_ids"
	OutAttentions = "attention"
	// OutTokenLogProbs is greedy.onnx's float32 [batch, out_len]: each
	// chosen token's log-prob (natural log, after the rules' bans), 0
	// after the row's EOS.
	OutTokenLogProbs = "token_log_probs"
	// DimOutLen is the symbolic number of decoded steps.
	DimOutLen = "out_len"
)

// Greedy builds greedy.onnx: the encoder and the whole greedy decoding of
// docs/models.md in one graph, with the decoder step inside an ONNX
// Loop. Inputs: source_ids int64 [batch, src_len], source_lengths int64
// [batch] and max_len, an int64 scalar. Outputs: output_ids int64 [batch,
// out_len], attention float32 [batch, out_len, src_len] and
// token_log_probs float32 [batch, out_len] (each token's log-prob, whose
// sum is the row's score); a row that has emitted EOS is padded with
// sp.PAD, its attention rows and log-probs with zeros, and the loop ends
// when every row has emitted EOS or after max_len steps.
// opt chooses the weights' precision.
//
// What does not change between steps is computed once, before the loop:
// the length mask and what the architecture precomputes (the Bahdanau
// decoders' projection of encoder_outputs). The builder places a node in
// the outermost graph that holds all its inputs, so any other
// loop-invariant work is hoisted too.
func Greedy(wt *Weights, sp Special, opt BuildOptions) (*builder.Model, error) {
	if err := validate(wt, opt); err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	if err := sp.Check(wt.Config); err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	if err := noCopy(wt.Config); err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	if err := opt.Rules.Check(wt.Config); err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	ar, _ := Lookup(wt.Config.Arch) // Validate checked the name
	s := newModelGraph("attnx_greedy_"+string(wt.Config.Arch), wt, opt)
	g, c := s.g, s.c
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	maxLen := g.Input(InMaxLen, builder.Int64, builder.Scalar())

	enc, states := s.encoder(ar, ids, lens)
	mask := s.lengthMask(enc, lens)
	pre := ar.precompute(s, enc)
	batchShape := ops.Shape(ids, ops.ShapeOpts{End: ops.Int(1)}) // [1]: batch
	start := ops.Expand(c.scalarInt(sp.SOS), batchShape)
	notDone := ops.Expand(c.scalarBool(false), batchShape)
	eos, pad := c.scalarInt(sp.EOS), c.scalarInt(sp.PAD)
	zero := c.scalarFloat(0)
	axis1 := c.ints(1)

	// Carried: the next input ids, every recurrent state, and which rows
	// are done.
	batch := builder.Dims(DimBatch)
	specs := s.cfg.States()
	carried := []*builder.Value{start}
	shapes := []builder.Shape{batch}
	for i, st := range specs {
		carried, shapes = append(carried, states[i]), append(shapes, builder.Dims(st.Rows, DimBatch, st.Width))
	}
	carried, shapes = append(carried, notDone), append(shapes, batch)
	_, scans := ops.Loop(g, maxLen, c.scalarBool(true), carried,
		func(b *builder.Graph, iter, _ *builder.Value, in []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			st := decState(in[1 : 1+len(specs)])
			done := in[len(in)-1]
			out := ar.step(s, stepInputs{ids: in[0], states: st, enc: enc, mask: mask, pre: pre})
			out.logProbs = s.applyRules(opt.Rules, out.logProbs, iter, sp.EOS, false)
			next := ops.ArgMax(out.logProbs, -1, ops.ArgOpts{NoKeepDims: true}) // [batch]
			token := ops.Where(done, pad, next)
			attnOut := ops.Where(ops.Unsqueeze(done, axis1), zero, out.attn)
			chosen := ops.Squeeze(ops.GatherElements(out.logProbs, ops.Unsqueeze(next, axis1), 1), axis1) // [batch]
			lpOut := ops.Where(done, zero, chosen)
			nowDone := ops.Or(done, ops.Equal(next, eos))
			// Go on while any row is still running.
			running := ops.ReduceMax(ops.Cast(ops.Not(nowDone), builder.Int64), ops.ReduceOpts{NoKeepDims: true})
			carriedOut := append([]*builder.Value{next}, out.states...)
			return ops.Cast(running, builder.Bool), append(carriedOut, nowDone), []*builder.Value{token, attnOut, lpOut}
		}, ops.LoopOpts{CarriedShapes: shapes})
	if len(scans) == 3 {
		g.OutputAs(OutOutputIDs, ops.Transpose(scans[0], []int64{1, 0}), builder.Dims(DimBatch, DimOutLen))
		g.OutputAs(OutAttentions, ops.Transpose(scans[1], []int64{1, 0, 2}), builder.Dims(DimBatch, DimOutLen, DimSrcLen))
		g.OutputAs(OutTokenLogProbs, ops.Transpose(scans[2], []int64{1, 0}), builder.Dims(DimBatch, DimOutLen))
	}
	m, err := s.finish(fmt.Sprintf("attnx %s greedy decoding in one graph (%s)", s.cfg.Arch, s.cfg))
	if err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	setSpecialMetadata(m, sp)
	return m, nil
}

// noCopy refuses a copy-attention model for the whole-search graphs: its
// vocabulary grows per sentence (decode.CopyMap), which attnx decodes in
// Go over decoder.onnx.
func noCopy(c Config) error {
	if c.HasCopy() {
		return fmt.Errorf("%s has copy attention: its search runs in Go over each sentence's dynamic vocabulary (attnx translate's steps engine), not as one graph", c.Arch)
	}
	return nil
}
