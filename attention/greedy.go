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
// shared/spec/models.md in one graph, with the decoder step inside an ONNX
// Loop. Inputs: source_ids int64 [batch, src_len], source_lengths int64
// [batch] and max_len, an int64 scalar. Outputs: output_ids int64 [batch,
// out_len] and attention float32 [batch, out_len, src_len]; a row that has
// emitted EOS is padded with sp.PAD and its attention rows with zeros, and
// the loop ends when every row has emitted EOS or after max_len steps.
//
// What does not change between steps is computed once, before the loop:
// the length mask and, for Bahdanau, encoder_outputs W_e^T. (The builder
// places a node in the outermost graph that holds all its inputs, so any
// other loop-invariant work is hoisted too.)
func Greedy(wt *Weights, sp Special) (*builder.Model, error) {
	cfg := wt.Config
	if err := sp.Check(cfg); err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	g := builder.New("attnx_greedy_" + string(cfg.Arch))
	w, c := newWeights(g), consts{g}
	H, L := cfg.Hidden, cfg.Layers
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	maxLen := g.Input(InMaxLen, builder.Int64, builder.Scalar())

	enc, hidden, cell := encoderBody(w, c, wt, ids, lens)
	mask := lengthMask(c, enc, lens)
	var keys *builder.Value
	if cfg.Arch == Bahdanau {
		keys = bahdanauKeys(w, wt, enc)
	}
	batchShape := ops.Shape(ids, ops.ShapeOpts{End: ops.Int(1)}) // [1]: batch
	start := ops.Expand(c.scalarInt(sp.SOS), batchShape)
	notDone := ops.Expand(g.Init("", builder.BoolTensor(nil, []bool{false})), batchShape)
	eos, pad := c.scalarInt(sp.EOS), c.scalarInt(sp.PAD)
	zero := c.scalarFloat(0)
	axis1 := c.ints(1)

	batch := builder.Dims(DimBatch)
	state := builder.Dims(L, DimBatch, H)
	_, scans := ops.Loop(g, maxLen, g.Init("", builder.BoolTensor(nil, []bool{true})),
		[]*builder.Value{start, hidden, cell, notDone},
		func(b *builder.Graph, _, _ *builder.Value, carried []*builder.Value) (*builder.Value, []*builder.Value, []*builder.Value) {
			in, h, cl, done := carried[0], carried[1], carried[2], carried[3]
			logProbs, nh, nc, attn := decoderStep(w, c, wt, in, h, cl, enc, keys, mask)
			next := ops.ArgMax(logProbs, -1, ops.ArgOpts{NoKeepDims: true}) // [batch]
			token := ops.Where(done, pad, next)
			attnOut := ops.Where(ops.Unsqueeze(done, axis1), zero, attn)
			nowDone := ops.Or(done, ops.Equal(next, eos))
			// Go on while any row is still running.
			running := ops.ReduceMax(ops.Cast(ops.Not(nowDone), builder.Int64), ops.ReduceOpts{NoKeepDims: true})
			return ops.Cast(running, builder.Bool), []*builder.Value{next, nh, nc, nowDone}, []*builder.Value{token, attnOut}
		}, ops.LoopOpts{CarriedShapes: []builder.Shape{batch, state, state, batch}})
	if len(scans) == 2 {
		g.OutputAs(OutOutputIDs, ops.Transpose(scans[0], []int64{1, 0}), builder.Dims(DimBatch, DimOutLen))
		g.OutputAs(OutAttentions, ops.Transpose(scans[1], []int64{1, 0, 2}), builder.Dims(DimBatch, DimOutLen, DimSrcLen))
	}
	m, err := newModel(g, cfg, "attnx "+string(cfg.Arch)+" greedy decoding in one graph ("+cfg.String()+")")
	if err != nil {
		return nil, fmt.Errorf("greedy: %w", err)
	}
	m.Metadata["attnx.sos"] = fmt.Sprint(sp.SOS)
	m.Metadata["attnx.eos"] = fmt.Sprint(sp.EOS)
	m.Metadata["attnx.pad"] = fmt.Sprint(sp.PAD)
	return m, nil
}
