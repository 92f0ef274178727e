package attention

import (
	"fmt"
	"math"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/qlayer"
	"github.com/attnx/attnx/ops"
)

// Names of the graph inputs and outputs: the contract of docs/models.md.
// GRU models have no cell state: their encoder has no OutCell output and
// their decoder no InCell input and no OutNextCell output.
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
	// OutCopyProbs is a copy-attention decoder's p_copy times its copy
	// attention, [batch, src_len]; its log_probs are then log(p_gen x
	// (1 - p_copy)) over the target vocabulary (docs/models.md, "Copy
	// attention").
	OutCopyProbs = "copy_probs"
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

func (c consts) scalarBool(v bool) *builder.Value {
	return c.g.Init("", builder.BoolTensor(nil, []bool{v}))
}

// params adds the model's parameters to a graph as initializers with
// readable names, each at most once, and remembers the first error.
type params struct {
	g    *builder.Graph
	seen map[string]*builder.Value
	err  error
}

// add adds a tensor that is already in the graph's layout.
func (w *params) add(name string, t *builder.Tensor) *builder.Value {
	if v, ok := w.seen[name]; ok {
		return v
	}
	// Copy the header so that the builder can name it without changing
	// the caller's tensor; the data is shared, not copied.
	c := *t
	v := w.g.Init(name, &c)
	w.seen[name] = v
	return v
}

// modelGraph builds one graph (encoder, decoder step or greedy) of one
// model: the shared parts every architecture uses.
type modelGraph struct {
	g   *builder.Graph
	w   *params
	c   consts
	wt  *Weights
	cfg Config
	opt BuildOptions
	// qtables holds the int8 embedding tables added, by name.
	qtables map[string]qlayer.Int8Table
}

func newModelGraph(name string, wt *Weights, opt BuildOptions) *modelGraph {
	g := builder.New(name)
	return &modelGraph{g: g, w: &params{g: g, seen: map[string]*builder.Value{}}, c: consts{g}, wt: wt, cfg: wt.Config.WithDefaults(), opt: opt,
		qtables: map[string]qlayer.Int8Table{}}
}

// param adds the decoder parameter called key (its checkpoint key), laid
// out as p says.
func (s *modelGraph) param(key string, p pack) *builder.Value {
	name := key + p.suffix()
	if v, ok := s.w.seen[name]; ok {
		return v
	}
	t, err := repack(s.wt.Params[key], p)
	if err != nil {
		if s.w.err == nil {
			s.w.err = fmt.Errorf("parameter %s: %w", key, err)
		}
		t = nil // the graph records the failure too
	}
	v := s.g.Init(name, t)
	s.w.seen[name] = v
	return v
}

// linear applies the Linear module called prefix (weight [out, in], with
// its bias when bias is set) to x [batch, in].
func (s *modelGraph) linear(x *builder.Value, prefix string, bias bool) *builder.Value {
	if s.reduced() {
		return s.qlinear(x, prefix, bias, formsFor(s.opt.Weights).projection)
	}
	var b *builder.Value
	if bias {
		b = s.param(prefix+".bias", asIs)
	}
	return ops.Gemm(x, s.param(prefix+".weight", asIs), b, ops.GemmOpts{TransB: true})
}

// linear3D applies the Linear module called prefix to x [batch, src_len,
// in]: x W^T (+ b).
func (s *modelGraph) linear3D(x *builder.Value, prefix string, bias bool) *builder.Value {
	if s.reduced() {
		return s.qlinear(x, prefix, bias, formsFor(s.opt.Weights).projection)
	}
	y := ops.MatMul(x, s.param(prefix+".weight", transposed))
	if bias {
		y = ops.Add(y, s.param(prefix+".bias", asIs))
	}
	return y
}

// top returns the top layer of a state [L, batch, H]: [batch, H].
func (s *modelGraph) top(h *builder.Value) *builder.Value {
	return ops.Gather(h, s.c.scalarInt(int64(s.cfg.Layers-1)), 0)
}

// embed looks up the target embedding of input_ids [batch]: [batch, E].
func (s *modelGraph) embed(ids *builder.Value) *builder.Value {
	e := s.embedding(s.embeddingName("decoder"), s.wt.TgtEmbedding, ids)
	return s.scaled(e, s.cfg.ScaleTgtEmbedding, s.cfg.TgtEmbeddingSize())
}

// scaled is e times sqrt(size) when scale is set (JoeyNMT's
// embeddings.scale: the float32 product PyTorch computes).
func (s *modelGraph) scaled(e *builder.Value, scale bool, size int) *builder.Value {
	if !scale {
		return e
	}
	return ops.Mul(e, s.c.scalarFloat(float32(math.Sqrt(float64(size)))))
}

// embeddingName names side's embedding table in the graphs: one name for
// both sides when they share one table (the chatbot tutorial), so that
// the graphs hold it once.
func (s *modelGraph) embeddingName(side string) string {
	if s.wt.SrcEmbedding == s.wt.TgtEmbedding {
		return "embedding"
	}
	return side + ".embedding"
}

// embedding looks up ids (any shape) in the table called prefix: [ids...,
// E].
func (s *modelGraph) embedding(prefix string, table *builder.Tensor, ids *builder.Value) *builder.Value {
	if s.reduced() {
		return s.qembedding(prefix, table, ids)
	}
	return ops.Gather(s.w.add(prefix+".weight", table), ids, 0)
}

// decoderRNN runs the decoder's recurrent layers for one step on x
// [batch, in] from state and returns the new state.
func (s *modelGraph) decoderRNN(x *builder.Value, state rnnState) rnnState {
	if s.reduced() {
		return s.qdecoderRNN(x, state)
	}
	_, next := s.rnnStack("decoder", s.wt.Decoder, ops.Unsqueeze(x, s.c.ints(0)), state, nil, false, false)
	return next
}

// attend turns raw scores [batch, src_len] into attention weights (softmax
// over each row's own length) and the context vector [batch, H].
func (s *modelGraph) attend(score, mask, enc *builder.Value) (a, ctx *builder.Value) {
	a = ops.Softmax(ops.Where(mask, score, s.c.scalarFloat(float32(math.Inf(-1)))), -1)
	return a, s.context(a, enc)
}

// context is sum_s a_s enc_s: [batch, H].
func (s *modelGraph) context(a, enc *builder.Value) *builder.Value {
	axis1 := s.c.ints(1)
	return ops.Squeeze(ops.MatMul(ops.Unsqueeze(a, axis1), enc), axis1)
}

// classify is log_softmax(features W^T + b) for the Linear called prefix.
func (s *modelGraph) classify(prefix string, features *builder.Value) *builder.Value {
	if s.reduced() {
		return ops.LogSoftmax(s.qlinear(features, prefix, true, formsFor(s.opt.Weights).classifier), -1)
	}
	return ops.LogSoftmax(s.linear(features, prefix, true), -1)
}

// lengthMask returns a bool [batch, src_len] tensor that is true where the
// position is inside the row's length. seq is any [batch, src_len, ...]
// tensor; lengths is int64 [batch].
func (s *modelGraph) lengthMask(seq, lengths *builder.Value) *builder.Value {
	c := s.c
	srcLen := ops.Shape(seq, ops.ShapeOpts{Start: 1, End: ops.Int(2)})
	srcLenScalar := ops.Squeeze(srcLen, c.ints(0))
	positions := ops.Range(c.scalarInt(0), srcLenScalar, c.scalarInt(1)) // [src_len]
	return ops.Less(positions, ops.Unsqueeze(lengths, c.ints(1)))        // [batch, src_len]
}

// encoder builds the encoder from its inputs, returning encoder_outputs
// [batch, src_len, C] and the decoder's initial states.
func (s *modelGraph) encoder(ar Architecture, sourceIDs, sourceLengths *builder.Value) (*builder.Value, decState) {
	// Transpose the int64 ids, not the embedded floats: the recurrent
	// layers want sequence-first input (ONNX Runtime rejects layout=1).
	ids := ops.Transpose(sourceIDs, []int64{1, 0})                       // [src_len, batch]
	x := s.embedding(s.embeddingName("encoder"), s.wt.SrcEmbedding, ids) // [src_len, batch, E]
	x = s.scaled(x, s.cfg.ScaleSrcEmbedding, s.cfg.Embedding)
	lens := ops.Cast(sourceLengths, builder.Int32)
	sum := s.cfg.Bidirectional && s.cfg.SumsDirections()
	y, final := s.rnnStack("encoder", s.wt.Encoder, x, rnnState{}, lens, true, sum)
	if sum {
		// [src_len, 2, batch, h]: the two directions' outputs added.
		y = ops.ReduceSum(y, s.c.ints(1), ops.ReduceSumOpts{NoKeepDims: true})
	}
	y = ops.Transpose(y, []int64{1, 0, 2}) // [batch, src_len, C]
	// ONNX leaves Y past each length undefined: zero it explicitly.
	mask := ops.Unsqueeze(s.lengthMask(y, sourceLengths), s.c.ints(2))
	enc := ops.Where(mask, y, s.c.scalarFloat(0))
	return enc, ar.initStates(s, enc, final)
}

// stepInputs are the inputs of one decoder step.
type stepInputs struct {
	// ids is input_ids [batch]; states the states before the step.
	ids    *builder.Value
	states decState
	// enc is encoder_outputs [batch, src_len, H], zero past each length
	// when it comes from the encoder; mask the bool [batch, src_len]
	// length mask.
	enc, mask *builder.Value
	// pre is what the architecture's precompute built for this sentence,
	// or nil: the step then computes it itself.
	pre *builder.Value
}

// stepOutputs are the outputs of one decoder step.
type stepOutputs struct {
	logProbs *builder.Value // [batch, Vt]
	states   decState
	attn     *builder.Value // [batch, src_len]
	// copyProbs is a copy-attention model's copy_probs [batch, src_len]
	// (logProbs are then log(p_gen (1 - p_copy))); nil for the others.
	copyProbs *builder.Value
}

// finish wraps the graph as a model with attnx's metadata.
func (s *modelGraph) finish(doc string) (*builder.Model, error) {
	if s.w.err != nil {
		return nil, s.w.err
	}
	cfg := s.cfg
	m := builder.NewModel(s.g)
	m.Doc = doc
	m.Metadata["attnx.arch"] = string(cfg.Arch)
	m.Metadata["attnx.cell"] = string(cfg.Cell)
	m.Metadata["attnx.hidden_size"] = fmt.Sprint(cfg.Hidden)
	m.Metadata["attnx.embedding_size"] = fmt.Sprint(cfg.Embedding)
	m.Metadata["attnx.num_layers"] = fmt.Sprint(cfg.Layers)
	m.Metadata["attnx.src_vocab_size"] = fmt.Sprint(cfg.SrcVocab)
	m.Metadata["attnx.tgt_vocab_size"] = fmt.Sprint(cfg.TgtVocab)
	if cfg.MaxLength > 0 {
		m.Metadata["attnx.max_length"] = fmt.Sprint(cfg.MaxLength)
	}
	if s.reduced() {
		m.Metadata["attnx.weights"] = string(s.opt.Weights)
	}
	if err := m.Check(); err != nil {
		return nil, err
	}
	return m, nil
}

// validate checks what every graph builder is given.
func validate(wt *Weights, opt BuildOptions) error {
	if err := wt.Validate(); err != nil {
		return err
	}
	return opt.check()
}

// Encoder builds encoder.onnx: source_ids int64 [batch, src_len] and
// source_lengths int64 [batch] in; encoder_outputs [batch, src_len, H],
// hidden [L, batch, H] and, for LSTM, cell [L, batch, H] out. opt chooses
// the weights' precision (the RNN stays float32 at every one).
func Encoder(wt *Weights, opt BuildOptions) (*builder.Model, error) {
	if err := validate(wt, opt); err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	s := newModelGraph("attnx_encoder", wt, opt)
	ids := s.g.Input(InSourceIDs, builder.Int64, builder.Dims(DimBatch, DimSrcLen))
	lens := s.g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	ar, _ := Lookup(wt.Config.Arch) // validate checked the name
	enc, states := s.encoder(ar, ids, lens)
	s.g.OutputAs(OutEncoder, enc, builder.Dims(DimBatch, DimSrcLen, s.cfg.EncoderWidth()))
	for i, st := range s.cfg.States() {
		s.g.OutputAs(st.Name, states[i], builder.Dims(st.Rows, DimBatch, st.Width))
	}
	m, err := s.finish(fmt.Sprintf("attnx %s encoder (%s)", s.cfg.Cell, s.cfg))
	if err != nil {
		return nil, fmt.Errorf("encoder: %w", err)
	}
	return m, nil
}

// Decoder builds decoder.onnx, one decoder step: input_ids [batch], hidden
// [L, batch, H], for LSTM cell [L, batch, H], encoder_outputs [batch,
// src_len, H] and source_lengths [batch] in; log_probs [batch, Vt],
// next_hidden [L, batch, H], for LSTM next_cell [L, batch, H], and
// attention [batch, src_len] out. opt chooses the weights' precision.
func Decoder(wt *Weights, opt BuildOptions) (*builder.Model, error) {
	if err := validate(wt, opt); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	ar, _ := Lookup(wt.Config.Arch) // Validate checked the name
	s := newModelGraph("attnx_decoder_"+string(wt.Config.Arch), wt, opt)
	ids := s.g.Input(InInputIDs, builder.Int64, builder.Dims(DimBatch))
	specs := s.cfg.States()
	var states decState
	for _, st := range specs {
		states = append(states, s.g.Input(st.Name, builder.Float, builder.Dims(st.Rows, DimBatch, st.Width)))
	}
	enc := s.g.Input(InEncoderOutputs, builder.Float, builder.Dims(DimBatch, DimSrcLen, s.cfg.EncoderWidth()))
	lens := s.g.Input(InSourceLengths, builder.Int64, builder.Dims(DimBatch))
	out := ar.step(s, stepInputs{ids: ids, states: states, enc: enc, mask: s.lengthMask(enc, lens)})
	s.g.Output(OutLogProbs, out.logProbs)
	for i, st := range specs {
		s.g.OutputAs(NextPrefix+st.Name, out.states[i], builder.Dims(st.Rows, DimBatch, st.Width))
	}
	// Declared: a Slice over max_length (tutorial-location) leaves the
	// last dimension unknown to the builder's inference.
	s.g.OutputAs(OutAttention, out.attn, builder.Dims(DimBatch, DimSrcLen))
	if out.copyProbs != nil {
		s.g.OutputAs(OutCopyProbs, out.copyProbs, builder.Dims(DimBatch, DimSrcLen))
	}
	m, err := s.finish(fmt.Sprintf("attnx %s decoder step (%s)", s.cfg.Arch, s.cfg))
	if err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	return m, nil
}
