package attention

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// Names of the graph inputs and outputs: the contract of shared/spec/models.md.
const (
	InSourceIDs      = "source_ids"
	InSourceLengths  = "source_lengths"
	InInputIDs       = "input_ids"
	InHidden         = "hidden"
	InCell           = "cell"
	InEncoderOutputs = "encoder_outputs"
	OutEncoder       = "encoder_outputs"
	OutHidden        = "hidden"
	OutCell          = "cell"
	OutLogProbs      = "log_probs"
	OutNextHidden    = "next_hidden"
	OutNextCell      = "next_cell"
	OutAttention     = "attention"
)

// Symbolic dimension names used in every graph.
const (
	DimBatch  = "batch"
	DimSrcLen = "src_len"
)

// consts adds small constants as initializers (not Constant nodes), named
// deterministically by the builder.
type consts struct{ g *builder.Graph }

func (c consts) ints(vals ...int64) *builder.Value {
	return c.g.Init("", builder.Int64Tensor([]int64{int64(len(vals))}, vals))
}

func (c consts) scalarInt(v int64) *builder.Value { return c.g.Init("", builder.ScalarInt64(v)) }

func (c consts) scalarFloat(v float32) *builder.Value { return c.g.Init("", builder.ScalarFloat(v)) }

// weights adds the model's parameters to a graph as initializers with
// readable names, each at most once.
type weights struct {
	g    *builder.Graph
	seen map[*builder.Tensor]*builder.Value
}

func newWeights(g *builder.Graph) *weights {
	return &weights{g: g, seen: map[*builder.Tensor]*builder.Value{}}
}

func (w *weights) add(name string, t *builder.Tensor) *builder.Value {
	if v, ok := w.seen[t]; ok {
		return v
	}
	// Copy the header so that the builder can name it without changing
	// the caller's tensor; the data is shared, not copied.
	c := *t
	v := w.g.Init(name, &c)
	w.seen[t] = v
	return v
}

// lstmStack runs the L stacked LSTM layers over x ([seq, batch, in]) and
// returns the top layer's Y ([seq, batch, H]) and the final states, each
// [L, batch, H]. h0 and c0 are [L, batch, H] or nil (zeros); seqLens is
// int32 [batch] or nil.
func lstmStack(w *weights, c consts, prefix string, layers []LSTMLayer, x, h0, c0, seqLens *builder.Value, needY bool) (y, hN, cN *builder.Value) {
	L := len(layers)
	var hs, cs []*builder.Value
	var h0s, c0s []*builder.Value
	if h0 != nil && L > 1 {
		h0s = ops.Split(h0, nil, 0, L)
		c0s = ops.Split(c0, nil, 0, L)
	}
	axis1 := c.ints(1)
	for k, layer := range layers {
		opts := ops.LSTMOpts{RNNOpts: ops.RNNOpts{
			B:            w.add(fmt.Sprintf("%s.lstm.l%d.B", prefix, k), layer.B),
			SequenceLens: seqLens,
		}}
		switch {
		case h0 != nil && L > 1:
			opts.InitialH, opts.InitialC = h0s[k], c0s[k]
		case h0 != nil:
			opts.InitialH, opts.InitialC = h0, c0
		}
		top := k == L-1
		opts.OmitY = top && !needY
		yk, yh, yc := ops.LSTM(x,
			w.add(fmt.Sprintf("%s.lstm.l%d.W", prefix, k), layer.W),
			w.add(fmt.Sprintf("%s.lstm.l%d.R", prefix, k), layer.R), opts)
		hs, cs = append(hs, yh), append(cs, yc)
		if !opts.OmitY {
			// Y is [seq, 1, batch, H]: drop the direction axis.
			x = ops.Squeeze(yk, axis1)
		}
	}
	if L == 1 {
		return x, hs[0], cs[0]
	}
	return x, ops.Concat(0, hs...), ops.Concat(0, cs...)
}

// lengthMask returns a bool [batch, src_len] tensor that is true where the
// position is inside the row's length. seq is any [batch, src_len, ...]
// tensor; lengths is int64 [batch].
func lengthMask(c consts, seq, lengths *builder.Value) *builder.Value {
	srcLen := ops.Shape(seq, ops.ShapeOpts{Start: 1, End: ops.Int(2)})
	srcLenScalar := ops.Squeeze(srcLen, c.ints(0))
	positions := ops.Range(c.scalarInt(0), srcLenScalar, c.scalarInt(1)) // [src_len]
	return ops.Less(positions, ops.Unsqueeze(lengths, c.ints(1)))        // [batch, src_len]
}

// encoderBody builds the encoder into g from the given inputs, returning
// encoder_outputs [batch, src_len, H], hidden and cell [L, batch, H].
func encoderBody(w *weights, c consts, wt *Weights, sourceIDs, sourceLengths *builder.Value) (enc, hidden, cell *builder.Value) {
	// Transpose the int64 ids, not the embedded floats: the LSTM wants
	// sequence-first input (ONNX Runtime rejects layout=1).
	ids := ops.Transpose(sourceIDs, []int64{1, 0})                              // [src_len, batch]
	x := ops.Gather(w.add("encoder.embedding.weight", wt.SrcEmbedding), ids, 0) // [src_len, batch, H]
	lens := ops.Cast(sourceLengths, builder.Int32)
	y, hidden, cell := lstmStack(w, c, "encoder", wt.Encoder, x, nil, nil, lens, true)
	y = ops.Transpose(y, []int64{1, 0, 2}) // [batch, src_len, H]
	// ONNX leaves Y past each length undefined: zero it explicitly.
	mask := ops.Unsqueeze(lengthMask(c, y, sourceLengths), c.ints(2))
	enc = ops.Where(mask, y, c.scalarFloat(0))
	return enc, hidden, cell
}

// decoderStep builds one decoder step into g. keys, when not nil, is the
// Bahdanau projection encoder_outputs W_e^T, computed once per source
// sentence by the caller; mask is the bool [batch, src_len] length mask.
func decoderStep(w *weights, c consts, wt *Weights, inputIDs, hidden, cell, enc, keys, mask *builder.Value) (logProbs, nextHidden, nextCell, attn *builder.Value) {
	cfg := wt.Config
	emb := ops.Gather(w.add("decoder.embedding.weight", wt.TgtEmbedding), inputIDs, 0) // [batch, H]
	axis0, axis1, axisLast := c.ints(0), c.ints(1), c.ints(-1)
	negInf := c.scalarFloat(float32(math.Inf(-1)))

	// attend turns raw scores [batch, src_len] into attention weights and
	// the context vector [batch, H].
	attend := func(score *builder.Value) (a, ctx *builder.Value) {
		a = ops.Softmax(ops.Where(mask, score, negInf), -1)
		ctx = ops.Squeeze(ops.MatMul(ops.Unsqueeze(a, axis1), enc), axis1)
		return a, ctx
	}
	classify := func(features *builder.Value) *builder.Value {
		logits := ops.Gemm(features, w.add("decoder.classifier.weight", wt.ClassifierW),
			w.add("decoder.classifier.bias", wt.ClassifierB), ops.GemmOpts{TransB: true})
		return ops.LogSoftmax(logits, -1)
	}
	vector := func(name string, t *builder.Tensor) *builder.Value {
		// w is [1, H]; as a 1-D [H] initializer, MatMul([.., H], [H]) gives
		// the dot product without a trailing axis to squeeze.
		return w.add(name, &builder.Tensor{DType: t.DType, Dims: []int64{int64(cfg.Hidden)}, Raw: t.Raw})
	}

	if cfg.Arch == Bahdanau {
		// q is the top layer's hidden state before this step.
		q := ops.Gather(hidden, c.scalarInt(int64(cfg.Layers-1)), 0) // [batch, H]
		qh := ops.Gemm(q, w.add("decoder.fc_hidden.weight", wt.FCHidden), nil, ops.GemmOpts{TransB: true})
		if keys == nil {
			keys = bahdanauKeys(w, wt, enc)
		}
		u := ops.Tanh(ops.Add(keys, ops.Unsqueeze(qh, axis1)))          // [batch, src_len, H]
		score := ops.MatMul(u, vector("decoder.weight", wt.AttnVector)) // [batch, src_len]
		a, ctx := attend(score)
		x := ops.Unsqueeze(ops.Concat(-1, emb, ctx), axis0) // [1, batch, 2H]
		_, nextHidden, nextCell = lstmStack(w, c, "decoder", wt.Decoder, x, hidden, cell, nil, false)
		out := ops.Gather(nextHidden, c.scalarInt(int64(cfg.Layers-1)), 0) // [batch, H]
		return classify(out), nextHidden, nextCell, a
	}

	x := ops.Unsqueeze(emb, axis0) // [1, batch, H]
	_, nextHidden, nextCell = lstmStack(w, c, "decoder", wt.Decoder, x, hidden, cell, nil, false)
	q := ops.Gather(nextHidden, c.scalarInt(int64(cfg.Layers-1)), 0) // [batch, H]: the top layer's output
	var score *builder.Value
	switch cfg.Arch {
	case LuongDot, LuongGeneral:
		k := q
		if cfg.Arch == LuongGeneral {
			// enc_s . (W_a q)
			k = ops.Gemm(q, w.add("decoder.attention.fc.weight", wt.AttnFC), nil, ops.GemmOpts{TransB: true})
		}
		score = ops.Squeeze(ops.MatMul(enc, ops.Unsqueeze(k, axisLast)), axisLast) // [batch, src_len]
	case LuongConcat:
		// tanh(W_a (q + enc_s)) . w
		sum := ops.Add(enc, ops.Unsqueeze(q, axis1))
		proj := ops.MatMul(sum, w.add("decoder.attention.fc.weight^T", transpose2D(wt.AttnFC)))
		score = ops.MatMul(ops.Tanh(proj), vector("decoder.attention.weight", wt.AttnVector))
	}
	a, ctx := attend(score)
	return classify(ops.Concat(-1, q, ctx)), nextHidden, nextCell, a
}

// bahdanauKeys returns encoder_outputs W_e^T, [batch, src_len, H]: the part
// of Bahdanau's score that does not change between decoder steps.
func bahdanauKeys(w *weights, wt *Weights, enc *builder.Value) *builder.Value {
	return ops.MatMul(enc, w.add("decoder.fc_encoder.weight^T", transpose2D(wt.FCEncoder)))
}

// transpose2D returns the transpose of a float32 matrix.
func transpose2D(t *builder.Tensor) *builder.Tensor {
	v, _ := t.Float32s()
	r, c := int(t.Dims[0]), int(t.Dims[1])
	out := make([]float32, len(v))
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			out[j*r+i] = v[i*c+j]
		}
	}
	return builder.FloatTensor([]int64{int64(c), int64(r)}, out)
}

// newModel wraps a graph as a model with attnx's metadata.
func newModel(g *builder.Graph, cfg Config, doc string) (*builder.Model, error) {
	m := builder.NewModel(g)
	m.Doc = doc
	m.Metadata["attnx.arch"] = string(cfg.Arch)
	m.Metadata["attnx.hidden_size"] = fmt.Sprint(cfg.Hidden)
	m.Metadata["attnx.num_layers"] = fmt.Sprint(cfg.Layers)
	m.Metadata["attnx.src_vocab_size"] = fmt.Sprint(cfg.SrcVocab)
	m.Metadata["attnx.tgt_vocab_size"] = fmt.Sprint(cfg.TgtVocab)
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// Encoder builds encoder.onnx: source_ids int64 [batch, src_len] and
// source_lengths int64 [batch] in; encoder_outputs [batch, src_len, H],
// hidden and cell [L, batch, H] out.
func Encoder(wt *Weights) (*builder.Model, error) {
	cfg := wt.Config
	g := builder.New("attnx_encoder")
	w, c := newWeights(g), consts{g}
	ids := g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	enc, hidden, cell := encoderBody(w, c, wt, ids, lens)
	g.Output(OutEncoder, enc)
	g.Output(OutHidden, hidden)
	g.Output(OutCell, cell)
	m, err := newModel(g, cfg, "attnx LSTM encoder ("+cfg.String()+")")
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return m, nil
}

// Decoder builds decoder.onnx, one greedy step: input_ids [batch], hidden and
// cell [L, batch, H], encoder_outputs [batch, src_len, H] and source_lengths
// [batch] in; log_probs [batch, Vt], next_hidden, next_cell [L, batch, H] and
// attention [batch, src_len] out.
func Decoder(wt *Weights) (*builder.Model, error) {
	cfg := wt.Config
	g := builder.New("attnx_decoder_" + string(cfg.Arch))
	w, c := newWeights(g), consts{g}
	H, L := cfg.Hidden, cfg.Layers
	ids := g.Input(InInputIDs, builder.Int64, builder.Dims(DimBatch))
	hidden := g.Input(InHidden, builder.Float, builder.Dims(L, DimBatch, H))
	cell := g.Input(InCell, builder.Float, builder.Dims(L, DimBatch, H))
	enc := g.Input(InEncoderOutputs, builder.Float, builder.Dims(DimBatch, DimSrcLen, H))
	lens := g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	mask := lengthMask(c, enc, lens)
	logProbs, nh, nc, attn := decoderStep(w, c, wt, ids, hidden, cell, enc, nil, mask)
	g.Output(OutLogProbs, logProbs)
	g.Output(OutNextHidden, nh)
	g.Output(OutNextCell, nc)
	g.Output(OutAttention, attn)
	m, err := newModel(g, cfg, "attnx "+string(cfg.Arch)+" decoder step ("+cfg.String()+")")
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	return m, nil
}
