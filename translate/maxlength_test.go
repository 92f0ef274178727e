package translate

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
)

// TestTutorialLocationRefusesLongSources: a tutorial-location decoder
// attends over max_length M positions only. A source of M tokens
// translates with both engines; one of M+1 is refused before anything
// runs, with an InputError naming its row and M.
func TestTutorialLocationRefusesLongSources(t *testing.T) {
	needORT(t)
	cfg := attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 7, Embedding: 5, Layers: 1,
		SrcVocab: 11, TgtVocab: 9, MaxLength: 4}
	ckpt := filepath.Join(t.TempDir(), "tl.safetensors")
	fixtures.WriteRandomCheckpoint(t, ckpt, cfg, 3)
	w := fixtures.Weights(t, ckpt)
	dir := t.TempDir()
	writeModelDir(t, dir, w, modelSpec{special: attention.Special{SOS: 0, EOS: 1, PAD: 0, UNK: -1}, greedy: true})

	const want = "translate: input row 1: source of 5 tokens is longer than the model's max_length 4 (a tutorial-location decoder attends over 4 positions only)"
	for _, engine := range []string{EngineSteps, EngineLoop} {
		t.Run(engine, func(t *testing.T) {
			tr, err := Open(dir, Options{Threads: 1, Engine: engine, MaxLen: 6})
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			res, err := tr.TranslateIDs(context.Background(), [][]int64{{2, 3, 4, 5}, {2}})
			if err != nil {
				t.Fatalf("sources of M and 1 tokens: %v", err)
			}
			if len(res) != 2 || len(res[0].Tokens) == 0 || len(res[1].Tokens) == 0 {
				t.Fatalf("results %+v", res)
			}
			_, err = tr.TranslateIDs(context.Background(), [][]int64{{2, 3}, {2, 3, 4, 5, 6}})
			var ie *InputError
			if !errors.As(err, &ie) || ie.Row != 1 || ie.Position != -1 || err.Error() != want {
				t.Fatalf("source of M+1 tokens: %v\nwant %s", err, want)
			}
		})
	}
}
