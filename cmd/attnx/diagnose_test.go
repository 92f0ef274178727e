package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
)

// When the keys fit no known architecture, export's error goes on after
// the converter's message with the diagnosis: the keys found, the closest
// layout, and the --map flags that fix them. Checked word for word for
// PyTorch's tutorial saved as two files with its attention's Wa/Ua/Va
// renamed W1/W2/V, and for an unrelated model.
func TestExportDiagnosis(t *testing.T) {
	enc, dec := layoutFixture("tut_encoder.pt"), layoutFixture("tut_decoder_w1w2v.pt")
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"tutorial attention renamed", []string{"--encoder", enc, "--decoder", dec}, enc + " + " + dec +
			`: no known decoder architecture matches the checkpoint's decoder keys (decoder.attention.V.bias, decoder.attention.V.weight, decoder.attention.W1.bias, decoder.attention.W1.weight, decoder.attention.W2.bias, decoder.attention.W2.weight, decoder.embedding.weight, decoder.gru.bias_hh_l0, decoder.gru.bias_ih_l0, decoder.gru.weight_hh_l0, decoder.gru.weight_ih_l0, decoder.out.bias, ... (1 more)); known architectures and their keys: bahdanau: decoder.fc_hidden.weight, decoder.fc_encoder.weight, decoder.weight; luong-dot: decoder.classifier.weight, no decoder.fc_hidden.* and no decoder.attention.*; luong-general: decoder.attention.fc.weight, no decoder.attention.weight; luong-concat: decoder.attention.fc.weight and decoder.attention.weight; tutorial-location: decoder.attn.weight (M x (E+H)), decoder.attn_combine.*, decoder.out.*; tutorial-bahdanau: decoder.attention.Wa.*, decoder.attention.Ua.*, decoder.attention.Va.*, decoder.out.*
the checkpoint has 18 keys:
  encoder.embedding.weight [5 3]
  encoder.gru.weight_ih_l0 [9 3]
  encoder.gru.weight_hh_l0 [9 3]
  encoder.gru.bias_ih_l0 [9]
  encoder.gru.bias_hh_l0 [9]
  decoder.embedding.weight [6 3]
  decoder.attention.W1.weight [3 3]
  decoder.attention.W1.bias [3]
  decoder.attention.W2.weight [3 3]
  decoder.attention.W2.bias [3]
  decoder.attention.V.weight [1 3]
  decoder.attention.V.bias [1]
  decoder.gru.weight_ih_l0 [9 6]
  decoder.gru.weight_hh_l0 [9 3]
  decoder.gru.bias_ih_l0 [9]
  decoder.gru.bias_hh_l0 [9]
  decoder.out.weight [6 3]
  decoder.out.bias [6]
closest known layout: tutorial-bahdanau/gru (12 keys fit as named, 6 under other names)
  misnamed: decoder.attention.W1.weight [3 3] would be decoder.attention.Wa.weight
  misnamed: decoder.attention.W1.bias [3] would be decoder.attention.Wa.bias
  misnamed: decoder.attention.W2.weight [3 3] would be decoder.attention.Ua.weight
  misnamed: decoder.attention.W2.bias [3] would be decoder.attention.Ua.bias
  misnamed: decoder.attention.V.weight [1 3] would be decoder.attention.Va.weight
  misnamed: decoder.attention.V.bias [1] would be decoder.attention.Va.bias
renaming fixes it: --map decoder.attention.W1=decoder.attention.Wa --map decoder.attention.W2=decoder.attention.Ua --map decoder.attention.V=decoder.attention.Va
  check: decoder.attention.W1 and decoder.attention.W2 paired with decoder.attention.Wa and decoder.attention.Ua by name and order only: they have the same keys and shapes; if your model uses them the other way round, swap the --map targets
`},
		{"unrelated model", []string{layoutFixture("tiny_resnet.pt")}, layoutFixture("tiny_resnet.pt") +
			`: checkpoint is missing key encoder.embedding.weight: not an attention seq2seq state_dict (expected encoder.* and decoder.* keys as in the spec)
the checkpoint has 20 keys:
  conv1.weight [4 3 3 3]
  bn1.weight [4]
  bn1.bias [4]
  bn1.running_mean [4]
  bn1.running_var [4]
  bn1.num_batches_tracked []
  layer1.0.conv1.weight [4 4 3 3]
  layer1.0.bn1.weight [4]
  layer1.0.bn1.bias [4]
  layer1.0.bn1.running_mean [4]
  layer1.0.bn1.running_var [4]
  layer1.0.bn1.num_batches_tracked []
  layer1.0.conv2.weight [4 4 3 3]
  layer1.0.bn2.weight [4]
  layer1.0.bn2.bias [4]
  layer1.0.bn2.running_mean [4]
  layer1.0.bn2.running_var [4]
  layer1.0.bn2.num_batches_tracked []
  fc.weight [3 4]
  fc.bias [3]
no known layout is close (bahdanau/lstm, bahdanau/gru, luong-dot/lstm, luong-dot/gru, luong-general/lstm, luong-general/gru, luong-concat/lstm, luong-concat/gru, tutorial-location/lstm, tutorial-location/gru, tutorial-bahdanau/lstm, tutorial-bahdanau/gru): this looks like another kind of model.
The nearest, luong-dot/lstm, would use 2 of these keys (2 of them under other names) and lacks 10 of its own: encoder.embedding.weight [Vs E], encoder.lstm.weight_ih_l0 [4H E], encoder.lstm.weight_hh_l0 [4H H], encoder.lstm.bias_ih_l0 [4H], encoder.lstm.bias_hh_l0 [4H], decoder.embedding.weight [Vt E] and 4 more
`},
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
