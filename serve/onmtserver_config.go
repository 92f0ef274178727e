package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onmttok"
	"github.com/attnx/attnx/subword"
)

// DefaultOnmtURLRoot is onmt_server's --url_root default: its routes are
// /translator/translate, /translator/models and so on.
const DefaultOnmtURLRoot = "/translator"

// OnmtAPI serves OpenNMT-py's REST API (onmt/bin/server.py over
// onmt/translate/translation_server.py) beside attnx's own, for clients
// written against onmt_server. Make it with ReadOnmtConfig.
type OnmtAPI struct {
	// URLRoot prefixes the routes, as onmt_server's --url_root does
	// ("" serves /translate, /models, ...).
	URLRoot string
	// Models are conf.json's models, in its order.
	Models []*OnmtModel
	byID   map[int]*OnmtModel
}

// OnmtModel is one model of onmt_server's conf.json: its id, the attnx
// model directory that translates for it (served as Config.Models' model
// Name), and the decoding its "opt" gives every request.
type OnmtModel struct {
	// ID is the model's "id" (given, or numbered from 0 as onmt_server
	// numbers models without one).
	ID int
	// Name is the served model (Config.Models) translating for it: models
	// of one directory share one.
	Name string
	// Dir is the attnx model directory, conf.json's model path joined to
	// the model root.
	Dir string
	// Decoding holds the request fields that "opt" sets.
	Decoding Request
	// NBest is opt's n_best (1 by default): the lists of a translate
	// answer.
	NBest int
	// Pretokenized is true when the model has no "tokenizer" section:
	// onmt_server then takes each src as the model's pieces, separated by
	// spaces, and answers the output pieces joined by spaces.
	Pretokenized bool
	// Notes say what of the model's configuration attnx serve takes
	// otherwise than onmt_server (logged at start).
	Notes []string

	// What GET /models answers, as onmt_server's to_dict builds it.
	paths     []string
	opt       map[string]json.RawMessage
	tokenizer json.RawMessage
	timeout   json.RawMessage
}

// onmtConf is conf.json as onmt_server reads it.
type onmtConf struct {
	ModelsRoot *string           `json:"models_root"`
	Models     []json.RawMessage `json:"models"`
}

// onmtModelConf is one entry of conf.json's "models".
type onmtModelConf struct {
	ID          *int                       `json:"id"`
	Model       json.RawMessage            `json:"model"`
	Models      json.RawMessage            `json:"models"`
	ModelRoot   *string                    `json:"model_root"`
	Opt         map[string]json.RawMessage `json:"opt"`
	Tokenizer   json.RawMessage            `json:"tokenizer"`
	Timeout     json.RawMessage            `json:"timeout"`
	Load        *bool                      `json:"load"`
	OnTimeout   *string                    `json:"on_timeout"`
	Preprocess  json.RawMessage            `json:"preprocess"`
	Postprocess json.RawMessage            `json:"postprocess"`
	CustomOpt   json.RawMessage            `json:"custom_opt"`
	CT2Model    json.RawMessage            `json:"ct2_model"`
	CT2Args     json.RawMessage            `json:"ct2_translator_args"`
	CT2Batch    json.RawMessage            `json:"ct2_translate_batch_args"`
	Features    json.RawMessage            `json:"features"`
}

// onmtTokenizerConf is a "tokenizer" section, or one side of it.
type onmtTokenizerConf struct {
	Type   string         `json:"type"`
	Model  string         `json:"model"`
	Mode   *string        `json:"mode"`
	Params map[string]any `json:"params"`
}

// onmtIgnoredOpts are translate options of "opt" that change nothing
// attnx serve answers: devices, batching within one request (a request
// is decoded as one batch, as onmt_server does), logging and timing.
var onmtIgnoredOpts = map[string]string{
	"gpu": "", "batch_size": "", "batch_type": "", "verbose": "", "report_time": "", "log_file": "", "log_file_level": "",
	"output": "", "fp32": "", "int8": "", "precision": "", "world_size": "", "gpu_ranks": "", "src": "", "models": "",
	"attn_debug": "", "align_debug": "", "dump_beam": "", "n_src_feats": "",
}

// onmtFlagOpts are the store_true options: onmt_server passes -KEY for
// any boolean value, false included, so that false turns them on.
var onmtFlagOpts = map[string]bool{"replace_unk": true, "ban_unk_token": true, "stepwise_penalty": true}

// ReadOnmtConfig reads onmt_server's conf.json and returns the API with
// URL root urlRoot, and the model directories to serve (Config.Models).
// Each model path of the file (joined to its model root as onmt_server
// joins it, relative to the working directory) must be an attnx model
// directory: `attnx export model.pt -o DIR` of the checkpoint onmt_server
// would load. What attnx cannot do is refused by name: preprocess and
// postprocess hooks and custom_opt (Python functions), CTranslate2 models,
// ensembles, source features, and the opts that change translation that
// attnx serve does not take.
func ReadOnmtConfig(path, urlRoot string) (*OnmtAPI, []ModelDir, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("onmt config: %w", err)
	}
	var conf onmtConf
	if err := json.Unmarshal(data, &conf); err != nil {
		return nil, nil, fmt.Errorf("onmt config %s: %w", path, err)
	}
	if urlRoot != "" && (!strings.HasPrefix(urlRoot, "/") || strings.HasSuffix(urlRoot, "/")) {
		return nil, nil, fmt.Errorf("onmt URL root %q: want \"\" or a path such as /translator (a leading slash, none at the end)", urlRoot)
	}
	if len(conf.Models) == 0 {
		return nil, nil, fmt.Errorf("onmt config %s: no \"models\": want a list of models, each with its \"id\", \"model\" and \"opt\"", path)
	}
	root := "./available_models"
	if conf.ModelsRoot != nil {
		root = *conf.ModelsRoot
	}
	api := &OnmtAPI{URLRoot: urlRoot, byID: map[int]*OnmtModel{}}
	var dirs []ModelDir
	names := map[string]string{} // directory -> served name
	nextID := 0
	for i, raw := range conf.Models {
		m, err := readOnmtModel(raw, root)
		if err != nil {
			return nil, nil, fmt.Errorf("onmt config %s: models[%d]: %w", path, i, err)
		}
		if m.ID < 0 {
			// Numbered as onmt_server's preload_model numbers them.
			m.ID = nextID
			for api.byID[m.ID] != nil {
				m.ID++
			}
			nextID = m.ID + 1
		} else if api.byID[m.ID] != nil {
			return nil, nil, fmt.Errorf("onmt config %s: models[%d]: model id %d already exists", path, i, m.ID)
		}
		abs, err := filepath.Abs(m.Dir)
		if err != nil {
			return nil, nil, fmt.Errorf("onmt config %s: model %d: %w", path, m.ID, err)
		}
		name, ok := names[abs]
		if !ok {
			name = "onmt-" + strconv.Itoa(m.ID)
			names[abs] = name
			dirs = append(dirs, ModelDir{Name: name, Dir: m.Dir})
		}
		m.Name = name
		api.byID[m.ID] = m
		api.Models = append(api.Models, m)
	}
	return api, dirs, nil
}

// readOnmtModel reads one model entry; its ID is -1 when it gives none.
func readOnmtModel(raw json.RawMessage, root string) (*OnmtModel, error) {
	var c onmtModelConf
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&c); err != nil {
		return nil, err
	}
	m := &OnmtModel{ID: -1, NBest: 1, timeout: json.RawMessage("-1"), opt: c.Opt}
	if c.ID != nil {
		if *c.ID < 0 {
			return nil, fmt.Errorf("id %d: want a number >= 0", *c.ID)
		}
		m.ID = *c.ID
	}
	for _, f := range []struct {
		name string
		v    json.RawMessage
		why  string
	}{
		{"preprocess", c.Preprocess, "its functions are Python, which attnx serve does not run"},
		{"postprocess", c.Postprocess, "its functions are Python, which attnx serve does not run"},
		{"custom_opt", c.CustomOpt, "it is read by preprocess and postprocess functions (Python), which attnx serve does not run"},
		{"ct2_model", c.CT2Model, "a CTranslate2 model: serve the attnx export of the OpenNMT-py checkpoint instead"},
		{"ct2_translator_args", c.CT2Args, "CTranslate2's, which attnx serve does not run"},
		{"ct2_translate_batch_args", c.CT2Batch, "CTranslate2's, which attnx serve does not run"},
		{"features", c.Features, "source features are not translated by attnx"},
	} {
		if len(f.v) > 0 && string(f.v) != "null" {
			return nil, fmt.Errorf("%q is refused: %s", f.name, f.why)
		}
	}
	// "models" (a list, or one path), else "model" as onmt_server's
	// backwards compatibility takes it.
	paths, err := onmtPaths(c.Models, "models")
	if err == nil && paths == nil {
		paths, err = onmtPaths(c.Model, "model")
	}
	switch {
	case err != nil:
		return nil, err
	case paths == nil:
		return nil, fmt.Errorf("missing \"models\" (or \"model\"): the model's path")
	case len(paths) > 1:
		return nil, fmt.Errorf("\"models\" names %d checkpoints, an ensemble: attnx serve translates with one model directory per model", len(paths))
	}
	if c.ModelRoot != nil {
		root = *c.ModelRoot
	}
	m.paths = []string{pyJoin(root, paths[0])}
	m.Dir = m.paths[0]
	if err := checkOnmtDir(m.Dir, paths[0]); err != nil {
		return nil, err
	}
	if c.Opt == nil {
		return nil, fmt.Errorf("missing \"opt\": the translate options (an object, {} for onmt_translate's defaults)")
	}
	if err := m.readOpt(c.Opt); err != nil {
		return nil, err
	}
	if len(c.Timeout) > 0 && string(c.Timeout) != "null" {
		var t float64
		if err := json.Unmarshal(c.Timeout, &t); err != nil {
			return nil, fmt.Errorf("timeout %s: want a number of seconds (-1: none)", c.Timeout)
		}
		m.timeout = c.Timeout
		if t >= 0 {
			m.Notes = append(m.Notes, fmt.Sprintf("timeout %s: attnx serve keeps the model loaded (it hands idle buffers back after --idle-release)", c.Timeout))
		}
	}
	if c.OnTimeout != nil && *c.OnTimeout != "to_cpu" && *c.OnTimeout != "unload" {
		return nil, fmt.Errorf("on_timeout %q: want to_cpu or unload", *c.OnTimeout)
	}
	if c.Load != nil && !*c.Load {
		m.Notes = append(m.Notes, "load false: attnx serve loads every model at start")
	}
	if err := m.readTokenizer(c.Tokenizer, root); err != nil {
		return nil, err
	}
	return m, nil
}

// onmtPaths reads "models" or "model": a path or a list of them; nil
// when absent.
func onmtPaths(raw json.RawMessage, key string) ([]string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}, nil
	}
	var list []string
	if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
		return nil, fmt.Errorf("%q = %s: want a path or a list of one path", key, raw)
	}
	return list, nil
}

// pyJoin joins as Python's os.path.join: an absolute elem replaces root.
func pyJoin(root, elem string) string {
	if filepath.IsAbs(elem) {
		return elem
	}
	return filepath.Join(root, elem)
}

// checkOnmtDir checks that dir is an attnx model directory, naming the
// remedy when it is the checkpoint onmt_server would load.
func checkOnmtDir(dir, given string) error {
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("model %q: %w", given, err)
	case !st.IsDir():
		return fmt.Errorf("model %q (%s) is a file, an OpenNMT-py checkpoint: attnx serves its export, `attnx export %s -o DIR`; name DIR in conf.json", given, dir, dir)
	}
	if _, err := os.Stat(filepath.Join(dir, modeldir.InfoFile)); err != nil {
		return fmt.Errorf("model %q (%s) is not an attnx model directory (no %s): name the directory `attnx export CHECKPOINT -o DIR` made", given, dir, modeldir.InfoFile)
	}
	return nil
}

// readOpt maps opt's translate options onto request fields.
func (m *OnmtModel) readOpt(opt map[string]json.RawMessage) error {
	keys := make([]string, 0, len(opt))
	for k := range opt {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	d := &m.Decoding
	for _, k := range keys {
		raw := opt[k]
		bad := func(want string) error { return fmt.Errorf("opt %q = %s: want %s", k, raw, want) }
		intv := func(p **int) error {
			var v int
			if json.Unmarshal(raw, &v) != nil {
				return bad("an integer")
			}
			*p = &v
			return nil
		}
		floatv := func(p **float64) error {
			var v float64
			if json.Unmarshal(raw, &v) != nil {
				return bad("a number")
			}
			*p = &v
			return nil
		}
		strv := func(p **string) error {
			var v string
			if json.Unmarshal(raw, &v) != nil {
				return bad("a string")
			}
			*p = &v
			return nil
		}
		if onmtFlagOpts[k] {
			var v bool
			if json.Unmarshal(raw, &v) != nil {
				return bad("true")
			}
			if !v {
				return fmt.Errorf("opt %q = false: onmt_server passes -%s for false too, turning it on; leave the key out to keep it off", k, k)
			}
		}
		var err error
		switch k {
		case "beam_size":
			err = intv(&d.Beam)
		case "n_best":
			if err = intv(&d.NBest); err == nil {
				m.NBest = *d.NBest
			}
		case "max_length":
			err = intv(&d.MaxLen)
		case "min_length":
			err = intv(&d.MinLen)
		case "alpha":
			err = floatv(&d.LengthPenalty)
		case "length_penalty":
			err = strv(&d.LengthPenaltyForm)
		case "coverage_penalty":
			err = strv(&d.CoveragePenalty)
		case "beta":
			err = floatv(&d.Beta)
		case "stepwise_penalty":
			t := true
			d.StepwisePenalty = &t
		case "block_ngram_repeat":
			err = intv(&d.BlockNgramRepeat)
		case "ignore_when_blocking":
			var one string
			if json.Unmarshal(raw, &one) == nil {
				d.IgnoreWhenBlocking = []string{one}
			} else if json.Unmarshal(raw, &d.IgnoreWhenBlocking) != nil {
				err = bad("a token or a list of tokens")
			}
		case "ratio":
			err = floatv(&d.Ratio)
		case "max_length_ratio":
			err = floatv(&d.MaxLenRatio)
		case "ban_unk_token":
			t := true
			d.BanUNK = &t
		case "replace_unk":
			t := true
			d.ReplaceUnk = &t
		case "random_sampling_topk":
			if err = intv(&d.SamplingTopK); err == nil {
				t := true
				d.Sampling = &t
			}
		case "random_sampling_topp":
			if err = floatv(&d.SamplingTopP); err == nil {
				t := true
				d.Sampling = &t
			}
		case "random_sampling_temp":
			err = floatv(&d.Temperature)
		case "seed":
			var v int64
			if json.Unmarshal(raw, &v) != nil {
				return bad("an integer")
			}
			if v >= 0 {
				u := uint64(v)
				d.Seed = &u
			}
		case "report_align":
			return fmt.Errorf("opt %q: refused: OpenNMT-py reports alignments from a transformer's guided-alignment heads, which attnx's attention models have none of", k)
		case "phrase_table", "tgt_file_prefix", "tgt_prefix", "avg_raw_probs", "data_type", "src_feats", "tgt":
			return fmt.Errorf("opt %q: refused: attnx serve does not take it", k)
		default:
			if _, ok := onmtIgnoredOpts[k]; ok {
				continue
			}
			return fmt.Errorf("opt %q: not a translate option attnx serve takes (it takes beam_size, n_best, max_length, min_length, alpha, length_penalty, coverage_penalty, beta, stepwise_penalty, block_ngram_repeat, ignore_when_blocking, ratio, max_length_ratio, ban_unk_token, replace_unk, random_sampling_topk, random_sampling_topp, random_sampling_temp and seed, and ignores gpu, batch_size, batch_type, verbose, report_time and the logging options)", k)
		}
		if err != nil {
			return err
		}
	}
	if d.SamplingTopK != nil && *d.SamplingTopK == 0 && d.SamplingTopP == nil {
		// onmt_translate's default: no sampling.
		d.SamplingTopK, d.Sampling = nil, nil
	}
	if d.Sampling == nil && d.Temperature != nil {
		d.Temperature = nil // random_sampling_temp acts only with sampling
	}
	if d.Seed != nil && d.Sampling == nil {
		d.Seed = nil
	}
	return nil
}

// readTokenizer checks the "tokenizer" section against the model
// directory's own tokenizers (attnx.json's, which translate with it):
// the same kind and the same files, byte for byte.
func (m *OnmtModel) readTokenizer(raw json.RawMessage, root string) error {
	if len(raw) == 0 || string(raw) == "null" {
		m.Pretokenized = true
		return nil
	}
	var sides struct {
		Src, Tgt *onmtTokenizerConf
	}
	var one onmtTokenizerConf
	var err error
	if err = json.Unmarshal(raw, &sides); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	if sides.Src == nil || sides.Tgt == nil {
		if err := json.Unmarshal(raw, &one); err != nil {
			return fmt.Errorf("tokenizer: %w", err)
		}
		sides.Src, sides.Tgt = &one, &one
		// As onmt_server's to_dict answers one tokenizer for both.
		raw = json.RawMessage(fmt.Sprintf(`{"src":%s,"tgt":%s}`, raw, raw))
	}
	// As Flask's jsonify answers it: every object's keys sorted.
	if m.tokenizer, err = sortedJSON(raw); err != nil {
		return fmt.Errorf("tokenizer: %w", err)
	}
	info, err := modeldir.ReadInfo(filepath.Join(m.Dir, modeldir.InfoFile))
	if err != nil {
		return err
	}
	for _, s := range []struct {
		side string
		conf *onmtTokenizerConf
		have *subword.Spec
	}{{"src", sides.Src, info.SrcTokenizer}, {"tgt", sides.Tgt, info.TgtTokenizer}} {
		if err := checkOnmtTokenizer(s.side, s.conf, s.have, m.Dir, root); err != nil {
			return err
		}
	}
	return nil
}

// sortedJSON rewrites a JSON value with every object's keys sorted, its
// numbers as they were written.
func sortedJSON(raw json.RawMessage) (json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSpace(buf.Bytes())), nil
}

// checkOnmtTokenizer checks one side's tokenizer section against the
// model directory's tokenizer of that side.
func checkOnmtTokenizer(side string, c *onmtTokenizerConf, have *subword.Spec, dir, root string) error {
	where := fmt.Sprintf("tokenizer %s", side)
	if have == nil {
		return fmt.Errorf("%s: the model directory %s has no %s tokenizer: export the checkpoint with --%s-tokenizer FILE (the one this section names)", where, dir, side, side)
	}
	same := func(file, inDir string) error {
		a, err := os.ReadFile(file)
		if err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		b, err := os.ReadFile(filepath.Join(dir, inDir))
		if err != nil {
			return fmt.Errorf("%s: the model directory's: %w", where, err)
		}
		if !bytes.Equal(a, b) {
			return fmt.Errorf("%s: %s differs from the model directory's %s, which attnx translates with: export the checkpoint with this tokenizer", where, file, inDir)
		}
		return nil
	}
	switch c.Type {
	case "sentencepiece":
		if c.Model == "" {
			return fmt.Errorf("%s: missing \"model\" (the SentencePiece model)", where)
		}
		if have.Kind != subword.KindSentencePiece {
			return fmt.Errorf("%s: sentencepiece, but the model directory's is %s", where, have.Kind)
		}
		return same(pyJoin(root, c.Model), have.File)
	case "pyonmttok":
		if c.Params == nil {
			return fmt.Errorf("%s: missing \"params\" (pyonmttok.Tokenizer's)", where)
		}
		if have.Kind != subword.KindOpenNMT || have.OpenNMT == nil {
			return fmt.Errorf("%s: pyonmttok, but the model directory's is %s", where, have.Kind)
		}
		kw := map[string]any{}
		var model string
		for k, v := range c.Params {
			switch k {
			case "bpe_model_path", "sp_model_path":
				s, _ := v.(string)
				model = s
			case "vocabulary_path", "vocabulary_threshold", "sp_nbest_size", "sp_alpha", "bpe_dropout":
				return fmt.Errorf("%s: params %q: refused: the model directory's tokenizer is compared by its options and subword model only", where, k)
			default:
				kw[k] = v
			}
		}
		if c.Mode != nil {
			kw["mode"] = *c.Mode
		}
		opts, err := onmttok.FromKwargs(kw)
		if err != nil {
			return fmt.Errorf("%s: params: %w", where, err)
		}
		if !reflect.DeepEqual(opts, have.OpenNMT.Options) {
			return fmt.Errorf("%s: the options differ from the model directory's tokenizer (attnx.json's onmttok options), which attnx translates with", where)
		}
		if (model == "") != (have.OpenNMT.SubwordModel == "") {
			return fmt.Errorf("%s: a subword model on one side only (params %q, the model directory's %q)", where, model, have.OpenNMT.SubwordModel)
		}
		if model != "" {
			return same(pyJoin(root, model), have.OpenNMT.SubwordModel)
		}
		return nil
	case "":
		return fmt.Errorf("%s: missing mandatory option \"type\" (sentencepiece or pyonmttok)", where)
	default:
		return fmt.Errorf("%s: type %q: want sentencepiece or pyonmttok", where, c.Type)
	}
}
