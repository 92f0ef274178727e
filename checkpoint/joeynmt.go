package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// JoeyNMT is a JoeyNMT model's configuration and vocabularies: what its
// model directory holds beside the checkpoint (config.yaml and the
// vocabulary files it names).
type JoeyNMT struct {
	// Config is the config file read.
	Config string
	// Version is the config's joeynmt_version, "" when it has none (1.x
	// configs).
	Version string
	// Model is the config's model section.
	Model JoeyModel
	// SrcVocab and TrgVocab are the vocabularies, index = id, specials
	// first as JoeyNMT's Vocabulary puts them.
	SrcVocab, TrgVocab []string
	// Specials are the special tokens' strings (unk, pad, bos, eos).
	Specials JoeySpecials
	// VocabFiles are the vocabulary files read.
	VocabFiles [2]string
	// Tokenizers are the source's and the target's subword tokenizers
	// (data.src and data.trg with level bpe), nil for word and char levels.
	Tokenizers [2]*TokenizerRef
	// Testing is the config's testing section: joeynmt translate's
	// decoding settings (nil where the config has none).
	Testing JoeyTesting
}

// JoeyTesting is config.yaml's testing section, the decoding settings;
// nil fields are absent (JoeyNMT 2.3's defaults: beam_size 1, beam_alpha
// -1, n_best 1, max_output_length -1, min_output_length 1).
type JoeyTesting struct {
	BeamSize        *int     `yaml:"beam_size"`
	BeamAlpha       *float64 `yaml:"beam_alpha"`
	Alpha           *float64 `yaml:"alpha"` // obsolete name of beam_alpha
	NBest           *int     `yaml:"n_best"`
	MaxOutputLength *int     `yaml:"max_output_length"`
	MinOutputLength *int     `yaml:"min_output_length"`
	GenerateUnk     *bool    `yaml:"generate_unk"`
	NoRepeatNgram   *int     `yaml:"no_repeat_ngram_size"`
	RepetitionPen   *float64 `yaml:"repetition_penalty"`
	BatchSize       *int     `yaml:"batch_size"`
	BatchType       string   `yaml:"batch_type"`
}

// JoeyModel is config.yaml's model section, the fields that decide the
// architecture.
type JoeyModel struct {
	TiedEmbeddings bool       `yaml:"tied_embeddings"`
	TiedSoftmax    bool       `yaml:"tied_softmax"`
	Encoder        JoeyModule `yaml:"encoder"`
	Decoder        JoeyModule `yaml:"decoder"`
}

// JoeyModule is the encoder's or the decoder's section.
type JoeyModule struct {
	Type          string         `yaml:"type"`
	RNNType       string         `yaml:"rnn_type"`
	HiddenSize    int            `yaml:"hidden_size"`
	NumLayers     int            `yaml:"num_layers"`
	Bidirectional *bool          `yaml:"bidirectional"`
	Attention     string         `yaml:"attention"`
	InputFeeding  *bool          `yaml:"input_feeding"`
	InitHidden    string         `yaml:"init_hidden"`
	Activation    string         `yaml:"activation"`
	Embeddings    JoeyEmbeddings `yaml:"embeddings"`
}

// JoeyEmbeddings is a module's embeddings section.
type JoeyEmbeddings struct {
	EmbeddingDim int  `yaml:"embedding_dim"`
	Scale        bool `yaml:"scale"`
}

// JoeySpecials are the special tokens (data.special_symbols in 2.x
// configs; JoeyNMT's defaults otherwise).
type JoeySpecials struct {
	UNK, PAD, BOS, EOS string
}

type joeyConfig struct {
	Version string `yaml:"joeynmt_version"`
	Data    struct {
		Src      joeySide `yaml:"src"`
		Trg      joeySide `yaml:"trg"`
		SrcVocab string   `yaml:"src_vocab"` // 1.x
		TrgVocab string   `yaml:"trg_vocab"` // 1.x
		Special  struct {
			UNK string `yaml:"unk_token"`
			PAD string `yaml:"pad_token"`
			BOS string `yaml:"bos_token"`
			EOS string `yaml:"eos_token"`
		} `yaml:"special_symbols"`
	} `yaml:"data"`
	Model   JoeyModel   `yaml:"model"`
	Testing JoeyTesting `yaml:"testing"`
}

type joeySide struct {
	VocFile       string `yaml:"voc_file"`
	Level         string `yaml:"level"`
	TokenizerType string `yaml:"tokenizer_type"`
	BPEType       string `yaml:"bpe_type"` // 1.x
	Lowercase     bool   `yaml:"lowercase"`
	Lang          string `yaml:"lang"`
	TokenizerCfg  struct {
		ModelFile    string `yaml:"model_file"`
		Codes        string `yaml:"codes"`
		Pretokenizer string `yaml:"pretokenizer"`
		Separator    string `yaml:"separator"`
	} `yaml:"tokenizer_cfg"`
}

// ReadJoeyNMT reads a JoeyNMT model's config.yaml and the vocabulary files
// it names, found by findBeside's rule: inside the config's folder
// (relative to it, the base name there, then src_vocab.txt and
// trg_vocab.txt, which JoeyNMT copies into its model directory), never
// outside it; the error names every path tried.
func ReadJoeyNMT(configPath string) (*JoeyNMT, error) {
	data, err := os.ReadFile(configPath)
	if err != nil {
		return nil, fmt.Errorf("JoeyNMT config: %w", err)
	}
	var c joeyConfig
	if err := yaml.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("JoeyNMT config %s: %w", configPath, err)
	}
	j := &JoeyNMT{Config: configPath, Version: c.Version, Model: c.Model, Testing: c.Testing,
		Specials: JoeySpecials{UNK: "<unk>", PAD: "<pad>", BOS: "<s>", EOS: "</s>"}}
	sp := c.Data.Special
	for _, t := range []struct{ dst, v *string }{{&j.Specials.UNK, &sp.UNK}, {&j.Specials.PAD, &sp.PAD}, {&j.Specials.BOS, &sp.BOS}, {&j.Specials.EOS, &sp.EOS}} {
		if *t.v != "" {
			*t.dst = *t.v
		}
	}
	if c.Model.Encoder.Type != "" && c.Model.Encoder.Type != "recurrent" || c.Model.Decoder.Type != "" && c.Model.Decoder.Type != "recurrent" {
		return nil, fmt.Errorf("JoeyNMT config %s: model.encoder.type %q, model.decoder.type %q: attnx converts recurrent models only (Transformers are not attention RNNs)", configPath, c.Model.Encoder.Type, c.Model.Decoder.Type)
	}
	dir := filepath.Dir(configPath)
	sides := []struct {
		what, file, fallback string
		dst                  *[]string
	}{
		{"data.src.voc_file", firstNonEmpty(c.Data.Src.VocFile, c.Data.SrcVocab), "src_vocab.txt", &j.SrcVocab},
		{"data.trg.voc_file", firstNonEmpty(c.Data.Trg.VocFile, c.Data.TrgVocab), "trg_vocab.txt", &j.TrgVocab},
	}
	for i, s := range sides {
		l := findBeside(s.file, dir, s.fallback)
		if l.path == "" {
			return nil, fmt.Errorf("JoeyNMT config %s: %s names the vocabulary %q%s", configPath, s.what, s.file, notFound(l.tried, l.outside))
		}
		found := l.path
		toks, err := readJoeyVocab(found, j.Specials)
		if err != nil {
			return nil, err
		}
		*s.dst = toks
		j.VocabFiles[i] = found
	}
	for i, side := range []struct {
		name string
		s    joeySide
	}{{"src", c.Data.Src}, {"trg", c.Data.Trg}} {
		r, err := joeyTokenizer(side.s, side.name, dir)
		if err != nil {
			return nil, fmt.Errorf("JoeyNMT config %s: %w", configPath, err)
		}
		j.Tokenizers[i] = r
	}
	return j, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// readJoeyVocab reads a vocabulary file, one token per line, as JoeyNMT's
// Vocabulary builds it: the specials (unk, pad, bos, eos) first, then the
// file's tokens in order, each once (a file JoeyNMT wrote starts with the
// specials itself).
func readJoeyVocab(path string, sp JoeySpecials) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	toks := []string{sp.UNK, sp.PAD, sp.BOS, sp.EOS}
	seen := map[string]bool{}
	for _, t := range toks {
		seen[t] = true
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimRight(sc.Text(), "\r")
		if t == "" {
			continue
		}
		if !seen[t] {
			seen[t] = true
			toks = append(toks, t)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("vocabulary %s: line %d is longer than 1 MiB: not a vocabulary file", path, line+1)
		}
		return nil, fmt.Errorf("vocabulary %s: %w", path, err)
	}
	return toks, nil
}
