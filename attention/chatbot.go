package attention

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// chatbot is PyTorch's chatbot tutorial model (docs/toolkits.md, "PyTorch
// chatbot tutorial"), one architecture per score:
//
//	encoder: the shared embedding, bidirectional GRU (Le layers, H per
//	         direction), the two directions' outputs summed (C = H)
//	init:    hidden = encoder_hidden[:L], the first L entries of the
//	         final state in PyTorch's order (layer 0 forward, layer 0
//	         backward, layer 1 forward, ...), exactly as the tutorial
//	step:    q, hidden' = GRU(emb(y), hidden)   (attention after the step)
//	         score_s = dot: q.h_s   general: q.(W h_s + b)
//	                   concat: v.tanh(W [q; h_s] + b)
//	         a = softmax(score); c = sum_s a_s h_s
//	         log_probs = log_softmax(out(tanh(concat([q; c]))))
//
// The tutorial's softmax output becomes log_softmax (decoder.onnx gives
// log_probs); its argmax is the same. It masks nothing, which only
// matters in padded batches: attnx masks, so a row decodes as it does
// alone, which is how the tutorial decodes.
type chatbot struct {
	toolkitBase
	arch Arch
}

func (c chatbot) Name() Arch { return c.arch }

func (c chatbot) Evidence() string {
	switch c.arch {
	case ChatbotGeneral:
		return "a chatbot tutorial checkpoint (en, de, voc_dict) with de's attn.attn.weight [H H]"
	case ChatbotConcat:
		return "a chatbot tutorial checkpoint (en, de, voc_dict) with de's attn.attn.weight [H 2H] and attn.v"
	}
	return "a chatbot tutorial checkpoint (en, de, voc_dict) without attn.* keys in de"
}

func (c chatbot) DecoderKeys() []layout.Key {
	return c.checkpointKeys(Config{Arch: c.arch, Cell: GRU, Bidirectional: true}).graphKeys()
}

func (chatbot) DecoderInput() (string, string) { return "E", "" }

func (c chatbot) checkpointKeys(Config) toolkitKeys {
	k := toolkitKeys{srcEmb: "embedding.weight", tgtEmb: "embedding.weight", encRNN: "encoder.gru", decRNN: "decoder.gru", decIn: "E",
		params: []layout.Key{
			{Name: "encoder.embedding.weight", Shape: []string{"Vs", "E"}, Note: "the shared embedding, saved again in en", Optional: true},
			{Name: "decoder.embedding.weight", Shape: []string{"Vt", "E"}, Note: "the shared embedding, saved again in de", Optional: true},
		}}
	switch c.arch {
	case ChatbotGeneral:
		k.params = append(k.params, key("decoder.attn.attn.weight", "W", "H", "H"), key("decoder.attn.attn.bias", "b", "H"))
	case ChatbotConcat:
		k.params = append(k.params, key("decoder.attn.attn.weight", "W over [query; encoder output]", "H", "2H"), key("decoder.attn.attn.bias", "b", "H"),
			key("decoder.attn.v", "the score vector v (a Parameter)", "H"))
	}
	k.params = append(k.params,
		key("decoder.concat.weight", "over [rnn output; context]", "H", "2H"),
		key("decoder.concat.bias", "", "H"),
		key("decoder.out.weight", "", "Vt", "H"),
		key("decoder.out.bias", "", "Vt"))
	if c.arch != ChatbotConcat {
		return k
	}
	k.derive = func(p, _ map[string]*builder.Tensor) error {
		w := p["decoder.attn.attn.weight"]
		if w == nil || len(w.Dims) != 2 {
			return fmt.Errorf("parameter decoder.attn.attn.weight is missing")
		}
		if err := splitColumns(p, "decoder.attn.attn.weight", int(w.Dims[0]), "decoder.attn.attn_query", "decoder.attn.attn_keys"); err != nil {
			return err
		}
		p["decoder.attn.attn_keys.bias"] = p["decoder.attn.attn.bias"]
		delete(p, "decoder.attn.attn.weight")
		delete(p, "decoder.attn.attn.bias")
		v := *p["decoder.attn.v"]
		v.Dims = []int64{1, v.Dims[0]}
		p["decoder.attn.v"] = &v
		return nil
	}
	k.graph = []layout.Key{
		key("decoder.attn.attn_query.weight", "W's columns over the query", "H", "H"),
		key("decoder.attn.attn_keys.weight", "W's columns over the encoder outputs", "H", "H"),
		key("decoder.attn.attn_keys.bias", "", "H"),
		key("decoder.attn.v", "", "1", "H"),
		key("decoder.concat.weight", "", "H", "2H"),
		key("decoder.concat.bias", "", "H"),
		key("decoder.out.weight", "", "Vt", "H"),
		key("decoder.out.bias", "", "Vt"),
	}
	return k
}

// precompute is W h_s + b for general, W's encoder part plus b for
// concat: [batch, src_len, H].
func (c chatbot) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	switch c.arch {
	case ChatbotGeneral:
		return s.linear3D(enc, "decoder.attn.attn", true)
	case ChatbotConcat:
		return s.linear3D(enc, "decoder.attn.attn_keys", true)
	}
	return nil
}

// initStates is the tutorial's encoder_hidden[:L].
func (chatbot) initStates(s *modelGraph, _ *builder.Value, final rnnState) decState {
	return decState{ops.Slice(final.h, s.c.ints(0), s.c.ints(int64(s.cfg.Layers)), s.c.ints(0), nil)}
}

func (c chatbot) step(s *modelGraph, in stepInputs) stepOutputs {
	next := s.decoderRNN(s.embed(in.ids), rnnState{h: in.states[0]})
	q := s.top(next.h)
	keys := in.pre
	if keys == nil && c.arch != ChatbotDot {
		keys = c.precompute(s, in.enc)
	}
	var score *builder.Value
	switch c.arch {
	case ChatbotDot:
		score = s.dotScore(in.enc, q)
	case ChatbotGeneral:
		score = s.dotScore(keys, q)
	case ChatbotConcat:
		score = s.additiveScore(keys, s.linear(q, "decoder.attn.attn_query", false), "decoder.attn.v")
	}
	a, ctx := s.attend(score, in.mask, in.enc)
	co := ops.Tanh(s.linear(ops.Concat(-1, q, ctx), "decoder.concat", true))
	return stepOutputs{logProbs: s.logProbs("decoder.out", co, true), states: decState{next.h}, attn: a}
}

// ChatbotModel reads the chatbot tutorial's model from its checkpoint's
// tensors, keyed as the reader flattens the checkpoint dict: en's under
// "encoder.", de's under "decoder.", the shared embedding's under
// "embedding." (taken from en's copy when the checkpoint has no
// "embedding" entry). The score follows from de's keys; the sizes from
// the shapes.
func ChatbotModel(tensors map[string]*builder.Tensor, opt Options) (*Weights, []string, error) {
	t := make(map[string]*builder.Tensor, len(tensors))
	for k, v := range tensors {
		t[k] = v
	}
	if _, ok := t["embedding.weight"]; !ok {
		if v, ok := t["encoder.embedding.weight"]; ok {
			t["embedding.weight"] = v
		}
	}
	emb, ok := t["embedding.weight"]
	if !ok || len(emb.Dims) != 2 {
		return nil, nil, keysError("chatbot checkpoint has no embedding.weight [V H] (nor en's embedding.weight)")
	}
	arch := ChatbotDot
	if w, ok := t["decoder.attn.attn.weight"]; ok {
		arch = ChatbotGeneral
		if len(w.Dims) == 2 && w.Dims[1] == 2*w.Dims[0] {
			arch = ChatbotConcat
		}
	}
	layers := func(prefix string) int {
		n := 0
		for k := range t {
			if rest, ok := strings.CutPrefix(k, prefix+".weight_ih_l"); ok {
				if i, err := strconv.Atoi(strings.TrimSuffix(rest, "_reverse")); err == nil && i+1 > n {
					n = i + 1
				}
			}
		}
		return n
	}
	le, ld := layers("encoder.gru"), layers("decoder.gru")
	if le == 0 || ld == 0 {
		return nil, nil, keysError("chatbot checkpoint lacks en's or de's GRU (encoder.gru.weight_ih_l0, decoder.gru.weight_ih_l0)")
	}
	if ld > 2*le {
		return nil, nil, fmt.Errorf("chatbot checkpoint: the decoder's %d layers start from encoder_hidden[:%d], but the encoder's %d bidirectional layers give %d states", ld, ld, le, 2*le)
	}
	H := int(emb.Dims[1])
	cfg := Config{Arch: arch, Cell: GRU, Bidirectional: true, Hidden: H, Embedding: H, Layers: ld, SrcVocab: int(emb.Dims[0]), TgtVocab: int(emb.Dims[0])}
	if le != ld {
		cfg.EncoderLayers = le
	}
	if out, ok := t["decoder.out.weight"]; ok && len(out.Dims) == 2 {
		cfg.TgtVocab = int(out.Dims[0])
	}
	return FromToolkit(cfg, t, opt)
}
