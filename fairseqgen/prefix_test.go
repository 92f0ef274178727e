package fairseqgen

import (
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/internal/fairseqtest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestPrefixSize replays make_fairseq_prefix.sh: fairseq-generate
// --prefix-size 2 on the data-bin with fairseq-long (beam 5, and beam 1),
// each hypothesis starting with the reference's first two tokens and
// counting their log-probs: the same lines, scores within fairseqtest's
// tolerance, the same BLEU line.
func TestPrefixSize(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	model := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export(filepath.Join("..", "testdata", "toolkits", "fairseq-long", "checkpoint_best.pt"), model, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		beam int
	}{{"prefix2", 5}, {"prefix2-beam1", 1}} {
		t.Run(c.name, func(t *testing.T) {
			v := Variant{Translate: translate.Options{Beam: c.beam, NBest: 1}, DataBin: "data-bin", Generate: Options{PrefixSize: 2, Beam: c.beam}}
			got := RunVariant(t, model, v)
			cmp := fairseqtest.Compare(t, filepath.Join("..", "testdata", "toolkits", "fairseq-prefix", c.name), got)
			t.Logf("%s: %d of %d lines identical, the others within tolerance; near ties %v", c.name, cmp.Identical, cmp.Lines, cmp.Ties)
		})
	}
}
