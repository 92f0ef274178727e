package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// tutorialLocation is the decoder of PyTorch's seq2seq translation tutorial
// as published from 2017 to 2023 (AttnDecoderRNN with max_length): the
// attention weights come from the embedding and the state alone, over M =
// max_length positions (spec: "PyTorch tutorial, 2017-2023 version"):
//
//	q = hidden[L-1]  (state before this step)
//	w = softmax over M of ([e ; q] W_attn^T + b_attn)       [batch, M]
//	attention = w[:, :src_len], zero past each row's length
//	ctx = sum_s attention_s enc_s
//	x = relu([e ; ctx] W_comb^T + b_comb)
//	out, state' = RNN(x, state)
//	log_probs = log_softmax(out W_out^T + b_out)
//
// The tutorial's encoder_outputs buffer has M rows, zero past the sentence,
// so positions past the length add nothing to ctx: computing ctx from the
// zeroed attention reproduces that, whatever the decoder graph is given
// past each length. The weights do not sum to 1 over the source. Sources
// longer than M cannot run: Config.MaxLength records M so that callers
// refuse them first (Config.CheckSourceLength).
//
// Keys: decoder.attn.* (M x (E+H)), decoder.attn_combine.* (H x (E+H)),
// decoder.out.*. Nothing is computed once per sentence.
type tutorialLocation struct{ encoderFinal }

func (tutorialLocation) Name() Arch { return TutorialLocation }

func (tutorialLocation) Evidence() string {
	return "decoder.attn.weight (M x (E+H)), decoder.attn_combine.*, decoder.out.*"
}

func (tutorialLocation) Detect(shapes map[string][]int64) bool {
	return has(shapes, "decoder.attn.weight")
}

func (tutorialLocation) DecoderKeys() []layout.Key {
	return []layout.Key{
		key("decoder.attn.weight", "location scores over max_length M from [embedding; hidden]", "M", "E+H"),
		key("decoder.attn.bias", "", "M"),
		key("decoder.attn_combine.weight", "over [embedding; context]", "H", "E+H"),
		key("decoder.attn_combine.bias", "", "H"),
		key("decoder.out.weight", "", "Vt", "H"),
		key("decoder.out.bias", "", "Vt"),
	}
}

func (tutorialLocation) DecoderInput() (string, string) { return "H", "relu(attn_combine)" }

// sizes reads M from decoder.attn.weight's rows.
func (tutorialLocation) sizes(shapes map[string][]int64, cfg *Config) error {
	d := shapes["decoder.attn.weight"]
	if len(d) != 2 || d[0] < 1 {
		return fmt.Errorf("checkpoint key decoder.attn.weight: shape %v, expected [M E+H] with max_length M >= 1", d)
	}
	cfg.MaxLength = int(d[0])
	return nil
}

func (tutorialLocation) precompute(*modelGraph, *builder.Value) *builder.Value { return nil }

func (tutorialLocation) step(s *modelGraph, in stepInputs) stepOutputs {
	e := s.embed(in.ids)
	w := ops.Softmax(s.linear(ops.Concat(-1, e, s.top(in.states[0])), "decoder.attn", true), -1) // [batch, M]
	srcLen := ops.Shape(in.enc, ops.ShapeOpts{Start: 1, End: ops.Int(2)})
	first := s.c.ints(0)
	a := ops.Where(in.mask, ops.Slice(w, first, srcLen, s.c.ints(1), nil), s.c.scalarFloat(0)) // [batch, src_len]
	x := ops.Relu(s.linear(ops.Concat(-1, e, s.context(a, in.enc)), "decoder.attn_combine", true))
	next := s.decoderRNN(x, in.states.rnn(s.cfg.Cell))
	return stepOutputs{logProbs: s.classify("decoder.out", s.top(next.h)), states: next.list(), attn: a}
}
