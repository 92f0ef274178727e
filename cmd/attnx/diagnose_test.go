package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
)

// When the keys fit no known architecture, export's error goes on after
// the converter's message with the diagnosis: the keys found, the closest
// layout, and the --map flags that fix them. For PyTorch's tutorial saved
// as two files with its attention's Wa/Ua/Va renamed W1/W2/V, and for an
// unrelated model, the message is checkpoint.Diagnose's against
// attention.Layouts (whose text package checkpoint's tests check word for
// word) after the converter's line; a renamed classifier is checked word
// for word here.
func TestExportDiagnosis(t *testing.T) {
	enc, dec := layoutFixture("tut_encoder.pt"), layoutFixture("tut_decoder_w1w2v.pt")
	diagnosis := func(f checkpoint.Files) string {
		sd, err := checkpoint.LoadModel(f, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, err := checkpoint.Diagnose(sd.KeyShapes(), attention.Layouts())
		if err != nil {
			t.Fatal(err)
		}
		return d.String() + "\n"
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"tutorial attention renamed", []string{"--encoder", enc, "--decoder", dec}, enc + " + " + dec +
			`: no known decoder architecture matches the checkpoint's decoder keys (decoder.attention.V.bias, decoder.attention.V.weight, decoder.attention.W1.bias, decoder.attention.W1.weight, decoder.attention.W2.bias, decoder.attention.W2.weight, decoder.embedding.weight, decoder.gru.bias_hh_l0, decoder.gru.bias_ih_l0, decoder.gru.weight_hh_l0, decoder.gru.weight_ih_l0, decoder.out.bias, ... (1 more)); known architectures and their keys: bahdanau: decoder.fc_hidden.weight, decoder.fc_encoder.weight, decoder.weight; luong-dot: decoder.classifier.weight, no decoder.fc_hidden.* and no decoder.attention.*; luong-general: decoder.attention.fc.weight, no decoder.attention.weight; luong-concat: decoder.attention.fc.weight and decoder.attention.weight; tutorial-location: decoder.attn.weight (M x (E+H)), decoder.attn_combine.*, decoder.out.*; tutorial-bahdanau: decoder.attention.Wa.*, decoder.attention.Ua.*, decoder.attention.Va.*, decoder.out.*
` + diagnosis(checkpoint.Files{Encoder: enc, Decoder: dec})},
		{"unrelated model", []string{layoutFixture("tiny_resnet.pt")}, layoutFixture("tiny_resnet.pt") +
			": checkpoint is missing key encoder.embedding.weight: not an attention seq2seq state_dict (expected encoder.* and decoder.* keys as in the spec)\n" +
			diagnosis(checkpoint.Files{Path: layoutFixture("tiny_resnet.pt")})},
		// A key renamed away: the precise message, then what would fix it.
		{"classifier renamed", []string{layoutFixture("s2s_flat.pt"), "--map", "decoder.classifier=decoder.cls"}, layoutFixture("s2s_flat.pt") +
			`: checkpoint has an unexpected key decoder.cls.bias [6]: not part of a bahdanau H=2 L=1 Vs=5 Vt=6 model
the checkpoint has 17 keys:
  encoder.embedding.weight [5 2]
  encoder.lstm.weight_ih_l0 [8 2]
  encoder.lstm.weight_hh_l0 [8 2]
  encoder.lstm.bias_ih_l0 [8]
  encoder.lstm.bias_hh_l0 [8]
  decoder.weight [1 2]
  decoder.embedding.weight [6 2]
  decoder.fc_hidden.weight [2 2]
  decoder.fc_encoder.weight [2 2]
  decoder.attn_combine.weight [2 4]
  decoder.attn_combine.bias [2]
  decoder.lstm.weight_ih_l0 [8 4]
  decoder.lstm.weight_hh_l0 [8 2]
  decoder.lstm.bias_ih_l0 [8]
  decoder.lstm.bias_hh_l0 [8]
  decoder.cls.weight [6 2]
  decoder.cls.bias [6]
closest known layout: bahdanau/lstm (15 keys fit as named, 2 under other names)
  misnamed: decoder.cls.weight [6 2] would be decoder.classifier.weight
  misnamed: decoder.cls.bias [6] would be decoder.classifier.bias
renaming fixes it: --map decoder.cls=decoder.classifier
`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "m")
			code, stdout, errs := attnx(append([]string{"export", "-o", out}, c.args...)...)
			if code != 1 || stdout != "" || errs != "attnx export: "+c.want {
				t.Errorf("exit %d, stdout %q, stderr\n%s\nwant\nattnx export: %s", code, stdout, errs, c.want)
			}
		})
	}
}

// A checkpoint whose keys fit a layout keeps its precise message alone:
// a wrong shape names the key and both shapes, with no diagnosis.
func TestExportPreciseMessageWithoutDiagnosis(t *testing.T) {
	sd, err := checkpoint.LoadModel(checkpoint.Files{Path: layoutFixture("s2s_flat.pt")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	sd.Tensors["decoder.classifier.bias"] = builder.FloatTensor([]int64{5}, make([]float32, 5))
	path := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := checkpoint.WriteSafetensors(path, sd.Tensors, nil); err != nil {
		t.Fatal(err)
	}
	code, _, errs := attnx("export", path, "-o", filepath.Join(t.TempDir(), "m"))
	want := "attnx export: " + path + ": checkpoint key decoder.classifier.bias: shape [5], expected [6] (Vt)\n"
	if code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q, want %q", code, errs, want)
	}
	if strings.Contains(errs, "closest known layout") {
		t.Error("a diagnosis was appended to a wrong-shape error")
	}
}
