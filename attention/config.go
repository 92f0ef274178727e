// Package attention builds the attention seq2seq models of
// docs/models.md as ONNX graphs: the encoder and one decoder step for
// each architecture, with LSTM or GRU cells, from a PyTorch state_dict.
//
// Each architecture lives in one file behind the Architecture interface
// (arch.go): bahdanau.go (the article's additive decoder), luong.go (the
// article's multiplicative decoder, dot/general/concat), tutorial_location.go
// and tutorial_bahdanau.go (the two versions of PyTorch's seq2seq tutorial).
// Such a file holds the architecture's checkpoint keys and shapes, the
// evidence that detects it from the keys, its decoder step graph and what
// it computes once per sentence. The parts every architecture shares live
// in shared files: every change of weight layout between PyTorch and ONNX
// (pack.go: the recurrent gate blocks, transposed and vector weights), the
// checkpoint reading and checks (convert.go), the stacked recurrent layers
// (rnn.go), the embedding, length mask, attention softmax and classifier
// (graph.go) and the greedy loop (greedy.go).
//
// The flow is: FromStateDict reads and checks the checkpoint's tensors,
// infers the architecture, cell and sizes from its keys and shapes, and
// repacks the recurrent weights into ONNX's layout; then Encoder, Decoder
// and Greedy build the graphs.
package attention

import (
	"fmt"
	"slices"
	"strings"
)

// Arch names a decoder architecture.
type Arch string

// The supported architectures.
const (
	// Bahdanau is the article's additive decoder.
	Bahdanau Arch = "bahdanau"
	// LuongDot, LuongGeneral and LuongConcat are the article's
	// multiplicative decoder with its three scoring functions.
	LuongDot     Arch = "luong-dot"
	LuongGeneral Arch = "luong-general"
	LuongConcat  Arch = "luong-concat"
	// TutorialLocation is the 2017-2023 version of PyTorch's seq2seq
	// tutorial decoder: location-based attention over max_length positions.
	TutorialLocation Arch = "tutorial-location"
	// TutorialBahdanau is the current version of PyTorch's seq2seq tutorial
	// decoder: Bahdanau attention with biases (Wa, Ua, Va).
	TutorialBahdanau Arch = "tutorial-bahdanau"
)

// Archs lists the article's architectures: the LSTM models every attnx
// tool has supported from the start.
var Archs = []Arch{Bahdanau, LuongDot, LuongGeneral, LuongConcat}

// TutorialArchs lists the decoders of PyTorch's seq2seq tutorial.
var TutorialArchs = []Arch{TutorialLocation, TutorialBahdanau}

// AllArchs lists every supported architecture: Archs, then TutorialArchs.
var AllArchs = append(append([]Arch{}, Archs...), TutorialArchs...)

// ParseArch checks an architecture name given by a user.
func ParseArch(s string) (Arch, error) {
	for _, a := range AllArchs {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(AllArchs))
	for i, a := range AllArchs {
		names[i] = string(a)
	}
	return "", fmt.Errorf("unknown architecture %q (want one of %s)", s, strings.Join(names, ", "))
}

// IsLuong reports whether the architecture is one of the Luong variants.
func (a Arch) IsLuong() bool { return strings.HasPrefix(string(a), "luong-") }

// IsTutorial reports whether the architecture is one of the decoders of
// PyTorch's seq2seq tutorial (TutorialArchs).
func (a Arch) IsTutorial() bool { return slices.Contains(TutorialArchs, a) }

// Cell names the recurrent cell of encoder and decoder.
type Cell string

// The supported cells.
const (
	LSTM Cell = "lstm"
	GRU  Cell = "gru"
)

// Cells lists every supported cell.
var Cells = []Cell{LSTM, GRU}

// ParseCell checks a cell name.
func ParseCell(s string) (Cell, error) {
	switch Cell(s) {
	case LSTM, GRU:
		return Cell(s), nil
	}
	return "", fmt.Errorf("unknown cell %q (want lstm or gru)", s)
}

// HasCellState reports whether the cell carries a cell state beside the
// hidden state: true for LSTM. GRU models have no cell input or output.
func (c Cell) HasCellState() bool { return c != GRU }

// gates is the number of gate blocks in the cell's weights: 4 for LSTM, 3
// for GRU.
func (c Cell) gates() int {
	if c == GRU {
		return 3
	}
	return 4
}

// Config is the shape of a model: everything the graphs need besides the
// weights.
type Config struct {
	// Arch is the decoder architecture.
	Arch Arch `json:"arch"`
	// Cell is the recurrent cell of encoder and decoder. Empty means LSTM
	// (attnx.json files written before GRU support have none).
	Cell Cell `json:"cell"`
	// Hidden is H, the recurrent hidden size.
	Hidden int `json:"hidden_size"`
	// Embedding is E, the embedding size of both vocabularies. 0 means H
	// (attnx.json files written before it was recorded).
	Embedding int `json:"embedding_size"`
	// Layers is L, the number of stacked recurrent layers in encoder and
	// decoder.
	Layers int `json:"num_layers"`
	// SrcVocab and TgtVocab are Vs and Vt.
	SrcVocab int `json:"src_vocab_size"`
	TgtVocab int `json:"tgt_vocab_size"`
	// MaxLength is M, the number of source positions a tutorial-location
	// decoder attends over: longer sources cannot run. 0 for every other
	// architecture.
	MaxLength int `json:"max_length,omitempty"`
}

// WithDefaults returns c with the defaults of fields older attnx.json files
// lack filled in: Cell LSTM and Embedding = Hidden.
func (c Config) WithDefaults() Config {
	if c.Cell == "" {
		c.Cell = LSTM
	}
	if c.Embedding == 0 {
		c.Embedding = c.Hidden
	}
	return c
}

// Validate checks that the sizes are usable.
func (c Config) Validate() error {
	if _, err := ParseArch(string(c.Arch)); err != nil {
		return err
	}
	if c.Cell != "" {
		if _, err := ParseCell(string(c.Cell)); err != nil {
			return err
		}
	}
	switch {
	case c.Hidden < 1:
		return fmt.Errorf("hidden_size %d: must be at least 1", c.Hidden)
	case c.Embedding < 0:
		return fmt.Errorf("embedding_size %d: must be at least 1 (or absent: the hidden size)", c.Embedding)
	case c.Layers < 1:
		return fmt.Errorf("num_layers %d: must be at least 1", c.Layers)
	case c.SrcVocab < 1 || c.TgtVocab < 1:
		return fmt.Errorf("vocabulary sizes %d/%d: must be at least 1", c.SrcVocab, c.TgtVocab)
	case c.Arch == TutorialLocation && c.MaxLength < 1:
		return fmt.Errorf("max_length %d: a %s model needs the number of source positions it attends over (at least 1)", c.MaxLength, c.Arch)
	case c.Arch != TutorialLocation && c.MaxLength != 0:
		return fmt.Errorf("max_length %d: only %s models have one", c.MaxLength, TutorialLocation)
	}
	return nil
}

// CheckSourceLength reports an error when a source of n tokens cannot run
// through a model of c: a tutorial-location decoder attends over MaxLength
// positions only. Callers check before running, naming the row at fault.
func (c Config) CheckSourceLength(n int) error {
	if c.MaxLength > 0 && n > c.MaxLength {
		return fmt.Errorf("source of %d tokens is longer than the model's max_length %d (a %s decoder attends over %d positions only)", n, c.MaxLength, c.Arch, c.MaxLength)
	}
	return nil
}

// String summarises the configuration, as in "bahdanau H=64 L=1 Vs=40
// Vt=14" or "tutorial-location gru H=64 E=32 L=1 Vs=40 Vt=14 M=10": the
// cell when it is not LSTM (the article's), E when it differs from H, M
// when there is one.
func (c Config) String() string {
	c = c.WithDefaults()
	parts := []string{string(c.Arch)}
	if c.Cell != LSTM {
		parts = append(parts, string(c.Cell))
	}
	parts = append(parts, fmt.Sprintf("H=%d", c.Hidden))
	if c.Embedding != c.Hidden {
		parts = append(parts, fmt.Sprintf("E=%d", c.Embedding))
	}
	parts = append(parts, fmt.Sprintf("L=%d", c.Layers), fmt.Sprintf("Vs=%d", c.SrcVocab), fmt.Sprintf("Vt=%d", c.TgtVocab))
	if c.MaxLength > 0 {
		parts = append(parts, fmt.Sprintf("M=%d", c.MaxLength))
	}
	return strings.Join(parts, " ")
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

// TutorialSpecial is the convention of PyTorch's seq2seq tutorial, both
// versions: SOS_token = 0 and EOS_token = 1 (its vocabularies start with
// "SOS" and "EOS"); it pads with 0 and has no unknown-word token.
var TutorialSpecial = Special{SOS: 0, EOS: 1, PAD: 0, UNK: -1}

// DefaultSpecialFor is the special token ids a model of the architecture
// has unless its vocabularies or the user say otherwise: TutorialSpecial
// for the tutorial's decoders, DefaultSpecial for the article's.
func DefaultSpecialFor(a Arch) Special {
	if a.IsTutorial() {
		return TutorialSpecial
	}
	return DefaultSpecial
}
