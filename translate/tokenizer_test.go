package translate

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/subword"
)

// TestSubwordTokenizer translates raw text with a model whose attnx.json
// names a SentencePiece tokenizer: the source pieces are the tokenizer's
// (those outside the vocabulary become <unk> and are counted), and the
// output text is the output pieces joined by the tokenizer.
func TestSubwordTokenizer(t *testing.T) {
	needORT(t)
	f := fixtures.List(t)[0]
	dir, w := fixtureModel(t, f)
	sp, err := subword.LoadSentencePiece("../subword/testdata/unigram.model")
	if err != nil {
		t.Fatal(err)
	}
	vocab := func(n int) []string {
		v := []string{"<pad>", "<sos>", "<eos>", "<unk>"}
		for id := 3; len(v) < n; id++ {
			v = append(v, sp.Piece(id))
		}
		return v
	}
	info, err := modeldir.ReadInfo(filepath.Join(dir, "attnx.json"))
	if err != nil {
		t.Fatal(err)
	}
	info.SrcTokens, info.TgtTokens = vocab(w.Config.SrcVocab), vocab(w.Config.TgtVocab)
	spec := &subword.Spec{Kind: subword.KindSentencePiece, File: "sentencepiece.model"}
	info.SrcTokenizer, info.TgtTokenizer = spec, spec
	data, _ := os.ReadFile("../subword/testdata/unigram.model")
	os.WriteFile(filepath.Join(dir, spec.File), data, 0o644)
	writeInfo(t, dir, info)

	tr, err := Open(dir, Options{Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if !tr.HasTokenizer() {
		t.Fatal("HasTokenizer false")
	}
	text := "the GNU  General Public License, version 3"
	res, err := tr.Translate(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	index := map[string]bool{}
	for _, tok := range info.SrcTokens {
		index[tok] = true
	}
	var want []string
	unknown := 0
	for _, p := range sp.Encode(text) {
		if !index[p] {
			p = "<unk>"
			unknown++
		}
		want = append(want, p)
	}
	if unknown == 0 || unknown == len(want) {
		t.Fatalf("test text has %d of %d pieces unknown: want some of each", unknown, len(want))
	}
	if !reflect.DeepEqual(res[0].SourceTokens, want) {
		t.Errorf("source pieces %q, want %q", res[0].SourceTokens, want)
	}
	if got := tr.UnknownPieces(); got != int64(unknown) {
		t.Errorf("UnknownPieces %d, want %d", got, unknown)
	}
	// Random weights often stop at once: join the outputs of several
	// inputs, at least one of which says something.
	others, err := tr.Translate(context.Background(), []string{"of this License", "copyright holder", "any later version", "permission", "Software Foundation"})
	if err != nil {
		t.Fatal(err)
	}
	said := 0
	for _, r := range append(res, others...) {
		var out []string
		for _, id := range r.Tokens {
			if id != f.EOS && id != f.PAD && id != f.SOS {
				out = append(out, info.TgtTokens[id])
			}
		}
		if r.Text != sp.Decode(out) {
			t.Errorf("text %q, want the pieces %q joined: %q", r.Text, out, sp.Decode(out))
		}
		if r.Text != "" {
			said++
			t.Logf("pieces %q -> %q -> %q", r.SourceTokens, r.OutputTokens, r.Text)
		}
	}
	if said == 0 {
		t.Fatal("no input gave any output text: nothing checked the joining")
	}
}
