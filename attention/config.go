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

// The toolkits' and other tutorials' decoders (docs/toolkits.md); their
// encoders are bidirectional.
const (
	// OpenNMTDot, OpenNMTGeneral and OpenNMTMLP are OpenNMT-py's RNN
	// decoders (input feeding or standard) with GlobalAttention of that
	// type.
	OpenNMTDot     Arch = "onmt-dot"
	OpenNMTGeneral Arch = "onmt-general"
	OpenNMTMLP     Arch = "onmt-mlp"
	// JoeyBahdanau and JoeyLuong are JoeyNMT's recurrent decoder with
	// its two attention types.
	JoeyBahdanau Arch = "joey-bahdanau"
	JoeyLuong    Arch = "joey-luong"
	// Bentrevett is bentrevett/pytorch-seq2seq's tutorial 3 and 4
	// decoder ("jointly learning to align and translate").
	Bentrevett Arch = "bentrevett"
	// ChatbotDot, ChatbotGeneral and ChatbotConcat are PyTorch's chatbot
	// tutorial's Luong decoder with its three scores.
	ChatbotDot     Arch = "chatbot-dot"
	ChatbotGeneral Arch = "chatbot-general"
	ChatbotConcat  Arch = "chatbot-concat"
	// FairseqLSTM and FairseqLSTMNoAttention are fairseq's LSTMModel
	// (fairseq/models/lstm.py: --arch lstm, lstm_wiseman_iwslt_de_en,
	// lstm_luong_wmt_en_de) with its AttentionLayer and with
	// --decoder-attention 0.
	FairseqLSTM            Arch = "fairseq-lstm"
	FairseqLSTMNoAttention Arch = "fairseq-lstm-noattn"
)

// Archs lists the article's architectures: the LSTM models every attnx
// tool has supported from the start.
var Archs = []Arch{Bahdanau, LuongDot, LuongGeneral, LuongConcat}

// TutorialArchs lists the decoders of PyTorch's seq2seq tutorial.
var TutorialArchs = []Arch{TutorialLocation, TutorialBahdanau}

// ToolkitArchs lists the decoders of the toolkits and other tutorials.
var ToolkitArchs = []Arch{OpenNMTDot, OpenNMTGeneral, OpenNMTMLP, JoeyBahdanau, JoeyLuong, Bentrevett, ChatbotDot, ChatbotGeneral, ChatbotConcat, FairseqLSTM, FairseqLSTMNoAttention}

// StateDictArchs lists the architectures whose state_dicts attnx reads
// from the key names alone (FromStateDict): Archs, then TutorialArchs.
var StateDictArchs = append(append([]Arch{}, Archs...), TutorialArchs...)

// AllArchs lists every supported architecture: Archs, TutorialArchs, then
// ToolkitArchs.
var AllArchs = append(append(append([]Arch{}, Archs...), TutorialArchs...), ToolkitArchs...)

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

// IsToolkit reports whether the architecture is one of ToolkitArchs: a
// bidirectional encoder, keys in its toolkit's own names.
func (a Arch) IsToolkit() bool { return slices.Contains(ToolkitArchs, a) }

// Toolkit names the toolkit or tutorial an architecture comes from, for
// people: "OpenNMT-py", "JoeyNMT", "bentrevett/pytorch-seq2seq", "PyTorch
// chatbot tutorial"; "" for the article's and PyTorch's seq2seq tutorial's.
func (a Arch) Toolkit() string {
	switch {
	case strings.HasPrefix(string(a), "onmt-"):
		return "OpenNMT-py"
	case strings.HasPrefix(string(a), "joey-"):
		return "JoeyNMT"
	case a == Bentrevett:
		return "bentrevett/pytorch-seq2seq"
	case strings.HasPrefix(string(a), "chatbot-"):
		return "PyTorch chatbot tutorial"
	case strings.HasPrefix(string(a), "fairseq-"):
		return "fairseq"
	}
	return ""
}

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

	// The fields below describe the toolkits' models (ToolkitArchs) and
	// are absent for the others.

	// Bidirectional is true for an encoder with both directions.
	Bidirectional bool `json:"bidirectional,omitempty"`
	// EncoderHidden is h, the encoder's hidden size per direction; 0
	// means Hidden.
	EncoderHidden int `json:"encoder_hidden_size,omitempty"`
	// EncoderLayers is the number of encoder layers; 0 means Layers
	// (which is the decoder's).
	EncoderLayers int `json:"encoder_layers,omitempty"`
	// TgtEmbedding is the target embedding size; 0 means Embedding (which
	// is then the source's).
	TgtEmbedding int `json:"tgt_embedding_size,omitempty"`
	// InputFeed is true when the decoder's RNN input is [embedding;
	// previous attentional vector]: the decoder then carries the state
	// input_feed.
	InputFeed bool `json:"input_feed,omitempty"`
	// Bridge is how the decoder's initial state comes from the encoder's
	// final one, where the architecture has a choice (see Bridges).
	Bridge string `json:"bridge,omitempty"`
	// ScaleSrcEmbedding and ScaleTgtEmbedding multiply the source's or
	// the target's embeddings by the square root of their size (JoeyNMT's
	// embeddings.scale).
	ScaleSrcEmbedding bool `json:"src_embedding_scale,omitempty"`
	ScaleTgtEmbedding bool `json:"tgt_embedding_scale,omitempty"`
	// OutEmbedding is the size of the features the classifier reads when
	// the decoder projects its output first (fairseq's
	// --decoder-out-embed-dim, through additional_fc); 0 means Hidden.
	OutEmbedding int `json:"out_embedding_size,omitempty"`
	// TiedOutput: the classifier's weight is the target embedding table,
	// with no bias (fairseq's --share-decoder-input-output-embed).
	TiedOutput bool `json:"tied_output,omitempty"`
	// ContextGate is OpenNMT-py's context gate over the decoder's output
	// (opt.context_gate): "source", "target" or "both"; "" for none.
	ContextGate string `json:"context_gate,omitempty"`
	// CopyAttention makes the generator OpenNMT-py's pointer-generator
	// (opt.copy_attn): p(w) = (1 - p_copy) softmax(W o + b)[w] + p_copy
	// times the copy attention summed over the positions of w, p_copy =
	// sigmoid(w_c . o + b_c). It names where the copy attention comes
	// from: "reuse" (the decoder's own, opt.reuse_copy_attn) or the type
	// of a separate GlobalAttention over the decoder's output ("dot",
	// "general", "mlp": opt.copy_attn_type); "" for a plain generator.
	CopyAttention string `json:"copy_attention,omitempty"`
	// CopyPad is the target vocabulary's padding id, which the copy
	// generator never gives probability (its logit is -inf).
	CopyPad int `json:"copy_pad,omitempty"`
	// Coverage is opt.coverage_attn. OpenNMT-py's RNN decoders sum the
	// attention into a coverage vector (for the coverage penalty) but do
	// not feed it to the attention (its linear_cover goes unused), so the
	// graphs are those of the model without it.
	Coverage bool `json:"coverage_attn,omitempty"`
}

// ContextGates lists OpenNMT-py's context gate types.
var ContextGates = []string{"source", "target", "both"}

// CopyAttentions lists the values of Config.CopyAttention besides "".
var CopyAttentions = []string{"reuse", "dot", "general", "mlp"}

// HasCopy reports whether the model has copy attention.
func (c Config) HasCopy() bool { return c.CopyAttention != "" }

// Bridges lists, per architecture with a choice, how the decoder's
// initial state may be made; the first is the default ("").
//
//   - OpenNMT-py: "" (per layer, the directions' final states
//     concatenated) or "relu-linear" (opt.bridge: relu(Linear) of each
//     state first).
//   - JoeyNMT: "bridge" (tanh(Linear) of the top layer's [forward;
//     backward] final hidden state, for every layer), "last" (that state
//     itself) or "zero".
var Bridges = map[string][]string{
	"onmt": {"", "relu-linear"},
	"joey": {"bridge", "last", "zero"},
}

func (c Config) bridgeFamily() string {
	family, _, _ := strings.Cut(string(c.Arch), "-")
	return family
}

// omitDefaults clears the toolkit fields that equal what they default to
// (EncoderLayers = Layers, EncoderHidden = Hidden, TgtEmbedding =
// Embedding, OutEmbedding = Hidden), so that attnx.json records only what
// differs.
func (c Config) omitDefaults() Config {
	if c.OutEmbedding == c.Hidden {
		c.OutEmbedding = 0
	}
	if c.EncoderLayers == c.Layers {
		c.EncoderLayers = 0
	}
	if c.EncoderHidden == c.Hidden {
		c.EncoderHidden = 0
	}
	if c.TgtEmbedding == c.Embedding {
		c.TgtEmbedding = 0
	}
	return c
}

// EncHidden is h, the encoder's hidden size per direction.
func (c Config) EncHidden() int {
	if c.EncoderHidden > 0 {
		return c.EncoderHidden
	}
	return c.Hidden
}

// OutWidth is the size of the features the classifier reads:
// OutEmbedding, else Hidden.
func (c Config) OutWidth() int {
	if c.OutEmbedding > 0 {
		return c.OutEmbedding
	}
	return c.Hidden
}

// EncLayers is the number of encoder layers.
func (c Config) EncLayers() int {
	if c.EncoderLayers > 0 {
		return c.EncoderLayers
	}
	return c.Layers
}

// Directions is 2 for a bidirectional encoder, else 1.
func (c Config) Directions() int {
	if c.Bidirectional {
		return 2
	}
	return 1
}

// TgtEmbeddingSize is the target embedding size.
func (c Config) TgtEmbeddingSize() int {
	if c.TgtEmbedding > 0 {
		return c.TgtEmbedding
	}
	return c.WithDefaults().Embedding
}

// SumsDirections reports whether the encoder's outputs are the sum of its
// two directions' (the chatbot tutorial) rather than their concatenation.
func (c Config) SumsDirections() bool { return strings.HasPrefix(string(c.Arch), "chatbot-") }

// EncoderWidth is the size of each encoder output, encoder_outputs' last
// dimension: the directions' outputs concatenated (2h), summed (h), or the
// one direction's.
func (c Config) EncoderWidth() int {
	if c.Bidirectional && !c.SumsDirections() {
		return 2 * c.EncHidden()
	}
	return c.EncHidden()
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
	return c.validateToolkit()
}

// validateToolkit checks the toolkit fields: absent for the article's and
// the seq2seq tutorial's models, consistent for the toolkits'.
func (c Config) validateToolkit() error {
	if !c.Arch.IsToolkit() {
		if c.Bidirectional || c.EncoderHidden != 0 || c.EncoderLayers != 0 || c.TgtEmbedding != 0 || c.InputFeed || c.Bridge != "" || c.ScaleSrcEmbedding || c.ScaleTgtEmbedding || c.OutEmbedding != 0 || c.TiedOutput {
			return fmt.Errorf("bidirectional, encoder_hidden_size, encoder_layers, tgt_embedding_size, input_feed, bridge, the embedding scales, out_embedding_size and tied_output are for the toolkits' architectures (%s), not %s", archList(ToolkitArchs), c.Arch)
		}
		return nil
	}
	switch {
	case !c.Bidirectional && !strings.HasPrefix(string(c.Arch), "onmt-") && !c.isFairseq():
		return fmt.Errorf("%s models have a bidirectional encoder (bidirectional: true)", c.Arch)
	case strings.HasPrefix(string(c.Arch), "onmt-") && (c.EncoderWidth() != c.Hidden || c.EncLayers() != c.Layers):
		return fmt.Errorf("%s: the encoder's outputs (%d wide) and %d layers must match the decoder's hidden size %d and %d layers (OpenNMT-py passes the encoder's final state on as it is)", c.Arch, c.EncoderWidth(), c.EncLayers(), c.Hidden, c.Layers)
	case c.SumsDirections() && c.EncHidden() != c.Hidden:
		return fmt.Errorf("%s: the encoder's hidden size %d must equal the decoder's %d (its summed outputs are attended to with the decoder's state)", c.Arch, c.EncHidden(), c.Hidden)
	case c.EncoderHidden < 0 || c.EncoderLayers < 0 || c.TgtEmbedding < 0 || c.OutEmbedding < 0:
		return fmt.Errorf("encoder_hidden_size %d, encoder_layers %d, tgt_embedding_size %d, out_embedding_size %d: must be positive (or absent)", c.EncoderHidden, c.EncoderLayers, c.TgtEmbedding, c.OutEmbedding)
	case c.isFairseq() && (c.EncLayers() != c.Layers || !c.InputFeed):
		return fmt.Errorf("%s: the encoder's %d layers must match the decoder's %d, and the decoder feeds its input (input_feed: true), as fairseq's LSTMModel requires", c.Arch, c.EncLayers(), c.Layers)
	case (c.OutEmbedding != 0 || c.TiedOutput) && !c.isFairseq():
		return fmt.Errorf("out_embedding_size, tied_output: only fairseq's models (%s, %s) have them, not %s", FairseqLSTM, FairseqLSTMNoAttention, c.Arch)
	case c.TiedOutput && c.OutWidth() != c.TgtEmbeddingSize():
		return fmt.Errorf("tied_output: the classifier reads %d features, but the target embedding it shares is %d wide", c.OutWidth(), c.TgtEmbeddingSize())
	}
	allowed, has := Bridges[c.bridgeFamily()]
	if !has {
		allowed = []string{""}
	}
	if !slices.Contains(allowed, c.Bridge) {
		return fmt.Errorf("bridge %q: a %s model's bridge is one of %q", c.Bridge, c.Arch, allowed)
	}
	if (c.ScaleSrcEmbedding || c.ScaleTgtEmbedding) && !strings.HasPrefix(string(c.Arch), "joey-") {
		return fmt.Errorf("src_embedding_scale, tgt_embedding_scale: %s models do not scale their embeddings", c.Arch)
	}
	if c.InputFeed && !strings.HasPrefix(string(c.Arch), "onmt-") && !strings.HasPrefix(string(c.Arch), "joey-") && !c.isFairseq() {
		return fmt.Errorf("input_feed: %s models have no input feeding", c.Arch)
	}
	return c.validateOpenNMTExtras()
}

// validateOpenNMTExtras checks the OpenNMT-py decoder options
// (context_gate, copy, coverage_attn): OpenNMT-py models only, with known
// values.
func (c Config) validateOpenNMTExtras() error {
	onmt := strings.HasPrefix(string(c.Arch), "onmt-")
	if !onmt && (c.ContextGate != "" || c.HasCopy() || c.CopyPad != 0 || c.Coverage) {
		return fmt.Errorf("context_gate, copy_attention, copy_pad and coverage_attn are OpenNMT-py's decoder options, not %s's", c.Arch)
	}
	if c.ContextGate != "" && !slices.Contains(ContextGates, c.ContextGate) {
		return fmt.Errorf("context_gate %q: want one of %q", c.ContextGate, ContextGates)
	}
	if c.HasCopy() {
		switch {
		case !slices.Contains(CopyAttentions, c.CopyAttention):
			return fmt.Errorf("copy_attention %q: want one of %q", c.CopyAttention, CopyAttentions)
		case c.CopyPad < 0 || c.CopyPad >= c.TgtVocab:
			return fmt.Errorf("copy_pad %d: want a target id, 0 to %d", c.CopyPad, c.TgtVocab-1)
		case !c.InputFeed:
			return fmt.Errorf("copy_attention: attnx converts copy attention with input feeding only (OpenNMT-py's StdRNNDecoder, input_feed 0, gives its translator no copy attention)")
		}
	} else if c.CopyPad != 0 {
		return fmt.Errorf("copy_pad %d: only a model with copy_attention has one", c.CopyPad)
	}
	return nil
}

// isFairseq reports whether the model is one of fairseq's.
func (c Config) isFairseq() bool { return strings.HasPrefix(string(c.Arch), "fairseq-") }

func archList(as []Arch) string {
	names := make([]string, len(as))
	for i, a := range as {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
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
	if c.TgtEmbedding > 0 && c.TgtEmbedding != c.Embedding {
		parts = append(parts, fmt.Sprintf("Et=%d", c.TgtEmbedding))
	}
	parts = append(parts, fmt.Sprintf("L=%d", c.Layers), fmt.Sprintf("Vs=%d", c.SrcVocab), fmt.Sprintf("Vt=%d", c.TgtVocab))
	if c.MaxLength > 0 {
		parts = append(parts, fmt.Sprintf("M=%d", c.MaxLength))
	}
	if c.Bidirectional {
		enc := fmt.Sprintf("enc=bi h=%d", c.EncHidden())
		if c.EncLayers() != c.Layers {
			enc += fmt.Sprintf(" Le=%d", c.EncLayers())
		}
		parts = append(parts, enc)
	}
	if c.InputFeed {
		parts = append(parts, "input-feed")
	}
	if c.Bridge != "" {
		parts = append(parts, "bridge="+c.Bridge)
	}
	if c.ContextGate != "" {
		parts = append(parts, "context-gate="+c.ContextGate)
	}
	if c.HasCopy() {
		parts = append(parts, "copy="+c.CopyAttention)
	}
	if c.Coverage {
		parts = append(parts, "coverage")
	}
	if c.OutEmbedding > 0 {
		parts = append(parts, fmt.Sprintf("out=%d", c.OutEmbedding))
	}
	if c.TiedOutput {
		parts = append(parts, "tied-output")
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
