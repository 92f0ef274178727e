package attention

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint/layout"
)

// Architecture is one decoder architecture. Everything attnx knows about
// it lives in the one file that implements it: its checkpoint keys and
// shapes, the evidence that detects it from the keys, its decoder step graph
// and what it computes once per source sentence. The parts every
// architecture shares (embeddings, recurrent layers, length mask, attention
// softmax, classifier, greedy loop) live in shared files.
//
// The graph-building methods are unexported: the set of architectures is
// closed, and Lookup and Architectures list it.
type Architecture interface {
	// Name is the architecture's name, as attnx.json and --arch spell it.
	Name() Arch
	// Evidence says, for messages, which decoder keys identify the
	// architecture.
	Evidence() string
	// Detect reports whether a checkpoint whose keys have the given shapes
	// holds this architecture's decoder. Exactly one architecture detects
	// any checkpoint attnx can convert.
	Detect(shapes map[string][]int64) bool
	// DecoderKeys lists the decoder's own keys, with their shapes in the
	// spec's terms (symbols H, E, Vt, M): every decoder key besides the
	// embedding and the recurrent layers.
	DecoderKeys() []layout.Key
	// DecoderInput is the input size of the decoder's first recurrent
	// layer in the spec's terms (such as "E+H"), and what that input is
	// ("" when it is the embedding).
	DecoderInput() (size, what string)

	// sizes fills in the sizes only this architecture has (max_length)
	// from the checkpoint's shapes.
	sizes(shapes map[string][]int64, cfg *Config) error
	// precompute builds what does not change between the decoder steps of
	// one sentence, from encoder_outputs [batch, src_len, H]; nil when
	// nothing is.
	precompute(s *modelGraph, enc *builder.Value) *builder.Value
	// step builds one decoder step.
	step(s *modelGraph, in stepInputs) stepOutputs
	// initStates builds the decoder's initial states (Config.States)
	// from encoder_outputs and the encoder's final state, [Le*D, batch,
	// h] in PyTorch's order (layer 0 forward, layer 0 backward, layer 1
	// forward, ...).
	initStates(s *modelGraph, enc *builder.Value, final rnnState) decState
}

// encoderFinal is the initial state of the article's and the seq2seq
// tutorial's decoders: the encoder's final state itself.
type encoderFinal struct{}

func (encoderFinal) initStates(_ *modelGraph, _ *builder.Value, final rnnState) decState {
	return final.list()
}

// architectures is the registry, in the order of AllArchs.
var architectures = map[Arch]Architecture{
	Bahdanau:               bahdanau{},
	LuongDot:               luong{arch: LuongDot},
	LuongGeneral:           luong{arch: LuongGeneral},
	LuongConcat:            luong{arch: LuongConcat},
	TutorialLocation:       tutorialLocation{},
	TutorialBahdanau:       tutorialBahdanau{},
	OpenNMTDot:             openNMT{arch: OpenNMTDot},
	OpenNMTGeneral:         openNMT{arch: OpenNMTGeneral},
	OpenNMTMLP:             openNMT{arch: OpenNMTMLP},
	JoeyBahdanau:           joey{arch: JoeyBahdanau},
	JoeyLuong:              joey{arch: JoeyLuong},
	Bentrevett:             bentrevett{},
	ChatbotDot:             chatbot{arch: ChatbotDot},
	ChatbotGeneral:         chatbot{arch: ChatbotGeneral},
	ChatbotConcat:          chatbot{arch: ChatbotConcat},
	FairseqLSTM:            fairseq{arch: FairseqLSTM},
	FairseqLSTMNoAttention: fairseq{arch: FairseqLSTMNoAttention},
}

// Lookup returns the architecture called a.
func Lookup(a Arch) (Architecture, error) {
	if ar, ok := architectures[a]; ok {
		return ar, nil
	}
	_, err := ParseArch(string(a))
	return nil, err
}

// Architectures returns every supported architecture, in the order of
// AllArchs.
func Architectures() []Architecture {
	out := make([]Architecture, len(AllArchs))
	for i, a := range AllArchs {
		out[i] = architectures[a]
	}
	return out
}

// KeySpec is one checkpoint key with the shape PyTorch gives it, for the
// sizes of one configuration.
type KeySpec struct {
	// Key is the state_dict key, such as "decoder.gru.weight_ih_l0".
	Key string `json:"key"`
	// Pattern is Key with a recurrent layer's index written l{k}, such as
	// "decoder.gru.weight_ih_l{k}"; equal to Key for other keys.
	Pattern string `json:"pattern"`
	// Dims is the PyTorch shape for the sizes asked for. A size left 0 in
	// the Config (M when not known) is 0 here.
	Dims []int64 `json:"dims"`
	// What is the shape in the spec's terms, such as "3H x (E+H)", with
	// what the tensor is when that helps.
	What string `json:"what"`
	// Optional keys may be absent; when present they are ignored, shape
	// unchecked (the article's attn_combine, declared but never used).
	Optional bool `json:"optional,omitempty"`
}

// key is a symbolic key with a note and its shape's dimensions.
func key(name, note string, shape ...string) layout.Key {
	return layout.Key{Name: name, Shape: shape, Note: note}
}

// optional marks k as a key that may be absent and is ignored when present.
func optional(k layout.Key) layout.Key {
	k.Optional = true
	return k
}

// rnnAttrs are the attribute names a recurrent module may have in a
// checkpoint: "lstm" and "gru" name the cell; with "rnn" the cell follows
// from the number of gate rows (4H LSTM, 3H GRU).
var rnnAttrs = []string{"lstm", "gru", "rnn"}

// rnnKeys lists the keys of one side's stacked recurrent layers, in
// PyTorch's order: attr is the module's attribute name, in0 the first
// layer's input size in the spec's terms and what0 what that input is.
// With layers > 0 it lists the layers l0 .. l{layers-1}; with 0 it is the
// layout of any number of layers: l0's keys, then optional l{n} keys.
func rnnKeys(part, attr string, cell Cell, in0, what0 string, layers int) []layout.Key {
	gh := fmt.Sprintf("%dH", cell.gates())
	prefix := part + "." + attr + "."
	one := func(layer, in, what string, optional bool) []layout.Key {
		return []layout.Key{
			{Name: prefix + "weight_ih_l" + layer, Shape: []string{gh, in}, Note: what, Optional: optional},
			{Name: prefix + "weight_hh_l" + layer, Shape: []string{gh, "H"}, Optional: optional},
			{Name: prefix + "bias_ih_l" + layer, Shape: []string{gh}, Optional: optional},
			{Name: prefix + "bias_hh_l" + layer, Shape: []string{gh}, Optional: optional},
		}
	}
	out := one("0", in0, what0, false)
	if layers == 0 {
		return append(out, one("{n}", "H", "", true)...)
	}
	for k := 1; k < layers; k++ {
		out = append(out, one(strconv.Itoa(k), "H", "", false)...)
	}
	return out
}

// modelKeys lists every key of a model of the architecture and cell,
// symbolically, encoder first, in PyTorch's order; encAttr and decAttr name
// the recurrent modules; layers is as for rnnKeys.
func modelKeys(ar Architecture, cell Cell, encAttr, decAttr string, layers int) []layout.Key {
	out := []layout.Key{key("encoder.embedding.weight", "", "Vs", "E")}
	out = append(out, rnnKeys("encoder", encAttr, cell, "E", "", layers)...)
	out = append(out, key("decoder.embedding.weight", "", "Vt", "E"))
	in0, what := ar.DecoderInput()
	switch {
	case what != "":
		what += " (layer 0's input)"
	case in0 != "H":
		what = "layer 0's input"
	}
	out = append(out, rnnKeys("decoder", decAttr, cell, in0, what, layers)...)
	return append(out, ar.DecoderKeys()...)
}

// symbols are the sizes of cfg under the names the symbolic shapes use.
func (c Config) symbols() layout.Sizes {
	return layout.Sizes{"H": int64(c.Hidden), "E": int64(c.Embedding), "Vs": int64(c.SrcVocab), "Vt": int64(c.TgtVocab), "M": int64(c.MaxLength),
		// The toolkits' models: h per encoder direction, the target
		// embedding size Et and the encoder output size C.
		"h": int64(c.EncHidden()), "Et": int64(c.TgtEmbeddingSize()), "C": int64(c.EncoderWidth()),
		// OpenNMT-py's bridge: h times the encoder layers.
		"hL": int64(c.EncHidden() * c.EncLayers()),
		// fairseq's decoder_out_embed_dim.
		"Eo": int64(c.OutWidth())}
}

// resolve turns symbolic keys into KeySpecs for the sizes of cfg.
func resolve(keys []layout.Key, cfg Config) ([]KeySpec, error) {
	sizes := cfg.symbols()
	out := make([]KeySpec, len(keys))
	for i, k := range keys {
		dims, err := layout.Resolve(k.Shape, sizes)
		if err != nil {
			return nil, fmt.Errorf("key %s: %w", k.Name, err)
		}
		pattern := k.Name
		if m := rnnKey.FindStringSubmatchIndex(k.Name); m != nil {
			pattern = k.Name[:m[8]] + "{k}"
		}
		out[i] = KeySpec{Key: k.Name, Pattern: pattern, Dims: dims, What: k.What(), Optional: k.Optional}
	}
	return out, nil
}

// expectedKeys lists every key of a model of cfg (with defaults filled in)
// whose recurrent modules are called encAttr and decAttr.
func expectedKeys(ar Architecture, cfg Config, encAttr, decAttr string) ([]KeySpec, error) {
	return resolve(modelKeys(ar, cfg.Cell, encAttr, decAttr, cfg.Layers), cfg)
}

// ExpectedKeys lists every key of a checkpoint of cfg, encoder first, with
// PyTorch's shapes. The recurrent modules are named after the cell
// ("lstm" or "gru"); a zero Embedding means H and an empty Cell LSTM. For
// a toolkit's architecture the keys are the toolkit's own names, as it
// saves them (optional ones: duplicates attnx ignores).
func ExpectedKeys(cfg Config) ([]KeySpec, error) {
	cfg = cfg.WithDefaults()
	ar, err := Lookup(cfg.Arch)
	if err != nil {
		return nil, err
	}
	if tk, ok := ar.(toolkitArch); ok {
		// A toolkit's keys, as it saves them.
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
		_, specs, err := toolkitSpecs(tk, cfg)
		return specs, err
	}
	if _, err := ParseCell(string(cfg.Cell)); err != nil {
		return nil, err
	}
	if cfg.Layers < 1 {
		return nil, fmt.Errorf("num_layers %d: must be at least 1", cfg.Layers)
	}
	return expectedKeys(ar, cfg, string(cfg.Cell), string(cfg.Cell))
}

// Layouts lists the key layout of every known architecture with every
// cell, named "ARCH/CELL" ("tutorial-bahdanau/gru"), with shapes in the
// spec's terms and any number of layers: the description checkpoint.Diagnose
// compares a checkpoint that fits none of them with.
func Layouts() []layout.Layout {
	var out []layout.Layout
	for _, ar := range Architectures() {
		if ar.Name().IsToolkit() {
			continue // their own key families: see the toolkits' readers
		}
		for _, cell := range Cells {
			out = append(out, layout.Layout{Name: string(ar.Name()) + "/" + string(cell), Keys: modelKeys(ar, cell, string(cell), string(cell), 0)})
		}
	}
	return append(out, toolkitLayouts()...)
}

// decoderInput is the input size of the decoder's first recurrent layer
// for cfg.
func decoderInput(ar Architecture, cfg Config) int {
	in0, _ := ar.DecoderInput()
	if tk, ok := ar.(toolkitArch); ok {
		in0 = tk.checkpointKeys(cfg).decIn
	}
	dims, err := layout.Resolve([]string{in0}, cfg.symbols())
	if err != nil {
		panic(fmt.Sprintf("attention: %s's decoder input %q: %v", ar.Name(), in0, err))
	}
	return int(dims[0])
}

// detect finds the one architecture whose evidence the keys hold.
func detect(shapes map[string][]int64) (Architecture, error) {
	var found []Architecture
	for _, ar := range Architectures() {
		if ar.Detect(shapes) {
			found = append(found, ar)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		var decoder []string
		for k := range shapes {
			if strings.HasPrefix(k, "decoder.") {
				decoder = append(decoder, k)
			}
		}
		sort.Strings(decoder)
		if len(decoder) > 12 {
			decoder = append(decoder[:12], fmt.Sprintf("... (%d more)", len(decoder)-12))
		}
		var ev []string
		for _, ar := range Architectures() {
			if !ar.Name().IsToolkit() { // recognised by their files, not these keys
				ev = append(ev, fmt.Sprintf("%s: %s", ar.Name(), ar.Evidence()))
			}
		}
		return nil, keysError("no known decoder architecture matches the checkpoint's decoder keys (%s); known architectures and their keys: %s",
			strings.Join(decoder, ", "), strings.Join(ev, "; "))
	}
	var names []string
	for _, ar := range found {
		names = append(names, fmt.Sprintf("%s (%s)", ar.Name(), ar.Evidence()))
	}
	return nil, keysError("the checkpoint's decoder keys fit several architectures: %s", strings.Join(names, ", "))
}

// has reports whether shapes holds every key given.
func has(shapes map[string][]int64, keys ...string) bool {
	for _, k := range keys {
		if _, ok := shapes[k]; !ok {
			return false
		}
	}
	return true
}

// hasPrefix reports whether shapes holds a key starting with prefix.
func hasPrefix(shapes map[string][]int64, prefix string) bool {
	for k := range shapes {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}
