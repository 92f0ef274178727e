package modeldir

import (
	"encoding/json"
	"fmt"
	"github.com/attnx/attnx/decode"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/subword"
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
	// States lists the decoder's recurrent states (the inputs of
	// decoder.onnx besides input_ids, encoder_outputs and source_lengths,
	// each with its next_ output and its encoder output), in order. Files
	// written before it was recorded lack it: Config.States gives it.
	States []attention.StateSpec `json:"decoder_states,omitempty"`
	// Toolkit describes a toolkit's model: where it came from.
	Toolkit *Toolkit `json:"toolkit,omitempty"`
	// SrcPrefix and SrcSuffix are source token ids the model was trained
	// to see around every sentence (JoeyNMT appends </s>; bentrevett's
	// tutorial wraps in <sos> ... <eos>; the chatbot appends EOS):
	// translate, serve and verify add them to text input; token ids given
	// as ids are taken as they are.
	SrcPrefix []int64 `json:"src_prefix,omitempty"`
	SrcSuffix []int64 `json:"src_suffix,omitempty"`
	// Decoding holds the toolkit's decoding rules, when it has any beyond
	// the spec's greedy and beam search.
	Decoding *attention.Rules `json:"decoding,omitempty"`
	// Defaults are how the model is decoded when nothing else is said:
	// attnx translate's flags and attnx serve's request fields and flags,
	// when given, override them.
	Defaults *Defaults `json:"defaults,omitempty"`
	// SrcTokenizer and TgtTokenizer are the subword tokenizers the model
	// was trained with (attnx export --src-tokenizer/--tgt-tokenizer, or
	// the toolkit's config): text is segmented into source pieces and
	// output pieces are joined into text with them. Their files are in
	// the model directory.
	SrcTokenizer *subword.Spec `json:"src_tokenizer,omitempty"`
	TgtTokenizer *subword.Spec `json:"tgt_tokenizer,omitempty"`
}

// Defaults are a model's decoding defaults (attnx.json's "defaults"), each
// named as attnx serve's request field of the same setting.
type Defaults struct {
	// Beam is the beam width (0 or 1: greedy); NBest the hypotheses
	// listed per input (0: 1).
	Beam  int `json:"beam,omitempty"`
	NBest int `json:"n_best,omitempty"`
	// LengthPenalty is beam search's alpha (absent: translate's default);
	// LengthPenaltyForm is "power" (score / len ** alpha, the default) or
	// "wu" (score / ((5 + len) / 6) ** alpha).
	LengthPenalty     *float64 `json:"length_penalty,omitempty"`
	LengthPenaltyForm string   `json:"length_penalty_form,omitempty"`
	// MinLen keeps EOS out of the first MinLen output tokens.
	MinLen int `json:"min_len,omitempty"`
	// ReplaceUnk replaces unknown output tokens with the source tokens
	// they attend to most.
	ReplaceUnk bool `json:"replace_unk,omitempty"`
	// Rules are beam search's rules: "spec" (attnx's, the default) or
	// "joeynmt" (JoeyNMT 2.3's, length_penalty its beam_alpha) or
	// "opennmt" (OpenNMT-py's, with length_penalty_form none, avg or wu;
	// BanUNK its -ban_unk_token) or "fairseq" (fairseq's
	// SequenceGenerator, length_penalty its --lenpen, greedy included).
	Rules  string `json:"rules,omitempty"`
	BanUNK bool   `json:"ban_unk,omitempty"`
	// NoRepeatNgram and RepetitionPenalty are JoeyNMT's
	// no_repeat_ngram_size and repetition_penalty (beam search).
	NoRepeatNgram     int     `json:"no_repeat_ngram,omitempty"`
	RepetitionPenalty float64 `json:"repetition_penalty,omitempty"`
	// MaxLen is the most output tokens, EOS included. MaxLenFactor, when
	// set, makes the limit int(n * MaxLenFactor + MaxLenAdd) for a source
	// of n tokens, capped at MaxLen when that is set too: JoeyNMT's
	// max_output_length -1 is factor 1.5; onmt_translate's -max_length 250
	// with -max_length_ratio 1.25 is max_len 250, factor 1.25, add 5.
	// Without any of them the limit is 2n+10.
	MaxLen       int     `json:"max_len,omitempty"`
	MaxLenFactor float64 `json:"max_len_factor,omitempty"`
	MaxLenAdd    float64 `json:"max_len_add,omitempty"`
	// Batching, when set, is how the toolkit's translate command cuts a
	// test set into batches; n of MaxLenFactor is then the longest source
	// of the sentence's batch, as the toolkit computes its limit per
	// batch. Without it (and for inputs that are not a test set) n is the
	// sentence's own length.
	Batching *Batching `json:"batching,omitempty"`
	// RulesVersion is the toolkit release whose search Rules reproduce,
	// where it changed: 2 for OpenNMT-py 2.x's BeamSearch (decode
	// .OpenNMTBeam V2: a sentence ends once its best pick has finished at
	// some step and K hypotheses have); 0 for the current one.
	RulesVersion int `json:"rules_version,omitempty"`
}

// Batching styles (Batching.Style).
const (
	// BatchingOpenNMT is onmt_translate's: the test set's sentences sorted
	// by source length (a stable sort over buckets of 16384 sentences),
	// then cut into batches of Size sentences, or with Tokens of at most
	// Size padded source tokens (sentences x longest source), a longer
	// sentence alone.
	BatchingOpenNMT = "opennmt"
	// BatchingJoeyNMT is joeynmt translate's and test's: the sentences in
	// file order, batches of Size sentences, or with Tokens closed as soon
	// as sentences x (longest source + 1) reaches Size.
	BatchingJoeyNMT = "joeynmt"
)

// Batching says how a toolkit batches a test set (Defaults.Batching).
type Batching struct {
	Style  string `json:"style"`
	Size   int    `json:"size"`
	Tokens bool   `json:"tokens,omitempty"`
}

// TargetUNK is the target id spelled like the source vocabulary's unknown
// token unk (the token -replace_unk and a ban on the unknown token act
// on), -1 when there is none.
func TargetUNK(unk int64, src, tgt []string) int64 {
	if unk < 0 || int(unk) >= len(src) {
		return -1
	}
	return int64(slices.Index(tgt, src[unk]))
}

// TargetUNK is TargetUNK of the model's vocabularies.
func (m *Info) TargetUNK() int64 { return TargetUNK(m.Special.UNK, m.SrcTokens, m.TgtTokens) }

// OutputLimit is the model's output length limit for a source of n tokens
// (n: the longest source of its batch under Defaults.Batching), 0 when the
// model has none.
func (m *Info) OutputLimit(n int) int { return m.Defaults.Limit(n) }

// OpenNMTTranslate are onmt_translate 3.x's decoding defaults: beam 5 with
// its beam search, -length_penalty avg, -alpha 1, and -max_length 250 with
// -max_length_ratio 1.25 over the longest source of each batch of
// -batch_size 30 sentences, sorted by length.
func OpenNMTTranslate() *Defaults {
	alpha := 1.0
	return &Defaults{Beam: 5, Rules: "opennmt", LengthPenaltyForm: "avg", LengthPenalty: &alpha,
		MaxLen: 250, MaxLenFactor: 1.25, MaxLenAdd: 5, Batching: &Batching{Style: BatchingOpenNMT, Size: 30}}
}

// OpenNMT2Translate is onmt_translate 2.x's decoding with no flags: beam
// 5 with its BeamSearch (RulesVersion 2), -length_penalty none, at most
// 100 tokens (-max_length).
func OpenNMT2Translate() *Defaults {
	alpha := 0.0
	return &Defaults{Beam: 5, Rules: "opennmt", LengthPenaltyForm: "none", LengthPenalty: &alpha, MaxLen: 100, RulesVersion: 2}
}

// Limit is the output length limit d sets for n source tokens (the longest
// source of the batch under Batching), 0 when d (or nil) sets none.
func (d *Defaults) Limit(n int) int {
	switch {
	case d == nil:
		return 0
	case d.MaxLenFactor > 0:
		l := max(1, int(float64(n)*d.MaxLenFactor+d.MaxLenAdd))
		if d.MaxLen > 0 {
			l = min(l, d.MaxLen)
		}
		return l
	case d.MaxLen > 0:
		return d.MaxLen
	}
	return 0
}

// check says what is wrong with d, naming its fields.
func (d *Defaults) check() error {
	switch a := d.LengthPenalty; {
	case d.Beam < 0:
		return fmt.Errorf("beam %d: want 1 (greedy) or more", d.Beam)
	case d.NBest < 0 || d.NBest > max(d.Beam, 1):
		return fmt.Errorf("n_best %d: want 1 to beam %d", d.NBest, max(d.Beam, 1))
	case a != nil && decode.LengthPenaltyRange(*a) != nil:
		return fmt.Errorf("length_penalty %g: %v", *a, decode.LengthPenaltyRange(*a))
	case d.Rules != "" && d.Rules != "spec" && d.Rules != "opennmt" && d.Rules != "joeynmt" && d.Rules != "fairseq":
		return fmt.Errorf("rules %q: want \"spec\", \"opennmt\", \"joeynmt\" or \"fairseq\"", d.Rules)
	case d.Rules == "opennmt" && d.LengthPenaltyForm != "" && d.LengthPenaltyForm != "none" && d.LengthPenaltyForm != "avg" && d.LengthPenaltyForm != "wu":
		return fmt.Errorf("length_penalty_form %q with rules \"opennmt\": want \"none\", \"avg\" or \"wu\"", d.LengthPenaltyForm)
	case d.RulesVersion != 0 && !(d.Rules == "opennmt" && d.RulesVersion == 2):
		return fmt.Errorf("rules_version %d: only OpenNMT-py's rules have another, 2", d.RulesVersion)
	case d.Rules != "opennmt" && d.LengthPenaltyForm != "" && d.LengthPenaltyForm != "power" && d.LengthPenaltyForm != "wu":
		return fmt.Errorf("length_penalty_form %q: want \"power\" or \"wu\"", d.LengthPenaltyForm)
	case d.NoRepeatNgram < 0:
		return fmt.Errorf("no_repeat_ngram %d: must not be negative", d.NoRepeatNgram)
	case math.IsNaN(d.RepetitionPenalty) || math.IsInf(d.RepetitionPenalty, 0) || d.RepetitionPenalty < 0:
		return fmt.Errorf("repetition_penalty %v: want a finite value >= 0", d.RepetitionPenalty)
	case d.MinLen < 0:
		return fmt.Errorf("min_len %d: must not be negative", d.MinLen)
	case d.MaxLen < 0:
		return fmt.Errorf("max_len %d: must not be negative", d.MaxLen)
	case math.IsNaN(d.MaxLenFactor) || math.IsInf(d.MaxLenFactor, 0) || d.MaxLenFactor < 0:
		return fmt.Errorf("max_len_factor %v: want a finite value >= 0", d.MaxLenFactor)
	case math.IsNaN(d.MaxLenAdd) || math.IsInf(d.MaxLenAdd, 0) || d.MaxLenAdd < 0 || (d.MaxLenAdd > 0 && d.MaxLenFactor == 0):
		return fmt.Errorf("max_len_add %v: want a value >= 0, with max_len_factor", d.MaxLenAdd)
	}
	if b := d.Batching; b != nil {
		switch {
		case b.Style != BatchingOpenNMT && b.Style != BatchingJoeyNMT:
			return fmt.Errorf("batching style %q: want %q or %q", b.Style, BatchingOpenNMT, BatchingJoeyNMT)
		case b.Size < 1:
			return fmt.Errorf("batching size %d: want 1 or more", b.Size)
		}
	}
	return nil
}

// Toolkit says where a toolkit's model came from.
type Toolkit struct {
	// Name is the toolkit: OpenNMT-py, JoeyNMT, bentrevett/pytorch-seq2seq,
	// PyTorch chatbot tutorial.
	Name string `json:"name"`
	// Version is what the files say of the toolkit's version ("3", "2",
	// a JoeyNMT config's joeynmt_version, a tutorial's key-name era).
	Version string `json:"version,omitempty"`
	// Format describes the files read.
	Format string `json:"format"`
}

// SourceIDs wraps a sentence's source token ids in SrcPrefix and
// SrcSuffix: what the model saw around each sentence in training.
func (m *Info) SourceIDs(ids []int64) []int64 {
	if len(m.SrcPrefix) == 0 && len(m.SrcSuffix) == 0 {
		return ids
	}
	out := make([]int64, 0, len(m.SrcPrefix)+len(ids)+len(m.SrcSuffix))
	out = append(out, m.SrcPrefix...)
	out = append(out, ids...)
	return append(out, m.SrcSuffix...)
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
	if m.States != nil {
		if err := m.Config.CheckStates(m.States); err != nil {
			return err
		}
	}
	for _, a := range []struct {
		name string
		ids  []int64
	}{{"src_prefix", m.SrcPrefix}, {"src_suffix", m.SrcSuffix}} {
		for _, id := range a.ids {
			if id < 0 || id >= int64(m.SrcVocab) {
				return fmt.Errorf("%s holds id %d, outside the source vocabulary [0, %d)", a.name, id, m.SrcVocab)
			}
		}
	}
	if m.Decoding != nil {
		if err := m.Decoding.Check(m.Config); err != nil {
			return fmt.Errorf("decoding: %w", err)
		}
	}
	if m.Defaults != nil {
		if err := m.Defaults.check(); err != nil {
			return fmt.Errorf("defaults: %w", err)
		}
	}
	for _, t := range []struct {
		name  string
		spec  *subword.Spec
		vocab []string
	}{{"src_tokenizer", m.SrcTokenizer, m.SrcTokens}, {"tgt_tokenizer", m.TgtTokenizer, m.TgtTokens}} {
		if t.spec == nil {
			continue
		}
		if err := t.spec.Check(); err != nil {
			return fmt.Errorf("%s: %w", t.name, err)
		}
		if t.vocab == nil {
			return fmt.Errorf("%s: the model has no %s_vocab for its pieces", t.name, t.name[:3])
		}
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
