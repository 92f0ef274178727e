// Package joeytest does what `joeynmt test config.yaml` (JoeyNMT 2.3's
// prediction.test) does with an attnx export of the model: it reads the
// config's dev and test sets (data.dev and data.test with the src and trg
// languages' suffixes), decodes them in JoeyNMT's batches with the testing
// section's search settings, scores the best hypotheses with its
// eval_metrics (bleu and chrf as sacreBLEU computes them, with its
// sacrebleu_cfg; token_accuracy, sequence_accuracy), writes the output
// files JoeyNMT names ({output_path}.{dev,test}, or
// {output_path}-{n}..{dev,test} for an n-best list) and logs JoeyNMT's
// lines (Decoding on ..., Predicting ..., the sacreBLEU signatures, the
// Evaluation result line, Translations saved to ...).
//
// As JoeyNMT's plain datasets do, a dev or test file drops its empty lines
// (each side on its own), and a line of white space only is refused (JoeyNMT
// asserts on it).
package joeytest

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Config is what joeynmt test reads of a JoeyNMT config.yaml.
type Config struct {
	// Path is the file read.
	Path string
	// ModelDir is the config's model_dir (JoeyNMT's checkpoint folder).
	ModelDir string
	// Dev and Test are data.dev and data.test: paths without the language
	// suffix, "" when the config has none.
	Dev, Test string
	// Src and Trg are data.src's and data.trg's settings.
	Src, Trg Side
	// Testing is the testing section, JoeyNMT 2.3's defaults filled in.
	Testing Testing
}

// Side is a language's data settings.
type Side struct {
	Lang         string
	Level        string
	Lowercase    bool
	Normalize    bool
	Pretokenizer string
}

// Testing is the testing section (JoeyNMT 2.3's config.parse_test_args).
type Testing struct {
	BatchSize         int
	BatchType         string // "sentence" or "token"
	BeamSize          int
	BeamAlpha         Number
	NBest             int
	MaxOutputLength   Number
	MinOutputLength   Number
	GenerateUnk       bool
	RepetitionPenalty Number
	NoRepeatNgramSize Number
	ReturnProb        string
	EvalMetrics       []string
	// SacreBLEU is sacrebleu_cfg, the settings given to sacreBLEU's BLEU and
	// CHRF (each keeps the keys its constructor takes).
	SacreBLEU map[string]any
}

// Number is a YAML number as JoeyNMT holds it: an int or a float, which
// Python prints differently (-1, 1.0) in its log lines.
type Number struct {
	V     float64
	Float bool
}

// String is Python's str of the number.
func (n Number) String() string {
	if !n.Float {
		return strconv.FormatInt(int64(n.V), 10)
	}
	return pyFloat(n.V)
}

// pyFloat is Python's repr of a float: the shortest digits, with ".0" on
// an integral value and an exponent from 1e16 up and below 1e-4.
func pyFloat(f float64) string {
	a := f
	if a < 0 {
		a = -a
	}
	if a != 0 && (a >= 1e16 || a < 1e-4) {
		s := strconv.FormatFloat(f, 'e', -1, 64)
		// Go writes e-05 as e-05 and e+16 as e+16, as Python does.
		return s
	}
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsAny(s, ".") {
		s += ".0"
	}
	return s
}

type rawConfig struct {
	ModelDir string `yaml:"model_dir"`
	Training struct {
		ModelDir string `yaml:"model_dir"`
	} `yaml:"training"`
	Data struct {
		Dev         string  `yaml:"dev"`
		Test        string  `yaml:"test"`
		DatasetType string  `yaml:"dataset_type"`
		Src         rawSide `yaml:"src"`
		Trg         rawSide `yaml:"trg"`
	} `yaml:"data"`
	Testing map[string]yaml.Node `yaml:"testing"`
}

type rawSide struct {
	Lang         string `yaml:"lang"`
	Level        string `yaml:"level"`
	Lowercase    bool   `yaml:"lowercase"`
	Normalize    bool   `yaml:"normalize"`
	TokenizerCfg struct {
		Pretokenizer string `yaml:"pretokenizer"`
	} `yaml:"tokenizer_cfg"`
}

// ReadConfig reads a JoeyNMT config.yaml for joeynmt test: its model_dir,
// data.dev and data.test, the languages' settings and the testing
// section, checked as JoeyNMT 2.3 checks them; the error names the file
// and the field.
func ReadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("JoeyNMT config: %w", err)
	}
	var raw rawConfig
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("JoeyNMT config %s: %w", path, err)
	}
	c := &Config{Path: path, ModelDir: raw.ModelDir, Dev: raw.Data.Dev, Test: raw.Data.Test}
	if c.ModelDir == "" {
		c.ModelDir = raw.Training.ModelDir
	}
	errf := func(format string, a ...any) error {
		return fmt.Errorf("JoeyNMT config %s: %s", path, fmt.Sprintf(format, a...))
	}
	if t := raw.Data.DatasetType; t != "" && t != "plain" {
		return nil, errf("data.dataset_type %q: attnx test reads plain datasets only (one sentence a line, {path}.{lang})", t)
	}
	for _, s := range []struct {
		name string
		raw  rawSide
		dst  *Side
	}{{"src", raw.Data.Src, &c.Src}, {"trg", raw.Data.Trg, &c.Trg}} {
		if s.raw.Lang == "" {
			return nil, errf("data.%s.lang is missing: the dev and test files are {path}.{lang}", s.name)
		}
		*s.dst = Side{Lang: s.raw.Lang, Level: s.raw.Level, Lowercase: s.raw.Lowercase, Normalize: s.raw.Normalize,
			Pretokenizer: strings.ToLower(s.raw.TokenizerCfg.Pretokenizer)}
		if s.dst.Pretokenizer == "" {
			s.dst.Pretokenizer = "none"
		}
	}
	if c.Dev == "" && c.Test == "" {
		return nil, errf("neither data.dev nor data.test is set: joeynmt test decodes those")
	}
	if c.Testing, err = parseTesting(raw.Testing); err != nil {
		return nil, errf("%v", err)
	}
	return c, nil
}

// parseTesting is JoeyNMT 2.3's parse_test_args on the testing section.
func parseTesting(m map[string]yaml.Node) (Testing, error) {
	t := Testing{BatchSize: 64, BatchType: "sentence", BeamSize: 1, NBest: 1, GenerateUnk: true, ReturnProb: "none",
		BeamAlpha: Number{V: -1}, MaxOutputLength: Number{V: -1}, MinOutputLength: Number{V: 1},
		RepetitionPenalty: Number{V: -1}, NoRepeatNgramSize: Number{V: -1}}
	var err error
	num := func(key string, dst *Number) {
		n, ok := m[key]
		if !ok || err != nil {
			return
		}
		var f float64
		if e := n.Decode(&f); e != nil || n.Kind != yaml.ScalarNode {
			err = fmt.Errorf("testing.%s: %q is not a number", key, n.Value)
			return
		}
		*dst = Number{V: f, Float: n.Tag == "!!float"}
	}
	integer := func(key string, dst *int) {
		var n Number
		if _, ok := m[key]; !ok {
			return
		}
		num(key, &n)
		if err == nil && (n.Float || n.V != float64(int(n.V))) {
			err = fmt.Errorf("testing.%s: %s is not an integer", key, n)
		}
		if err == nil {
			*dst = int(n.V)
		}
	}
	str := func(key string, dst *string) {
		if n, ok := m[key]; ok && err == nil {
			if e := n.Decode(dst); e != nil {
				err = fmt.Errorf("testing.%s: %w", key, e)
			}
		}
	}
	integer("batch_size", &t.BatchSize)
	str("batch_type", &t.BatchType)
	integer("beam_size", &t.BeamSize)
	num("beam_alpha", &t.BeamAlpha)
	num("alpha", &t.BeamAlpha) // the obsolete name wins, as in JoeyNMT
	integer("n_best", &t.NBest)
	num("max_output_length", &t.MaxOutputLength)
	num("min_output_length", &t.MinOutputLength)
	num("repetition_penalty", &t.RepetitionPenalty)
	num("no_repeat_ngram_size", &t.NoRepeatNgramSize)
	str("return_prob", &t.ReturnProb)
	if n, ok := m["generate_unk"]; ok && err == nil {
		if e := n.Decode(&t.GenerateUnk); e != nil {
			err = fmt.Errorf("testing.generate_unk: %w", e)
		}
	}
	if err != nil {
		return t, err
	}
	t.BatchType = strings.ToLower(t.BatchType)
	if n, ok := m["eval_metrics"]; ok {
		if err := n.Decode(&t.EvalMetrics); err != nil {
			return t, fmt.Errorf("testing.eval_metrics: want a list of metric names: %w", err)
		}
	} else if n, ok := m["eval_metric"]; ok {
		var s string
		if err := n.Decode(&s); err != nil {
			return t, fmt.Errorf("testing.eval_metric: %w", err)
		}
		t.EvalMetrics = []string{s}
	}
	for i, e := range t.EvalMetrics {
		t.EvalMetrics[i] = strings.ToLower(strings.TrimSpace(e))
		switch t.EvalMetrics[i] {
		case "bleu", "chrf", "token_accuracy", "sequence_accuracy":
		default:
			return t, fmt.Errorf("testing.eval_metrics: %q: want bleu, chrf, token_accuracy or sequence_accuracy", e)
		}
	}
	for _, key := range []string{"sacrebleu_cfg", "sacrebleu"} {
		if n, ok := m[key]; ok {
			t.SacreBLEU = map[string]any{}
			if err := n.Decode(&t.SacreBLEU); err != nil {
				return t, fmt.Errorf("testing.%s: want a mapping of sacreBLEU's settings: %w", key, err)
			}
		}
	}
	switch {
	case t.BatchType != "sentence" && t.BatchType != "token":
		return t, fmt.Errorf("testing.batch_type %q: want sentence or token", t.BatchType)
	case t.BatchSize < 1:
		return t, fmt.Errorf("testing.batch_size %d: want at least 1", t.BatchSize)
	case t.NBest < 1:
		return t, errors.New("testing.n_best: N-best size must be > 0")
	case t.BeamSize < 1:
		return t, errors.New("testing.beam_size: Beam size must be > 0")
	case t.NBest > t.BeamSize:
		return t, fmt.Errorf("testing.n_best %d: `n_best` must be smaller than or equal to `beam_size` (%d)", t.NBest, t.BeamSize)
	case 0 < t.RepetitionPenalty.V && t.RepetitionPenalty.V < 1:
		return t, fmt.Errorf("testing.repetition_penalty %s: Repetition penalty must be > 1 (-1 indicates no repetition penalty)", t.RepetitionPenalty)
	case t.ReturnProb != "none" && t.ReturnProb != "hyp" && t.ReturnProb != "ref":
		return t, fmt.Errorf("testing.return_prob %q: want hyp, ref or none", t.ReturnProb)
	case t.ReturnProb == "ref":
		return t, errors.New("testing.return_prob ref: joeynmt test then scores the references instead of decoding; attnx test decodes only (set return_prob to none or hyp)")
	}
	return t, nil
}
