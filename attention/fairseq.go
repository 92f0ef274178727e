package attention

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// fairseq is fairseq's LSTMModel (fairseq/models/lstm.py, docs/toolkits.md
// "fairseq"), with its AttentionLayer (fairseq-lstm) or without
// (fairseq-lstm-noattn, --decoder-attention 0):
//
//	encoder: embedding, nn.LSTM of L layers, one or two directions (h
//	         each), outputs C = h or 2h wide; final states per layer with
//	         the directions side by side (combine_bidir)
//	init:    those final states, through encoder_hidden_proj and
//	         encoder_cell_proj (Linear with bias) when C != H;
//	         input_feed zeros [batch, H]
//	step:    x = [emb(y); input_feed]; a stack of LSTMCells
//	         q = the top layer's new hidden state
//	         attention: s = input_proj(q) (no bias), score_j = enc_j . s,
//	                    -inf past the length, a = softmax(score),
//	                    c = sum_j a_j enc_j, out = tanh(output_proj([c; q]))
//	                    (no bias)
//	         no attention: out = q
//	         input_feed' = out
//	         features = additional_fc(out) when H != decoder_out_embed_dim
//	         log_probs = log_softmax(fc_out(features)), or with a tied
//	         output features . decoder.embed_tokens^T (no bias)
//
// The decoder's first input is </s> (fairseq starts from EOS), and every
// source ends with </s>: modeldir records both.
type fairseq struct {
	toolkitBase
	arch Arch
}

func (f fairseq) Name() Arch { return f.arch }

func (f fairseq) Evidence() string {
	if f.arch == FairseqLSTMNoAttention {
		return "a fairseq checkpoint (model, cfg or args, optimizer_history) of an LSTMModel with --decoder-attention 0"
	}
	return "a fairseq checkpoint (model, cfg or args, optimizer_history) of an LSTMModel (--arch lstm, lstm_wiseman_iwslt_de_en, lstm_luong_wmt_en_de)"
}

func (f fairseq) DecoderKeys() []layout.Key {
	return f.checkpointKeys(Config{Arch: f.arch, Cell: LSTM, InputFeed: true}).graphKeys()
}

func (fairseq) DecoderInput() (string, string) {
	return "Et+H", "[embedding; input_feed] (fairseq's input feeding)"
}

// fairseq's key names.
const (
	fairseqSrcEmb = "encoder.embed_tokens.weight"
	fairseqTgtEmb = "decoder.embed_tokens.weight"
	fairseqOut    = "decoder.fc_out"
)

func (f fairseq) checkpointKeys(cfg Config) toolkitKeys {
	k := toolkitKeys{srcEmb: fairseqSrcEmb, tgtEmb: fairseqTgtEmb, encRNN: "encoder.lstm", decRNN: "decoder", decCells: true, decIn: "Et+H"}
	if cfg.EncoderWidth() != cfg.Hidden {
		k.params = append(k.params,
			key("decoder.encoder_hidden_proj.weight", "the encoder's final hidden states to the decoder's size", "H", "C"),
			key("decoder.encoder_hidden_proj.bias", "", "H"),
			key("decoder.encoder_cell_proj.weight", "the encoder's final cell states to the decoder's size", "H", "C"),
			key("decoder.encoder_cell_proj.bias", "", "H"))
	}
	if f.arch == FairseqLSTM {
		k.params = append(k.params,
			key("decoder.attention.input_proj.weight", "projects the query, no bias", "C", "H"),
			key("decoder.attention.output_proj.weight", "over [context; query], no bias", "H", "C+H"))
	}
	if cfg.OutWidth() != cfg.Hidden {
		k.params = append(k.params, key("decoder.additional_fc.weight", "to decoder_out_embed_dim", "Eo", "H"), key("decoder.additional_fc.bias", "", "Eo"))
	}
	if !cfg.TiedOutput {
		k.params = append(k.params, key(fairseqOut+".weight", "", "Vt", "Eo"), key(fairseqOut+".bias", "", "Vt"))
		return k
	}
	// A tied output reads the target embedding: the graph's classifier
	// weight is a copy of it.
	k.graph = append(append([]layout.Key{}, k.params...), key(fairseqOut+".weight", "decoder.embed_tokens.weight (tied)", "Vt", "Eo"))
	k.derive = func(p, saved map[string]*builder.Tensor) error {
		t := saved[fairseqTgtEmb]
		if t == nil {
			return fmt.Errorf("tied output: no %s to share", fairseqTgtEmb)
		}
		p[fairseqOut+".weight"] = t
		return nil
	}
	return k
}

func (fairseq) precompute(*modelGraph, *builder.Value) *builder.Value { return nil }

func (fairseq) initStates(s *modelGraph, enc *builder.Value, final rnnState) decState {
	c := s.cfg
	var out decState
	for i, st := range final.list() {
		if c.Bidirectional {
			st = s.directionsPerLayer(st, c.EncLayers(), c.EncHidden())
		}
		if c.EncoderWidth() != c.Hidden {
			proj := "decoder.encoder_hidden_proj"
			if i == 1 {
				proj = "decoder.encoder_cell_proj"
			}
			st = s.linear3D(st, proj, true)
		}
		out = append(out, st)
	}
	return append(out, s.zeroState(enc, 1, c.Hidden))
}

func (f fairseq) step(s *modelGraph, in stepInputs) stepOutputs {
	next, q := s.feedRNN(in)
	out := q
	var a *builder.Value
	if f.arch == FairseqLSTM {
		score := s.dotScore(in.enc, s.linear(q, "decoder.attention.input_proj", false))
		var ctx *builder.Value
		a, ctx = s.attend(score, in.mask, in.enc)
		out = ops.Tanh(s.linear(ops.Concat(-1, ctx, q), "decoder.attention.output_proj", false))
	} else {
		// No attention: the step's attention output is all zeros.
		zero := s.c.scalarFloat(0)
		a = ops.Where(in.mask, zero, zero)
	}
	states := s.feedStates(next, out)
	features := out
	if s.cfg.OutWidth() != s.cfg.Hidden {
		features = s.linear(out, "decoder.additional_fc", true)
	}
	return stepOutputs{logProbs: s.logProbs(fairseqOut, features, !s.cfg.TiedOutput), states: states, attn: a}
}

// FairseqArchs are the architecture names fairseq registers for its
// LSTMModel (register_model_architecture in fairseq/models/lstm.py).
var FairseqArchs = []string{"lstm", "lstm_wiseman_iwslt_de_en", "lstm_luong_wmt_en_de"}

// FairseqOptions are what FairseqConfig needs from a fairseq checkpoint:
// the model's options (cfg.model, or the older args), as plain values.
type FairseqOptions struct {
	Args map[string]any
}

// FairseqConfig reads the architecture of a fairseq LSTMModel from its
// options and the sizes from the checkpoint's shapes, checking that they
// agree. Other model classes, the adaptive softmax and residual decoders
// are refused naming the option.
func FairseqConfig(o FairseqOptions, shapes map[string][]int64) (Config, []string, error) {
	args := o.Args
	cfg := Config{Cell: LSTM, InputFeed: true}
	var notes []string
	refuse := func(option, why string) (Config, []string, error) {
		return cfg, nil, fmt.Errorf("fairseq option %s: %s", option, why)
	}
	arch, _ := optString(args, "arch")
	if arch == "" {
		arch, _ = optString(args, "_name")
	}
	known := false
	for _, a := range FairseqArchs {
		known = known || a == arch
	}
	lstmKeys := has(shapes, fairseqSrcEmb, fairseqTgtEmb, "encoder.lstm.weight_ih_l0", "decoder.layers.0.weight_ih")
	switch {
	case !known && !lstmKeys:
		return refuse("--arch "+arch, "attnx converts fairseq's LSTM models ("+strings.Join(FairseqArchs, ", ")+"), not this one (Transformers and convolutional models are not attention RNNs)")
	case !known:
		notes = append(notes, fmt.Sprintf("fairseq --arch %s is not one of fairseq's own LSTM architectures, but its keys are those of fairseq's LSTMModel: converted as one", arch))
	}
	if cut, ok := optString(args, "adaptive_softmax_cutoff"); ok && cut != "" {
		if crit, _ := optString(args, "criterion"); crit == "adaptive_loss" {
			return refuse("--adaptive-softmax-cutoff "+cut, "the adaptive softmax (--criterion adaptive_loss) is not supported")
		}
	}
	if has(shapes, "decoder.adaptive_softmax.head.weight") {
		return refuse("--adaptive-softmax-cutoff", "the adaptive softmax is not supported")
	}
	cfg.Arch = FairseqLSTM
	switch att := fmt.Sprint(args["decoder_attention"]); strings.ToLower(att) {
	case "1", "true", "<nil>":
	case "0", "false":
		cfg.Arch = FairseqLSTMNoAttention
	default:
		return refuse("--decoder-attention "+att, "want 1 or 0 (True or False)")
	}
	cfg.Bidirectional = optBool(args, "encoder_bidirectional")
	cfg.TiedOutput = optBool(args, "share_decoder_input_output_embed") || optBool(args, "share_all_embeddings")

	m, err := matrices(shapes, "fairseq checkpoint", fairseqSrcEmb, fairseqTgtEmb, "encoder.lstm.weight_hh_l0", "decoder.layers.0.weight_hh")
	if err != nil {
		return cfg, nil, err
	}
	src, tgt, ehh, dhh := m[0], m[1], m[2], m[3]
	cfg.SrcVocab, cfg.Embedding = int(src[0]), int(src[1])
	cfg.TgtVocab, cfg.TgtEmbedding = int(tgt[0]), int(tgt[1])
	cfg.EncoderHidden, cfg.Hidden = int(ehh[1]), int(dhh[1])
	if err := checkGates(ehh, LSTM, "fairseq's LSTMModel"); err != nil {
		return cfg, nil, err
	}
	cfg.EncoderLayers, cfg.Layers = countLayers(shapes, "encoder.lstm.weight_ih_l%d"), countLayers(shapes, "decoder.layers.%d.weight_ih")
	cfg.OutEmbedding = cfg.Hidden
	if d, ok := shapes["decoder.additional_fc.weight"]; ok && len(d) == 2 {
		cfg.OutEmbedding = int(d[0])
	}
	if cfg.Bidirectional != has(shapes, "encoder.lstm.weight_hh_l0_reverse") {
		return cfg, nil, fmt.Errorf("fairseq option --encoder-bidirectional is %v, but the checkpoint's encoder.lstm keys say otherwise", cfg.Bidirectional)
	}
	for _, c := range []struct {
		what, key string
		has       int
	}{{"--encoder-embed-dim", "encoder_embed_dim", cfg.Embedding}, {"--decoder-embed-dim", "decoder_embed_dim", cfg.TgtEmbedding},
		{"--encoder-hidden-size", "encoder_hidden_size", cfg.EncoderHidden}, {"--decoder-hidden-size", "decoder_hidden_size", cfg.Hidden},
		{"--encoder-layers", "encoder_layers", cfg.EncoderLayers}, {"--decoder-layers", "decoder_layers", cfg.Layers},
		{"--decoder-out-embed-dim", "decoder_out_embed_dim", cfg.OutEmbedding}} {
		if v, ok := optInt(args, c.key); ok && v > 0 && v != c.has {
			return cfg, nil, fmt.Errorf("fairseq option %s is %d, but the checkpoint's weights have %d: is this the checkpoint's own cfg?", c.what, v, c.has)
		}
	}
	cfg = cfg.omitDefaults()
	return cfg, notes, cfg.Validate()
}
