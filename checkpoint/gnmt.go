package checkpoint

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/attnx/attnx/subword"
)

// GNMT variants: which repository's train.py wrote the checkpoint, told
// apart by what its tokenizer state holds.
const (
	// GNMTDeepLearningExamples is NVIDIA DeepLearningExamples'
	// PyTorch/Translation/GNMT: its Tokenizer's state carries the Moses
	// languages and the subword_nmt BPE object, so that translate.py reads
	// raw text.
	GNMTDeepLearningExamples = "dle"
	// GNMTMLPerf is the MLPerf rnn_translator reference: its tokenizer
	// state is the vocabulary alone, and translate.py reads text already
	// tokenized and BPE-segmented.
	GNMTMLPerf = "mlperf"
)

// GNMT's special tokens and their ids (seq2seq/data/config.py): the
// vocabulary file's words follow them. EOS is spelled "<\s>" there.
const (
	GNMTPad, GNMTUnk, GNMTBOS, GNMTEOS = 0, 1, 2, 3
)

// gnmtSpecials are the tokens of ids 0 to 3 as config.py spells them.
var gnmtSpecials = [4]string{"<pad>", "<unk>", "<s>", `<\s>`}

// GNMT is what a GNMT checkpoint holds beside its tensors: the model's
// shape (model_config), train.py's arguments (config) and the tokenizer's
// state.
type GNMT struct {
	// Variant is GNMTDeepLearningExamples or GNMTMLPerf.
	Variant string
	// HiddenSize, NumLayers, Dropout, BatchFirst and ShareEmbedding are
	// model_config's entries.
	HiddenSize, NumLayers int
	Dropout               float64
	BatchFirst            bool
	ShareEmbedding        bool
	// ModelVocabSize is model_config's vocab_size, 0 where it has none
	// (MLPerf passes it to GNMT apart).
	ModelVocabSize int
	// Config is train.py's argparse Namespace (the checkpoint's config),
	// its attributes as plain values (see Plain).
	Config map[string]any
	// Math is the config's math: fp32, tf32, fp16 or manual_fp16; the
	// vocabulary is padded to a multiple of 8 for all but fp32.
	Math string
	// Epoch is the epoch the checkpoint was saved in.
	Epoch int
	// Tokenizer is the tokenizer's state.
	Tokenizer GNMTTokenizer
}

// GNMTTokenizer is seq2seq.data.tokenizer.Tokenizer's state as get_state
// returns it.
type GNMTTokenizer struct {
	// SrcLang and TgtLang are lang's src and tgt, the languages of the
	// Moses tokenizer and detokenizer ("" for MLPerf).
	SrcLang, TgtLang string
	// Separator is the BPE continuation marker removed when detokenizing.
	Separator string
	// Vocab is idx2tok in id order: the four specials, the vocabulary
	// file's lines, then madeupwordNNNN padding.
	Vocab []string
	// Unk is the id tok2idx gives a token it lacks (its default factory,
	// partial(int, UNK)).
	Unk int
	// BPE is the pickled subword_nmt BPE object; nil for MLPerf.
	BPE *GNMTBPE
}

// GNMTBPE is a subword_nmt.apply_bpe.BPE object's state.
type GNMTBPE struct {
	// Merges are bpe_codes' pairs in merge order (their ranks 0, 1, ...).
	Merges [][2]string
	// Version is the codes file's #version (0.1 when it had none).
	Version []int
	// Separator is the BPE object's own separator.
	Separator string
	// Glossaries are words BPE leaves whole.
	Glossaries []string
	// HasVocab is true when the object was given a vocabulary filter
	// (apply_bpe --vocabulary), which GNMT never does.
	HasVocab bool
}

// Codes writes the merges as a subword-nmt codes file, the version line
// first, as learn_bpe.py wrote the file the object was made from.
func (b *GNMTBPE) Codes() []byte {
	var sb strings.Builder
	v := make([]string, len(b.Version))
	for i, x := range b.Version {
		v[i] = fmt.Sprint(x)
	}
	if len(v) > 0 && !(len(v) == 2 && v[0] == "0" && v[1] == "1") {
		fmt.Fprintf(&sb, "#version: %s\n", strings.Join(v, "."))
	}
	for _, m := range b.Merges {
		sb.WriteString(m[0] + " " + m[1] + "\n")
	}
	return []byte(sb.String())
}

// TokenizerOptions is the tokenizer's state as subword.NewGNMT takes it:
// Moses and BPE for DeepLearningExamples, the vocabulary alone for MLPerf.
func (g *GNMT) TokenizerOptions() subword.GNMTOptions {
	t := g.Tokenizer
	o := subword.GNMTOptions{SrcLang: t.SrcLang, TgtLang: t.TgtLang, Separator: t.Separator, Vocab: t.Vocab, Unk: t.Unk}
	if t.BPE != nil {
		o.Codes, o.Glossaries, o.BPESeparator = t.BPE.Codes(), t.BPE.Glossaries, t.BPE.Separator
	}
	return o
}

// ReadGNMT reads a GNMT checkpoint's model_config, config and tokenizer
// (o is its StateDict's Origin); path names the file in errors.
func ReadGNMT(o *Origin, path string) (*GNMT, error) {
	if o == nil || o.Toolkit != ToolkitGNMT {
		return nil, fmt.Errorf("%s: not a GNMT checkpoint (no state_dict, model_config and tokenizer entries)", path)
	}
	g := &GNMT{}
	fail := func(format string, args ...any) (*GNMT, error) {
		return nil, fmt.Errorf("%s: GNMT checkpoint: %s", path, fmt.Sprintf(format, args...))
	}
	mc, ok := o.Entries["model_config"].(map[string]any)
	if !ok {
		return fail("model_config is %s, want a dict", plainKind(o.Entries["model_config"]))
	}
	var err error
	if g.HiddenSize, err = gnmtInt(mc, "hidden_size", true); err != nil {
		return fail("model_config: %v", err)
	}
	if g.NumLayers, err = gnmtInt(mc, "num_layers", true); err != nil {
		return fail("model_config: %v", err)
	}
	if g.HiddenSize < 1 || g.NumLayers < 2 {
		// The encoder's first layer is bidirectional and its second takes
		// the 2H concatenation: GNMT has two layers at least.
		return fail("model_config: hidden_size %d and num_layers %d, want hidden_size >= 1 and num_layers >= 2", g.HiddenSize, g.NumLayers)
	}
	if g.ModelVocabSize, err = gnmtInt(mc, "vocab_size", false); err != nil {
		return fail("model_config: %v", err)
	}
	if d, ok := mc["dropout"]; ok {
		if g.Dropout, ok = toFloat(d); !ok {
			return fail("model_config: dropout is %s, want a number", plainKind(d))
		}
	}
	for _, f := range []struct {
		key string
		to  *bool
		def bool
	}{{"batch_first", &g.BatchFirst, false}, {"share_embedding", &g.ShareEmbedding, true}} {
		*f.to = f.def
		if v, ok := mc[f.key]; ok {
			if *f.to, ok = v.(bool); !ok {
				return fail("model_config: %s is %s, want a bool", f.key, plainKind(v))
			}
		}
	}
	if cfg, ok := o.Entries["config"].(*Object); ok {
		g.Config = cfg.Attrs
	} else if o.Entries["config"] != nil {
		return fail("config is %s, want train.py's argparse Namespace", plainKind(o.Entries["config"]))
	}
	g.Math, _ = g.Config["math"].(string)
	if e, ok := o.Entries["epoch"].(int64); ok {
		g.Epoch = int(e)
	}
	tok, ok := o.Entries["tokenizer"].(map[string]any)
	if !ok {
		return fail("tokenizer is %s, want the Tokenizer's state (a dict)", plainKind(o.Entries["tokenizer"]))
	}
	if err := g.readTokenizer(tok); err != nil {
		return fail("tokenizer: %v", err)
	}
	if g.ModelVocabSize != 0 && g.ModelVocabSize != len(g.Tokenizer.Vocab) {
		return fail("model_config's vocab_size is %d but the tokenizer has %d tokens", g.ModelVocabSize, len(g.Tokenizer.Vocab))
	}
	return g, nil
}

func (g *GNMT) readTokenizer(tok map[string]any) error {
	t := &g.Tokenizer
	var ok bool
	if t.Separator, ok = tok["separator"].(string); !ok || t.Separator == "" {
		return fmt.Errorf("separator is %s, want a string such as \"@@\"", plainKind(tok["separator"]))
	}
	size, err := gnmtInt(tok, "vocab_size", true)
	if err != nil {
		return err
	}
	if size < len(gnmtSpecials) {
		return fmt.Errorf("vocab_size is %d, want at least the %d special tokens", size, len(gnmtSpecials))
	}
	if t.Vocab, err = gnmtIdx2Tok(tok["idx2tok"], size); err != nil {
		return err
	}
	for i, s := range gnmtSpecials {
		if t.Vocab[i] != s {
			return fmt.Errorf("idx2tok[%d] is %q, want %q (seq2seq/data/config.py's specials come first)", i, t.Vocab[i], s)
		}
	}
	if t.Unk, err = gnmtTok2Idx(tok["tok2idx"], t.Vocab); err != nil {
		return err
	}
	_, hasLang := tok["lang"]
	_, hasBPE := tok["bpe"]
	switch {
	case !hasLang && !hasBPE:
		g.Variant = GNMTMLPerf
		return nil
	case hasLang != hasBPE:
		return fmt.Errorf("it has lang or bpe but not both (DeepLearningExamples' state has both, MLPerf's neither)")
	}
	g.Variant = GNMTDeepLearningExamples
	lang, ok := tok["lang"].(map[string]any)
	if !ok {
		return fmt.Errorf("lang is %s, want a dict with src and tgt", plainKind(tok["lang"]))
	}
	t.SrcLang, _ = lang["src"].(string)
	t.TgtLang, _ = lang["tgt"].(string)
	if t.SrcLang == "" || t.TgtLang == "" {
		return fmt.Errorf("lang is %v, want src and tgt language codes", lang)
	}
	t.BPE, err = gnmtBPE(tok["bpe"])
	return err
}

// gnmtIdx2Tok reads idx2tok, a dict from ids 0..size-1 to tokens.
func gnmtIdx2Tok(v any, size int) ([]string, error) {
	pairs, ok := v.([]any)
	if !ok {
		if m, isMap := v.(map[string]any); isMap && len(m) == 0 {
			pairs, ok = nil, true
		}
	}
	if !ok {
		return nil, fmt.Errorf("idx2tok is %s, want a dict from ids to tokens", plainKind(v))
	}
	if len(pairs) != size {
		return nil, fmt.Errorf("idx2tok has %d entries but vocab_size is %d", len(pairs), size)
	}
	vocab := make([]string, size)
	seen := make([]bool, size)
	for _, p := range pairs {
		kv, _ := p.([2]any)
		id, ok1 := kv[0].(int64)
		s, ok2 := kv[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("idx2tok entry %v, want an int id and a string token", p)
		}
		if id < 0 || id >= int64(size) || seen[id] {
			return nil, fmt.Errorf("idx2tok id %d out of range or repeated (vocab_size %d)", id, size)
		}
		vocab[id], seen[id] = s, true
	}
	return vocab, nil
}

// gnmtTok2Idx checks tok2idx, a defaultdict(partial(int, UNK)) from tokens
// to ids, against idx2tok, and returns the id its factory gives unknown
// tokens.
func gnmtTok2Idx(v any, vocab []string) (int, error) {
	d, ok := v.(*Object)
	if !ok || d.Class != "collections.defaultdict" {
		return 0, fmt.Errorf("tok2idx is %s, want a collections.defaultdict", plainKind(v))
	}
	unk, err := gnmtDefaultFactory(d)
	if err != nil {
		return 0, err
	}
	items, _ := d.Items.(map[string]any)
	if items == nil && d.Items != nil {
		return 0, fmt.Errorf("tok2idx's keys are not all strings")
	}
	for tok, id := range items {
		n, ok := id.(int64)
		if !ok || n < 0 || n >= int64(len(vocab)) {
			return 0, fmt.Errorf("tok2idx[%q] is %v, want an id below %d", tok, id, len(vocab))
		}
		// A lookup of a token the vocabulary lacks adds it with the
		// factory's id (segment's tok2idx[i] on a defaultdict): the
		// training run's data put such tokens in the saved state.
		if vocab[n] != tok && n != int64(unk) {
			return 0, fmt.Errorf("tok2idx[%q] is %d but idx2tok[%d] is %q", tok, n, n, vocab[n])
		}
	}
	for id, tok := range vocab {
		if n, ok := items[tok]; ok && n != int64(id) && id != unk {
			return 0, fmt.Errorf("idx2tok[%d] is %q but tok2idx[%q] is %v", id, tok, tok, n)
		}
	}
	return unk, nil
}

// gnmtDefaultFactory reads a defaultdict's factory, functools.partial(int,
// N) (N, what int(N) returns) or int itself (0).
func gnmtDefaultFactory(d *Object) (int, error) {
	if len(d.Args) == 0 {
		return 0, fmt.Errorf("tok2idx has no default factory: unknown tokens would raise KeyError")
	}
	switch f := d.Args[0].(type) {
	case string:
		if pyIntNames[f] {
			return 0, nil
		}
	case *Object:
		// partial pickles as partial(func) then BUILD (func, args, kwds, dict).
		st, ok := f.State.([]any)
		if fn, _ := st0(st); f.Class == "functools.partial" && ok && len(st) >= 2 && pyIntNames[fn] {
			if args, ok := st[1].([]any); ok && len(args) == 1 {
				if n, ok := args[0].(int64); ok {
					return int(n), nil
				}
			}
		}
	}
	return 0, fmt.Errorf("tok2idx's default factory is %s, want functools.partial(int, UNK)", plainKind(d.Args[0]))
}

// pyIntNames are int as pickles name it: protocol 2 writes Python 3's int
// as Python 2's long.
var pyIntNames = map[string]bool{"builtins.int": true, "__builtin__.int": true, "__builtin__.long": true}

func st0(st []any) (string, bool) {
	if len(st) == 0 {
		return "", false
	}
	s, ok := st[0].(string)
	return s, ok
}

// gnmtBPE reads a pickled subword_nmt.apply_bpe.BPE object.
func gnmtBPE(v any) (*GNMTBPE, error) {
	o, ok := v.(*Object)
	if !ok || !strings.HasSuffix(o.Class, "apply_bpe.BPE") {
		return nil, fmt.Errorf("bpe is %s, want a subword_nmt.apply_bpe.BPE object", plainKind(v))
	}
	b := &GNMTBPE{}
	b.Separator, _ = o.Attrs["separator"].(string)
	if b.Separator == "" {
		return nil, fmt.Errorf("bpe's separator is %s, want a string", plainKind(o.Attrs["separator"]))
	}
	if ver, ok := o.Attrs["version"].([]any); ok {
		for _, x := range ver {
			n, ok := x.(int64)
			if !ok {
				return nil, fmt.Errorf("bpe's version %v holds a non-integer", ver)
			}
			b.Version = append(b.Version, int(n))
		}
	}
	if g, ok := o.Attrs["glossaries"].([]any); ok {
		for _, x := range g {
			s, ok := x.(string)
			if !ok {
				return nil, fmt.Errorf("bpe's glossaries hold %s, want strings", plainKind(x))
			}
			b.Glossaries = append(b.Glossaries, s)
		}
	}
	b.HasVocab = o.Attrs["vocab"] != nil
	codes := o.Attrs["bpe_codes"]
	pairs, ok := codes.([]any)
	if !ok {
		if m, isMap := codes.(map[string]any); !isMap || len(m) != 0 {
			return nil, fmt.Errorf("bpe's bpe_codes is %s, want a dict from pairs to ranks", plainKind(codes))
		}
	}
	type ranked struct {
		pair [2]string
		rank int64
	}
	rs := make([]ranked, 0, len(pairs))
	for _, p := range pairs {
		kv, _ := p.([2]any)
		k, ok1 := kv[0].([]any)
		rank, ok2 := kv[1].(int64)
		if !ok1 || !ok2 || len(k) != 2 {
			return nil, fmt.Errorf("bpe_codes entry %v, want a pair of strings and a rank", p)
		}
		a, ok1 := k[0].(string)
		c, ok2 := k[1].(string)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("bpe_codes entry %v, want a pair of strings", p)
		}
		rs = append(rs, ranked{[2]string{a, c}, rank})
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].rank < rs[j].rank })
	// The ranks are the codes file's line numbers with duplicates dropped
	// (the first kept): increasing, not always consecutive. Merge order is
	// all that applying them needs.
	for i, r := range rs {
		if i > 0 && r.rank == rs[i-1].rank {
			return nil, fmt.Errorf("bpe_codes gives rank %d to both %q and %q", r.rank, rs[i-1].pair, r.pair)
		}
		b.Merges = append(b.Merges, r.pair)
	}
	return b, nil
}

// gnmtInt reads an integer entry of a dict; a missing one is 0, or an error
// when required.
func gnmtInt(m map[string]any, key string, required bool) (int, error) {
	v, ok := m[key]
	if !ok || v == nil {
		if required {
			return 0, fmt.Errorf("%s is missing", key)
		}
		return 0, nil
	}
	n, ok := v.(int64)
	if !ok || n < 0 || n > math.MaxInt32 {
		return 0, fmt.Errorf("%s is %s, want a non-negative int", key, plainKind(v))
	}
	return int(n), nil
}

// plainKind names a plain value's kind for errors.
func plainKind(v any) string {
	switch x := v.(type) {
	case nil:
		return "missing"
	case *Object:
		return "a " + x.Class + " object"
	case map[string]any:
		return "a dict"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", x)
	}
	return fmt.Sprintf("%T %v", v, v)
}

// toFloat reads a plain number.
func toFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int64:
		return float64(x), true
	}
	return 0, false
}
