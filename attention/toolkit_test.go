package attention

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
)

// onmtShapes are the key shapes of an OpenNMT-py checkpoint: a
// bidirectional 2-layer LSTM encoder (h=4), a 2-layer input-feed decoder
// (H=8), E=6, Vs=20, Vt=16.
func onmtShapes(inputFeed bool) map[string][]int64 {
	s := map[string][]int64{
		onmtSrcEmb: {20, 6}, onmtTgtEmb: {16, 6}, "generator.weight": {16, 8}, "generator.bias": {16},
		"encoder.rnn.weight_hh_l0": {16, 4}, "encoder.rnn.weight_ih_l0": {16, 6}, "encoder.rnn.weight_ih_l1": {16, 8},
	}
	if inputFeed {
		s["decoder.rnn.layers.0.weight_ih"], s["decoder.rnn.layers.1.weight_ih"] = []int64{32, 14}, []int64{32, 8}
	} else {
		s["decoder.rnn.weight_ih_l0"], s["decoder.rnn.weight_ih_l1"] = []int64{32, 6}, []int64{32, 8}
	}
	return s
}

func onmtOpt(over map[string]any) map[string]any {
	opt := map[string]any{"encoder_type": "brnn", "decoder_type": "rnn", "model_type": "text", "rnn_type": "LSTM",
		"global_attention": "general", "global_attention_function": "softmax", "input_feed": int64(1), "bridge": false,
		"enc_layers": int64(2), "dec_layers": int64(2), "enc_hid_size": int64(8), "dec_hid_size": int64(8)}
	for k, v := range over {
		opt[k] = v
	}
	return opt
}

func TestOpenNMTConfig(t *testing.T) {
	cfg, err := OpenNMTConfig(OpenNMTOptions{Opt: onmtOpt(nil), Version: 3}, onmtShapes(true))
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Arch: OpenNMTGeneral, Cell: LSTM, Hidden: 8, Embedding: 6, Layers: 2, SrcVocab: 20, TgtVocab: 16,
		Bidirectional: true, EncoderHidden: 4, InputFeed: true}
	if cfg != want {
		t.Fatalf("got %v, want %v", cfg, want)
	}
	if got := cfg.States(); len(got) != 3 || got[2] != (StateSpec{InInputFeed, 1, 8}) || got[0] != (StateSpec{InHidden, 2, 8}) {
		t.Errorf("states %v", got)
	}
	std, err := OpenNMTConfig(OpenNMTOptions{Opt: onmtOpt(map[string]any{"input_feed": int64(0), "global_attention": "mlp", "bridge": true}), Version: 3}, onmtShapes(false))
	if err != nil {
		t.Fatal(err)
	}
	if std.InputFeed || std.Arch != OpenNMTMLP || std.Bridge != "relu-linear" || len(std.States()) != 2 {
		t.Errorf("standard decoder: %v, states %v", std, std.States())
	}
}

func TestOpenNMTConfigRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		over map[string]any
		want string
	}{
		{"transformer", map[string]any{"encoder_type": "transformer"}, "option encoder_type transformer: attnx converts RNN encoders"},
		{"sru", map[string]any{"rnn_type": "SRU"}, "option rnn_type SRU"},
		{"copy attention of an unknown type", map[string]any{"copy_attn": true, "copy_attn_type": "none"}, "option copy_attn_type none: a copy attention is dot, general or mlp"},
		{"copy attention, no pad", map[string]any{"copy_attn": true, "reuse_copy_attn": true, "pad": int64(-1)}, "option copy_attn: the copy generator masks the target vocabulary's <blank>"},
		{"context gate of an unknown type", map[string]any{"context_gate": "all"}, "option context_gate all: OpenNMT-py's context gates are"},
		{"sparsemax", map[string]any{"global_attention_function": "sparsemax"}, "sparsemax is not supported"},
		{"no attention", map[string]any{"global_attention": "none"}, "option global_attention none"},
		{"source features", map[string]any{"n_src_feats": int64(2)}, "option n_src_feats: source features"},
		{"sizes disagree", map[string]any{"dec_hid_size": int64(512)}, "dec_hid_size is 512, but the checkpoint's weights have 8"},
		{"cell disagrees", map[string]any{"rnn_type": "GRU"}, "opt.rnn_type GRU has 3 gate blocks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pad := 1
			if p, ok := tc.over["pad"].(int64); ok {
				pad = int(p)
			}
			_, err := OpenNMTConfig(OpenNMTOptions{Opt: onmtOpt(tc.over), Version: 3, TgtPad: pad}, onmtShapes(true))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestOpenNMTConfigSummarization: the summarization recipe's options
// become the Config's copy attention (reused, or its copy_attn_type,
// which defaults to global_attention), context gate and coverage.
func TestOpenNMTConfigSummarization(t *testing.T) {
	shapes := onmtShapes(true)
	shapes["generator.linear.weight"], shapes["generator.linear.bias"] = shapes["generator.weight"], shapes["generator.bias"]
	delete(shapes, "generator.weight")
	delete(shapes, "generator.bias")
	for _, tc := range []struct {
		name string
		over map[string]any
		copy string
		gate string
		cov  bool
	}{
		{"recipe", map[string]any{"copy_attn": true, "reuse_copy_attn": true, "coverage_attn": true}, "reuse", "", true},
		{"copy attention of its own, default type", map[string]any{"copy_attn": true}, "general", "", false},
		{"copy attention of its own, mlp", map[string]any{"copy_attn": true, "copy_attn_type": "mlp", "context_gate": "source"}, "mlp", "source", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := OpenNMTConfig(OpenNMTOptions{Opt: onmtOpt(tc.over), Version: 3, TgtPad: 1}, shapes)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.CopyAttention != tc.copy || cfg.CopyPad != 1 || cfg.ContextGate != tc.gate || cfg.Coverage != tc.cov || cfg.TgtVocab != 16 {
				t.Errorf("got %v (pad %d)", cfg, cfg.CopyPad)
			}
		})
	}
	if _, err := OpenNMTConfig(OpenNMTOptions{Opt: onmtOpt(map[string]any{"context_gate": "target"}), Version: 3, TgtPad: 1}, onmtShapes(true)); err != nil {
		t.Errorf("a context gate without copy attention: %v", err)
	}
}

func joeyShapes() map[string][]int64 {
	return map[string][]int64{"src_embed.lut.weight": {20, 6}, "trg_embed.lut.weight": {16, 5},
		"encoder.rnn.weight_hh_l0": {15, 5}, "encoder.rnn.weight_ih_l0": {15, 6},
		"decoder.rnn.weight_hh_l0": {24, 8}, "decoder.rnn.weight_ih_l0": {24, 13}, "decoder.rnn.weight_ih_l1": {24, 8}}
}

func TestJoeyConfig(t *testing.T) {
	cfg, err := JoeyConfig(JoeyOptions{Attention: "luong", InitHidden: "zero", ScaleTgt: true}, joeyShapes())
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Arch: JoeyLuong, Cell: GRU, Hidden: 8, Embedding: 6, TgtEmbedding: 5, Layers: 2, EncoderLayers: 1, SrcVocab: 20, TgtVocab: 16,
		Bidirectional: true, EncoderHidden: 5, InputFeed: true, Bridge: "zero", ScaleTgtEmbedding: true}
	if cfg != want {
		t.Fatalf("got %v, want %v", cfg, want)
	}
	no := false
	for _, tc := range []struct {
		name string
		o    JoeyOptions
		want string
	}{
		{"unidirectional", JoeyOptions{Bidirectional: &no}, "model.encoder.bidirectional false"},
		{"relu", JoeyOptions{Activation: "relu"}, "model.decoder.activation relu"},
		{"transformer", JoeyOptions{DecoderType: "transformer"}, "model.decoder.type transformer"},
		{"cells differ", JoeyOptions{EncoderRNNType: "lstm"}, "attnx needs one cell"},
		{"size disagrees", JoeyOptions{DecoderHidden: 64}, "model.decoder.hidden_size is 64, but the checkpoint's weights have 8"},
		{"last needs sizes", JoeyOptions{InitHidden: "last"}, "init_hidden last: the decoder's hidden size 8 must be the encoder's 5 or twice it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := JoeyConfig(tc.o, joeyShapes())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}

func TestToolkitConfigValidate(t *testing.T) {
	ok := Config{Arch: ChatbotDot, Cell: GRU, Hidden: 8, Layers: 2, SrcVocab: 9, TgtVocab: 9, Bidirectional: true}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"article with toolkit fields", func(c *Config) { c.Arch = LuongDot }, "are for the toolkits' architectures"},
		{"chatbot unidirectional", func(c *Config) { c.Bidirectional = false }, "have a bidirectional encoder"},
		{"chatbot input feed", func(c *Config) { c.InputFeed = true }, "input_feed: chatbot-dot models have no input feeding"},
		{"bad bridge", func(c *Config) { c.Bridge = "bridge" }, `bridge "bridge": a chatbot-dot model's bridge is one of [""]`},
		{"summed sizes", func(c *Config) { c.EncoderHidden = 4 }, "encoder's hidden size 4 must equal the decoder's 8"},
		{"scale", func(c *Config) { c.ScaleSrcEmbedding = true }, "do not scale their embeddings"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
	onmt := Config{Arch: OpenNMTDot, Cell: LSTM, Hidden: 8, Layers: 2, SrcVocab: 9, TgtVocab: 9, Bidirectional: true, EncoderHidden: 3}
	if err := onmt.Validate(); err == nil || !strings.Contains(err.Error(), "must match the decoder's hidden size 8") {
		t.Errorf("onmt with 2h != H: %v", err)
	}
}

func TestCheckStates(t *testing.T) {
	c := Config{Arch: OpenNMTGeneral, Cell: LSTM, Hidden: 8, Layers: 2, SrcVocab: 9, TgtVocab: 9, Bidirectional: true, EncoderHidden: 4, InputFeed: true}
	if err := c.CheckStates(c.States()); err != nil {
		t.Fatal(err)
	}
	short := c.States()[:2]
	if err := c.CheckStates(short); err == nil || !strings.Contains(err.Error(), "lists 2 states, the configuration implies 3") {
		t.Errorf("short: %v", err)
	}
	wrong := slices.Clone(c.States())
	wrong[2].Width = 5
	if err := c.CheckStates(wrong); err == nil || !strings.Contains(err.Error(), "decoder_states[2] is input_feed [1, batch, 5]") {
		t.Errorf("wrong width: %v", err)
	}
}

func TestRulesApply(t *testing.T) {
	r := &Rules{Greedy: []int64{0, 1}, Beam: []int64{0}, EOSFromStep: 1}
	row := []float32{0, 0, 0, 0}
	r.Apply(row, 0, 3, false)
	inf := float32(math.Inf(-1))
	if !slices.Equal(row, []float32{inf, inf, 0, inf}) {
		t.Errorf("greedy, step 0: %v", row)
	}
	row = []float32{0, 0, 0, 0}
	r.Apply(row, 1, 3, true)
	if !slices.Equal(row, []float32{inf, 0, 0, 0}) {
		t.Errorf("beam, step 1: %v", row)
	}
	var none *Rules
	row = []float32{1, 2}
	none.Apply(row, 0, 1, false)
	if !slices.Equal(row, []float32{1, 2}) {
		t.Errorf("nil rules changed the row: %v", row)
	}
	if err := (&Rules{Greedy: []int64{9}}).Check(Config{TgtVocab: 5}); err == nil || !strings.Contains(err.Error(), "greedy_banned holds id 9, outside the target vocabulary [0, 5)") {
		t.Errorf("check: %v", err)
	}
}

// TestBentrevettLayoutsConvert: the key family of each bentrevett era that
// Layouts lists for Diagnose is what BentrevettModel reads.
func TestBentrevettLayoutsConvert(t *testing.T) {
	sizes := layout.Sizes{"Vs": 8, "Vt": 9, "E": 3, "Et": 4, "h": 5, "C": 10, "H": 6}
	n := 0
	for _, l := range Layouts() {
		if !IsToolkitLayout(l.Name) {
			continue
		}
		n++
		sd := map[string]*builder.Tensor{}
		for _, k := range l.Keys {
			dims, err := layout.Resolve(k.Shape, sizes)
			if err != nil {
				t.Fatalf("%s: %s: %v", l.Name, k.Name, err)
			}
			sd[k.Name] = builder.FloatTensor(dims, make([]float32, builder.NumElements(dims)))
		}
		w, notes, err := BentrevettModel(sd, Options{})
		if err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		era := strings.TrimSuffix(strings.TrimPrefix(l.Name, "bentrevett/"), "-names")
		if w.Config.Hidden != 6 || w.Config.EncHidden() != 5 || !strings.Contains(notes[0], map[string]string{"2018": "2018-19", "2019": "late 2019", "2020": "2020", "2023": "2023"}[era]) {
			t.Errorf("%s: %v, notes %q", l.Name, w.Config, notes)
		}
	}
	if n != 4 {
		t.Errorf("%d bentrevett layouts, want 4", n)
	}
}

// TestOpenNMTCopyGraphKeys: a copy model's graph holds every saved
// parameter its layout requires, the context gate's and the copy
// generator's included, though the copy generator's bias is derived.
func TestOpenNMTCopyGraphKeys(t *testing.T) {
	cfg := Config{Arch: OpenNMTMLP, Cell: LSTM, Hidden: 8, Embedding: 6, Layers: 1, SrcVocab: 20, TgtVocab: 16, Bidirectional: true,
		EncoderHidden: 4, InputFeed: true, CopyAttention: "general", CopyPad: 1, ContextGate: "both", Coverage: true}
	ar, _ := Lookup(cfg.Arch)
	have := map[string]bool{}
	for _, k := range paramKeys(ar, cfg) {
		have[k.Name] = true
	}
	for _, k := range []string{"generator.linear.bias", "generator.linear_copy.weight", "decoder.copy_attn.linear_in.weight",
		"decoder.context_gate.context_gate.gate.weight", "decoder.context_gate.context_gate.target_proj.bias"} {
		if !have[k] {
			t.Errorf("the graph's keys lack %s", k)
		}
	}
	for _, k := range []string{"decoder.copy_attn.linear_out.weight", "decoder.attn.linear_cover.weight"} {
		if have[k] {
			t.Errorf("the graph's keys hold %s, which it never uses", k)
		}
	}
}
