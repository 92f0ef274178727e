package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
)

// TestInspectShowsArchAndCell: inspect of a model directory names the
// architecture, the cell and the sizes, max_length included.
func TestInspectShowsArchAndCell(t *testing.T) {
	for _, tc := range []struct {
		cfg  attention.Config
		want []string
	}{
		{attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 6, Embedding: 4, Layers: 1, SrcVocab: 9, TgtVocab: 8, MaxLength: 7},
			[]string{"  arch     tutorial-location\n", "  cell     gru\n", "  sizes    H=6 E=4 L=1 Vs=9 Vt=8 M=7 (max_length: longer sources cannot run)\n", "    hidden           float32 [1,batch,6]\n"}},
		{attention.Config{Arch: attention.LuongDot, Cell: attention.LSTM, Hidden: 5, Embedding: 5, Layers: 2, SrcVocab: 9, TgtVocab: 8},
			[]string{"  arch     luong-dot\n", "  cell     lstm\n", "  sizes    H=5 E=5 L=2 Vs=9 Vt=8\n", "    cell             float32 [2,batch,5]\n"}},
	} {
		dir := t.TempDir()
		ckpt := filepath.Join(dir, "model.safetensors")
		fixtures.WriteRandomCheckpoint(t, ckpt, tc.cfg, 1)
		model := filepath.Join(dir, "model")
		if code, _, errs := attnx("export", ckpt, "-o", model); code != 0 {
			t.Fatalf("%v: export: exit %d: %s", tc.cfg, code, errs)
		}
		code, out, errs := attnx("inspect", model)
		if code != 0 {
			t.Fatalf("%v: inspect: exit %d: %s", tc.cfg, code, errs)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("%v: inspect output lacks %q:\n%s", tc.cfg, w, out)
			}
		}
		if tc.cfg.Cell == attention.GRU && strings.Contains(out, "    cell ") {
			t.Errorf("a GRU model's graphs show a cell input or output:\n%s", out)
		}
	}
}

// TestInspectDefaults: inspect shows the decoding defaults export records,
// for a checkpoint and for the model directory.
func TestInspectDefaults(t *testing.T) {
	want := "  defaults beam 5 with OpenNMT-py's beam search, length penalty avg (alpha 1), max length min(250, 1.25 x n + 5), n the longest source of its batch (OpenNMT-py's, sorted by length, of 30 sentences) (attnx.json; flags and request fields override them)\n"
	code, out, errOut := attnx("inspect", "../../checkpoint/testdata/toolkits/onmt_v3.pt")
	if code != 0 || !strings.Contains(out, want) {
		t.Errorf("inspect onmt_v3.pt: exit %d, %s %s; want %q", code, out, errOut, want)
	}
	code, out, errOut = attnx("inspect", "../../checkpoint/testdata/toolkits/joey/best.ckpt")
	if want := "  defaults greedy, max length 1.5 x n, n the longest source of its batch (JoeyNMT's, in file order, of 64 sentences) (attnx.json"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("inspect joey best.ckpt: exit %d, %s %s; want %q", code, out, errOut, want)
	}
}
