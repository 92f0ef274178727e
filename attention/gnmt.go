package attention

import (
	"bytes"
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// GNMT v2 (seq2seq/models/ of NVIDIA DeepLearningExamples'
// PyTorch/Translation/GNMT and of the MLPerf rnn_translator reference,
// whose model code is the same) with L layers of hidden size H on each
// side:
//
//	encoder: x = emb(src); layer 0 a bidirectional LSTM over the packed
//	         lengths, its outputs [fwd; bwd] (2H, zero past each length as
//	         pad_packed_sequence leaves them); layer 1 an LSTM of 2H
//	         inputs; layers 2 .. L-1 LSTMs with a residual connection,
//	         x = lstm(x) + x. The decoder does not start from the
//	         encoder's final state: its states start at zero.
//	step:    q = att_rnn(emb(y)), an LSTM layer;
//	         BahdanauAttention(normalize=True):
//	           s_j = tanh(linear_q(q) + linear_k(enc_j) + normalize_bias) .
//	                 (normalize_scalar * linear_att / ||linear_att||),
//	           -65504 past the length, a = softmax(s), c = sum_j a_j enc_j;
//	         x = lstm_1([q; c]); for k = 2 .. L-1 x = lstm_k([x; c]) + x;
//	         log_probs = log_softmax(classifier(x)).
//
// The graphs keep docs/models.md's contract: the encoder's hidden and
// cell outputs are the decoder's zero initial states [L, batch, H], and
// the decoder's state row 0 is att_rnn's, row k the k-th of rnn_layers'
// (the reference's flattened hidden interleaves them: h0, c0, h1, c1, ...).

// GNMTWeights are a GNMT v2 model's parameters, its LSTM layers in ONNX's
// layout (see RNNLayer), the others as the state_dict holds them.
type GNMTWeights struct {
	// Hidden and Layers are model_config's hidden_size and num_layers;
	// Vocab the rows of the embeddings and of the classifier.
	Hidden, Layers, Vocab int
	// SrcEmbedding and TgtEmbedding are the embedders' weights [Vocab, H]:
	// one tensor when the checkpoint shares them (share_embedding).
	SrcEmbedding, TgtEmbedding *builder.Tensor
	// Encoder holds the encoder's L layers: the first bidirectional (H
	// inputs), the second taking 2H, the others H.
	Encoder []RNNLayer
	// AttRNN is the decoder's first layer (decoder.att_rnn.rnn), Decoder
	// its other L-1 layers (decoder.rnn_layers), each taking 2H.
	AttRNN  RNNLayer
	Decoder []RNNLayer
	// Attention's parameters: LinearQ and LinearK [H, H] (Linear weights,
	// no bias), LinearAtt and NormalizeBias [H], NormalizeScalar [1].
	LinearQ, LinearK, LinearAtt, NormalizeBias, NormalizeScalar *builder.Tensor
	// ClassifierWeight [Vocab, H] and ClassifierBias [Vocab].
	ClassifierWeight, ClassifierBias *builder.Tensor
}

// GNMT's state_dict keys.
const (
	gnmtSrcEmb = "encoder.embedder.weight"
	gnmtTgtEmb = "decoder.embedder.weight"
	gnmtAttn   = "decoder.att_rnn.attn."
	gnmtClass  = "decoder.classifier.classifier."
)

// GNMTFromStateDict reads a GNMT v2 model of the given hidden size and
// layers (model_config's) from its state_dict, checking every key's
// shape; a key missing, misshapen or not float32 is an error naming it.
func GNMTFromStateDict(tensors map[string]*builder.Tensor, hidden, layers int) (*GNMTWeights, error) {
	if hidden < 1 || layers < 2 {
		return nil, fmt.Errorf("GNMT: hidden_size %d and num_layers %d, want hidden_size >= 1 and num_layers >= 2", hidden, layers)
	}
	H := int64(hidden)
	emb := tensors[gnmtSrcEmb]
	if emb == nil || len(emb.Dims) != 2 || emb.Dims[1] != H || emb.Dims[0] < 4 {
		return nil, fmt.Errorf("GNMT state_dict key %s: %v, want float32 [vocab, %d] with vocab >= 4", gnmtSrcEmb, dimsOf(emb), H)
	}
	V := emb.Dims[0]
	get := func(k string, dims ...int64) (*builder.Tensor, error) {
		t := tensors[k]
		if err := checkFloat("GNMT state_dict key "+k, t, dims); err != nil {
			return nil, err
		}
		return t, nil
	}
	w := &GNMTWeights{Hidden: hidden, Layers: layers, Vocab: int(V)}
	var err error
	if w.SrcEmbedding, err = get(gnmtSrcEmb, V, H); err != nil {
		return nil, err
	}
	if w.TgtEmbedding, err = get(gnmtTgtEmb, V, H); err != nil {
		return nil, err
	}
	if bytes.Equal(w.SrcEmbedding.Raw, w.TgtEmbedding.Raw) {
		// share_embedding: torch.save writes the one tensor under both
		// keys; the graphs hold it once.
		w.TgtEmbedding = w.SrcEmbedding
	}
	layer := func(prefix, suffix string, in int64) (RNNLayer, error) {
		var ts [4]*builder.Tensor
		for i, k := range []string{"weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0"} {
			dims := []int64{4 * H, in}
			switch i {
			case 1:
				dims = []int64{4 * H, H}
			case 2, 3:
				dims = []int64{4 * H}
			}
			if ts[i], err = get(prefix+k+suffix, dims...); err != nil {
				return RNNLayer{}, err
			}
		}
		l, err := ConvertRNNLayer(LSTM, hidden, ts[0], ts[1], ts[2], ts[3])
		if err != nil {
			return RNNLayer{}, fmt.Errorf("GNMT %s: %w", prefix, err)
		}
		return l, nil
	}
	for k := 0; k < layers; k++ {
		prefix := fmt.Sprintf("encoder.rnn_layers.%d.", k)
		in := H
		if k == 1 {
			in = 2 * H
		}
		l, err := layer(prefix, "", in)
		if err != nil {
			return nil, err
		}
		if k == 0 {
			r, err := layer(prefix, "_reverse", H)
			if err != nil {
				return nil, err
			}
			l = joinDirections(l, r)
		}
		w.Encoder = append(w.Encoder, l)
	}
	if w.AttRNN, err = layer("decoder.att_rnn.rnn.", "", H); err != nil {
		return nil, err
	}
	for k := 0; k < layers-1; k++ {
		l, err := layer(fmt.Sprintf("decoder.rnn_layers.%d.", k), "", 2*H)
		if err != nil {
			return nil, err
		}
		w.Decoder = append(w.Decoder, l)
	}
	for _, p := range []struct {
		to   **builder.Tensor
		key  string
		dims []int64
	}{
		{&w.LinearQ, gnmtAttn + "linear_q.weight", []int64{H, H}}, {&w.LinearK, gnmtAttn + "linear_k.weight", []int64{H, H}},
		{&w.LinearAtt, gnmtAttn + "linear_att", []int64{H}}, {&w.NormalizeBias, gnmtAttn + "normalize_bias", []int64{H}},
		{&w.NormalizeScalar, gnmtAttn + "normalize_scalar", []int64{1}},
		{&w.ClassifierWeight, gnmtClass + "weight", []int64{V, H}}, {&w.ClassifierBias, gnmtClass + "bias", []int64{V}},
	} {
		if *p.to, err = get(p.key, p.dims...); err != nil {
			if tensors[p.key] == nil && p.key == gnmtAttn+"normalize_scalar" {
				return nil, fmt.Errorf("%w: GNMT's attention is BahdanauAttention(normalize=True)", err)
			}
			return nil, err
		}
	}
	return w, nil
}

// dimsOf is t's shape for messages ("missing" when t is nil).
func dimsOf(t *builder.Tensor) string {
	if t == nil {
		return "missing"
	}
	return fmt.Sprintf("%v %v", t.DType, t.Dims)
}

// gnmtGraph builds one graph of a GNMT model.
type gnmtGraph struct {
	*modelGraph
	gw *GNMTWeights
}

func newGNMTGraph(name string, w *GNMTWeights) *gnmtGraph {
	g := builder.New(name)
	return &gnmtGraph{modelGraph: &modelGraph{g: g, w: &params{g: g, seen: map[string]*builder.Value{}}, c: consts{g}}, gw: w}
}

// embed looks ids up in the table of side ("encoder" or "decoder"),
// named once when the two are shared.
func (s *gnmtGraph) embed(side string, ids *builder.Value) *builder.Value {
	name, t := side+".embedder.weight", s.gw.SrcEmbedding
	if side == "decoder" {
		t = s.gw.TgtEmbedding
	}
	if s.gw.SrcEmbedding == s.gw.TgtEmbedding {
		name = "embedder.weight"
	}
	return ops.Gather(s.w.add(name, t), ids, 0)
}

// lstm runs one LSTM layer (named name) over x [seq, batch, in] from h0
// and c0 ([dirs, batch, H] each, or nil for zeros): Y [seq, dirs, batch,
// H] and the final h and c.
func (s *gnmtGraph) lstm(name string, l RNNLayer, x, h0, c0, lens *builder.Value) (y, h, c *builder.Value) {
	opts := ops.RNNOpts{B: s.w.add(name+".B", l.B), SequenceLens: lens, InitialH: h0}
	if l.W.Dims[0] == 2 {
		opts.Direction = "bidirectional"
	}
	return ops.LSTM(x, s.w.add(name+".W", l.W), s.w.add(name+".R", l.R), ops.LSTMOpts{RNNOpts: opts, InitialC: c0})
}

// oneDir drops the direction axis of a unidirectional Y [seq, 1, batch, H].
func (s *gnmtGraph) oneDir(y *builder.Value) *builder.Value { return ops.Squeeze(y, s.c.ints(1)) }

// finishGNMT wraps the graph as a model with attnx's metadata.
func (s *gnmtGraph) finishGNMT(doc string) (*builder.Model, error) {
	if s.w.err != nil {
		return nil, s.w.err
	}
	m := builder.NewModel(s.g)
	m.Doc = doc
	m.Metadata["attnx.arch"] = "gnmt"
	m.Metadata["attnx.cell"] = string(LSTM)
	m.Metadata["attnx.hidden_size"] = fmt.Sprint(s.gw.Hidden)
	m.Metadata["attnx.embedding_size"] = fmt.Sprint(s.gw.Hidden)
	m.Metadata["attnx.num_layers"] = fmt.Sprint(s.gw.Layers)
	m.Metadata["attnx.src_vocab_size"] = fmt.Sprint(s.gw.Vocab)
	m.Metadata["attnx.tgt_vocab_size"] = fmt.Sprint(s.gw.Vocab)
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// validate checks that w has the layers and tensors its sizes imply.
func (w *GNMTWeights) validate() error {
	if w == nil {
		return fmt.Errorf("GNMT: no weights")
	}
	if w.Hidden < 1 || w.Layers < 2 || len(w.Encoder) != w.Layers || len(w.Decoder) != w.Layers-1 {
		return fmt.Errorf("GNMT: hidden %d, %d layers, with %d encoder and %d decoder layers besides att_rnn: want hidden >= 1, layers >= 2, as many encoder layers and one decoder layer fewer",
			w.Hidden, w.Layers, len(w.Encoder), len(w.Decoder))
	}
	H, V := int64(w.Hidden), int64(w.Vocab)
	for _, p := range []struct {
		name string
		t    *builder.Tensor
		dims []int64
	}{{"source embedding", w.SrcEmbedding, []int64{V, H}}, {"target embedding", w.TgtEmbedding, []int64{V, H}},
		{"linear_q", w.LinearQ, []int64{H, H}}, {"linear_k", w.LinearK, []int64{H, H}}, {"linear_att", w.LinearAtt, []int64{H}},
		{"normalize_bias", w.NormalizeBias, []int64{H}}, {"normalize_scalar", w.NormalizeScalar, []int64{1}},
		{"classifier weight", w.ClassifierWeight, []int64{V, H}}, {"classifier bias", w.ClassifierBias, []int64{V}}} {
		if err := checkFloat("GNMT "+p.name, p.t, p.dims); err != nil {
			return err
		}
	}
	if err := checkLayers("GNMT encoder layer 0", w.Encoder[:1], Config{Cell: LSTM}, stackShape{1, 2, w.Hidden, w.Hidden, "num_layers"}); err != nil {
		return err
	}
	for k, l := range w.Encoder[1:] {
		in := w.Hidden
		if k == 0 {
			in = 2 * w.Hidden
		}
		if err := checkLayers(fmt.Sprintf("GNMT encoder layer %d", k+1), []RNNLayer{l}, Config{Cell: LSTM}, stackShape{1, 1, w.Hidden, in, "num_layers"}); err != nil {
			return err
		}
	}
	dec := append([]RNNLayer{w.AttRNN}, w.Decoder...)
	for k, l := range dec {
		in := 2 * w.Hidden
		if k == 0 {
			in = w.Hidden
		}
		if err := checkLayers(fmt.Sprintf("GNMT decoder layer %d", k), []RNNLayer{l}, Config{Cell: LSTM}, stackShape{1, 1, w.Hidden, in, "num_layers"}); err != nil {
			return err
		}
	}
	return nil
}

// gnmtMaskValue is the score BahdanauAttention gives positions past a
// source's length (masked_fill_ with -65504, float16's lowest value).
const gnmtMaskValue = -65504

// GNMTEncoder builds a GNMT model's encoder.onnx: source_ids int64 [batch,
// src_len] and source_lengths int64 [batch] in; encoder_outputs [batch,
// src_len, H] (zero past each length), and the decoder's initial hidden
// and cell [L, batch, H] (zeros) out.
func GNMTEncoder(w *GNMTWeights) (*builder.Model, error) {
	if err := w.validate(); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	s := newGNMTGraph("attnx_encoder_gnmt", w)
	ids := s.g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lengths := s.g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	x := s.embed("encoder", ops.Transpose(ids, []int64{1, 0})) // [src_len, batch, H]
	lens := ops.Cast(lengths, builder.Int32)
	// Layer 0 runs over the packed lengths in both directions; its output
	// past each length is zero, as pad_packed_sequence pads it.
	y, _, _ := s.lstm("encoder.l0", w.Encoder[0], x, nil, nil, lens)
	y = ops.Reshape(ops.Transpose(y, []int64{0, 2, 1, 3}), s.c.ints(0, 0, -1), ops.ReshapeOpts{}) // [src_len, batch, 2H]
	mask := ops.Unsqueeze(ops.Transpose(s.lengthMask(ids, lengths), []int64{1, 0}), s.c.ints(2))  // [src_len, batch, 1]
	zero := s.c.scalarFloat(0)
	x = ops.Where(mask, y, zero)
	// The other layers run over the padded batch, as PyTorch runs them:
	// being unidirectional, their outputs within each length do not
	// depend on what lies past it.
	for k := 1; k < w.Layers; k++ {
		y, _, _ := s.lstm(fmt.Sprintf("encoder.l%d", k), w.Encoder[k], x, nil, nil, nil)
		if k == 1 {
			x = s.oneDir(y)
		} else {
			x = ops.Add(s.oneDir(y), x)
		}
	}
	enc := ops.Transpose(ops.Where(mask, x, zero), []int64{1, 0, 2}) // [batch, src_len, H]
	s.g.OutputAs(OutEncoder, enc, builder.Dims(DimBatch, DimSrcLen, w.Hidden))
	for _, name := range []string{OutHidden, OutCell} {
		s.g.OutputAs(name, s.zeroState(enc, w.Layers, w.Hidden), builder.Dims(w.Layers, DimBatch, w.Hidden))
	}
	m, err := s.finishGNMT(fmt.Sprintf("attnx GNMT v2 encoder (H %d, %d layers)", w.Hidden, w.Layers))
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return m, nil
}

// GNMTDecoder builds a GNMT model's decoder.onnx, one step: input_ids
// [batch], hidden and cell [L, batch, H], encoder_outputs [batch, src_len,
// H] and source_lengths [batch] in; log_probs [batch, Vocab], next_hidden,
// next_cell [L, batch, H] and attention [batch, src_len] (the attention
// scores, which translate.py's coverage penalty sums) out.
func GNMTDecoder(w *GNMTWeights) (*builder.Model, error) {
	if err := w.validate(); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	s := newGNMTGraph("attnx_decoder_gnmt", w)
	L := w.Layers
	ids := s.g.Input(InInputIDs, builder.Int64, builder.Dims(DimBatch))
	hidden := s.g.Input(InHidden, builder.Float, builder.Dims(L, DimBatch, w.Hidden))
	cell := s.g.Input(InCell, builder.Float, builder.Dims(L, DimBatch, w.Hidden))
	enc := s.g.Input(InEncoderOutputs, builder.Float, builder.Dims(DimBatch, DimSrcLen, w.Hidden))
	lengths := s.g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	hs, cs := ops.Split(hidden, nil, 0, L), ops.Split(cell, nil, 0, L)
	var nextH, nextC []*builder.Value
	run := func(k int, l RNNLayer, x *builder.Value) *builder.Value {
		y, h, c := s.lstm(fmt.Sprintf("decoder.l%d", k), l, ops.Unsqueeze(x, s.c.ints(0)), hs[k], cs[k], nil)
		nextH, nextC = append(nextH, h), append(nextC, c)
		return ops.Squeeze(y, s.c.ints(0, 1)) // [batch, H]
	}
	q := run(0, w.AttRNN, s.embed("decoder", ids))
	a, ctx := s.gnmtAttention(q, enc, s.lengthMask(enc, lengths))
	x := run(1, w.Decoder[0], ops.Concat(-1, q, ctx))
	for k := 2; k < L; k++ {
		x = ops.Add(run(k, w.Decoder[k-1], ops.Concat(-1, x, ctx)), x)
	}
	logits := ops.Gemm(x, s.w.add(gnmtClass+"weight", w.ClassifierWeight), s.w.add(gnmtClass+"bias", w.ClassifierBias), ops.GemmOpts{TransB: true})
	s.g.Output(OutLogProbs, ops.LogSoftmax(logits, -1))
	s.g.OutputAs(OutNextHidden, ops.Concat(0, nextH...), builder.Dims(L, DimBatch, w.Hidden))
	s.g.OutputAs(OutNextCell, ops.Concat(0, nextC...), builder.Dims(L, DimBatch, w.Hidden))
	s.g.OutputAs(OutAttention, a, builder.Dims(DimBatch, DimSrcLen))
	m, err := s.finishGNMT(fmt.Sprintf("attnx GNMT v2 decoder step (H %d, %d layers)", w.Hidden, w.Layers))
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	return m, nil
}

// gnmtAttention is BahdanauAttention(normalize=True) of query q [batch, H]
// over enc [batch, src_len, H] within mask: the weights [batch, src_len]
// and the context [batch, H].
func (s *gnmtGraph) gnmtAttention(q, enc, mask *builder.Value) (a, ctx *builder.Value) {
	w := s.gw
	pq := ops.Gemm(q, s.w.add(gnmtAttn+"linear_q.weight", w.LinearQ), nil, ops.GemmOpts{TransB: true})  // [batch, H]
	pk := ops.MatMul(enc, ops.Transpose(s.w.add(gnmtAttn+"linear_k.weight", w.LinearK), []int64{1, 0})) // [batch, src_len, H]
	sum := ops.Add(ops.Add(ops.Unsqueeze(pq, s.c.ints(1)), pk), s.w.add(gnmtAttn+"normalize_bias", w.NormalizeBias))
	// linear_att / ||linear_att|| * normalize_scalar, as calc_score
	// computes it on every call.
	v := s.w.add(gnmtAttn+"linear_att", w.LinearAtt)
	norm := ops.Sqrt(ops.ReduceSum(ops.Mul(v, v), s.c.ints(0), ops.ReduceSumOpts{}))
	v = ops.Mul(ops.Div(v, norm), s.w.add(gnmtAttn+"normalize_scalar", w.NormalizeScalar))
	score := ops.MatMul(ops.Tanh(sum), v) // [batch, src_len]
	a = ops.Softmax(ops.Where(mask, score, s.c.scalarFloat(gnmtMaskValue)), -1)
	return a, s.context(a, enc)
}
