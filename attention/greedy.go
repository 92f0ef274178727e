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
	// DimOutLen is the symbolic number of decoded steps.
	DimOutLen = "out_len"
)

// Greedy builds greedy.onnx: the encoder and the whole greedy decoding of
// docs/models.md in one graph, with the decoder step inside an ONNX
// Loop. Inputs: source_ids int64 [batch, src_len], source_lengths int64
// [batch] and max_len, an int64 scalar. Outputs: output_ids int64 [batch,
// out_len] and attention float32 [batch, out_len, src_len]; a row that has
// emitted EOS is padded with sp.PAD and its attention rows with zeros, and
// the loop ends when every row has emitted EOS or after max_len steps.
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
	ar, _ := Lookup(wt.Config.Arch) // Validate checked the name
	s := newModelGraph("attnx_greedy_"+string(wt.Config.Arch), wt, opt)
	g, c := s.g, s.c
	H, L := s.cfg.Hidden, s.cfg.Layers
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	maxLen := g.Input(InMaxLen, builder.Int64, builder.Scalar())

	enc, state := s.encoder(ids, lens)
	mask := s.lengthMask(enc, lens)
	pre := ar.precompute(s, enc)
	batchShape := ops.Shape(ids, ops.ShapeOpts{End: ops.Int(1)}) // [1]: batch
	start := ops.Expand(c.scalarInt(sp.SOS), batchShape)
	notDone := ops.Expand(c.scalarBool(false), batchShape)
	eos, pad := c.scalarInt(sp.EOS), c.scalarInt(sp.PAD)
	zero := c.scalarFloat(0)
	axis1 := c.ints(1)

	// Carried: the next input ids, h (and c for LSTM), and which rows are done.
	batch := builder.Dims(DimBatch)
	stateShape := builder.Dims(L, DimBatch, H)
	carried := []*builder.Value{start, state.h}
	shapes := []builder.Shape{batch, stateShape}
	if state.c != nil {
		carried, shapes = append(carried, state.c), append(shapes, stateShape)
	}
	carried, shapes = append(carried, notDone), append(shapes, batch)
	_, scans := ops.Loop(g, maxLen, c.scalarBool(true), carried,
		func(b *builder.Graph, _, _ *builder.Value, in []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			st := rnnState{h: in[1]}
			if state.c != nil {
				st.c = in[2]
			}
			done := in[len(in)-1]
			out := ar.step(s, stepInputs{ids: in[0], state: st, enc: enc, mask: mask, pre: pre})
			next := ops.ArgMax(out.logProbs, -1, ops.ArgOpts{NoKeepDims: true}) // [batch]
			token := ops.Where(done, pad, next)
			attnOut := ops.Where(ops.Unsqueeze(done, axis1), zero, out.attn)
			nowDone := ops.Or(done, ops.Equal(next, eos))
			// Go on while any row is still running.
			running := ops.ReduceMax(ops.Cast(ops.Not(nowDone), builder.Int64), ops.ReduceOpts{NoKeepDims: true})
			carriedOut := []*builder.Value{next, out.state.h}
			if out.state.c != nil {
				carriedOut = append(carriedOut, out.state.c)
			}
			return ops.Cast(running, builder.Bool), append(carriedOut, nowDone), []*builder.Value{token, attnOut}
		}, ops.LoopOpts{CarriedShapes: shapes})
	if len(scans) == 2 {
		g.OutputAs(OutOutputIDs, ops.Transpose(scans[0], []int64{1, 0}), builder.Dims(DimBatch, DimOutLen))
		g.OutputAs(OutAttentions, ops.Transpose(scans[1], []int64{1, 0, 2}), builder.Dims(DimBatch, DimOutLen, DimSrcLen))
	}
	m, err := s.finish(fmt.Sprintf("attnx %s greedy decoding in one graph (%s)", s.cfg.Arch, s.cfg))
	if err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	setSpecialMetadata(m, sp)
	return m, nil
}
