package checkpoint

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nlpodyssey/gopickle/types"
)

// The fixtures of testdata/toolkits are written by make_toolkit_fixtures.py
// the way each toolkit saves a model.

func toolkitFile(name string) string { return filepath.Join("testdata", "toolkits", name) }

func TestReadOpenNMT(t *testing.T) {
	for _, tc := range []struct {
		file    string
		version int
		weights string
		src     []string
	}{
		{"onmt_v3.pt", 3, "", []string{"<unk>", "<blank>", "<s>", "</s>", "a", "b", "w0", "w1"}},
		{"onmt_v2.pt", 2, "", []string{"<unk>", "<blank>", "a", "b", "w0", "w1", "w2", "w3"}},
		{"onmt_st/model.pt", 3, "model_step_100.safetensors", []string{"<unk>", "<blank>", "<s>", "</s>", "w0", "w1", "w2", "w3"}},
	} {
		t.Run(tc.file, func(t *testing.T) {
			sd, err := Load(toolkitFile(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if sd.Origin == nil || sd.Origin.Toolkit != ToolkitOpenNMT {
				t.Fatalf("origin %+v, want an OpenNMT-py checkpoint", sd.Origin)
			}
			o, err := ReadOpenNMT(sd, toolkitFile(tc.file))
			if err != nil {
				t.Fatal(err)
			}
			if o.Version != tc.version || filepath.Base(o.WeightsFile) != filepath.Base(tc.weights) && tc.weights != "" {
				t.Errorf("version %d, weights %q; want %d, %q", o.Version, o.WeightsFile, tc.version, tc.weights)
			}
			if !slices.Equal(o.SrcVocab, tc.src) {
				t.Errorf("source vocabulary %q, want %q", o.SrcVocab, tc.src)
			}
			if o.TgtVocab[2] != "<s>" || o.TgtVocab[3] != "</s>" || o.DecoderStart != "<s>" {
				t.Errorf("target vocabulary %q, start %q", o.TgtVocab, o.DecoderStart)
			}
			if enc, _ := o.Opt["encoder_type"].(string); enc != "brnn" {
				t.Errorf("opt.encoder_type %v, want brnn", o.Opt["encoder_type"])
			}
			for _, k := range []string{"generator.weight", "generator.bias", "encoder.rnn.weight_ih_l0_reverse", "decoder.rnn.layers.0.weight_ih"} {
				tt, ok := sd.Tensors[k]
				if !ok {
					t.Fatalf("no tensor %s; have %v", k, sd.Keys)
				}
				if tt.Name != k {
					t.Errorf("tensor %s is named %q", k, tt.Name)
				}
			}
		})
	}
}

func TestReadOpenNMTSafetensorsErrors(t *testing.T) {
	dir := t.TempDir()
	pt, err := os.ReadFile(toolkitFile("onmt_st/model.pt"))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "run.pt")
	if err := os.WriteFile(path, pt, 0o644); err != nil {
		t.Fatal(err)
	}
	read := func() error {
		sd, err := Load(path)
		if err != nil {
			return err
		}
		_, err = ReadOpenNMT(sd, path)
		return err
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), "holds OpenNMT-py's options and vocabulary but no weights") {
		t.Errorf("no safetensors beside it: %v", err)
	}
	st, err := os.ReadFile(toolkitFile("onmt_st/model_step_100.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"run_step_100.safetensors", "run_step_200.safetensors"} {
		if err := os.WriteFile(filepath.Join(dir, n), st, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := read(); err == nil || !strings.Contains(err.Error(), "several safetensors files beside it could hold them") {
		t.Errorf("two candidates: %v", err)
	}
	os.Remove(filepath.Join(dir, "run_step_200.safetensors"))
	if err := read(); err != nil {
		t.Errorf("one candidate: %v", err)
	}
}

func TestReadChatbot(t *testing.T) {
	sd, err := Load(toolkitFile("chatbot.tar"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := ReadChatbot(sd, "chatbot.tar")
	if err != nil {
		t.Fatal(err)
	}
	if c.PAD != 0 || c.SOS != 1 || c.EOS != 2 || c.Iteration != 4000 {
		t.Errorf("specials %d/%d/%d, iteration %d", c.PAD, c.SOS, c.EOS, c.Iteration)
	}
	if want := []string{"PAD", "SOS", "EOS", "hello", "there", "how", "are", "you"}; !slices.Equal(c.Vocab, want) {
		t.Errorf("vocabulary %q, want %q", c.Vocab, want)
	}
	for _, k := range []string{"encoder.gru.weight_ih_l0_reverse", "decoder.out.weight", "embedding.weight", "encoder.embedding.weight"} {
		if _, ok := sd.Tensors[k]; !ok {
			t.Errorf("no tensor %s", k)
		}
	}
	if _, err := ReadOpenNMT(sd, "chatbot.tar"); err == nil || !strings.Contains(err.Error(), "not an OpenNMT-py checkpoint") {
		t.Errorf("read as OpenNMT-py: %v", err)
	}
}

func TestReadJoeyNMT(t *testing.T) {
	sd, err := Load(toolkitFile("joey/best.ckpt"))
	if err != nil {
		t.Fatal(err)
	}
	if sd.Origin == nil || sd.Origin.Toolkit != ToolkitJoeyNMT {
		t.Fatalf("origin %+v", sd.Origin)
	}
	j, err := ReadJoeyNMT(toolkitFile("joey/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if j.Version != "2.3.0" || j.Model.Decoder.Attention != "luong" || j.Model.Encoder.HiddenSize != 2 || *j.Model.Decoder.InputFeeding != true {
		t.Errorf("config %+v", j)
	}
	if want := []string{"<unk>", "<pad>", "<s>", "</s>", "w0", "w1", "w2", "w3"}; !slices.Equal(j.SrcVocab, want) {
		t.Errorf("source vocabulary %q, want %q", j.SrcVocab, want)
	}

	// A config whose vocabulary is nowhere: the error names every path tried.
	dir := t.TempDir()
	cfg, err := os.ReadFile(toolkitFile("joey/config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(cfg), `voc_file: "src_vocab.txt"`, `voc_file: "data/vocab.de"`, 1)
	p := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(p, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = ReadJoeyNMT(p)
	for _, want := range []string{`data.src.voc_file names the vocabulary "data/vocab.de", which is not at`, filepath.Join(dir, "data/vocab.de"), filepath.Join(dir, "src_vocab.txt")} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v, want %q", err, want)
		}
	}
	tr := strings.Replace(string(cfg), `type: "recurrent"`, `type: "transformer"`, 1)
	if err := os.WriteFile(p, []byte(tr), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadJoeyNMT(p); err == nil || !strings.Contains(err.Error(), "attnx converts recurrent models only") {
		t.Errorf("transformer: %v", err)
	}
	if _, err := ReadJoeyNMT(filepath.Join(dir, "missing.yaml")); err == nil || !strings.Contains(err.Error(), "missing.yaml") {
		t.Errorf("missing config: %v", err)
	}
}

func TestPlain(t *testing.T) {
	sd, err := Load(toolkitFile("onmt_v2.pt"))
	if err != nil {
		t.Fatal(err)
	}
	voc, ok := sd.Origin.Entries["vocab"].(map[string]any)
	if !ok {
		t.Fatalf("vocab entry %T", sd.Origin.Entries["vocab"])
	}
	field, ok := voc["tgt"].(*Object)
	if !ok || !strings.HasSuffix(field.Class, "TextMultiField") {
		t.Fatalf("vocab['tgt'] is %#v, want a TextMultiField object", voc["tgt"])
	}
	opt, ok := sd.Origin.Entries["opt"].(*Object)
	if !ok || opt.Class != "argparse.Namespace" {
		t.Fatalf("opt is %#v", sd.Origin.Entries["opt"])
	}
	if v, _ := opt.Attr("rnn_size"); v != int64(4) {
		t.Errorf("opt.rnn_size %#v, want 4", v)
	}
	if got := describePlain(opt); got != "an object of class argparse.Namespace" {
		t.Errorf("describePlain: %q", got)
	}
}

// TestToolkitSignatureSafetensorsOptim: OpenNMT-py 3.5.1's ModelSaver with
// -save_format safetensors writes {vocab, opt, optim} to the .pt
// (onmt/models/model_saver.py, _st_save): it is OpenNMT-py's, and its
// weights are looked for beside it (it was "no tensors in the pickle").
func TestToolkitSignatureSafetensorsOptim(t *testing.T) {
	entries := func(keys ...string) []types.DictEntry {
		var out []types.DictEntry
		for _, k := range keys {
			out = append(out, types.DictEntry{Key: k})
		}
		return out
	}
	for _, c := range []struct {
		keys []string
		want string
	}{
		{[]string{"vocab", "opt", "optim"}, ToolkitOpenNMT},
		{[]string{"model", "generator", "vocab", "opt", "optim"}, ToolkitOpenNMT},
		{[]string{"vocab", "opt"}, ""},
		{[]string{"model_state", "optimizer_state"}, ToolkitJoeyNMT},
	} {
		if got, _ := toolkitSignature(entries(c.keys...)); got != c.want {
			t.Errorf("%v: %q, want %q", c.keys, got, c.want)
		}
	}
}
