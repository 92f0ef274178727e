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
