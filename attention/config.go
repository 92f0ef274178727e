// Package attention builds the attention seq2seq models of
// shared/spec/models.md as ONNX graphs: the LSTM encoder and one decoder step
// for each architecture (Bahdanau, Luong dot/general/concat), from a PyTorch
// state_dict.
//
// The flow is: FromStateDict reads and checks the checkpoint's tensors,
// infers the architecture and sizes from its keys and shapes, and repacks
// the LSTM weights into ONNX's layout (the only place that happens); then
// Encoder, Decoder and Greedy build the graphs.
package attention

import (
	"fmt"
	"strings"
)

// Arch names a decoder architecture.
type Arch string

// The supported architectures.
const (
	Bahdanau     Arch = "bahdanau"
	LuongDot     Arch = "luong-dot"
	LuongGeneral Arch = "luong-general"
	LuongConcat  Arch = "luong-concat"
)

// Archs lists every supported architecture.
var Archs = []Arch{Bahdanau, LuongDot, LuongGeneral, LuongConcat}

// ParseArch checks an architecture name given by a user.
func ParseArch(s string) (Arch, error) {
	for _, a := range Archs {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(Archs))
	for i, a := range Archs {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown architecture %q (want one of %s)", s, strings.Join(names, ", "))
}

// IsLuong reports whether the architecture is one of the Luong variants.
func (a Arch) IsLuong() bool { return strings.HasPrefix(string(a), "luong-") }

// Config is the shape of a model: everything the graphs need besides the
// weights.
type Config struct {
	// Arch is the decoder architecture.
	Arch Arch `json:"arch"`
	// Hidden is H: the embedding and LSTM hidden size.
	Hidden int `json:"hidden_size"`
	// Layers is L, the number of stacked LSTM layers in encoder and decoder.
	Layers int `json:"num_layers"`
	// SrcVocab and TgtVocab are Vs and Vt.
	SrcVocab int `json:"src_vocab_size"`
	TgtVocab int `json:"tgt_vocab_size"`
}

// Validate checks that the sizes are usable.
func (c Config) Validate() error {
	if _, err := ParseArch(string(c.Arch)); err != nil {
		return err
	}
	switch {
	case c.Hidden < 1:
		return fmt.Errorf("hidden_size %d: must be at least 1", c.Hidden)
	case c.Layers < 1:
		return fmt.Errorf("num_layers %d: must be at least 1", c.Layers)
	case c.SrcVocab < 1 || c.TgtVocab < 1:
		return fmt.Errorf("vocabulary sizes %d/%d: must be at least 1", c.SrcVocab, c.TgtVocab)
	}
	return nil
}

// Special holds the special token ids; -1 means not known.
type Special struct {
	SOS int64 `json:"sos"`
	EOS int64 `json:"eos"`
	PAD int64 `json:"pad"`
	UNK int64 `json:"unk"`
}

// Check reports the first special token id that is outside its
// vocabulary: SOS, EOS and PAD must be target ids, UNK a source id or -1
// (none). It is the one range check of special tokens: attnx.json, export's
// flags and the graphs that decode all call it.
func (s Special) Check(c Config) error {
	for _, t := range []struct {
		name string
		id   int64
	}{{"sos", s.SOS}, {"eos", s.EOS}, {"pad", s.PAD}} {
		if t.id < 0 || t.id >= int64(c.TgtVocab) {
			return fmt.Errorf("special token %s = %d: outside the target vocabulary [0, %d)", t.name, t.id, c.TgtVocab)
		}
	}
	if s.UNK < -1 || s.UNK >= int64(c.SrcVocab) {
		return fmt.Errorf("special token unk = %d: outside the source vocabulary [0, %d) (or -1 for none)", s.UNK, c.SrcVocab)
	}
	return nil
}

// DefaultSpecial is the convention of attnx's tools and demo models:
// <pad>=0, <sos>=1, <eos>=2, <unk>=3.
var DefaultSpecial = Special{SOS: 1, EOS: 2, PAD: 0, UNK: 3}
