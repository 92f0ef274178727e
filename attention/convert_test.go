package attention

import (
	"fmt"
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/quant"
)

func randFloats(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.NormFloat64() * 0.5)
	}
	return v
}

// stateDict returns a random state_dict of the given configuration with the
// spec's keys and PyTorch's shapes (optional keys left out).
func stateDict(t testing.TB, cfg Config, seed int64) map[string]*builder.Tensor {
	t.Helper()
	keys, err := ExpectedKeys(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewSource(seed))
	sd := map[string]*builder.Tensor{}
	for _, k := range keys {
		if !k.Optional {
			sd[k.Key] = builder.FloatTensor(k.Dims, randFloats(r, int(builder.NumElements(k.Dims))))
		}
	}
	return sd
}

// allConfigs returns one configuration per architecture and cell, with odd
// sizes and E != H.
func allConfigs() []Config {
	var out []Config
	for i, a := range StateDictArchs {
		for j, cell := range Cells {
			c := Config{Arch: a, Cell: cell, Hidden: 5 + 2*i, Embedding: 3 + j + i, Layers: 1 + (i+j)%3, SrcVocab: 7 + i, TgtVocab: 9 + j}
			if a == TutorialLocation {
				c.MaxLength = 6 + j
			}
			out = append(out, c)
		}
	}
	return out
}

func TestFromStateDictInfersConfig(t *testing.T) {
	for _, want := range allConfigs() {
		sd := stateDict(t, want, 1)
		article := !strings.HasPrefix(string(want.Arch), "tutorial-")
		if article {
			sd["decoder.attn_combine.weight"] = builder.FloatTensor([]int64{1}, []float32{0})
		}
		w, notes, err := FromStateDict(sd, Options{})
		if err != nil {
			t.Fatalf("%v: %v", want, err)
		}
		if w.Config != want {
			t.Errorf("inferred %v, want %v", w.Config, want)
		}
		if wantNotes := map[bool]int{true: 1, false: 0}[article]; len(notes) != wantNotes || (article && !strings.Contains(notes[0], "ignoring decoder.attn_combine.weight")) {
			t.Errorf("%v: notes %q", want, notes)
		}
		if len(w.Encoder) != want.Layers || len(w.Decoder) != want.Layers {
			t.Errorf("%v: %d/%d layers", want, len(w.Encoder), len(w.Decoder))
		}
		if err := w.Validate(); err != nil {
			t.Errorf("%v: converted weights do not validate: %v", want, err)
		}
	}
}

// TestCellFromRows: a recurrent module called "rnn" takes its cell from
// its gate rows.
func TestCellFromRows(t *testing.T) {
	for _, cell := range Cells {
		cfg := Config{Arch: LuongGeneral, Cell: cell, Hidden: 4, Embedding: 4, Layers: 2, SrcVocab: 5, TgtVocab: 6}
		sd := map[string]*builder.Tensor{}
		for k, v := range stateDict(t, cfg, 3) {
			sd[strings.Replace(k, "."+string(cell)+".", ".rnn.", 1)] = v
		}
		w, _, err := FromStateDict(sd, Options{})
		if err != nil {
			t.Fatalf("%s: %v", cell, err)
		}
		if w.Config != cfg {
			t.Errorf("inferred %v, want %v", w.Config, cfg)
		}
	}
}

func TestFromStateDictErrors(t *testing.T) {
	cfg := Config{Arch: Bahdanau, Cell: LSTM, Hidden: 4, Embedding: 4, Layers: 1, SrcVocab: 6, TgtVocab: 7}
	gru := Config{Arch: TutorialBahdanau, Cell: GRU, Hidden: 4, Embedding: 3, Layers: 2, SrcVocab: 6, TgtVocab: 7}
	f16 := func(sd map[string]*builder.Tensor) {
		old := sd["decoder.weight"]
		sd["decoder.weight"] = &builder.Tensor{DType: builder.Float16, Dims: old.Dims, Raw: make([]byte, 2*4)}
	}
	rename := func(from, to string) func(map[string]*builder.Tensor) {
		return func(sd map[string]*builder.Tensor) {
			for k, v := range sd {
				if strings.HasPrefix(k, from) {
					delete(sd, k)
					sd[to+strings.TrimPrefix(k, from)] = v
				}
			}
		}
	}
	cases := []struct {
		name   string
		cfg    Config
		edit   func(map[string]*builder.Tensor)
		opt    Options
		errHas []string
		note   string
	}{
		{"missing key", cfg, func(sd map[string]*builder.Tensor) { delete(sd, "decoder.classifier.bias") }, Options{},
			[]string{"missing key decoder.classifier.bias", "expected shape [7]"}, ""},
		{"extra key", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.extra.weight"] = builder.FloatTensor([]int64{2}, []float32{1, 2})
		}, Options{},
			[]string{"unexpected key decoder.extra.weight [2]", "bahdanau H=4 L=1"}, ""},
		{"wrong shape", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.lstm.weight_ih_l0"] = builder.FloatTensor([]int64{16, 4}, make([]float32, 64))
		}, Options{}, []string{"decoder.lstm.weight_ih_l0: shape [16 4], expected [16 8]", "4H x (E+H)"}, ""},
		{"int tensor", cfg, func(sd map[string]*builder.Tensor) {
			sd["decoder.classifier.bias"] = builder.Int64Tensor([]int64{7}, make([]int64, 7))
		}, Options{},
			[]string{"decoder.classifier.bias: dtype int64, expected float32"}, ""},
		{"nan", cfg, func(sd map[string]*builder.Tensor) {
			v, _ := sd["decoder.fc_hidden.weight"].Float32s()
			v[5] = float32(math.NaN())
			sd["decoder.fc_hidden.weight"] = builder.FloatTensor([]int64{4, 4}, v)
		}, Options{}, []string{"decoder.fc_hidden.weight: 1 non-finite values", "index 5: NaN", "--allow-nonfinite"}, ""},
		{"wrong arch", cfg, nil, Options{Arch: LuongDot}, []string{"--arch luong-dot disagrees", "bahdanau model"}, ""},
		{"layer mismatch", Config{Arch: LuongDot, Hidden: 4, Layers: 2, SrcVocab: 6, TgtVocab: 7}, func(sd map[string]*builder.Tensor) {
			for _, p := range []string{"weight_ih", "weight_hh", "bias_ih", "bias_hh"} {
				delete(sd, "decoder.lstm."+p+"_l1")
			}
		}, Options{}, []string{"2 encoder LSTM layers but 1 decoder layers"}, ""},
		{"not a seq2seq", cfg, func(sd map[string]*builder.Tensor) { delete(sd, "encoder.embedding.weight") }, Options{},
			[]string{"missing key encoder.embedding.weight", "not an attention seq2seq"}, ""},
		{"no rnn", cfg, rename("encoder.lstm.", "encoder.cell."), Options{},
			[]string{"checkpoint has no encoder.lstm.weight_ih_l0 or encoder.gru.weight_ih_l0"}, ""},
		{"float16 converted", cfg, f16, Options{}, nil, "converted decoder.weight from float16 to float32"},
		{"gru rows called lstm", gru, rename("encoder.gru.", "encoder.lstm."), Options{},
			[]string{"encoder.lstm.weight_hh_l0: shape [12 4] has the 3H gate rows of a GRU, but the module is called lstm (expected [4H H])"}, ""},
		{"mixed cells", Config{Arch: LuongDot, Cell: GRU, Hidden: 4, Layers: 1, SrcVocab: 6, TgtVocab: 7}, func(sd map[string]*builder.Tensor) {
			for k, v := range stateDict(t, Config{Arch: LuongDot, Cell: LSTM, Hidden: 4, Layers: 1, SrcVocab: 6, TgtVocab: 7}, 5) {
				if strings.HasPrefix(k, "decoder.") {
					sd[k] = v
				}
			}
			rename("decoder.gru.", "decoder.unused.")(sd)
			for k := range sd {
				if strings.HasPrefix(k, "decoder.unused.") {
					delete(sd, k)
				}
			}
		}, Options{}, []string{"encoder cell GRU, decoder cell LSTM: they must use the same cell"}, ""},
		{"two rnn modules", gru, func(sd map[string]*builder.Tensor) {
			sd["decoder.lstm.weight_ih_l0"] = builder.FloatTensor([]int64{16, 4}, make([]float32, 64))
		}, Options{}, []string{"several recurrent modules in the decoder (decoder.gru.*, decoder.lstm.*)"}, ""},
		{"two embedding sizes", gru, func(sd map[string]*builder.Tensor) {
			sd["decoder.embedding.weight"] = builder.FloatTensor([]int64{7, 5}, make([]float32, 35))
		}, Options{}, []string{"decoder.embedding.weight: shape [7 5], expected [7 3]", "one embedding size"}, ""},
		{"tutorial gru input", gru, func(sd map[string]*builder.Tensor) {
			sd["decoder.gru.weight_ih_l0"] = builder.FloatTensor([]int64{12, 4}, make([]float32, 48))
		}, Options{}, []string{"decoder.gru.weight_ih_l0: shape [12 4], expected [12 7] (3H x (E+H): [embedding; context] (layer 0's input))"}, ""},
		{"nothing fits", gru, rename("decoder.attention.Wa.", "decoder.attention.W1."), Options{},
			[]string{"no known decoder architecture matches", "decoder.attention.W1.weight", "tutorial-bahdanau: decoder.attention.Wa.*"}, ""},
	}
	for _, c := range cases {
		sd := stateDict(t, c.cfg, 2)
		if c.edit != nil {
			c.edit(sd)
		}
		_, notes, err := FromStateDict(sd, c.opt)
		if c.errHas == nil {
			if err != nil {
				t.Errorf("%s: unexpected error %v", c.name, err)
			} else if !strings.Contains(strings.Join(notes, "\n"), c.note) {
				t.Errorf("%s: notes %q lack %q", c.name, notes, c.note)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: no error", c.name)
			continue
		}
		for _, want := range c.errHas {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: error %q lacks %q", c.name, err, want)
			}
		}
	}
}

// TestLayoutsDetectOneArchitecture: every architecture and cell Layouts
// lists converts from the keys ExpectedKeys gives it, and is detected as
// its own architecture and cell and no other.
func TestLayoutsDetectOneArchitecture(t *testing.T) {
	sizes := Config{Hidden: 5, Embedding: 3, Layers: 2, SrcVocab: 8, TgtVocab: 9, MaxLength: 7}
	layouts := Layouts()
	if len(layouts) != len(StateDictArchs)*len(Cells)+4 {
		t.Fatalf("%d layouts, want %d (and bentrevett's four eras)", len(layouts), len(StateDictArchs)*len(Cells))
	}
	for i, l := range layouts {
		if IsToolkitLayout(l.Name) {
			continue // TestBentrevettLayoutsConvert
		}
		want := sizes
		want.Arch, want.Cell = StateDictArchs[i/len(Cells)], Cells[i%len(Cells)]
		if l.Name != string(want.Arch)+"/"+string(want.Cell) {
			t.Fatalf("layout %d is %s, want %s/%s", i, l.Name, want.Arch, want.Cell)
		}
		if want.Arch != TutorialLocation {
			want.MaxLength = 0
		}
		keys, err := ExpectedKeys(want)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewSource(1))
		sd := map[string]*builder.Tensor{}
		shapes := map[string][]int64{}
		for _, k := range keys {
			if k.Key != k.Pattern && !strings.Contains(k.Pattern, "_l{k}") {
				t.Errorf("%s: key %s has pattern %s", l.Name, k.Key, k.Pattern)
			}
			if !k.Optional {
				sd[k.Key] = builder.FloatTensor(k.Dims, randFloats(r, int(builder.NumElements(k.Dims))))
				shapes[k.Key] = k.Dims
			}
		}
		var found []Arch
		for _, ar := range Architectures() {
			if ar.Detect(shapes) {
				found = append(found, ar.Name())
			}
		}
		if len(found) != 1 || found[0] != want.Arch {
			t.Errorf("%s: detected by %v", l.Name, found)
		}
		w, _, err := FromStateDict(sd, Options{})
		if err != nil {
			t.Errorf("%s: %v", l.Name, err)
			continue
		}
		if w.Config != want {
			t.Errorf("%s: inferred %v, want %v", l.Name, w.Config, want)
		}
	}
}

// TestGraphsRejectInvalidWeights is the regression test for issue 11's
// "graph.go dereferences nil Weights fields without a Validate": each
// broken Weights gives every graph builder an error naming the fault.
func TestGraphsRejectInvalidWeights(t *testing.T) {
	good := func(cfg Config) *Weights {
		w, _, err := FromStateDict(stateDict(t, cfg, 4), Options{})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	bcfg := Config{Arch: Bahdanau, Cell: LSTM, Hidden: 4, Embedding: 4, Layers: 2, SrcVocab: 6, TgtVocab: 7}
	lcfg := Config{Arch: LuongConcat, Cell: GRU, Hidden: 4, Embedding: 3, Layers: 1, SrcVocab: 6, TgtVocab: 7}
	cases := []struct {
		name string
		w    func() *Weights
		want string
	}{
		{"nil", func() *Weights { return nil }, "invalid weights: nil"},
		{"zero", func() *Weights { return &Weights{} }, `invalid weights: config: unknown architecture ""`},
		{"config only", func() *Weights { return &Weights{Config: bcfg} }, "encoder.embedding.weight is missing (expected float32 [6 4])"},
		{"no fc_hidden", func() *Weights { w := good(bcfg); delete(w.Params, "decoder.fc_hidden.weight"); return w }, "decoder.fc_hidden.weight is missing"},
		{"float16 fc_encoder", func() *Weights {
			w := good(bcfg)
			w.Params["decoder.fc_encoder.weight"] = &builder.Tensor{DType: builder.Float16, Dims: []int64{4, 4}, Raw: make([]byte, 32)}
			return w
		}, "decoder.fc_encoder.weight: dtype float16, expected float32"},
		{"missing layer", func() *Weights { w := good(bcfg); w.Decoder = w.Decoder[:1]; return w }, "decoder has 1 recurrent layers, expected num_layers 2"},
		{"nil R", func() *Weights { w := good(bcfg); w.Encoder[1].R = nil; return w }, "encoder layer 1 R is missing"},
		{"lstm layers in a gru model", func() *Weights {
			w := good(lcfg)
			w.Encoder = good(Config{Arch: LuongConcat, Cell: LSTM, Hidden: 4, Embedding: 3, Layers: 1, SrcVocab: 6, TgtVocab: 7}).Encoder
			return w
		}, "encoder layer 0 W: shape [1 16 3], expected [1 12 3] (gru cell)"},
		{"short attention vector", func() *Weights {
			w := good(lcfg)
			w.Params["decoder.attention.weight"] = builder.FloatTensor([]int64{1, 3}, make([]float32, 3))
			return w
		}, "decoder.attention.weight: shape [1 3], expected [1 4]"},
		{"bad max_length", func() *Weights {
			w := good(Config{Arch: TutorialLocation, Cell: GRU, Hidden: 4, Embedding: 4, Layers: 1, SrcVocab: 6, TgtVocab: 7, MaxLength: 5})
			w.Config.MaxLength = 0
			return w
		}, "max_length 0: a tutorial-location model needs"},
	}
	builders := map[string]func(*Weights) (*builder.Model, error){
		"encoder": func(w *Weights) (*builder.Model, error) { return Encoder(w, BuildOptions{}) },
		"decoder": func(w *Weights) (*builder.Model, error) { return Decoder(w, BuildOptions{}) },
		"greedy":  func(w *Weights) (*builder.Model, error) { return Greedy(w, DefaultSpecial, BuildOptions{}) },
	}
	for _, c := range cases {
		for name, build := range builders {
			m, err := build(c.w())
			if err == nil || m != nil {
				t.Errorf("%s: %s built (err %v)", c.name, name, err)
				continue
			}
			if !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), name+": ") {
				t.Errorf("%s: %s error %q, want %q after %q", c.name, name, err, c.want, name+": ")
			}
		}
	}
}

// TestParamRepackErrorFailsTheGraph: a parameter that cannot be repacked
// (here one Validate would refuse, put in behind its back) fails the graph
// with the parameter's name instead of being dropped.
func TestParamRepackErrorFailsTheGraph(t *testing.T) {
	cfg := Config{Arch: Bahdanau, Cell: GRU, Hidden: 4, Embedding: 4, Layers: 1, SrcVocab: 6, TgtVocab: 7}
	w, _, err := FromStateDict(stateDict(t, cfg, 4), Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := newModelGraph("t", w, BuildOptions{})
	w.Params["decoder.fc_encoder.weight"] = &builder.Tensor{DType: builder.Float16, Dims: []int64{4, 4}, Raw: make([]byte, 32)}
	s.param("decoder.fc_encoder.weight", transposed)
	_, err = s.finish("t")
	if err == nil || !strings.Contains(err.Error(), "parameter decoder.fc_encoder.weight: dtype float16, expected float32") {
		t.Fatalf("finish: %v", err)
	}
}

func TestConfigDefaultsAndValidate(t *testing.T) {
	old := Config{Arch: LuongDot, Hidden: 8, Layers: 1, SrcVocab: 5, TgtVocab: 5}
	if err := old.Validate(); err != nil {
		t.Fatalf("a config from before cells: %v", err)
	}
	if d := old.WithDefaults(); d.Cell != LSTM || d.Embedding != 8 {
		t.Errorf("defaults %+v", d)
	}
	if got := old.String(); got != "luong-dot H=8 L=1 Vs=5 Vt=5" {
		t.Errorf("String = %q", got)
	}
	tl := Config{Arch: TutorialLocation, Cell: GRU, Hidden: 8, Embedding: 6, Layers: 1, SrcVocab: 5, TgtVocab: 5, MaxLength: 10}
	if got := tl.String(); got != "tutorial-location gru H=8 E=6 L=1 Vs=5 Vt=5 M=10" {
		t.Errorf("String = %q", got)
	}
	if err := tl.CheckSourceLength(10); err != nil {
		t.Error(err)
	}
	if err := tl.CheckSourceLength(11); err == nil || !strings.Contains(err.Error(), "longer than the model's max_length 10") {
		t.Errorf("CheckSourceLength(11) = %v", err)
	}
	if err := old.CheckSourceLength(1000); err != nil {
		t.Error(err)
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Cell = "rnn" }, `unknown cell "rnn"`},
		{func(c *Config) { c.Embedding = -1 }, "embedding_size -1"},
		{func(c *Config) { c.MaxLength = 3 }, "max_length 3: only tutorial-location models have one"},
		{func(c *Config) { c.Arch = TutorialLocation }, "max_length 0: a tutorial-location model needs"},
	} {
		c := old
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Validate = %v, want %q", c, err, tc.want)
		}
	}
}

// TestGraphsBuild builds every graph of every architecture, cell and
// weights precision and checks the I/O contract: no cell input or output
// for GRU, the same inputs and outputs at every precision.
func TestGraphsBuild(t *testing.T) {
	for _, cfg := range allConfigs() {
		for _, prec := range quant.Precisions {
			graphsBuild(t, cfg, BuildOptions{Weights: prec})
		}
	}
}

func graphsBuild(t *testing.T, cfg Config, opt BuildOptions) {
	t.Helper()
	w, _, err := FromStateDict(stateDict(t, cfg, 6), Options{})
	if err != nil {
		t.Fatal(err)
	}
	io := func(vs []*builder.Value) string {
		var names []string
		for _, v := range vs {
			names = append(names, v.Name()+":"+v.Type().String())
		}
		return strings.Join(names, " ")
	}
	H, L, Vt := cfg.Hidden, cfg.Layers, cfg.TgtVocab
	st := fmt.Sprintf("[%d,batch,%d]", L, H)
	cellIn, cellOut, nextCell := " cell:float32"+st, " cell:float32"+st, " next_cell:float32"+st
	if cfg.Cell == GRU {
		cellIn, cellOut, nextCell = "", "", ""
	}
	for _, tc := range []struct {
		name    string
		build   func(*Weights, BuildOptions) (*builder.Model, error)
		in, out string
	}{
		{"encoder", Encoder, "source_ids:int64[batch,src_len] source_lengths:int64[batch]",
			fmt.Sprintf("encoder_outputs:float32[batch,src_len,%d] hidden:float32%s%s", H, st, cellOut)},
		{"decoder", Decoder, fmt.Sprintf("input_ids:int64[batch] hidden:float32%s%s encoder_outputs:float32[batch,src_len,%d] source_lengths:int64[batch]", st, cellIn, H),
			fmt.Sprintf("log_probs:float32[batch,%d] next_hidden:float32%s%s attention:float32[batch,src_len]", Vt, st, nextCell)},
		{"greedy", func(w *Weights, o BuildOptions) (*builder.Model, error) {
			return Greedy(w, Special{SOS: 1, EOS: 2, PAD: 0, UNK: -1}, o)
		},
			"source_ids:int64[batch,src_len] source_lengths:int64[batch] max_len:int64[]",
			"output_ids:int64[batch,out_len] attention:float32[batch,out_len,src_len] token_log_probs:float32[batch,out_len]"},
	} {
		m, err := tc.build(w, opt)
		if err != nil {
			t.Errorf("%v %s %s: %v", cfg, opt.Weights, tc.name, err)
			continue
		}
		if got := io(m.Graph.Inputs()); got != tc.in {
			t.Errorf("%v %s inputs:\n got %s\nwant %s", cfg, tc.name, got, tc.in)
		}
		if got := io(m.Graph.Outputs()); got != tc.out {
			t.Errorf("%v %s outputs:\n got %s\nwant %s", cfg, tc.name, got, tc.out)
		}
		if m.Metadata["attnx.cell"] != string(cfg.Cell) || m.Metadata["attnx.embedding_size"] != fmt.Sprint(cfg.Embedding) {
			t.Errorf("%v %s: metadata %v", cfg, tc.name, m.Metadata)
		}
		if w, ok := m.Metadata["attnx.weights"]; ok != opt.Weights.Reduced() || (ok && w != string(opt.Weights)) {
			t.Errorf("%v %s %s: metadata attnx.weights = %q (set: %v)", cfg, opt.Weights, tc.name, w, ok)
		}
	}
}

// TestGreedyComputesPrecomputeOnce: in greedy.onnx, what an architecture
// precomputes per sentence (the Bahdanau decoders' projection of
// encoder_outputs) is computed in the main graph, before the Loop, and
// the Loop body uses it without computing it again.
func TestGreedyComputesPrecomputeOnce(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		init string // the initializer only the precomputation uses
	}{
		{Config{Arch: Bahdanau, Cell: GRU, Hidden: 5, Embedding: 3, Layers: 2, SrcVocab: 7, TgtVocab: 8}, "decoder.fc_encoder.weight^T"},
		{Config{Arch: TutorialBahdanau, Cell: GRU, Hidden: 5, Embedding: 3, Layers: 1, SrcVocab: 7, TgtVocab: 8}, "decoder.attention.Ua.weight^T"},
		{Config{Arch: TutorialBahdanau, Cell: LSTM, Hidden: 5, Embedding: 5, Layers: 2, SrcVocab: 7, TgtVocab: 8}, "decoder.attention.Ua.weight^T"},
	} {
		w, _, err := FromStateDict(stateDict(t, tc.cfg, 8), Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := Greedy(w, DefaultSpecial, BuildOptions{})
		if err != nil {
			t.Fatal(err)
		}
		uses := func(nodes []*builder.Node) int {
			n := 0
			for _, nd := range nodes {
				for _, in := range nd.Inputs {
					if in != nil && in.Name() == tc.init {
						n++
					}
				}
			}
			return n
		}
		var body []*builder.Node
		for _, nd := range m.Graph.Nodes() {
			if nd.OpType == "Loop" {
				body = nd.Attr("body").Graph.Nodes()
			}
		}
		if body == nil {
			t.Fatalf("%v: no Loop", tc.cfg)
		}
		if main, inLoop := uses(m.Graph.Nodes()), uses(body); main != 1 || inLoop != 0 {
			t.Errorf("%v: %s used by %d main-graph nodes and %d Loop-body nodes, want 1 and 0", tc.cfg, tc.init, main, inLoop)
		}
	}
}
