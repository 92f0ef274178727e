package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/qlayer"
	"github.com/attnx/attnx/ops"
	"github.com/attnx/attnx/quant"
)

// This file builds the reduced-precision forms of a model's layers
// (attnx export --weights int8|int4), chosen by the measurements of
// docs/quantization.md. The architectures do not see them: the shared
// helpers of graph.go (linear, linear3D, classify, embed, decoderRNN and
// the encoder's embedding) turn to the functions here when the graph is
// built with reduced weights, so every architecture and cell, and every
// graph built on modelGraph, honours BuildOptions alike.

// BuildOptions are the choices besides the weights that every graph
// builder (Encoder, Decoder, Greedy and any graph built on the shared
// modelGraph) takes. The zero value builds the float32 model.
type BuildOptions struct {
	// Weights is the precision of the weights: float32 ("" or fp32), int8
	// or int4 (see quant.Precision and formsFor).
	Weights quant.Precision
	// Rules, when set, are the toolkit's decoding rules greedy.onnx and
	// beam.onnx apply (see Rules).
	Rules *Rules
}

func (o BuildOptions) check() error {
	_, err := quant.ParsePrecision(string(o.Weights))
	return err
}

// forms says how each kind of layer of a reduced model is computed.
type forms struct {
	// classifier is the output projection (Vt x features): the bulk of
	// the bytes every step reads.
	classifier qlayer.Scheme
	// projection is every other Linear module of the decoder: the
	// attention projections (fc_hidden, fc_encoder, attention.fc, Wa, Ua,
	// attn) and attn_combine.
	projection qlayer.Scheme
	// cell is the decoder step's recurrent cell, written as products plus
	// elementwise gates (the encoder keeps the float32 RNN operator: it
	// runs once per sentence).
	cell qlayer.Scheme
}

// dynamicInt8 is int8 weights with one scale per output, activations
// quantized at run time: DynamicQuantizeLinear -> MatMulInteger -> Cast ->
// Mul, which ONNX Runtime fuses into DynamicQuantizeMatMul. Weights are
// stored as uint8 with zero point 128: as fast as int8 on VNNI CPUs, and
// unlike u8 x s8 products they cannot saturate 16-bit pair sums on x86
// CPUs without VNNI.
var dynamicInt8 = qlayer.Scheme{Form: qlayer.DynamicInt8, Uint8Weights: true}

// nbits4 is ONNX Runtime's com.microsoft MatMulNBits, 4 bits, symmetric
// blocks of 128 inputs (fewer for a layer of fewer inputs: see
// blockFor), accuracy level 4 (the input quantized to int8 per block at
// run time: 3-4x faster than level 0). Blocks of 128 are what makes 4-bit
// faster than int8 on this runtime (blocks of 32 are slower than int8);
// on the demo models they moved 3% more random sentences (Luong) or 1%
// fewer (Bahdanau) than blocks of 32, and kept the held-out set exact
// (docs/quantization.md).
var nbits4 = qlayer.Scheme{Form: qlayer.NBits, Bits: 4, BlockSize: 128, AccuracyLevel: 4}

// blockFor returns sc with its block no larger than needed for a layer of
// in inputs: the smallest power of two >= in (at least 16, MatMulNBits's
// least), so that a narrow layer does not store a padded block.
func blockFor(sc qlayer.Scheme, in int) qlayer.Scheme {
	if sc.Form != qlayer.NBits {
		return sc
	}
	b := 16
	for b < in && b < sc.BlockSize {
		b *= 2
	}
	sc.BlockSize = b
	return sc
}

// formsFor returns the forms of a reduced model of precision p (not FP32).
// Embedding tables are stored as int8 rows at every reduced precision.
func formsFor(p quant.Precision) forms {
	f := forms{classifier: dynamicInt8, projection: dynamicInt8, cell: dynamicInt8}
	if p == quant.PrecisionInt4 {
		f.classifier = nbits4
	}
	return f
}

// reduced reports whether the graph stores reduced-precision weights.
func (s *modelGraph) reduced() bool { return s.opt.Weights.Reduced() }

// fail records the first error of building the graph.
func (s *modelGraph) fail(err error) {
	if s.w.err == nil {
		s.w.err = err
	}
}

// floats decodes the float32 parameter called key.
func (s *modelGraph) floats(key string) []float32 {
	t, ok := s.wt.Params[key]
	if !ok {
		s.fail(fmt.Errorf("parameter %s is missing", key))
		return nil
	}
	v, err := t.Float32s()
	if err != nil {
		s.fail(fmt.Errorf("parameter %s: %w", key, err))
	}
	return v
}

// qlinear applies the Linear module called prefix to x ([batch, in] or
// [batch, src_len, in]) in scheme sc: x W^T (+ b).
func (s *modelGraph) qlinear(x *builder.Value, prefix string, bias bool, sc qlayer.Scheme) *builder.Value {
	wt := s.wt.Params[prefix+".weight"]
	w, out, in, err := quant.FloatsOf(wt)
	if err != nil {
		s.fail(fmt.Errorf("parameter %s.weight: %w", prefix, err))
		return ops.Identity(x)
	}
	l := qlayer.Layer{W: w, Out: out, In: in}
	if bias {
		l.B = s.floats(prefix + ".bias")
	}
	return qlayer.Linear(s.g, prefix, x, l, blockFor(sc, in)).Y
}

// qembedding looks up ids in the table called key ([rows, E]) stored as
// int8 rows, dequantizing only the rows gathered.
func (s *modelGraph) qembedding(key string, table *builder.Tensor, ids *builder.Value) *builder.Value {
	if t, ok := s.qtables[key]; ok {
		// A table the graph already holds (the chatbot's shared embedding
		// in greedy.onnx and beam.onnx).
		return t.Lookup(ids)
	}
	v, rows, dim, err := quant.FloatsOf(table)
	if err != nil {
		s.fail(fmt.Errorf("%s: %w", key, err))
		return ops.Identity(ids)
	}
	t, ok := qlayer.NewInt8Table(s.g, key, v, rows, dim)
	if !ok {
		return ops.Identity(ids)
	}
	s.qtables[key] = t
	return t.Lookup(ids)
}

// qdecoderRNN is decoderRNN's reduced form: each layer's cell as products
// in the cell scheme plus elementwise gates, on x [batch, in] from state.
// The products are two, x W^T and h R^T, each with its own activation
// scale: one product of [x ; h] is as fast, but quantizes h (within
// [-1, 1]) on the scale of x (embeddings, contexts), and its greedy
// decodes leave float32's more often (docs/quantization.md).
func (s *modelGraph) qdecoderRNN(x *builder.Value, state rnnState) rnnState {
	L, H, cell := len(s.wt.Decoder), s.cfg.Hidden, s.cfg.Cell
	sc := formsFor(s.opt.Weights).cell
	h0s, c0s := state.layers(L)
	in := ops.Unsqueeze(x, s.c.ints(0)) // [1, batch, in]: the states' leading dimensions
	var hs, cs []*builder.Value
	for k, layer := range s.wt.Decoder {
		name := fmt.Sprintf("decoder.%s.l%d", cell, k)
		w, err := rnnFloats(layer, H)
		if err != nil {
			s.fail(fmt.Errorf("%s: %w", name, err))
			return state
		}
		if cell == GRU {
			h, _ := qlayer.GRUCell(s.g, name, in, h0s[k], w, sc, qlayer.CellOpts{TwoProducts: true})
			hs = append(hs, h)
			in = h
			continue
		}
		h, c, _ := qlayer.LSTMCell(s.g, name, in, h0s[k], c0s[k], w, sc, qlayer.CellOpts{TwoProducts: true})
		hs, cs = append(hs, h), append(cs, c)
		in = h
	}
	return stackLayers(hs, cs)
}

// rnnFloats decodes one recurrent layer's weights for qlayer's cells.
func rnnFloats(l RNNLayer, hidden int) (qlayer.RNNWeights, error) {
	var w qlayer.RNNWeights
	var err error
	if w.W, err = l.W.Float32s(); err != nil {
		return w, err
	}
	if w.R, err = l.R.Float32s(); err != nil {
		return w, err
	}
	if w.B, err = l.B.Float32s(); err != nil {
		return w, err
	}
	w.In, w.Hidden = int(l.W.Dims[2]), hidden
	return w, nil
}

// DescribeWeights says, for people, which tensors a model of precision p
// stores in which form and which operators compute them.
func DescribeWeights(p quant.Precision) string {
	switch p.OrFP32() {
	case quant.PrecisionInt8:
		return "int8: classifier, attention projections and decoder cell as int8 products (DynamicQuantizeLinear -> MatMulInteger, standard ONNX), embeddings as int8 rows; encoder RNN float32"
	case quant.PrecisionInt4:
		return "int4: classifier 4-bit (com.microsoft MatMulNBits, blocks of up to 128 inputs: ONNX Runtime or attnx's native backend); attention projections and decoder cell as int8 products, embeddings as int8 rows; encoder RNN float32"
	}
	return "fp32: every weight float32"
}
