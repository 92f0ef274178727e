package attention

import (
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// bahdanau is the article's additive decoder (spec: "Decoder step:
// Bahdanau"):
//
//	q = hidden[L-1]  (the top layer's state before this step)
//	score_s = tanh(q W_h^T + enc_s W_e^T) . w, -inf past the length
//	a = softmax(score); ctx = sum_s a_s enc_s
//	out, state' = RNN([e ; ctx], state)
//	log_probs = log_softmax(out W_cls^T + b_cls)
//
// Keys: decoder.fc_hidden.weight (W_h), decoder.fc_encoder.weight (W_e),
// decoder.weight (w), decoder.classifier.*. enc W_e^T is computed once per
// sentence.
type bahdanau struct{ encoderFinal }

func (bahdanau) Name() Arch { return Bahdanau }

func (bahdanau) Evidence() string {
	return "decoder.fc_hidden.weight, decoder.fc_encoder.weight, decoder.weight"
}

func (bahdanau) Detect(shapes map[string][]int64) bool {
	return has(shapes, "decoder.fc_hidden.weight")
}

func (bahdanau) DecoderKeys() []layout.Key {
	return append([]layout.Key{
		key("decoder.fc_hidden.weight", "W_h, no bias", "H", "H"),
		key("decoder.fc_encoder.weight", "W_e, no bias", "H", "H"),
		key("decoder.weight", "the score vector w", "1", "H"),
		key("decoder.classifier.weight", "", "Vt", "H"),
		key("decoder.classifier.bias", "", "Vt"),
	}, articleUnused()...)
}

// articleUnused lists the article's attn_combine, which it declares but
// never uses: accepted and ignored.
func articleUnused() []layout.Key {
	return []layout.Key{
		{Name: "decoder.attn_combine.weight", Shape: []string{"H", "2H"}, Note: "declared by the article, never used", Optional: true},
		{Name: "decoder.attn_combine.bias", Shape: []string{"H"}, Note: "declared by the article, never used", Optional: true},
	}
}

func (bahdanau) DecoderInput() (string, string) { return "E+H", "[embedding; context]" }

func (bahdanau) sizes(map[string][]int64, *Config) error { return nil }

// precompute is encoder_outputs W_e^T, [batch, src_len, H].
func (bahdanau) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	return s.linear3D(enc, "decoder.fc_encoder", false)
}

func (b bahdanau) step(s *modelGraph, in stepInputs) stepOutputs {
	keys := in.pre
	if keys == nil {
		keys = b.precompute(s, in.enc)
	}
	return additiveStep(s, in, keys, s.linear(s.top(in.states[0]), "decoder.fc_hidden", false), "decoder.weight", "decoder.classifier")
}

// additiveStep is the step both Bahdanau decoders share, given keys (the
// projected encoder_outputs, [batch, src_len, H]) and qp (the projected
// query, [batch, H]): score_s = tanh(keys_s + qp) . v with v the vector
// called vKey, then the attention, the recurrent step on [e ; ctx] and the
// Linear called classifier on the top layer's output.
func additiveStep(s *modelGraph, in stepInputs, keys, qp *builder.Value, vKey, classifier string) stepOutputs {
	u := ops.Tanh(ops.Add(keys, ops.Unsqueeze(qp, s.c.ints(1)))) // [batch, src_len, H]
	score := ops.MatMul(u, s.param(vKey, vector))                // [batch, src_len]
	a, ctx := s.attend(score, in.mask, in.enc)
	next := s.decoderRNN(ops.Concat(-1, s.embed(in.ids), ctx), in.states.rnn(s.cfg.Cell))
	return stepOutputs{logProbs: s.classify(classifier, s.top(next.h)), states: next.list(), attn: a}
}
