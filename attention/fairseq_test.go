package attention

import (
	"strings"
	"testing"
)

// fairseqShapes are the key shapes of a fairseq LSTMModel: Vs 11, Vt 9,
// E 6, Et 5, h 7 (two directions: C 14), H 8, out 4, one layer.
func fairseqShapes() map[string][]int64 {
	return map[string][]int64{
		"encoder.embed_tokens.weight": {11, 6}, "encoder.lstm.weight_ih_l0": {28, 6}, "encoder.lstm.weight_hh_l0": {28, 7},
		"encoder.lstm.bias_ih_l0": {28}, "encoder.lstm.bias_hh_l0": {28},
		"encoder.lstm.weight_ih_l0_reverse": {28, 6}, "encoder.lstm.weight_hh_l0_reverse": {28, 7},
		"encoder.lstm.bias_ih_l0_reverse": {28}, "encoder.lstm.bias_hh_l0_reverse": {28},
		"decoder.embed_tokens.weight": {9, 5}, "decoder.layers.0.weight_ih": {32, 13}, "decoder.layers.0.weight_hh": {32, 8},
		"decoder.layers.0.bias_ih": {32}, "decoder.layers.0.bias_hh": {32},
		"decoder.encoder_hidden_proj.weight": {8, 14}, "decoder.encoder_hidden_proj.bias": {8},
		"decoder.encoder_cell_proj.weight": {8, 14}, "decoder.encoder_cell_proj.bias": {8},
		"decoder.attention.input_proj.weight": {14, 8}, "decoder.attention.output_proj.weight": {8, 22},
		"decoder.additional_fc.weight": {4, 8}, "decoder.additional_fc.bias": {4},
		"decoder.fc_out.weight": {9, 4}, "decoder.fc_out.bias": {9},
	}
}

// TestFairseqConfig: the options and the shapes give the Config, whose
// key layout is the checkpoint's; what attnx does not convert is refused
// naming the option.
func TestFairseqConfig(t *testing.T) {
	args := map[string]any{"arch": "lstm_wiseman_iwslt_de_en", "encoder_bidirectional": true, "decoder_attention": "1", "encoder_hidden_size": int64(7), "decoder_out_embed_dim": int64(4)}
	cfg, notes, err := FairseqConfig(FairseqOptions{Args: args}, fairseqShapes())
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Arch: FairseqLSTM, Cell: LSTM, Hidden: 8, Embedding: 6, TgtEmbedding: 5, Layers: 1, SrcVocab: 11, TgtVocab: 9, Bidirectional: true, EncoderHidden: 7, InputFeed: true, OutEmbedding: 4}
	if cfg != want || len(notes) != 0 {
		t.Fatalf("%+v (notes %q), want %+v", cfg, notes, want)
	}
	specs, err := ExpectedKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	shapes := fairseqShapes()
	if len(specs) != len(shapes) {
		t.Errorf("%d keys expected, the checkpoint has %d", len(specs), len(shapes))
	}
	for _, s := range specs {
		if d, ok := shapes[s.Key]; !ok || len(d) != len(s.Dims) || d[0] != s.Dims[0] || (len(d) == 2 && d[1] != s.Dims[1]) {
			t.Errorf("%s: expected %v, checkpoint %v", s.Key, s.Dims, d)
		}
	}
	for _, c := range []struct {
		name string
		edit func(a map[string]any, s map[string][]int64)
		want string
	}{
		{"transformer", func(a map[string]any, s map[string][]int64) {
			a["arch"] = "transformer"
			delete(s, "encoder.lstm.weight_ih_l0")
		}, "fairseq option --arch transformer: attnx converts fairseq's LSTM models (lstm, lstm_wiseman_iwslt_de_en, lstm_luong_wmt_en_de), not this one"},
		{"adaptive softmax", func(a map[string]any, _ map[string][]int64) {
			a["criterion"], a["adaptive_softmax_cutoff"] = "adaptive_loss", "100,200"
		},
			"fairseq option --adaptive-softmax-cutoff 100,200: the adaptive softmax (--criterion adaptive_loss) is not supported"},
		{"attention value", func(a map[string]any, _ map[string][]int64) { a["decoder_attention"] = "maybe" }, "fairseq option --decoder-attention maybe: want 1 or 0"},
		{"direction", func(a map[string]any, _ map[string][]int64) { a["encoder_bidirectional"] = false }, "--encoder-bidirectional is false, but the checkpoint's encoder.lstm keys say otherwise"},
		{"size", func(a map[string]any, _ map[string][]int64) { a["decoder_hidden_size"] = int64(16) }, "fairseq option --decoder-hidden-size is 16, but the checkpoint's weights have 8"},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := map[string]any{}
			for k, v := range args {
				a[k] = v
			}
			s := fairseqShapes()
			c.edit(a, s)
			if _, _, err := FairseqConfig(FairseqOptions{Args: a}, s); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want %q", err, c.want)
			}
		})
	}
	// An architecture registered by the user on fairseq's LSTMModel
	// converts, with a note.
	a := map[string]any{"arch": "my_lstm", "encoder_bidirectional": true}
	if _, notes, err := FairseqConfig(FairseqOptions{Args: a}, fairseqShapes()); err != nil || len(notes) != 1 || !strings.Contains(notes[0], "--arch my_lstm is not one of fairseq's own") {
		t.Fatalf("my_lstm: %v, notes %q", err, notes)
	}
}
