package translate

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
)

// TestAlignmentRules: a result's hard alignment follows fairseq's
// extract_hard_alignment under fairseq's rules (the source's </s> and
// padding neither chosen nor counted, the output's </s> left out) and is
// the attention's own argmax otherwise (every source position, the
// output's EOS left out); each hypothesis carries its own, and the JSON
// form holds them as [src, tgt] pairs even where the attention is dropped.
func TestAlignmentRules(t *testing.T) {
	// fairseq's dictionaries: <s> 0, <pad> 1, </s> 2, <unk> 3.
	sp := attention.Special{SOS: 0, PAD: 1, EOS: 2, UNK: 3}
	vocab := []string{"<s>", "<pad>", "</s>", "<unk>", "Leeds", "in", "admitted"}
	tr := &Translator{info: &modeldir.Info{Special: sp, SrcSuffix: []int64{2}}, tgtUNK: 3,
		src: newVocab(vocab, sp), tgt: newVocab(vocab, sp)}
	src := []int64{1, 6, 5, 4, 2} // <pad> admitted in Leeds </s>
	att := [][]float32{
		{0.1, 0.1, 0.1, 0.2, 0.5}, // </s> most, then Leeds
		{0.4, 0.3, 0.1, 0.1, 0.1}, // <pad> most, then admitted
		{0.1, 0.1, 0.6, 0.1, 0.1}, // in
		{0.1, 0.1, 0.1, 0.1, 0.6}, // the step of </s>
	}
	second := [][]float32{
		{0.1, 0.1, 0.6, 0.1, 0.1}, // in
		{0.1, 0.1, 0.1, 0.1, 0.6}, // the step of </s>
	}
	for _, c := range []struct {
		name        string
		so          searchOpts
		want, want2 []AlignmentLink
	}{
		{"fairseq", searchOpts{fairseq: true}, links(2, 0, 0, 1, 1, 2), links(1, 0)},
		{"attention", searchOpts{openNMT: true}, links(4, 0, 0, 1, 2, 2), links(2, 0)},
		{"attention, dropped", searchOpts{noAttention: true}, links(4, 0, 0, 1, 2, 2), links(2, 0)},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{Tokens: []int64{4, 6, 5, 2}, Attention: att, Hypotheses: []Hypothesis{
				{Tokens: []int64{4, 6, 5, 2}, Attention: att},
				{Tokens: []int64{5, 2}, Attention: second},
			}}
			tr.finish(&r, src, nil, c.so)
			if !reflect.DeepEqual(r.Alignment, c.want) || !reflect.DeepEqual(r.Hypotheses[0].Alignment, c.want) {
				t.Errorf("alignment %v, first hypothesis %v; want %v", r.Alignment, r.Hypotheses[0].Alignment, c.want)
			}
			if !reflect.DeepEqual(r.Hypotheses[1].Alignment, c.want2) {
				t.Errorf("second hypothesis' alignment %v, want %v", r.Hypotheses[1].Alignment, c.want2)
			}
			if c.so.noAttention && r.Attention != nil {
				t.Errorf("attention kept WithoutAttention")
			}
			b, err := json.Marshal(r.JSON("x"))
			if err != nil {
				t.Fatal(err)
			}
			var back struct {
				Alignment  [][2]int `json:"alignment"`
				Hypotheses []struct {
					Alignment [][2]int `json:"alignment"`
				} `json:"hypotheses"`
			}
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			if len(back.Alignment) != len(c.want) || back.Alignment[0] != [2]int{c.want[0].Src, c.want[0].Tgt} ||
				len(back.Hypotheses) != 2 || len(back.Hypotheses[1].Alignment) != len(c.want2) {
				t.Errorf("JSON %s: alignments not carried", b)
			}
		})
	}
}

// TestAlignmentWithoutAttention: a hypothesis whose search recorded no
// attention, or not one row per token, has no alignment, and its JSON
// none either.
func TestAlignmentWithoutAttention(t *testing.T) {
	sp := attention.Special{SOS: 0, PAD: 1, EOS: 2, UNK: 3}
	vocab := []string{"<s>", "<pad>", "</s>", "<unk>", "Leeds"}
	tr := &Translator{info: &modeldir.Info{Special: sp}, tgtUNK: 3, src: newVocab(vocab, sp), tgt: newVocab(vocab, sp)}
	for _, att := range [][][]float32{nil, {{1, 0}}} {
		r := Result{Tokens: []int64{4, 2}, Attention: att, Hypotheses: []Hypothesis{{Tokens: []int64{4, 2}}}}
		tr.finish(&r, []int64{4, 2}, nil, searchOpts{})
		if r.Alignment != nil {
			t.Errorf("attention %v: alignment %v, want none", att, r.Alignment)
		}
		if j := r.JSON("x"); j.Alignment != nil || j.Hypotheses[0].Alignment != nil {
			t.Errorf("attention %v: JSON alignment %v", att, j.Alignment)
		}
	}
}

// links is the alignment of src, tgt pairs.
func links(pairs ...int) []AlignmentLink {
	out := []AlignmentLink{}
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, AlignmentLink{Src: pairs[i], Tgt: pairs[i+1]})
	}
	return out
}
