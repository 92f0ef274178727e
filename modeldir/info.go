package modeldir

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/quant"
)

// Info is the content of attnx.json, the file that makes a model
// directory self-describing. The model's configuration is inlined: "arch",
// "cell" ("lstm" or "gru"), "hidden_size", "embedding_size", "num_layers",
// "src_vocab_size", "tgt_vocab_size" and, for tutorial-location models,
// "max_length". Files written before cells and embedding sizes were
// recorded lack "cell" and "embedding_size": they read as LSTM with the
// embedding size equal to the hidden size; files written before the
// weights' precision was recorded lack "weights": they read as fp32.
type Info struct {
	// Format identifies the file; always "attnx-model".
	Format string `json:"format"`
	// FormatVersion is 1.
	FormatVersion int `json:"format_version"`
	attention.Config
	// Opset is the ONNX opset of the graphs.
	Opset int64 `json:"opset"`
	// Weights is the precision the graphs store their weights in: fp32,
	// int8 or int4 (attnx export --weights). An int4 model's graphs use
	// ONNX Runtime's com.microsoft operators.
	Weights quant.Precision `json:"weights"`
	// Special holds the special token ids.
	Special attention.Special `json:"special_tokens"`
	// SrcTokens and TgtTokens are the vocabularies (index = id), when known.
	SrcTokens []string `json:"src_vocab,omitempty"`
	TgtTokens []string `json:"tgt_vocab,omitempty"`
	// Files maps a role ("encoder", "decoder", "greedy", "beam": see the
	// Role constants) to a file name in the directory.
	Files map[string]string `json:"files"`
	// Producer is the attnx version that wrote the directory.
	Producer string `json:"producer"`
	// Source describes the checkpoint the model came from.
	Source string `json:"source,omitempty"`
}

// InfoFormat is the value of Info.Format.
const InfoFormat = "attnx-model"

// Validate checks an Info read from disk.
func (m *Info) Validate() error {
	if m.Format != InfoFormat {
		return fmt.Errorf("format %q: expected %q", m.Format, InfoFormat)
	}
	if m.FormatVersion != 1 {
		return fmt.Errorf("format_version %d: this attnx reads version 1", m.FormatVersion)
	}
	if err := m.Config.Validate(); err != nil {
		return err
	}
	if _, err := quant.ParsePrecision(string(m.Weights)); err != nil {
		return fmt.Errorf("weights: %w", err)
	}
	if m.SrcTokens != nil && len(m.SrcTokens) != m.SrcVocab {
		return fmt.Errorf("src_vocab has %d tokens, expected src_vocab_size %d", len(m.SrcTokens), m.SrcVocab)
	}
	if m.TgtTokens != nil && len(m.TgtTokens) != m.TgtVocab {
		return fmt.Errorf("tgt_vocab has %d tokens, expected tgt_vocab_size %d", len(m.TgtTokens), m.TgtVocab)
	}
	if err := m.Special.Check(m.Config); err != nil {
		return err
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

// ReadInfo reads and validates an attnx.json file.
func ReadInfo(path string) (*Info, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseInfo(data, path)
}

// ParseInfo decodes and validates attnx.json content; name is used in
// error messages.
func ParseInfo(data []byte, name string) (*Info, error) {
	var m Info
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
	m.Config = m.Config.WithDefaults()
	m.Weights = m.Weights.OrFP32()
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &m, nil
}
