package attention

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// openNMT is OpenNMT-py's RNN model (docs/toolkits.md, "OpenNMT-py"), one
// architecture per GlobalAttention type:
//
//	encoder: embedding, bidirectional LSTM/GRU with h = H/2 per direction
//	init:    [optional bridge: relu(Linear) over each state's rows of h*Le
//	         values], then per layer [forward; backward] final states
//	step:    x = [emb(y); o_prev] (input feeding) or emb(y) (standard)
//	         q, state' = RNN(x, state)   (a stack of cells / nn.LSTM)
//	         score_s = dot: q.h_s   general: (W_in q).h_s
//	                   mlp: v.tanh(W_q q + b_q + U h_s)
//	         a = softmax(score), -inf past the length; c = sum_s a_s h_s
//	         o = linear_out([c; q]) (tanh for dot and general; mlp has
//	         the bias and no tanh)
//	         log_probs = log_softmax(generator(o)); input_feed' = o
//
// Keys as OpenNMT-py saves them (the generator's under "generator."):
// encoder.embeddings.make_embedding.emb_luts.0.weight, encoder.rnn.*,
// encoder.bridge.{0,1}.*, decoder.embeddings.make_embedding.emb_luts.0.weight,
// decoder.rnn.layers.{k}.* (input feeding) or decoder.rnn.*_l{k}, decoder.attn.*,
// generator.weight/bias.
type openNMT struct {
	toolkitBase
	arch Arch
}

// OpenNMT-py's key names.
const (
	onmtSrcEmb = "encoder.embeddings.make_embedding.emb_luts.0.weight"
	onmtTgtEmb = "decoder.embeddings.make_embedding.emb_luts.0.weight"
)

func (o openNMT) Name() Arch { return o.arch }

func (o openNMT) Evidence() string {
	return "an OpenNMT-py checkpoint (model, generator, vocab and opt entries) with global_attention " + o.attnType()
}

// attnType is GlobalAttention's attn_type: dot, general or mlp.
func (o openNMT) attnType() string { return strings.TrimPrefix(string(o.arch), "onmt-") }

func (o openNMT) DecoderKeys() []layout.Key {
	return o.checkpointKeys(Config{Arch: o.arch, Cell: LSTM, InputFeed: true, Bidirectional: true}).graphKeys()
}

func (openNMT) DecoderInput() (string, string) {
	return "Et+H", "[embedding; input_feed] with input feeding"
}

func (o openNMT) checkpointKeys(cfg Config) toolkitKeys {
	k := toolkitKeys{srcEmb: onmtSrcEmb, tgtEmb: onmtTgtEmb, encRNN: "encoder.rnn", decRNN: "decoder.rnn", decCells: cfg.InputFeed, decIn: "Et"}
	if cfg.InputFeed {
		k.decIn = "Et+H"
	}
	switch o.arch {
	case OpenNMTGeneral:
		k.params = append(k.params, key("decoder.attn.linear_in.weight", "W_in, no bias", "H", "H"))
	case OpenNMTMLP:
		k.params = append(k.params,
			key("decoder.attn.linear_context.weight", "U, no bias", "H", "H"),
			key("decoder.attn.linear_query.weight", "W_q", "H", "H"),
			key("decoder.attn.linear_query.bias", "b_q", "H"),
			key("decoder.attn.v.weight", "the score vector v", "1", "H"))
	}
	k.params = append(k.params, key("decoder.attn.linear_out.weight", "over [context; query]", "H", "2H"))
	if o.arch == OpenNMTMLP {
		k.params = append(k.params, key("decoder.attn.linear_out.bias", "", "H"))
	}
	if !cfg.HasCopy() {
		k.params = append(k.params, key("generator.weight", "", "Vt", "H"), key("generator.bias", "", "Vt"))
	} else {
		k.params = append(k.params,
			key("generator.linear.weight", "the copy generator's vocabulary Linear", "Vt", "H"), key("generator.linear.bias", "", "Vt"),
			key("generator.linear_copy.weight", "p_copy's Linear", "1", "H"), key("generator.linear_copy.bias", "", "1"))
		const ca = "decoder.copy_attn."
		switch cfg.CopyAttention {
		case "general":
			k.params = append(k.params, key(ca+"linear_in.weight", "the copy attention's W_in", "H", "H"))
		case "mlp":
			k.params = append(k.params,
				key(ca+"linear_context.weight", "the copy attention's U", "H", "H"),
				key(ca+"linear_query.weight", "the copy attention's W_q", "H", "H"),
				key(ca+"linear_query.bias", "", "H"),
				key(ca+"v.weight", "the copy attention's score vector", "1", "H"))
		}
		if cfg.CopyAttention != "reuse" {
			// Only the copy attention's weights are used, not its output.
			k.params = append(k.params, optional(key(ca+"linear_out.weight", "unused: OpenNMT-py reads the copy attention's weights only", "H", "2H")))
			if cfg.CopyAttention == "mlp" {
				k.params = append(k.params, optional(key(ca+"linear_out.bias", "unused", "H")))
			}
		}
	}
	if cfg.HasCopy() {
		// The generator never gives the padding id probability: its
		// logit is -inf (OpenNMT-py sets it so before the softmax), here
		// through its bias, so that the step needs no masking op.
		k.derive = func(p, _ map[string]*builder.Tensor) error { return padBias(p, "generator.linear.bias", cfg.CopyPad) }
	}
	if cfg.Coverage {
		k.params = append(k.params, optional(key("decoder.attn.linear_cover.weight", "unused: OpenNMT-py's RNN decoders never pass the coverage to the attention", "H", "1")))
	}
	if cfg.ContextGate != "" {
		const g = "decoder.context_gate.context_gate."
		k.params = append(k.params,
			key(g+"gate.weight", "the context gate's z over [input; rnn output; attentional output]", "H", k.decIn+"+2H"), key(g+"gate.bias", "", "H"),
			key(g+"source_proj.weight", "", "H", "H"), key(g+"source_proj.bias", "", "H"),
			key(g+"target_proj.weight", "", "H", k.decIn+"+H"), key(g+"target_proj.bias", "", "H"))
	}
	if cfg.Bridge == "relu-linear" {
		k.params = append(k.params, key("encoder.bridge.0.weight", "the hidden state's bridge", "hL", "hL"), key("encoder.bridge.0.bias", "", "hL"))
		if cfg.Cell.HasCellState() {
			k.params = append(k.params, key("encoder.bridge.1.weight", "the cell state's bridge", "hL", "hL"), key("encoder.bridge.1.bias", "", "hL"))
		}
	}
	return k
}

// precompute is U enc for mlp attention, [batch, src_len, H].
func (o openNMT) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	if o.arch == OpenNMTMLP {
		return s.linear3D(enc, "decoder.attn.linear_context", false)
	}
	return nil
}

func (o openNMT) initStates(s *modelGraph, enc *builder.Value, final rnnState) decState {
	c := s.cfg
	h, le := c.EncHidden(), c.EncLayers()
	var out decState
	for i, st := range final.list() {
		if c.Bridge == "relu-linear" {
			st = s.onmtBridge(st, i, h, le, c.Directions())
		}
		if c.Bidirectional {
			st = s.directionsPerLayer(st, le, h)
		}
		out = append(out, st)
	}
	if c.InputFeed {
		out = append(out, s.zeroState(enc, 1, c.Hidden))
	}
	return out
}

// onmtBridge is OpenNMT-py's RNNEncoder._bridge on one final state
// [Le*D, batch, h]: permuted to [batch, Le*D, h], cut into rows of h*Le
// values (D per sentence: with two directions the state's first Le
// entries, then its last), relu(Linear) of each row with
// encoder.bridge.{i}, and put back.
func (s *modelGraph) onmtBridge(st *builder.Value, i, h, le, dirs int) *builder.Value {
	x := ops.Transpose(st, []int64{1, 0, 2})                                   // [batch, Le*D, h]
	rows := ops.Reshape(x, s.c.ints(-1, int64(h*le)), ops.ReshapeOpts{})       // [batch*D, h*Le]
	y := ops.Relu(s.linear(rows, "encoder.bridge."+string(rune('0'+i)), true)) // [batch*D, h*Le]
	y = ops.Reshape(y, s.c.ints(-1, int64(dirs*le), int64(h)), ops.ReshapeOpts{})
	return ops.Transpose(y, []int64{1, 0, 2})
}

func (o openNMT) step(s *modelGraph, in stepInputs) stepOutputs {
	x, next, q := s.feedRNNInput(in)
	var score *builder.Value
	switch o.arch {
	case OpenNMTDot:
		score = s.dotScore(in.enc, q)
	case OpenNMTGeneral:
		score = s.dotScore(in.enc, s.linear(q, "decoder.attn.linear_in", false))
	case OpenNMTMLP:
		keys := in.pre
		if keys == nil {
			keys = o.precompute(s, in.enc)
		}
		score = s.additiveScore(keys, s.linear(q, "decoder.attn.linear_query", true), "decoder.attn.v.weight")
	}
	a, ctx := s.attend(score, in.mask, in.enc)
	out := s.linear(ops.Concat(-1, ctx, q), "decoder.attn.linear_out", o.arch == OpenNMTMLP)
	if o.arch != OpenNMTMLP {
		out = ops.Tanh(out)
	}
	if s.cfg.ContextGate != "" {
		out = s.onmtContextGate(x, q, out)
	}
	states := s.feedStates(next, out)
	if s.cfg.HasCopy() {
		// The attention OpenNMT-py hands its search (for the coverage
		// penalty and -replace_unk) is the copy attention.
		lp, cp, ca := s.onmtCopyGenerator(in, out, a)
		return stepOutputs{logProbs: lp, copyProbs: cp, states: states, attn: ca}
	}
	return stepOutputs{logProbs: s.logProbs("generator", out, true), states: states, attn: a}
}

// onmtContextGate is OpenNMT-py's context gate (modules/gate.py) over the
// step's RNN input x, the RNN's output q and the attentional output out:
// z = sigmoid(gate([x; q; out])), source = source_proj(out), target =
// target_proj([x; q]); tanh(target + z source) for "source", tanh(z
// target + source) for "target", tanh((1 - z) target + z source) for
// "both".
func (s *modelGraph) onmtContextGate(x, q, out *builder.Value) *builder.Value {
	const g = "decoder.context_gate.context_gate."
	z := ops.Sigmoid(s.linear(ops.Concat(-1, x, q, out), g+"gate", true))
	src := s.linear(out, g+"source_proj", true)
	tgt := s.linear(ops.Concat(-1, x, q), g+"target_proj", true)
	switch s.cfg.ContextGate {
	case "source":
		return ops.Tanh(ops.Add(tgt, ops.Mul(z, src)))
	case "target":
		return ops.Tanh(ops.Add(ops.Mul(z, tgt), src))
	}
	return ops.Tanh(ops.Add(ops.Mul(ops.Sub(s.c.scalarFloat(1), z), tgt), ops.Mul(z, src)))
}

// onmtCopyGenerator is OpenNMT-py's CopyGenerator on the decoder's output
// out [batch, H]: log_probs = log(softmax(linear(out)) (1 - p_copy)) over
// the target vocabulary, the padding id's logit -inf, and copy_probs =
// p_copy times the copy attention [batch, src_len], p_copy =
// sigmoid(linear_copy(out)). The copy attention is the decoder's own
// (reuse) or a separate GlobalAttention's weights over the encoder
// outputs with out as the query, within the sentence's length (OpenNMT-py
// 3.5.1 passes no lengths to it: in a batch its sentences also copy from
// their padding; alone, as here, they do not).
// It returns the copy attention too.
func (s *modelGraph) onmtCopyGenerator(in stepInputs, out, attn *builder.Value) (logProbs, copyProbs, copyAttn *builder.Value) {
	c := s.cfg
	logits := s.classifierLinear("generator.linear", out) // the padding id's bias is -inf (padBias)
	// p_copy as PyTorch computes a sigmoid, 1 / (1 + exp(-z)): near 1,
	// 1 - p_copy is a few ulps, and ONNX Runtime's Sigmoid kernel rounds
	// them otherwise (log(1 - p_copy) then differs by ln 2 and more).
	z := s.linear(out, "generator.linear_copy", true)
	pCopy := ops.Reciprocal(ops.Add(s.c.scalarFloat(1), ops.Exp(ops.Neg(z)))) // [batch, 1]
	logProbs = ops.Add(ops.LogSoftmax(logits, -1), ops.Log(ops.Sub(s.c.scalarFloat(1), pCopy)))
	a := attn
	if c.CopyAttention != "reuse" {
		const ca = "decoder.copy_attn."
		var score *builder.Value
		switch c.CopyAttention {
		case "dot":
			score = s.dotScore(in.enc, out)
		case "general":
			score = s.dotScore(in.enc, s.linear(out, ca+"linear_in", false))
		case "mlp":
			score = s.additiveScore(s.linear3D(in.enc, ca+"linear_context", false), s.linear(out, ca+"linear_query", true), ca+"v.weight")
		}
		a = ops.Softmax(ops.Where(in.mask, score, s.c.scalarFloat(float32(math.Inf(-1)))), -1)
	}
	return logProbs, ops.Mul(a, pCopy), a
}

// padBias sets the bias called key to -inf at the padding id, in a copy.
func padBias(p map[string]*builder.Tensor, key string, pad int) error {
	t, n, ok, err := p[key].WithFloat32At(int64(pad), float32(math.Inf(-1)))
	switch {
	case err != nil:
		return fmt.Errorf("parameter %s: %w", key, err)
	case !ok:
		return fmt.Errorf("parameter %s: the padding id %d is outside its %d values", key, pad, n)
	}
	p[key] = t
	return nil
}

// OpenNMTV2BridgeNote is export's note for an OpenNMT-py 2 model with a
// bridge over several final states.
const OpenNMTV2BridgeNote = "OpenNMT-py 2's bridge mixed the sentences of a batch (it reshaped the final states without permuting them; fixed in 3.x): attnx computes each sentence alone, as OpenNMT-py 2 translates with batch size 1"

// OpenNMTOptions are what OpenNMTConfig needs from an OpenNMT-py
// checkpoint: its opt's attributes (plain values) and the version.
type OpenNMTOptions struct {
	Opt     map[string]any
	Version int
	// TgtPad is the target vocabulary's padding id (<blank>), which a
	// copy generator masks; -1 when the vocabulary has none.
	TgtPad int
}

// optString, optBool and optInt read an opt attribute; ok is false when it
// is absent or None.
func optString(opt map[string]any, k string) (string, bool) {
	s, ok := opt[k].(string)
	return s, ok
}

func optBool(opt map[string]any, k string) bool {
	switch v := opt[k].(type) {
	case bool:
		return v
	case int64:
		return v != 0
	case string:
		return v != "" && v != "none" && v != "None"
	}
	return false
}

func optInt(opt map[string]any, k string) (int, bool) {
	switch v := opt[k].(type) {
	case int64:
		return int(v), true
	case bool:
		if v {
			return 1, true
		}
		return 0, true
	}
	return 0, false
}

// OpenNMTConfig reads the architecture of an OpenNMT-py RNN model from
// its opt and checks it against the checkpoint's key shapes, which give
// the sizes: copy attention (copy_attn, reuse_copy_attn, copy_attn_type),
// coverage_attn and context gates included. What attnx does not convert
// is refused naming the option: other encoder or decoder types, SRU,
// sparsemax, source features, position encoding, copy attention without
// input feeding, and OpenNMT-py 2's bridge where it mixed the rows of a
// batch.
func OpenNMTConfig(o OpenNMTOptions, shapes map[string][]int64) (Config, error) {
	opt := o.Opt
	var cfg Config
	refuse := func(option, why string) (Config, error) {
		return cfg, fmt.Errorf("OpenNMT-py option %s: %s", option, why)
	}
	enc, _ := optString(opt, "encoder_type")
	switch {
	case enc == "brnn" || (enc == "" && optBool(opt, "brnn")):
		cfg.Bidirectional = true
	case enc == "rnn" || enc == "":
	default:
		return refuse("encoder_type "+enc, "attnx converts RNN encoders (rnn, brnn), not "+enc)
	}
	if dec, ok := optString(opt, "decoder_type"); ok && dec != "rnn" {
		return refuse("decoder_type "+dec, "attnx converts RNN decoders only")
	}
	if mt, ok := optString(opt, "model_type"); ok && mt != "text" {
		return refuse("model_type "+mt, "attnx converts text models only")
	}
	switch rt, _ := optString(opt, "rnn_type"); rt {
	case "LSTM":
		cfg.Cell = LSTM
	case "GRU":
		cfg.Cell = GRU
	default:
		return refuse("rnn_type "+rt, "attnx converts LSTM and GRU cells (SRU is not supported)")
	}
	switch ga, _ := optString(opt, "global_attention"); ga {
	case "dot":
		cfg.Arch = OpenNMTDot
	case "general":
		cfg.Arch = OpenNMTGeneral
	case "mlp":
		cfg.Arch = OpenNMTMLP
	default:
		return refuse("global_attention "+ga, "attnx converts attention models (dot, general, mlp)")
	}
	if f, ok := optString(opt, "global_attention_function"); ok && f != "softmax" {
		return refuse("global_attention_function "+f, "attnx computes softmax attention (sparsemax is not supported)")
	}
	if optBool(opt, "position_encoding") {
		return refuse("position_encoding", "position encoding on an RNN's embeddings is not supported")
	}
	if g, ok := optString(opt, "context_gate"); ok && g != "" {
		if !slices.Contains(ContextGates, g) {
			return refuse("context_gate "+g, fmt.Sprintf("OpenNMT-py's context gates are %q", ContextGates))
		}
		cfg.ContextGate = g
	}
	cfg.Coverage = optBool(opt, "coverage_attn")
	if optBool(opt, "copy_attn") {
		cfg.CopyAttention, cfg.CopyPad = "reuse", o.TgtPad
		if !optBool(opt, "reuse_copy_attn") {
			// OpenNMT-py's default copy_attn_type is global_attention.
			t, ok := optString(opt, "copy_attn_type")
			if !ok || t == "" {
				t, _ = optString(opt, "global_attention")
			}
			switch t {
			case "dot", "general", "mlp":
				cfg.CopyAttention = t
			default:
				return refuse("copy_attn_type "+t, "a copy attention is dot, general or mlp")
			}
		}
		if o.TgtPad < 0 {
			return refuse("copy_attn", "the copy generator masks the target vocabulary's <blank>, which it lacks")
		}
	}
	if n, ok := optInt(opt, "n_src_feats"); ok && n > 0 {
		return refuse("n_src_feats", "source features are not supported")
	}
	if feats, ok := opt["src_feats"].(map[string]any); ok && len(feats) > 0 {
		return refuse("src_feats", "source features are not supported")
	}
	if n, ok := optInt(opt, "input_feed"); ok {
		cfg.InputFeed = n != 0
	} else {
		cfg.InputFeed = true // OpenNMT-py's default
	}
	if optBool(opt, "bridge") {
		cfg.Bridge = "relu-linear"
	}

	// Sizes from the shapes.
	genKey := "generator.weight"
	if cfg.HasCopy() {
		genKey = "generator.linear.weight"
	}
	m, err := matrices(shapes, "OpenNMT-py checkpoint", onmtSrcEmb, onmtTgtEmb, genKey, "encoder.rnn.weight_hh_l0")
	if err != nil {
		return cfg, err
	}
	src, tgt, gen, hh := m[0], m[1], m[2], m[3]
	cfg.SrcVocab, cfg.Embedding = int(src[0]), int(src[1])
	cfg.TgtVocab, cfg.TgtEmbedding = int(tgt[0]), int(tgt[1])
	cfg.Hidden = int(gen[1])
	cfg.EncoderHidden = int(hh[1])
	if err := checkGates(hh, cfg.Cell, "opt.rnn_type"); err != nil {
		return cfg, err
	}
	cfg.EncoderLayers = countLayers(shapes, "encoder.rnn.weight_ih_l%d")
	if cfg.InputFeed {
		cfg.Layers = countLayers(shapes, "decoder.rnn.layers.%d.weight_ih")
	} else {
		cfg.Layers = countLayers(shapes, "decoder.rnn.weight_ih_l%d")
	}
	if cfg.Layers == 0 {
		what := "decoder.rnn.weight_ih_l0 (opt.input_feed 0: an nn.LSTM/GRU)"
		if cfg.InputFeed {
			what = "decoder.rnn.layers.0.weight_ih (opt.input_feed 1: a stack of cells)"
		}
		return cfg, keysError("OpenNMT-py checkpoint has no %s", what)
	}
	for _, c := range []struct {
		key  string
		want int
	}{{"enc_layers", cfg.EncoderLayers}, {"dec_layers", cfg.Layers}, {"enc_hid_size", cfg.EncoderHidden * cfg.Directions()}, {"dec_hid_size", cfg.Hidden}, {"enc_rnn_size", cfg.EncoderHidden * cfg.Directions()}, {"dec_rnn_size", cfg.Hidden}} {
		if v, ok := optInt(opt, c.key); ok && v > 0 && v != c.want {
			return cfg, fmt.Errorf("OpenNMT-py option %s is %d, but the checkpoint's weights have %d", c.key, v, c.want)
		}
	}
	// OpenNMT-py 2's bridge reshaped the final states without permuting
	// them: for one sentence that is OpenNMT-py 3's computation, for a
	// batch with layers x directions > 1 it mixes the sentences' rows. The
	// graphs compute each sentence alone: what OpenNMT-py 2 translates
	// with batch size 1 (OpenNMTV2BridgeNote).
	cfg = cfg.omitDefaults()
	return cfg, cfg.Validate()
}

// IsOpenNMT reports whether a state_dict's keys are those of an
// OpenNMT-py RNN model (its embeddings' and generator's names), saved
// without the checkpoint dict around it.
func IsOpenNMT(shapes map[string][]int64) bool {
	return has(shapes, onmtSrcEmb, onmtTgtEmb, "generator.weight", "encoder.rnn.weight_hh_l0")
}

// OpenNMTOptionsFromKeys infers what OpenNMT-py's opt would say from a
// bare state_dict's keys, for a model saved without its checkpoint dict:
// the encoder's direction from the _reverse keys, the cell from the gate
// rows, input feeding from the decoder's stack of cells, the bridge from
// encoder.bridge.*, the attention type from decoder.attn.*. Everything
// opt decides is in the keys.
func OpenNMTOptionsFromKeys(shapes map[string][]int64) OpenNMTOptions {
	opt := map[string]any{"encoder_type": "rnn", "rnn_type": "LSTM", "global_attention": "dot", "input_feed": int64(0), "bridge": false}
	if has(shapes, "encoder.rnn.weight_hh_l0_reverse") {
		opt["encoder_type"] = "brnn"
	}
	if d := shapes["encoder.rnn.weight_hh_l0"]; len(d) == 2 && d[0] == 3*d[1] {
		opt["rnn_type"] = "GRU"
	}
	if has(shapes, "decoder.rnn.layers.0.weight_ih") {
		opt["input_feed"] = int64(1)
	}
	if has(shapes, "encoder.bridge.0.weight") {
		opt["bridge"] = true
	}
	switch {
	case has(shapes, "decoder.attn.linear_in.weight"):
		opt["global_attention"] = "general"
	case has(shapes, "decoder.attn.linear_context.weight"):
		opt["global_attention"] = "mlp"
	}
	return OpenNMTOptions{Opt: opt, Version: 3}
}
