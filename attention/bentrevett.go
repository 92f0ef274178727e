package attention

import (
	"fmt"
	"sort"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
	"github.com/attnx/attnx/ops"
)

// bentrevett is the decoder of bentrevett/pytorch-seq2seq's tutorial 3
// ("Neural Machine Translation by Jointly Learning to Align and
// Translate") and legacy tutorial 4 (the same model, masked):
//
//	encoder: embedding, bidirectional GRU (one layer, h per direction),
//	         outputs concatenated (C = 2h)
//	init:    hidden = tanh(fc([forward final; backward final]))  [1, batch, H]
//	step:    q = hidden (before the step)
//	         score_s = v . tanh(attn([q; enc_s]))   (v without bias)
//	         a = softmax(score) (masked past the length); w = sum_s a_s enc_s
//	         out, hidden' = GRU([emb(y); w], hidden)
//	         log_probs = log_softmax(fc_out([out; w; emb(y)]))
//
// The checkpoint is a plain state_dict; its keys changed names over the
// years (BentrevettKeys maps the four eras onto the 2020 names used
// here). attn's columns over enc_s are applied once per sentence.
type bentrevett struct{ toolkitBase }

func (bentrevett) Name() Arch { return Bentrevett }

func (bentrevett) Evidence() string {
	return "encoder.fc.*, encoder.rnn.*_reverse and decoder.attention.attn.* (or attn_fc), decoder.fc_out.* (or out)"
}

func (b bentrevett) DecoderKeys() []layout.Key {
	return b.checkpointKeys(Config{Arch: Bentrevett, Cell: GRU, Bidirectional: true}).graphKeys()
}

func (bentrevett) DecoderInput() (string, string) {
	return "Et+C", "[embedding; weighted encoder outputs]"
}

func (bentrevett) checkpointKeys(Config) toolkitKeys {
	return toolkitKeys{
		srcEmb: "encoder.embedding.weight", tgtEmb: "decoder.embedding.weight",
		encRNN: "encoder.rnn", decRNN: "decoder.rnn", decIn: "Et+C",
		params: []layout.Key{
			key("encoder.fc.weight", "over [forward final; backward final]", "H", "C"),
			key("encoder.fc.bias", "", "H"),
			key("decoder.attention.attn.weight", "over [hidden; encoder output]", "H", "H+C"),
			key("decoder.attention.attn.bias", "", "H"),
			key("decoder.attention.v.weight", "the score vector, no bias", "1", "H"),
			key("decoder.fc_out.weight", "over [output; weighted; embedded]", "Vt", "H+C+Et"),
			key("decoder.fc_out.bias", "", "Vt"),
		},
		derive: func(p, _ map[string]*builder.Tensor) error {
			w := p["decoder.attention.attn.weight"]
			if w == nil || len(w.Dims) != 2 {
				return fmt.Errorf("parameter decoder.attention.attn.weight is missing")
			}
			if err := splitColumns(p, "decoder.attention.attn.weight", int(w.Dims[0]), "decoder.attention.attn_query", "decoder.attention.attn_keys"); err != nil {
				return err
			}
			p["decoder.attention.attn_keys.bias"] = p["decoder.attention.attn.bias"]
			delete(p, "decoder.attention.attn.weight")
			delete(p, "decoder.attention.attn.bias")
			return nil
		},
		graph: []layout.Key{
			key("encoder.fc.weight", "", "H", "C"),
			key("encoder.fc.bias", "", "H"),
			key("decoder.attention.attn_query.weight", "attn's columns over the hidden state", "H", "H"),
			key("decoder.attention.attn_keys.weight", "attn's columns over the encoder outputs", "H", "C"),
			key("decoder.attention.attn_keys.bias", "attn's bias", "H"),
			key("decoder.attention.v.weight", "", "1", "H"),
			key("decoder.fc_out.weight", "", "Vt", "H+C+Et"),
			key("decoder.fc_out.bias", "", "Vt"),
		},
	}
}

// precompute is attn's part over the encoder outputs, with its bias:
// [batch, src_len, H].
func (bentrevett) precompute(s *modelGraph, enc *builder.Value) *builder.Value {
	return s.linear3D(enc, "decoder.attention.attn_keys", true)
}

func (bentrevett) initStates(s *modelGraph, _ *builder.Value, final rnnState) decState {
	top := s.topDirections(final.h, s.cfg.EncLayers(), s.cfg.EncHidden())
	return decState{s.repeatRows(ops.Tanh(s.linear(top, "encoder.fc", true)), 1)}
}

func (b bentrevett) step(s *modelGraph, in stepInputs) stepOutputs {
	keys := in.pre
	if keys == nil {
		keys = b.precompute(s, in.enc)
	}
	hidden := in.states[0]
	score := s.additiveScore(keys, s.linear(s.top(hidden), "decoder.attention.attn_query", false), "decoder.attention.v.weight")
	a, weighted := s.attend(score, in.mask, in.enc)
	e := s.embed(in.ids)
	next := s.decoderRNN(ops.Concat(-1, e, weighted), rnnState{h: hidden})
	out := s.top(next.h)
	lp := s.logProbs("decoder.fc_out", ops.Concat(-1, out, weighted, e), true)
	return stepOutputs{logProbs: lp, states: decState{next.h}, attn: a}
}

// bentrevettEras maps each era's key names onto the 2020 names.
var bentrevettEras = []struct {
	era    string
	rename map[string]string
}{
	{"2023 rewrite", map[string]string{"decoder.attention.attn_fc.weight": "decoder.attention.attn.weight", "decoder.attention.attn_fc.bias": "decoder.attention.attn.bias", "decoder.attention.v_fc.weight": "decoder.attention.v.weight"}},
	{"2018-19", map[string]string{"decoder.out.weight": "decoder.fc_out.weight", "decoder.out.bias": "decoder.fc_out.bias"}},
}

// IsBentrevett reports whether a state_dict's keys are those of
// bentrevett's tutorial 3/4 model, of any era.
func IsBentrevett(shapes map[string][]int64) bool {
	attn := has(shapes, "decoder.attention.attn.weight") || has(shapes, "decoder.attention.attn_fc.weight")
	return attn && has(shapes, "encoder.fc.weight", "encoder.rnn.weight_ih_l0_reverse")
}

// BentrevettModel reads a bentrevett tutorial 3/4 state_dict: it maps its
// era's key names onto one set (the 2018-19 and late-2019 score vector v,
// a Parameter [H], becomes v.weight [1, H]), infers the sizes from the
// shapes and converts it with FromToolkit. Notes say which era it was.
func BentrevettModel(tensors map[string]*builder.Tensor, opt Options) (*Weights, []string, error) {
	t := make(map[string]*builder.Tensor, len(tensors))
	for k, v := range tensors {
		t[k] = v
	}
	era := "2020"
	for _, e := range bentrevettEras {
		for from, to := range e.rename {
			if v, ok := t[from]; ok {
				delete(t, from)
				t[to] = v
				era = e.era
			}
		}
	}
	if v, ok := t["decoder.attention.v"]; ok {
		if len(v.Dims) != 1 {
			return nil, nil, fmt.Errorf("checkpoint key decoder.attention.v: shape %v, expected [H] (the score vector)", v.Dims)
		}
		c := *v
		c.Dims = []int64{1, v.Dims[0]}
		delete(t, "decoder.attention.v")
		t["decoder.attention.v.weight"] = &c
		if era == "2020" {
			era = "late 2019"
		}
	}
	shapes := map[string][]int64{}
	for k, v := range t {
		shapes[k] = v.Dims
	}
	m, err := matrices(shapes, "bentrevett tutorial 3/4 checkpoint", "encoder.embedding.weight", "decoder.embedding.weight", "encoder.rnn.weight_hh_l0", "encoder.fc.weight")
	if err != nil {
		return nil, nil, err
	}
	src, tgt, hh, fc := m[0], m[1], m[2], m[3]
	if hh[0] != 3*hh[1] {
		return nil, nil, fmt.Errorf("checkpoint key encoder.rnn.weight_hh_l0: shape %v, expected [3h h] (the tutorial's GRU)", hh)
	}
	cfg := Config{Arch: Bentrevett, Cell: GRU, Bidirectional: true, Layers: 1,
		SrcVocab: int(src[0]), Embedding: int(src[1]), TgtVocab: int(tgt[0]), TgtEmbedding: int(tgt[1]),
		EncoderHidden: int(hh[1]), Hidden: int(fc[0])}
	w, notes, err := FromToolkit(cfg.omitDefaults(), t, opt)
	if err != nil {
		return nil, nil, err
	}
	var renamed []string
	for k := range tensors {
		if _, ok := t[k]; !ok {
			renamed = append(renamed, k)
		}
	}
	sort.Strings(renamed)
	note := fmt.Sprintf("bentrevett/pytorch-seq2seq tutorial 3/4 model, %s key names", era)
	if len(renamed) > 0 {
		note += fmt.Sprintf(" (%d keys read under their 2020 names)", len(renamed))
	}
	return w, append([]string{note}, notes...), nil
}
