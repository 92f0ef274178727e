package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/internal/fixtures"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// PyTorch's tutorial (current version) saved its way, two state_dicts,
// here with its attention renamed W1/W2/V and put back with --map: export
// shows the architecture, the GRU cell and the tutorial's special tokens
// with a note saying where they come from.
func TestExportTutorialTwoFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "m")
	code, out, errs := attnx("export", "--encoder", layoutFixture("tut_encoder.pt"), "--decoder", layoutFixture("tut_decoder_w1w2v.pt"), "-o", dir,
		"--map", "decoder.attention.W1=decoder.attention.Wa", "--map", "decoder.attention.W2=decoder.attention.Ua", "--map", "decoder.attention.V=decoder.attention.Va")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{
		"wrote " + dir + " from tut_encoder.pt + tut_decoder_w1w2v.pt\n",
		"  arch     tutorial-bahdanau\n  cell     gru\n  sizes    H=3 E=3 L=1 Vs=5 Vt=6\n  special  sos=0 eos=1 pad=0 unk=unknown\n",
		"         special tokens SOS 0, EOS 1, PAD 0: PyTorch's seq2seq tutorial's, the default for tutorial-bahdanau models (pass --sos/--eos/--pad to change them)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, _ = attnx("export", "--force", "--encoder", layoutFixture("tut_encoder.pt"), "--decoder", layoutFixture("tut_decoder_w1w2v.pt"), "-o", dir,
		"--map", "decoder.attention.W1=decoder.attention.Wa", "--map", "decoder.attention.W2=decoder.attention.Ua", "--map", "decoder.attention.V=decoder.attention.Va",
		"--sos", "2", "--eos", "3", "--pad", "4")
	if code != 0 || !strings.Contains(out, "  special  sos=2 eos=3 pad=4 unk=unknown\n") || strings.Contains(out, "special tokens") {
		t.Errorf("with --sos/--eos/--pad: exit %d\n%s", code, out)
	}
}

// attnx translate refuses a source longer than a tutorial-location
// model's max_length before running, naming the input and M, with either
// engine; a source of M tokens translates.
func TestTranslateTutorialLocationMaxLength(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	tmp := t.TempDir()
	ckpt := filepath.Join(tmp, "tl.safetensors")
	fixtures.WriteRandomCheckpoint(t, ckpt, attention.Config{Arch: attention.TutorialLocation, Cell: attention.GRU, Hidden: 6, Embedding: 4,
		Layers: 2, SrcVocab: 9, TgtVocab: 8, MaxLength: 4}, 5)
	dir := filepath.Join(tmp, "m")
	if code, out, errs := attnx("export", ckpt, "-o", dir, "--greedy"); code != 0 || !strings.Contains(out, "  sizes    H=6 E=4 L=2 Vs=9 Vt=8 M=4 (max_length: longer sources cannot run)\n") {
		t.Fatalf("export: exit %d\n%s%s", code, out, errs)
	}
	for _, engine := range []string{"steps", "loop"} {
		code, out, errs := attnx("translate", "--model", dir, "--engine", engine, "--max-len", "3", "--ids", "4 5 6 7")
		if code != 0 || !strings.HasPrefix(out, "4 5 6 7 -> ") {
			t.Errorf("%s, M tokens: exit %d, stdout %q, stderr %q", engine, code, out, errs)
		}
		code, out, errs = attnx("translate", "--model", dir, "--engine", engine, "--ids", "4 5", "--ids", "4 5 6 7 8")
		want := `attnx translate: --ids #2 ("4 5 6 7 8"): source of 5 tokens is longer than the model's max_length 4 (a tutorial-location decoder attends over 4 positions only)` + "\n"
		if code != 1 || errs != want || !strings.HasPrefix(out, "4 5 -> ") {
			t.Errorf("%s, M+1 tokens (the input before it translated): exit %d, stdout %q, stderr %q\nwant %q", engine, code, out, errs, want)
		}
	}
}
