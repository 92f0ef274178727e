package translate

import (
	"context"
	"reflect"
	"testing"

	"github.com/attnx/attnx/attention"
)

// TestPadOutsideSourceVocabulary is the regression test for source padding:
// PAD is a target-side id, and with --pad it may lie outside the source
// vocabulary (here PAD = 15 >= Vs = 10). Ragged batches must still decode,
// in both engines, to what each row decodes alone (no padding at all).
func TestPadOutsideSourceVocabulary(t *testing.T) {
	needORT(t)
	cfg := attention.Config{Arch: attention.LuongGeneral, Hidden: 8, Layers: 2, SrcVocab: 10, TgtVocab: 20}
	w, _, err := attention.FromStateDict(randomStateDict(cfg, 5), attention.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sp := attention.Special{SOS: 1, EOS: 2, PAD: 15, UNK: 3}
	dir := t.TempDir()
	writeModelDir(t, dir, w, modelSpec{special: sp, greedy: true})
	rows := [][]int64{{4, 5, 6, 7, 8, 9}, {9}, {4, 4, 8}, {7, 6}}
	for _, engine := range []string{EngineSteps, EngineLoop} {
		tr, err := Open(dir, Options{Threads: 1, Engine: engine})
		if err != nil {
			t.Fatal(err)
		}
		got, err := tr.TranslateIDs(context.Background(), rows)
		if err != nil {
			t.Fatalf("%s: a ragged batch with PAD %d >= Vs %d: %v", engine, sp.PAD, cfg.SrcVocab, err)
		}
		for r, row := range rows {
			alone, err := tr.TranslateIDs(context.Background(), [][]int64{row})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got[r].Tokens, alone[0].Tokens) {
				t.Errorf("%s row %d: %v in the batch, %v alone", engine, r, got[r].Tokens, alone[0].Tokens)
			}
			if len(got[r].Tokens) == 0 {
				t.Errorf("%s row %d: no tokens", engine, r)
			}
		}
		tr.Close()
	}
}
