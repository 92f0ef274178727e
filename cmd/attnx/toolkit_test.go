package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

// toolkitFixture is a file of checkpoint/testdata/toolkits (written by
// make_toolkit_fixtures.py the way each toolkit saves a model).
func toolkitFixture(name string) string {
	return filepath.Join("..", "..", "checkpoint", "testdata", "toolkits", name)
}

// TestToolkitExportNoFlags exports each toolkit's file with no flags and
// checks what export reports and attnx.json records; then translates raw
// words with the OpenNMT-py and the chatbot model, again with no flags.
func TestToolkitExportNoFlags(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := t.TempDir()
	for _, tc := range []struct {
		file string
		want []string
	}{
		{"onmt_v3.pt", []string{"toolkit  OpenNMT-py 3.x", "arch     onmt-general", "encoder  LSTM bidirectional, outputs concatenated, h=2 per direction, 1 layer",
			"input feeding; initial state: the encoder's final states, directions concatenated per layer", "states   hidden [1, batch, 4], cell [1, batch, 4], input_feed [1, batch, 4]",
			"special  sos=2 eos=3 pad=1 unk=0"}},
		{"onmt_v2.pt", []string{"toolkit  OpenNMT-py 2.x"}},
		{"onmt_st/model.pt", []string{"OpenNMT-py .pt (vocab, opt) with model_step_100.safetensors", "weights read from model_step_100.safetensors"}},
		{"joey/best.ckpt", []string{"toolkit  JoeyNMT 2.3.0", "source   text is wrapped as [] + tokens + [3]", "decoding JoeyNMT 2.3.0: no <s> or <pad> in the output",
			"arch     joey-luong", "initial state: tanh(Linear) bridge of the top layer's final state"}},
		{"chatbot.tar", []string{"toolkit  PyTorch chatbot tutorial", "encoder  GRU bidirectional, outputs summed", "initial state: encoder_hidden[:1]", "special  sos=1 eos=2 pad=0 unk=unknown",
			"src-tok  the PyTorch chatbot tutorial's normalizeString, then words"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			out := filepath.Join(dir, strings.ReplaceAll(tc.file, "/", "_"))
			code, stdout, stderr := attnx("export", toolkitFixture(tc.file), "-o", out, "--greedy")
			if code != 0 {
				t.Fatalf("export: exit %d: %s", code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stdout, w) {
					t.Errorf("export's report lacks %q:\n%s", w, stdout)
				}
			}
			// inspect says the same of the file, writing nothing.
			code, stdout, stderr = attnx("inspect", toolkitFixture(tc.file))
			if code != 0 || !strings.Contains(stdout, "a checkpoint attnx export converts as follows") || !strings.Contains(stdout, tc.want[0]) {
				t.Errorf("inspect: exit %d\n%s%s", code, stdout, stderr)
			}
		})
	}
	for _, tc := range []struct{ dir, text, first string }{
		{"onmt_v3.pt", "a b w0", "a b w0 -> "},
		{"chatbot.tar", "hello there", "hello there -> "},
		// the tutorial's normalizeString, as its evaluate() applies it
		{"chatbot.tar", "Hello,  THERE -- how are yóu", "Hello,  THERE -- how are yóu -> "},
	} {
		code, stdout, stderr := attnx("translate", "--model", filepath.Join(dir, tc.dir), tc.text)
		if code != 0 || !strings.HasPrefix(stdout, tc.first) {
			t.Errorf("translate %s %q: exit %d, %q %s", tc.dir, tc.text, code, stdout, stderr)
		}
	}
}

func TestToolkitExportErrors(t *testing.T) {
	dir := t.TempDir()
	// A JoeyNMT checkpoint without its config.yaml beside it.
	ckpt, err := os.ReadFile(toolkitFixture("joey/best.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	lone := filepath.Join(dir, "best.ckpt")
	if err := os.WriteFile(lone, ckpt, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := attnx("export", lone, "-o", filepath.Join(dir, "out"))
	for _, want := range []string{"is a JoeyNMT checkpoint: its architecture and vocabularies are in the model directory's config.yaml (pass --config FILE)", filepath.Join(dir, "config.yaml")} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr %q; want %q", code, stderr, want)
		}
	}
	// With --config it exports.
	code, _, stderr = attnx("export", lone, "-o", filepath.Join(dir, "out"), "--config", toolkitFixture("joey/config.yaml"))
	if code != 0 {
		t.Errorf("--config: exit %d: %s", code, stderr)
	}
}

// TestToolkitBareStateDict exports an OpenNMT-py model's weights saved
// without its checkpoint dict (a safetensors of model and generator
// tensors): the architecture comes from the keys, with a note; a JoeyNMT
// model's bare weights get a message naming the files to export instead.
func TestToolkitBareStateDict(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := t.TempDir()
	bare := func(name, fixture string) string {
		sd, err := checkpoint.Load(toolkitFixture(fixture))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := checkpoint.WriteSafetensors(p, sd.Tensors, nil); err != nil {
			t.Fatal(err)
		}
		return p
	}
	code, stdout, stderr := attnx("export", bare("onmt.safetensors", "onmt_v3.pt"), "-o", filepath.Join(dir, "onmt"))
	for _, want := range []string{"state_dict without opt and vocab (architecture from the keys)", "arch     onmt-general", "input feeding", "special  sos=2 eos=3 pad=1 unk=0"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("exit %d, stdout lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	code, _, stderr = attnx("export", bare("joey.safetensors", "joey/best.ckpt"), "-o", filepath.Join(dir, "joey"))
	if code != 1 || !strings.Contains(stderr, "holds a JoeyNMT model's weights without the checkpoint dict JoeyNMT saves (model_state): export the model directory's best.ckpt") {
		t.Errorf("joey: exit %d: %s", code, stderr)
	}
}

// TestToolkitDiagnosis: a bentrevett model whose attributes were renamed
// gets the closest era's layout and the --map flags that fix it, and
// exports with them.
func TestToolkitDiagnosis(t *testing.T) {
	testenv.ORT(t, onnxrun.Init())
	dir := t.TempDir()
	// bentrevett's 2020 names with decoder.attention renamed decoder.attn_module.
	keys, err := attention.ExpectedKeys(attention.Config{Arch: attention.Bentrevett, Cell: attention.GRU, Hidden: 6, EncoderHidden: 4, Embedding: 3, Layers: 1, SrcVocab: 7, TgtVocab: 5, Bidirectional: true})
	if err != nil {
		t.Fatal(err)
	}
	tensors := map[string]*builder.Tensor{}
	for _, k := range keys {
		name := strings.Replace(k.Key, "decoder.attention.", "decoder.attn_module.", 1)
		vals := make([]float32, builder.NumElements(k.Dims))
		for i := range vals {
			vals[i] = float32(i%7) * 0.01
		}
		tensors[name] = builder.FloatTensor(k.Dims, vals)
	}
	path := filepath.Join(dir, "renamed.safetensors")
	if err := checkpoint.WriteSafetensors(path, tensors, nil); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := attnx("export", path, "-o", filepath.Join(dir, "m"))
	for _, want := range []string{"closest known layout: bentrevett/2020-names", "renaming fixes it: --map decoder.attn_module=decoder.attention"} {
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr lacks %q:\n%s", code, want, stderr)
		}
	}
	code, stdout, stderr := attnx("export", path, "-o", filepath.Join(dir, "m"), "--map", "decoder.attn_module=decoder.attention")
	if code != 0 || !strings.Contains(stdout, "arch     bentrevett") {
		t.Errorf("with --map: exit %d\n%s%s", code, stdout, stderr)
	}
}
