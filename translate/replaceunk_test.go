package translate

import (
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/modeldir"
)

// TestReplaceUnkFairseqAlignment: under fairseq's rules an <unk> takes
// the source token it attends to most among the sentence's own tokens,
// as fairseq's extract_hard_alignment and replace_unk align it: the </s>
// fairseq appends to every source, and padding, are left out even where
// they hold the most attention. Under OpenNMT-py's rules every position
// counts, as its -replace_unk takes the attention's argmax.
func TestReplaceUnkFairseqAlignment(t *testing.T) {
	// fairseq's dictionaries: <s> 0, <pad> 1, </s> 2, <unk> 3.
	sp := attention.Special{SOS: 0, PAD: 1, EOS: 2, UNK: 3}
	vocab := []string{"<s>", "<pad>", "</s>", "<unk>", "Leeds", "in", "admitted"}
	tr := &Translator{info: &modeldir.Info{Special: sp, SrcSuffix: []int64{2}}, tgtUNK: 3,
		src: newVocab(vocab, sp), tgt: newVocab(vocab, sp)}
	src := []int64{6, 5, 4, 1, 2} // admitted in Leeds <pad> </s>
	att := [][]float32{
		{0.05, 0.1, 0.15, 0.3, 0.4}, // </s> most, then <pad>, then Leeds
		{0.6, 0.1, 0.1, 0.1, 0.1},   // admitted
		{0.1, 0.1, 0.1, 0.1, 0.6},   // the step of </s>
	}
	for _, c := range []struct {
		name string
		so   searchOpts
		want string
	}{
		{"fairseq", searchOpts{replaceUnk: true, fairseq: true}, "Leeds admitted"},
		{"opennmt", searchOpts{replaceUnk: true, openNMT: true}, "</s> admitted"},
	} {
		r := Result{Tokens: []int64{3, 3, 2}, Attention: att}
		tr.finish(&r, src, nil, c.so)
		if r.Text != c.want || r.OutputTokens[0] != vocab[map[string]int64{"fairseq": 4, "opennmt": 2}[c.name]] {
			t.Errorf("%s: text %q, output tokens %q; want %q", c.name, r.Text, r.OutputTokens, c.want)
		}
	}
}

// TestReplaceUnkRelease: a copy-attention model's <unk> takes the source
// word the attention's argmax falls on as the model's release of
// OpenNMT-py writes it. 2.x (onmt/translate/translation.py of 2.3.0)
// writes the example's raw word, Bebema, though the source vocabulary
// lacks it; 3.x (3.5.1) writes the source vocabulary's token, <unk>, and
// so do attnx's own rules on a 2.x model. A word in the vocabulary is the
// same in both.
func TestReplaceUnkRelease(t *testing.T) {
	// OpenNMT-py's vocabularies: <unk> 0, <blank> 1, <s> 2, </s> 3.
	sp := attention.Special{UNK: 0, PAD: 1, SOS: 2, EOS: 3}
	vocab := []string{"<unk>", "<blank>", "<s>", "</s>", "in", "Leeds"}
	v2 := &modeldir.Defaults{Rules: RulesOpenNMT, RulesVersion: 2}
	v3 := &modeldir.Defaults{Rules: RulesOpenNMT}
	src := []int64{4, 6, 5} // in Bebema Leeds: Bebema is id Vs + 0, the row's own word
	att := [][]float32{
		{0.1, 0.7, 0.2}, // Bebema
		{0.1, 0.2, 0.7}, // Leeds
		{0.6, 0.2, 0.2}, // the step of </s>
	}
	for _, c := range []struct {
		name     string
		defaults *modeldir.Defaults
		so       searchOpts
		want     string
	}{
		{"2.x", v2, searchOpts{replaceUnk: true, openNMT: true, onmt2: true}, "Bebema Leeds"},
		{"3.x", v3, searchOpts{replaceUnk: true, openNMT: true}, "<unk> Leeds"},
		{"2.x model, attnx's rules", v2, searchOpts{replaceUnk: true, onmt2: true}, "<unk> Leeds"},
		{"2.x, no replace_unk", v2, searchOpts{openNMT: true, onmt2: true}, "<unk> <unk>"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tr := &Translator{info: &modeldir.Info{Config: attention.Config{SrcVocab: len(vocab), TgtVocab: len(vocab)}, Special: sp, Defaults: c.defaults},
				tgtUNK: 0, copy: true, src: newVocab(vocab, sp), tgt: newVocab(vocab, sp)}
			r := Result{Tokens: []int64{0, 0, 3}, Attention: att}
			tr.finish(&r, src, []string{"Bebema"}, c.so)
			if r.Text != c.want {
				t.Errorf("text %q, want %q", r.Text, c.want)
			}
			if got := r.SourceTokens[1]; got != "Bebema" {
				t.Errorf("source token 1 %q, want the row's own word Bebema", got)
			}
		})
	}
}
