package attention

import (
	"fmt"
	"sort"
	"strings"

	"github.com/attnx/attnx/builder"
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
	// DecoderKeys lists the decoder's own keys for the sizes of cfg:
	// every decoder key besides the embedding and the recurrent layers.
	DecoderKeys(cfg Config) []KeySpec
	// DecoderInput is the input size of the decoder's first recurrent
	// layer for cfg, and that size in the spec's terms (such as "E+H").
	DecoderInput(cfg Config) (int, string)

	// sizes fills in the sizes only this architecture has (max_length)
	// from the checkpoint's shapes.
	sizes(shapes map[string][]int64, cfg *Config) error
	// precompute builds what does not change between the decoder steps of
	// one sentence, from encoder_outputs [batch, src_len, H]; nil when
	// nothing is.
	precompute(s *modelGraph, enc *builder.Value) *builder.Value
	// step builds one decoder step.
	step(s *modelGraph, in stepInputs) stepOutputs
}

// architectures is the registry, in the order of AllArchs.
var architectures = map[Arch]Architecture{
	Bahdanau:         bahdanau{},
	LuongDot:         luong{LuongDot},
	LuongGeneral:     luong{LuongGeneral},
	LuongConcat:      luong{LuongConcat},
	TutorialLocation: tutorialLocation{},
	TutorialBahdanau: tutorialBahdanau{},
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

// KeySpec is one checkpoint key with the shape PyTorch gives it.
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

func key(k string, what string, dims ...int64) KeySpec {
	return KeySpec{Key: k, Pattern: k, Dims: dims, What: what}
}

// rnnAttrs are the attribute names a recurrent module may have in a
// checkpoint: "lstm" and "gru" name the cell; with "rnn" the cell follows
// from the number of gate rows (4H LSTM, 3H GRU).
var rnnAttrs = []string{"lstm", "gru", "rnn"}

// rnnKeys lists the keys of one side's stacked recurrent layers; attr is
// the module's attribute name and in0 the first layer's input size.
func rnnKeys(cfg Config, part, attr string, in0 int, in0What string) []KeySpec {
	H, G := int64(cfg.Hidden), int64(cfg.Cell.gates())
	gh := fmt.Sprintf("%dH", G)
	var out []KeySpec
	for k := 0; k < cfg.Layers; k++ {
		in, inWhat := H, "H"
		if k == 0 {
			in, inWhat = int64(in0), in0What
		}
		what := gh + " x " + inWhat
		if k == 0 && part == "decoder" && in0What != "H" {
			what += " (layer 0's input)"
		}
		for _, s := range []struct {
			name string
			dims []int64
			what string
		}{
			{"weight_ih", []int64{G * H, in}, what},
			{"weight_hh", []int64{G * H, H}, gh + " x H"},
			{"bias_ih", []int64{G * H}, gh},
			{"bias_hh", []int64{G * H}, gh},
		} {
			out = append(out, KeySpec{
				Key:     fmt.Sprintf("%s.%s.%s_l%d", part, attr, s.name, k),
				Pattern: fmt.Sprintf("%s.%s.%s_l{k}", part, attr, s.name),
				Dims:    s.dims, What: s.what,
			})
		}
	}
	return out
}

// expectedKeys lists every key of a model of cfg (with defaults filled in)
// whose recurrent modules are called encAttr and decAttr.
func expectedKeys(ar Architecture, cfg Config, encAttr, decAttr string) []KeySpec {
	E, Vs, Vt := int64(cfg.Embedding), int64(cfg.SrcVocab), int64(cfg.TgtVocab)
	out := []KeySpec{key("encoder.embedding.weight", "Vs x E", Vs, E)}
	out = append(out, rnnKeys(cfg, "encoder", encAttr, cfg.Embedding, "E")...)
	out = append(out, key("decoder.embedding.weight", "Vt x E", Vt, E))
	in0, in0What := ar.DecoderInput(cfg)
	out = append(out, rnnKeys(cfg, "decoder", decAttr, in0, in0What)...)
	return append(out, ar.DecoderKeys(cfg)...)
}

// ExpectedKeys lists every key of a checkpoint of cfg, encoder first, with
// PyTorch's shapes. The recurrent modules are named after the cell
// ("lstm" or "gru"); a zero Embedding means H and an empty Cell LSTM.
func ExpectedKeys(cfg Config) ([]KeySpec, error) {
	cfg = cfg.WithDefaults()
	ar, err := Lookup(cfg.Arch)
	if err != nil {
		return nil, err
	}
	if _, err := ParseCell(string(cfg.Cell)); err != nil {
		return nil, err
	}
	return expectedKeys(ar, cfg, string(cfg.Cell), string(cfg.Cell)), nil
}

// Layout is the key layout of one architecture with one cell.
type Layout struct {
	Arch Arch      `json:"arch"`
	Cell Cell      `json:"cell"`
	Keys []KeySpec `json:"keys"`
}

// Layouts lists the key layout of every known architecture with every
// cell, for the sizes of cfg (its Arch and Cell are ignored). It is what a
// checkpoint that matches nothing can be compared with.
func Layouts(cfg Config) []Layout {
	var out []Layout
	for _, ar := range Architectures() {
		for _, cell := range Cells {
			c := cfg
			c.Arch, c.Cell = ar.Name(), cell
			c = c.WithDefaults()
			out = append(out, Layout{Arch: ar.Name(), Cell: cell, Keys: expectedKeys(ar, c, string(cell), string(cell))})
		}
	}
	return out
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
			ev = append(ev, fmt.Sprintf("%s: %s", ar.Name(), ar.Evidence()))
		}
		return nil, fmt.Errorf("no known decoder architecture matches the checkpoint's decoder keys (%s); known architectures and their keys: %s",
			strings.Join(decoder, ", "), strings.Join(ev, "; "))
	}
	var names []string
	for _, ar := range found {
		names = append(names, fmt.Sprintf("%s (%s)", ar.Name(), ar.Evidence()))
	}
	return nil, fmt.Errorf("the checkpoint's decoder keys fit several architectures: %s", strings.Join(names, ", "))
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
