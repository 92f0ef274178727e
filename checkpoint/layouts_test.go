package checkpoint

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
)

// s2sKeys are the keys of the article's Seq2Seq (LSTM encoder, Bahdanau
// decoder, H=2, Vs=5, Vt=6, L=1) that make_fixtures.py saves every way, in
// model.state_dict() order, with their shapes.
var s2sKeys = []KeyShape{
	{"encoder.embedding.weight", []int64{5, 2}},
	{"encoder.lstm.weight_ih_l0", []int64{8, 2}},
	{"encoder.lstm.weight_hh_l0", []int64{8, 2}},
	{"encoder.lstm.bias_ih_l0", []int64{8}},
	{"encoder.lstm.bias_hh_l0", []int64{8}},
	{"decoder.weight", []int64{1, 2}},
	{"decoder.embedding.weight", []int64{6, 2}},
	{"decoder.fc_hidden.weight", []int64{2, 2}},
	{"decoder.fc_encoder.weight", []int64{2, 2}},
	{"decoder.attn_combine.weight", []int64{2, 4}},
	{"decoder.attn_combine.bias", []int64{2}},
	{"decoder.lstm.weight_ih_l0", []int64{8, 4}},
	{"decoder.lstm.weight_hh_l0", []int64{8, 2}},
	{"decoder.lstm.bias_ih_l0", []int64{8}},
	{"decoder.lstm.bias_hh_l0", []int64{8}},
	{"decoder.classifier.weight", []int64{6, 2}},
	{"decoder.classifier.bias", []int64{6}},
}

// checkFilled asserts make_fixtures.py's fill(): the k-th tensor of
// state_dict() holds k + 0.125*j - 1 at flat index j.
func checkFilled(t *testing.T, sd *StateDict, want []KeyShape) {
	t.Helper()
	if got := sd.KeyShapes(); !reflect.DeepEqual(got, want) {
		t.Fatalf("keys and shapes\n  %v\nwant\n  %v", got, want)
	}
	for k, ks := range want {
		vals, _, err := sd.Float32(ks.Key)
		if err != nil {
			t.Fatal(err)
		}
		if tn := sd.Tensors[ks.Key]; tn.Name != ks.Key || tn.DType != builder.Float {
			t.Errorf("%s: tensor named %q of %v", ks.Key, tn.Name, tn.DType)
		}
		for j, v := range vals {
			if w := float32(k) + 0.125*float32(j) - 1; v != w {
				t.Fatalf("%s[%d] = %v, want %v", ks.Key, j, v, w)
			}
		}
	}
}

// Every container and layout of the article's model gives the same flat
// encoder./decoder. state dict, with notes saying what changed the names.
func TestLayouts(t *testing.T) {
	td := func(n string) string { return filepath.Join("testdata", n) }
	cases := []struct {
		name   string
		files  Files
		maps   []string
		format string
		notes  []string // exact, in order
	}{
		{"flat state_dict", Files{Path: td("s2s_flat.pt")}, nil, FormatPyTorch, nil},
		{"nested dicts", Files{Path: td("s2s_nested.pt")}, nil, FormatPyTorch,
			[]string{`joined the keys of nested dicts with ".": encoder.*, decoder.*`}},
		{"training checkpoint", Files{Path: td("s2s_training.pt")}, nil, FormatPyTorch,
			[]string{`tensors read from the top-level "model_state_dict" entry; other entries ignored: epoch, hparams, loss, optimizer_state_dict`}},
		{"DataParallel", Files{Path: td("s2s_dataparallel.pt")}, nil, FormatPyTorch,
			[]string{`removed the prefix "module." in front of encoder./decoder.: the model was wrapped in DataParallel or DistributedDataParallel`}},
		{"Lightning", Files{Path: td("s2s_lightning.ckpt")}, nil, FormatPyTorch, []string{
			`tensors read from the top-level "state_dict" entry; other entries ignored: callbacks, epoch, global_step, hparams_name, hyper_parameters, loops, lr_schedulers, optimizer_states, pytorch-lightning_version`,
			`removed the prefix "model." in front of encoder./decoder.: the model was an attribute of a wrapper such as a LightningModule`}},
		{"two files", Files{Encoder: td("s2s_encoder.pt"), Decoder: td("s2s_decoder.pt")}, nil, FormatPyTorch,
			[]string{"s2s_encoder.pt: keys named encoder.*", "s2s_decoder.pt: keys named decoder.*"}},
		{"two whole modules", Files{Encoder: td("s2s_encoder_module.pt"), Decoder: td("s2s_decoder_module.pt")}, nil, FormatPyTorch, []string{
			"s2s_encoder_module.pt: read the whole pickled module __main__.EncoderLSTM without its class code: parameters and buffers named along _modules, as state_dict() names them",
			"s2s_encoder_module.pt: keys named encoder.*",
			"s2s_decoder_module.pt: read the whole pickled module __main__.BahdanauDecoder without its class code: parameters and buffers named along _modules, as state_dict() names them",
			"s2s_decoder_module.pt: keys named decoder.*"}},
		{"whole module", Files{Path: td("s2s_module.pt")}, nil, FormatPyTorch,
			[]string{"read the whole pickled module __main__.Seq2Seq without its class code: parameters and buffers named along _modules, as state_dict() names them"}},
		{"legacy state_dict", Files{Path: td("s2s_legacy.pt")}, nil, FormatPyTorchLegacy, nil},
		{"legacy whole module", Files{Path: td("s2s_legacy_module.pt")}, nil, FormatPyTorchLegacy,
			[]string{"read the whole pickled module __main__.Seq2Seq without its class code: parameters and buffers named along _modules, as state_dict() names them"}},
		{"safetensors DataParallel", Files{Path: td("s2s_dataparallel.safetensors")}, nil, FormatSafetensors,
			[]string{`removed the prefix "module." in front of encoder./decoder.: the model was wrapped in DataParallel or DistributedDataParallel`}},
		{"renamed attention with maps", Files{Path: td("s2s_renamed.pt")},
			[]string{"decoder.attention.W1=decoder.fc_hidden", "decoder.attention.W2=decoder.fc_encoder", "decoder.attention.V=decoder"}, FormatPyTorch, []string{
				"map decoder.attention.W1=decoder.fc_hidden renamed 1 key: decoder.attention.W1.weight -> decoder.fc_hidden.weight",
				"map decoder.attention.W2=decoder.fc_encoder renamed 1 key: decoder.attention.W2.weight -> decoder.fc_encoder.weight",
				"map decoder.attention.V=decoder renamed 1 key: decoder.attention.V.weight -> decoder.weight"}},
		{"maps after the wrapper is stripped", Files{Path: td("s2s_dataparallel.pt")},
			[]string{"decoder.classifier=decoder.out"}, FormatPyTorch, []string{
				`removed the prefix "module." in front of encoder./decoder.: the model was wrapped in DataParallel or DistributedDataParallel`,
				"map decoder.classifier=decoder.out renamed 2 keys: decoder.classifier.weight -> decoder.out.weight, decoder.classifier.bias -> decoder.out.bias"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var renames []Rename
			for _, m := range c.maps {
				r, err := ParseRename(m)
				if err != nil {
					t.Fatal(err)
				}
				renames = append(renames, r)
			}
			sd, err := LoadModel(c.files, renames)
			if err != nil {
				t.Fatal(err)
			}
			want := s2sKeys
			if c.name == "maps after the wrapper is stripped" {
				want = append([]KeyShape(nil), s2sKeys...)
				want[15].Key, want[16].Key = "decoder.out.weight", "decoder.out.bias"
			}
			checkFilled(t, sd, want)
			if sd.Format != c.format {
				t.Errorf("format %q, want %q", sd.Format, c.format)
			}
			if !reflect.DeepEqual(sd.Notes, c.notes) {
				t.Errorf("notes\n  %q\nwant\n  %q", sd.Notes, c.notes)
			}
		})
	}
}

// The tutorial's two files and an unrelated model load as they are (no
// wrapper to strip); the tutorial's keys get encoder./decoder.
func TestLayoutsOtherModels(t *testing.T) {
	sd, err := LoadModel(Files{Encoder: "testdata/tut_encoder.pt", Decoder: "testdata/tut_decoder_w1w2v.pt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, k := range sd.KeyShapes() {
		keys = append(keys, fmt.Sprintf("%s%v", k.Key, k.Shape))
	}
	want := "encoder.embedding.weight[5 3] encoder.gru.weight_ih_l0[9 3] encoder.gru.weight_hh_l0[9 3] encoder.gru.bias_ih_l0[9] encoder.gru.bias_hh_l0[9] " +
		"decoder.embedding.weight[6 3] decoder.attention.W1.weight[3 3] decoder.attention.W1.bias[3] decoder.attention.W2.weight[3 3] decoder.attention.W2.bias[3] " +
		"decoder.attention.V.weight[1 3] decoder.attention.V.bias[1] decoder.gru.weight_ih_l0[9 6] decoder.gru.weight_hh_l0[9 3] decoder.gru.bias_ih_l0[9] decoder.gru.bias_hh_l0[9] " +
		"decoder.out.weight[6 3] decoder.out.bias[6]"
	if got := strings.Join(keys, " "); got != want {
		t.Errorf("keys\n  %s\nwant\n  %s", got, want)
	}
	// fill() numbered each module's tensors from 0.
	if v, _, _ := sd.Float32("decoder.attention.W1.bias"); !reflect.DeepEqual(v, []float32{1, 1.125, 1.25}) {
		t.Errorf("decoder.attention.W1.bias = %v", v)
	}
	rn, err := LoadModel(Files{Path: "testdata/tiny_resnet.pt"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rn.Keys) != 20 || rn.Keys[0] != "conv1.weight" || rn.Keys[19] != "fc.bias" || len(rn.Notes) != 0 {
		t.Errorf("tiny_resnet.pt: keys %v, notes %q", rn.Keys, rn.Notes)
	}
	if nb := rn.Tensors["bn1.num_batches_tracked"]; nb == nil || nb.DType != builder.Int64 || len(nb.Dims) != 0 {
		t.Errorf("bn1.num_batches_tracked: %+v", nb)
	}
}
