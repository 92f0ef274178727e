package subword

import (
	"testing"

	"github.com/attnx/attnx/moses"
)

// TestFairseqTextConventions: fairseq's sentencepiece decoding keeps an
// unknown token as "<unk>" (spm_decode writes " ⁇ "), and its Moses
// tokenizer splits hyphens and escapes by default, as the Spec says.
func TestFairseqTextConventions(t *testing.T) {
	d := fairseqDecoded{}
	for _, c := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"▁Ich", "<unk>", "rfe", "▁die", "▁Welt", "."}, "Ich<unk>rfe die Welt."},
		{[]string{"▁", "<unk>", "▁ist", "▁"}, "<unk> ist"},
		{nil, ""},
	} {
		if got := d.Decode(c.pieces); got != c.want {
			t.Errorf("Decode(%q) = %q, want %q", c.pieces, got, c.want)
		}
	}
	tok := moses.NewTokenizer("en")
	tok.AggressiveDash = true
	if got := tok.Tokenize(`An e-mail & "more"`); got != "An e @-@ mail &amp; &quot;more &quot;" && got != "An e @-@ mail &amp; &quot; more &quot;" {
		t.Errorf("aggressive, escaped: %q", got)
	}
	spec := Spec{Kind: KindSubwordNMT, File: "x", Pretokenizer: PretokenizeMoses, Lang: "en", MosesDashSplits: true}
	if err := spec.Check(); err != nil {
		t.Errorf("moses options with the moses pretokenizer: %v", err)
	}
	spec.Pretokenizer, spec.Lang = "", ""
	if err := spec.Check(); err == nil {
		t.Error("moses_dash_splits without the moses pretokenizer was accepted")
	}
	if err := (Spec{Kind: KindSubwordNMT, File: "x", Decode: DecodeFairseq}).Check(); err == nil {
		t.Error("decode fairseq with subword-nmt was accepted")
	}
}
