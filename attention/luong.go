package attention

import (
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// luong is the article's multiplicative decoder (spec: "Decoder step:
// Luong"), one architecture per scoring function:
//
//	out, state' = RNN(e, state); q = out (the top layer's new state)
//	score_s = dot:     enc_s . q
//	          general: enc_s . (W_a q)
//	          concat:  tanh(W_a (q + enc_s)) . w   (W_a applied to the sum)
//	a = softmax(score), -inf past the length; ctx = sum_s a_s enc_s
//	log_probs = log_softmax([q ; ctx] W_cls^T + b_cls)
//
// Keys: decoder.attention.fc.weight (W_a; general and concat),
// decoder.attention.weight (w; concat), decoder.classifier.* (Vt x 2H).
// Nothing is computed once per sentence: the score needs this step's q.
type luong struct {
	encoderFinal
	arch Arch
}

func (l luong) Name() Arch { return l.arch }

func (l luong) Evidence() string {
	switch l.arch {
	case LuongConcat:
		return "decoder.attention.fc.weight and decoder.attention.weight"
	case LuongGeneral:
		return "decoder.attention.fc.weight, no decoder.attention.weight"
	}
	return "decoder.classifier.weight, no decoder.fc_hidden.* and no decoder.attention.*"
}

func (l luong) Detect(shapes map[string][]int64) bool {
	fc, w := has(shapes, "decoder.attention.fc.weight"), has(shapes, "decoder.attention.weight")
	switch l.arch {
	case LuongConcat:
		return fc && w
	case LuongGeneral:
		return fc && !w
	}
	return has(shapes, "decoder.classifier.weight") && !has(shapes, "decoder.fc_hidden.weight") && !hasPrefix(shapes, "decoder.attention.")
}

func (l luong) DecoderKeys() []layout.Key {
	keys := []layout.Key{
		key("decoder.classifier.weight", "over [q; ctx]", "Vt", "2H"),
		key("decoder.classifier.bias", "", "Vt"),
	}
	if l.arch != LuongDot {
		keys = append(keys, key("decoder.attention.fc.weight", "W_a, no bias", "H", "H"))
	}
	if l.arch == LuongConcat {
		keys = append(keys, key("decoder.attention.weight", "the score vector w", "1", "H"))
	}
	return append(keys, articleUnused()...)
}

func (luong) DecoderInput() (string, string) { return "E", "" }

func (luong) sizes(map[string][]int64, *Config) error { return nil }

func (luong) precompute(*modelGraph, *builder.Value) *builder.Value { return nil }

func (l luong) step(s *modelGraph, in stepInputs) stepOutputs {
	next := s.decoderRNN(s.embed(in.ids), in.states.rnn(s.cfg.Cell))
	q := s.top(next.h) // [batch, H]: the top layer's output
	last := s.c.ints(-1)
	var score *builder.Value
	switch l.arch {
	case LuongDot, LuongGeneral:
		k := q
		if l.arch == LuongGeneral {
			k = s.linear(q, "decoder.attention.fc", false) // W_a q
		}
		score = ops.Squeeze(ops.MatMul(in.enc, ops.Unsqueeze(k, last)), last) // [batch, src_len]
	case LuongConcat:
		sum := ops.Add(in.enc, ops.Unsqueeze(q, s.c.ints(1)))
		proj := s.linear3D(sum, "decoder.attention.fc", false)
		score = ops.MatMul(ops.Tanh(proj), s.param("decoder.attention.weight", vector))
	}
	a, ctx := s.attend(score, in.mask, in.enc)
	return stepOutputs{logProbs: s.classify("decoder.classifier", ops.Concat(-1, q, ctx)), states: next.list(), attn: a}
}
