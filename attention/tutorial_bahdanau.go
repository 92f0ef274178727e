package attention

import (
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
)

// tutorialBahdanau is the decoder of the current version of PyTorch's
// seq2seq translation tutorial (AttnDecoderRNN with BahdanauAttention): the
// article's additive attention with biases, and the query taken before the
// step (spec: "PyTorch tutorial, current version"):
//
//	q = hidden[L-1]
//	score_s = Va . tanh(Wa q + b_Wa + Ua enc_s + b_Ua) + b_Va, -inf past the length
//	a = softmax(score); ctx = sum_s a_s enc_s
//	out, state' = RNN([e ; ctx], state)
//	log_probs = log_softmax(out W_out^T + b_out)
//
// b_Va adds the same number to every score, which the softmax cancels: it
// is checked but left out of the graph. Ua enc_s + b_Ua is computed once
// per sentence.
//
// Keys: decoder.attention.Wa.*, decoder.attention.Ua.* (H x H and H),
// decoder.attention.Va.* (1 x H and 1), decoder.out.*.
type tutorialBahdanau struct{ encoderFinal }

func (tutorialBahdanau) Name() Arch { return TutorialBahdanau }

func (tutorialBahdanau) Evidence() string {
	return "decoder.attention.Wa.*, decoder.attention.Ua.*, decoder.attention.Va.*, decoder.out.*"
}

func (tutorialBahdanau) Detect(shapes map[string][]int64) bool {
	return has(shapes, "decoder.attention.Wa.weight")
}

func (tutorialBahdanau) DecoderKeys() []layout.Key {
	return []layout.Key{
		key("decoder.attention.Wa.weight", "applied to the query", "H", "H"),
		key("decoder.attention.Wa.bias", "", "H"),
		key("decoder.attention.Ua.weight", "applied to encoder_outputs", "H", "H"),
		key("decoder.attention.Ua.bias", "", "H"),
		key("decoder.attention.Va.weight", "the score vector", "1", "H"),
		key("decoder.attention.Va.bias", "shifts every score equally (the softmax cancels it)", "1"),
		key("decoder.out.weight", "", "Vt", "H"),
		key("decoder.out.bias", "", "Vt"),
	}
}

func (tutorialBahdanau) DecoderInput() (string, string) { return "E+H", "[embedding; context]" }

func (tutorialBahdanau) sizes(map[string][]int64, *Config) error { return nil }

// precompute is Ua enc + b_Ua, [batch, src_len, H].
func (tutorialBahdanau) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	return s.linear3D(enc, "decoder.attention.Ua", true)
}

func (t tutorialBahdanau) step(s *modelGraph, in stepInputs) stepOutputs {
	keys := in.pre
	if keys == nil {
		keys = t.precompute(s, in.enc)
	}
	return additiveStep(s, in, keys, s.linear(s.top(in.states[0]), "decoder.attention.Wa", true), "decoder.attention.Va.weight", "decoder.out")
}
