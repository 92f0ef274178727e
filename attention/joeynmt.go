package attention

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// joey is JoeyNMT's recurrent model (docs/toolkits.md, "JoeyNMT"), one
// architecture per attention type:
//
//	encoder: embedding, bidirectional LSTM/GRU (h per direction), outputs
//	         concatenated (C = 2h); final = [forward; backward] of the
//	         top layer's final hidden state
//	init:    bridge: tanh(bridge_layer(final)); last: final (its forward
//	         half when H = h); zero; the same for every layer, and for an
//	         LSTM's cell too; input_feed zeros
//	step:    x = [emb(y); att_prev] (input feeding) or emb(y)
//	         q = top layer of RNN(x, state)  (the new state)
//	         keys = key_layer(enc), once per sentence
//	         score_s = bahdanau: energy_layer(tanh(query_layer(q) + keys_s))
//	                   luong:    q . keys_s
//	         a = softmax(score), -inf past the length; c = sum_s a_s enc_s
//	         att = tanh(att_vector_layer([q; c]))
//	         log_probs = log_softmax(output_layer(att))  (no bias)
//
// Embeddings with `scale: true` are multiplied by sqrt(E) when read (the
// product is the same either side of the lookup).
type joey struct {
	toolkitBase
	arch Arch
}

func (j joey) Name() Arch { return j.arch }

func (j joey) Evidence() string {
	if j.arch == JoeyBahdanau {
		return "a JoeyNMT checkpoint (model_state) whose config says attention: bahdanau"
	}
	return "a JoeyNMT checkpoint (model_state) whose config says attention: luong"
}

func (j joey) DecoderKeys() []layout.Key {
	return j.checkpointKeys(Config{Arch: j.arch, Cell: GRU, InputFeed: true, Bidirectional: true, Bridge: "bridge"}).graphKeys()
}

func (joey) DecoderInput() (string, string) {
	return "Et+H", "[embedding; attentional vector] with input feeding"
}

func (j joey) checkpointKeys(cfg Config) toolkitKeys {
	k := toolkitKeys{srcEmb: "src_embed.lut.weight", tgtEmb: "trg_embed.lut.weight", encRNN: "encoder.rnn", decRNN: "decoder.rnn", decIn: "Et"}
	if cfg.InputFeed {
		k.decIn = "Et+H"
	}
	k.params = []layout.Key{key("decoder.attention.key_layer.weight", "projects the encoder outputs, no bias", "H", "C")}
	if j.arch == JoeyBahdanau {
		k.params = append(k.params,
			key("decoder.attention.query_layer.weight", "no bias", "H", "H"),
			key("decoder.attention.energy_layer.weight", "the score vector, no bias", "1", "H"))
	}
	k.params = append(k.params,
		key("decoder.att_vector_layer.weight", "over [query; context]", "H", "H+C"),
		key("decoder.att_vector_layer.bias", "", "H"),
		key("decoder.output_layer.weight", "no bias", "Vt", "H"))
	if cfg.Bridge == "bridge" {
		k.params = append(k.params, key("decoder.bridge_layer.weight", "", "H", "C"), key("decoder.bridge_layer.bias", "", "H"))
	}
	return k
}

// precompute is key_layer(enc), [batch, src_len, H].
func (joey) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	return s.linear3D(enc, "decoder.attention.key_layer", false)
}

func (joey) initStates(s *modelGraph, enc *builder.Value, final rnnState) decState {
	c := s.cfg
	var h0 *builder.Value
	switch c.Bridge {
	case "zero":
		h0 = s.zeroState(enc, c.Layers, c.Hidden)
	case "last":
		top := s.topDirections(final.h, c.EncLayers(), c.EncHidden()) // [batch, 2h]
		if c.Hidden != 2*c.EncHidden() {
			// H = h: the forward half.
			top = ops.Slice(top, s.c.ints(0), s.c.ints(int64(c.Hidden)), s.c.ints(1), nil)
		}
		h0 = s.repeatRows(top, c.Layers)
	default: // bridge
		top := s.topDirections(final.h, c.EncLayers(), c.EncHidden())
		h0 = s.repeatRows(ops.Tanh(s.linear(top, "decoder.bridge_layer", true)), c.Layers)
	}
	out := decState{h0}
	if c.Cell.HasCellState() {
		out = append(out, h0) // JoeyNMT starts the cell from the same values
	}
	if c.InputFeed {
		out = append(out, s.zeroState(enc, 1, c.Hidden))
	}
	return out
}

func (j joey) step(s *modelGraph, in stepInputs) stepOutputs {
	next, q := s.feedRNN(in)
	keys := in.pre
	if keys == nil {
		keys = j.precompute(s, in.enc)
	}
	var score *builder.Value
	if j.arch == JoeyBahdanau {
		score = s.additiveScore(keys, s.linear(q, "decoder.attention.query_layer", false), "decoder.attention.energy_layer.weight")
	} else {
		score = s.dotScore(keys, q)
	}
	a, ctx := s.attend(score, in.mask, in.enc)
	att := ops.Tanh(s.linear(ops.Concat(-1, q, ctx), "decoder.att_vector_layer", true))
	states := s.feedStates(next, att)
	return stepOutputs{logProbs: s.logProbs("decoder.output_layer", att, false), states: states, attn: a}
}

// JoeyOptions are the fields of a JoeyNMT config.yaml's model section that
// decide the architecture, as written ("" and nil for absent: JoeyNMT's
// defaults apply).
type JoeyOptions struct {
	EncoderType, DecoderType       string
	EncoderRNNType, DecoderRNNType string
	Bidirectional                  *bool
	Attention                      string
	InputFeeding                   *bool
	InitHidden                     string
	Activation                     string
	ScaleSrc, ScaleTgt             bool
	// Sizes the config states, 0 when absent; checked against the
	// weights.
	EncoderHidden, DecoderHidden, EncoderLayers, DecoderLayers int
}

// JoeyConfig reads the architecture of a JoeyNMT recurrent model from its
// config and the sizes from the checkpoint's shapes, checking that they
// agree. What JoeyNMT cannot run itself (a unidirectional recurrent
// encoder, activations other than tanh) or attnx does not convert is
// refused naming the option.
func JoeyConfig(o JoeyOptions, shapes map[string][]int64) (Config, error) {
	var cfg Config
	refuse := func(option, why string) (Config, error) {
		return cfg, fmt.Errorf("JoeyNMT config %s: %s", option, why)
	}
	for _, t := range []struct{ what, v string }{{"model.encoder.type", o.EncoderType}, {"model.decoder.type", o.DecoderType}} {
		if t.v != "" && t.v != "recurrent" {
			return refuse(t.what+" "+t.v, "attnx converts recurrent models only")
		}
	}
	cell := func(what, v string) (Cell, error) {
		switch strings.ToLower(v) {
		case "", "gru":
			return GRU, nil
		case "lstm":
			return LSTM, nil
		}
		return "", fmt.Errorf("JoeyNMT config %s %q: want gru or lstm", what, v)
	}
	ec, err := cell("model.encoder.rnn_type", o.EncoderRNNType)
	if err != nil {
		return cfg, err
	}
	dc, err := cell("model.decoder.rnn_type", o.DecoderRNNType)
	if err != nil {
		return cfg, err
	}
	if ec != dc {
		return refuse("rnn_type", fmt.Sprintf("the encoder is %s, the decoder %s: attnx needs one cell", ec, dc))
	}
	cfg.Cell = ec
	if o.Bidirectional != nil && !*o.Bidirectional {
		return refuse("model.encoder.bidirectional false", "JoeyNMT's decoder cannot start from a unidirectional recurrent encoder (its own code fails there); only bidirectional encoders are supported")
	}
	cfg.Bidirectional = true
	switch o.Attention {
	case "", "bahdanau":
		cfg.Arch = JoeyBahdanau
	case "luong":
		cfg.Arch = JoeyLuong
	default:
		return refuse("model.decoder.attention "+o.Attention, "want bahdanau or luong")
	}
	cfg.InputFeed = o.InputFeeding == nil || *o.InputFeeding
	switch o.InitHidden {
	case "", "bridge":
		cfg.Bridge = "bridge"
	case "last", "zero":
		cfg.Bridge = o.InitHidden
	default:
		return refuse("model.decoder.init_hidden "+o.InitHidden, "want bridge, last or zero")
	}
	if o.Activation != "" && o.Activation != "tanh" {
		return refuse("model.decoder.activation "+o.Activation, "JoeyNMT's recurrent decoder runs with tanh only")
	}
	cfg.ScaleSrcEmbedding, cfg.ScaleTgtEmbedding = o.ScaleSrc, o.ScaleTgt

	m, err := matrices(shapes, "JoeyNMT checkpoint", "src_embed.lut.weight", "trg_embed.lut.weight", "encoder.rnn.weight_hh_l0", "decoder.rnn.weight_hh_l0")
	if err != nil {
		return cfg, err
	}
	src, tgt, ehh, dhh := m[0], m[1], m[2], m[3]
	cfg.SrcVocab, cfg.Embedding = int(src[0]), int(src[1])
	cfg.TgtVocab, cfg.TgtEmbedding = int(tgt[0]), int(tgt[1])
	cfg.EncoderHidden, cfg.Hidden = int(ehh[1]), int(dhh[1])
	if err := checkGates(ehh, cfg.Cell, "rnn_type"); err != nil {
		return cfg, err
	}
	cfg.EncoderLayers, cfg.Layers = countLayers(shapes, "encoder.rnn.weight_ih_l%d"), countLayers(shapes, "decoder.rnn.weight_ih_l%d")
	for _, c := range []struct {
		what      string
		said, has int
	}{{"model.encoder.hidden_size", o.EncoderHidden, cfg.EncoderHidden}, {"model.decoder.hidden_size", o.DecoderHidden, cfg.Hidden},
		{"model.encoder.num_layers", o.EncoderLayers, cfg.EncoderLayers}, {"model.decoder.num_layers", o.DecoderLayers, cfg.Layers}} {
		if c.said > 0 && c.said != c.has {
			return cfg, fmt.Errorf("JoeyNMT config %s is %d, but the checkpoint's weights have %d: is this the config of this checkpoint?", c.what, c.said, c.has)
		}
	}
	if cfg.Bridge == "last" && cfg.Hidden != cfg.EncoderHidden && cfg.Hidden != 2*cfg.EncoderHidden {
		return refuse("model.decoder.init_hidden last", fmt.Sprintf("the decoder's hidden size %d must be the encoder's %d or twice it", cfg.Hidden, cfg.EncoderHidden))
	}
	cfg = cfg.omitDefaults()
	return cfg, cfg.Validate()
}

// IsJoeyNMT reports whether a state_dict's keys are those of a JoeyNMT
// recurrent model.
func IsJoeyNMT(shapes map[string][]int64) bool {
	return has(shapes, "src_embed.lut.weight", "trg_embed.lut.weight", "decoder.output_layer.weight")
}
