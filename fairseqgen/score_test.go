package fairseqgen

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/fairseqtest"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/translate"
)

// TestScoreReferenceMatchesFairseq runs Generate with ScoreReference on
// fairseq-long and the fairseq-generate data-bin and compares with
// fairseq-generate --score-reference's output (testdata/toolkits/
// fairseq-score, make_fairseq_score.sh): the same lines in the same
// order, texts and the BLEU line identical, scores within fairseqtest's
// tolerances; with --print-alignment or without a target side it is
// refused.
func TestScoreReferenceMatchesFairseq(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	m := filepath.Join(t.TempDir(), "m")
	if _, err := modeldir.Export("../testdata/toolkits/fairseq-long/checkpoint_best.pt", m, modeldir.Options{}); err != nil {
		t.Fatal(err)
	}
	tr, err := translate.Open(m, translate.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var buf bytes.Buffer
	if _, err := Generate(context.Background(), tr, filepath.Join(fixture, "data-bin"), Options{ScoreReference: true}, &buf); err != nil {
		t.Fatal(err)
	}
	c := fairseqtest.Compare(t, filepath.Join("..", "testdata", "toolkits", "fairseq-score", "score-reference"), buf.String())
	t.Logf("%d of %d lines identical, the others within tolerance", c.Identical, c.Lines)
	_, err = Generate(context.Background(), tr, filepath.Join(fixture, "data-bin"), Options{ScoreReference: true, PrintAlignment: AlignHard}, &buf)
	if err == nil || !strings.Contains(err.Error(), "--score-reference with --print-alignment") {
		t.Errorf("--score-reference --print-alignment: %v, want a refusal naming both", err)
	}
}
