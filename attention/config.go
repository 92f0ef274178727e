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
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
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

// DefaultSpecial is the convention of attnx's tools and demo models:
// <pad>=0, <sos>=1, <eos>=2, <unk>=3.
var DefaultSpecial = Special{SOS: 1, EOS: 2, PAD: 0, UNK: 3}

// ModelInfo is the content of attnx.json, the file that makes a model
// directory self-describing.
type ModelInfo struct {
	// Format identifies the file; always "attnx-model".
	Format string `json:"format"`
	// FormatVersion is 1.
	FormatVersion int `json:"format_version"`
	Config
	// Opset is the ONNX opset of the graphs.
	Opset int64 `json:"opset"`
	// Special holds the special token ids.
	Special Special `json:"special_tokens"`
	// SrcTokens and TgtTokens are the vocabularies (index = id), when known.
	SrcTokens []string `json:"src_vocab,omitempty"`
	TgtTokens []string `json:"tgt_vocab,omitempty"`
	// Files maps a role ("encoder", "decoder", "greedy") to a file name in
	// the directory.
	Files map[string]string `json:"files"`
	// Producer is the attnx version that wrote the directory.
	Producer string `json:"producer"`
	// Source describes the checkpoint the model came from.
	Source string `json:"source,omitempty"`
}

// ModelInfoFormat is the value of ModelInfo.Format.
const ModelInfoFormat = "attnx-model"

// Validate checks a ModelInfo read from disk.
func (m *ModelInfo) Validate() error {
	if m.Format != ModelInfoFormat {
		return fmt.Errorf("format %q: expected %q", m.Format, ModelInfoFormat)
	}
	if m.FormatVersion != 1 {
		return fmt.Errorf("format_version %d: this attnx reads version 1", m.FormatVersion)
	}
	if err := m.Config.Validate(); err != nil {
		return err
	}
	if m.SrcTokens != nil && len(m.SrcTokens) != m.SrcVocab {
		return fmt.Errorf("src_vocab has %d tokens, expected src_vocab_size %d", len(m.SrcTokens), m.SrcVocab)
	}
	if m.TgtTokens != nil && len(m.TgtTokens) != m.TgtVocab {
		return fmt.Errorf("tgt_vocab has %d tokens, expected tgt_vocab_size %d", len(m.TgtTokens), m.TgtVocab)
	}
	for name, id := range map[string]int64{"sos": m.Special.SOS, "eos": m.Special.EOS, "pad": m.Special.PAD} {
		if id < 0 || id >= int64(m.TgtVocab) {
			return fmt.Errorf("special token %s = %d: outside the target vocabulary [0, %d)", name, id, m.TgtVocab)
		}
	}
	if m.Special.UNK < -1 || m.Special.UNK >= int64(m.SrcVocab) {
		return fmt.Errorf("special token unk = %d: outside the source vocabulary [0, %d) (or -1 for none)", m.Special.UNK, m.SrcVocab)
	}
	for _, role := range []string{"encoder", "decoder"} {
		if m.Files[role] == "" {
			return fmt.Errorf("files.%s is missing", role)
		}
	}
	// Every role, not only the required ones: readers open files.greedy
	// (and any later role) by joining it to the model directory.
	roles := make([]string, 0, len(m.Files))
	for role := range m.Files {
		roles = append(roles, role)
	}
	sort.Strings(roles)
	for _, role := range roles {
		f := m.Files[role]
		if f == "" || strings.ContainsAny(f, "/\\\x00") || f == "." || f == ".." {
			return fmt.Errorf("files.%s = %q: must be a plain file name inside the model directory", role, f)
		}
	}
	return nil
}

// ReadModelInfo reads and validates an attnx.json file.
func ReadModelInfo(path string) (*ModelInfo, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseModelInfo(data, path)
}

// ParseModelInfo decodes and validates attnx.json content; name is used in
// error messages.
func ParseModelInfo(data []byte, name string) (*ModelInfo, error) {
	var m ModelInfo
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%s: not a valid attnx.json: %w", name, err)
	}
	// One object and nothing after it: a second object or garbage means
	// the file was appended to or corrupted.
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("%s: not a valid attnx.json: unexpected data after the JSON object at byte %d", name, dec.InputOffset())
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}
