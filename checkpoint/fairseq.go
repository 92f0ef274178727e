package checkpoint

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Fairseq is what a fairseq checkpoint and its data directory say beyond
// the weights: the model's options, the language pair, the dictionaries
// and the tokenizers.
type Fairseq struct {
	// Args are the model's options: cfg.model (a dict, or for models
	// registered the legacy way, like the LSTMs, an argparse.Namespace's
	// attributes), else the older checkpoints' args Namespace.
	Args map[string]any
	// SrcLang and TgtLang are the language pair (cfg.task.source_lang
	// and target_lang, the flags, or the dictionaries found).
	SrcLang, TgtLang string
	// SrcDict and TgtDict are the dictionaries, index = id: <s>, <pad>,
	// </s>, <unk>, then each line's symbol, as fairseq's Dictionary loads
	// them.
	SrcDict, TgtDict []string
	// DictFiles are the dictionary files read.
	DictFiles [2]string
	// Tokenizers are the source's and the target's BPE (cfg.bpe, or the
	// files fairseq's hub looks for beside the checkpoint); nil when
	// neither names one.
	Tokenizers [2]*TokenizerRef
	// Notes say where the language pair, the dictionaries and the BPE
	// came from when the checkpoint did not name them.
	Notes []string
}

// FairseqFiles are where ReadFairseq looks for what a checkpoint does not
// hold: export's --data, --source-lang and --target-lang.
type FairseqFiles struct {
	DataDir          string
	SrcLang, TgtLang string
}

// fairseqSpecials are fairseq's Dictionary's first four symbols.
var fairseqSpecials = []string{"<s>", "<pad>", "</s>", "<unk>"}

// ReadFairseq reads a fairseq checkpoint's options from its Origin and
// finds its dictionaries, dict.SRC.txt and dict.TGT.txt: in files.DataDir
// when given, else where fairseqDataDirs says. srcRows and tgtRows are
// the embeddings' rows, which tell source from target when the
// checkpoint names no language pair.
func ReadFairseq(o *Origin, path string, files FairseqFiles, srcRows, tgtRows int) (*Fairseq, error) {
	f := &Fairseq{Args: fairseqModelArgs(o)}
	if f.Args == nil {
		return nil, fmt.Errorf("%s: a fairseq checkpoint whose cfg has no model section and which has no args: nothing says what model it holds", path)
	}
	task := fairseqSection(o, "task")
	str := stringEntry
	f.SrcLang, f.TgtLang = firstNonEmpty(files.SrcLang, str(task, "source_lang"), str(f.Args, "source_lang")), firstNonEmpty(files.TgtLang, str(task, "target_lang"), str(f.Args, "target_lang"))
	dir := filepath.Dir(path)

	dirs, outside := fairseqDataDirs(o, f.Args, dir, files.DataDir)
	var tried []string
	var found *dataDir
	var paths []string // the dictionaries found
	for i, d := range dirs {
		if f.SrcLang != "" && f.TgtLang != "" {
			s, t := filepath.Join(d.dir, "dict."+f.SrcLang+".txt"), filepath.Join(d.dir, "dict."+f.TgtLang+".txt")
			tried = append(tried, s, t)
			if d.file(s, &outside) && d.file(t, &outside) {
				found, paths = &dirs[i], []string{s, t}
				break
			}
			continue
		}
		tried = append(tried, filepath.Join(d.dir, "dict.*.txt"))
		m, _ := filepath.Glob(filepath.Join(d.dir, "dict.*.txt"))
		for _, p := range m {
			if d.file(p, &outside) {
				paths = append(paths, p)
			}
		}
		if len(paths) > 0 {
			found = &dirs[i]
			break
		}
	}
	if found == nil {
		pair := "its language pair's"
		if f.SrcLang != "" && f.TgtLang != "" {
			pair = f.SrcLang + "-" + f.TgtLang
		}
		why := ""
		if len(outside) > 0 {
			why = "; not read, as attnx reads the files a checkpoint names only inside the checkpoint's folder (and the cfg's task.data in the folder fairseq-train ran in, above it): " + strings.Join(outside, "; ")
		}
		return nil, fmt.Errorf("%s is a fairseq checkpoint: its vocabularies are the dictionaries (dict.SRC.txt, dict.TGT.txt) of its data-bin directory, and %s are not there (pass --data DIR); tried %s%s", path, pair, strings.Join(tried, ", "), why)
	}
	var read map[string][]string // the dictionaries inferPair read, by language
	if f.SrcLang == "" || f.TgtLang == "" {
		var err error
		if read, err = f.inferPair(found.dir, paths, srcRows, tgtRows); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	for i, lang := range []string{f.SrcLang, f.TgtLang} {
		p := filepath.Join(found.dir, "dict."+lang+".txt")
		d, ok := read[lang]
		if !ok {
			var why []string
			if !found.file(p, &why) && len(why) > 0 {
				return nil, fmt.Errorf("%s: fairseq dictionary %s is not read: %s (pass --data DIR)", path, p, why[0])
			}
			var err error
			if d, err = ReadFairseqDict(p); err != nil {
				return nil, err
			}
		}
		f.DictFiles[i] = p
		if i == 0 {
			f.SrcDict = d
		} else {
			f.TgtDict = d
		}
	}
	var err error
	if f.Tokenizers, err = f.tokenizers(o, dir); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f, nil
}

// stringEntry is the string m[k], "" when it is none.
func stringEntry(m map[string]any, k string) string {
	s, _ := m[k].(string)
	return s
}

// A dataDir is a directory that may hold a fairseq checkpoint's
// dictionaries, and the folder they must be inside (nil for --data, the
// user's choice, read as given).
type dataDir struct {
	dir string
	in  *folder
}

// file reports whether p, in d, is a dictionary file that may be read,
// adding to outside where p leads out of d's folder.
func (d dataDir) file(p string, outside *[]string) bool {
	if d.in == nil {
		return isFile(p)
	}
	ok, why := d.in.file(p)
	if why != "" {
		*outside = append(*outside, why)
	}
	return ok
}

// fairseqDataDirs are the directories ReadFairseq looks for a
// checkpoint's dictionaries in, in order: data (export's --data) alone
// when given; else inside the checkpoint's folder dir (beside the
// checkpoint, its data-bin, the cfg's task.data relative to it and its
// base name there), and task.data in the folder fairseq-train ran in,
// which the cfg's save_dir (relative to it, fairseq's default
// checkpoints) places above dir: fairseq's own layout, checkpoints/ beside
// data-bin/. A task.data that leads out of them is not looked in; outside
// says so.
func fairseqDataDirs(o *Origin, args map[string]any, dir, data string) (dirs []dataDir, outside []string) {
	if data != "" {
		return []dataDir{{dir: data}}, nil
	}
	str := stringEntry
	ck := folderOf(dir)
	var run *folder
	if save := firstNonEmpty(str(fairseqSection(o, "checkpoint"), "save_dir"), str(args, "save_dir"), "checkpoints"); !leaves(save) {
		up := ck
		for range strings.Split(filepath.Clean(save), string(filepath.Separator)) {
			up = up.parent()
		}
		run = &up
	}
	dirs = []dataDir{{dir, &ck}, {filepath.Join(dir, "data-bin"), &ck}}
	option, names := "cfg.task.data", str(fairseqSection(o, "task"), "data")
	if names == "" {
		option, names = "args.data", str(args, "data")
	}
	for _, d := range strings.Split(names, ":") {
		switch {
		case d == "":
			continue
		case leaves(d):
			outside = append(outside, fmt.Sprintf("%s names %q, outside %s", option, d, dir))
		default:
			dirs = append(dirs, dataDir{filepath.Join(dir, d), &ck})
			if run != nil {
				dirs = append(dirs, dataDir{filepath.Join(run.dir, d), run})
			}
		}
		if base := filepath.Base(d); base != "." && base != ".." && base != string(filepath.Separator) {
			dirs = append(dirs, dataDir{filepath.Join(dir, base), &ck})
		}
	}
	seen := map[string]bool{}
	out := dirs[:0]
	for _, d := range dirs {
		if !seen[d.dir] {
			seen[d.dir] = true
			out = append(out, d)
		}
	}
	return out, outside
}

// inferPair finds the language pair from the dictionaries in dir (m,
// its dict.*.txt files that may be read) when the checkpoint names none
// (fairseq-train infers it from the data files' names, which a model
// directory seldom keeps): two dictionaries, the source the one with the
// encoder embedding's rows. It returns the dictionaries it read, by
// language.
func (f *Fairseq) inferPair(dir string, m []string, srcRows, tgtRows int) (map[string][]string, error) {
	m = slices.Clone(m)
	slices.Sort(m)
	var langs []string
	dicts := map[string][]string{}
	for _, p := range m {
		lang := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "dict."), ".txt")
		d, err := ReadFairseqDict(p)
		if err != nil {
			return nil, err
		}
		langs, dicts[lang] = append(langs, lang), d
	}
	ask := "pass --source-lang and --target-lang"
	if len(langs) != 2 {
		return nil, fmt.Errorf("its cfg names no language pair and %s holds %d dictionaries (%s), not two: %s", dir, len(langs), strings.Join(langs, ", "), ask)
	}
	a, b := langs[0], langs[1]
	sizes := map[string]int{a: len(dicts[a]), b: len(dicts[b])}
	joined := sameFile(filepath.Join(dir, "dict."+a+".txt"), filepath.Join(dir, "dict."+b+".txt"))
	binSrc, binTgt, binFile := dataBinPair(dir)
	switch {
	case f.SrcLang != "":
		f.TgtLang = a
		if a == f.SrcLang {
			f.TgtLang = b
		}
	case f.TgtLang != "":
		f.SrcLang = a
		if a == f.TgtLang {
			f.SrcLang = b
		}
	case binFile != "" && dicts[binSrc] != nil && dicts[binTgt] != nil && sizes[binSrc] == srcRows && sizes[binTgt] == tgtRows:
		// fairseq's infer_language_pair: the pair in the binarized
		// data's file names (train.de-en.de.idx).
		f.SrcLang, f.TgtLang = binSrc, binTgt
		f.Notes = append(f.Notes, fmt.Sprintf("fairseq language pair %s-%s: the cfg names none, so it comes from %s's name, as fairseq's infer_language_pair reads it (--source-lang/--target-lang override)", f.SrcLang, f.TgtLang, binFile))
		return dicts, nil
	case sizes[a] == srcRows && sizes[b] == tgtRows && (sizes[a] != sizes[b] || joined):
		f.SrcLang, f.TgtLang = a, b
	case sizes[b] == srcRows && sizes[a] == tgtRows && sizes[a] != sizes[b]:
		f.SrcLang, f.TgtLang = b, a
	default:
		return nil, fmt.Errorf("its cfg names no language pair, and the dictionaries in %s (%s %d symbols, %s %d) do not tell source (%d rows) from target (%d rows): %s", dir, a, sizes[a], b, sizes[b], srcRows, tgtRows, ask)
	}
	how := "their sizes match the embeddings'"
	if joined {
		how = "they are one joined dictionary, so either order reads the same"
	}
	f.Notes = append(f.Notes, fmt.Sprintf("fairseq language pair %s-%s: the cfg names none, so it comes from the dictionaries in %s (%s; --source-lang/--target-lang override)", f.SrcLang, f.TgtLang, dir, how))
	return dicts, nil
}

// tokenizers are the BPE fairseq-interactive applies: cfg.bpe (or the
// args' bpe) when the checkpoint records one, else the files fairseq's
// hub (hub_utils.from_pretrained) looks for beside a checkpoint: bpecodes
// or code (subword_nmt) and sentencepiece.bpe.model.
func (f *Fairseq) tokenizers(o *Origin, dir string) ([2]*TokenizerRef, error) {
	var refs [2]*TokenizerRef
	bpe := fairseqSection(o, "bpe")
	name, _ := bpe["_name"].(string)
	option := "cfg.bpe"
	if name == "" {
		if n, ok := f.Args["bpe"].(string); ok && n != "" {
			name, bpe, option = n, f.Args, "args"
		}
	}
	moses := false
	tok := fairseqSection(o, "tokenizer")
	tname, _ := tok["_name"].(string)
	if tname == "" {
		tname, _ = f.Args["tokenizer"].(string)
		tok = f.Args
	}
	switch tname {
	case "", "space", "nltk":
	case "moses":
		moses = true
	default:
		return refs, fmt.Errorf("fairseq --tokenizer %s: attnx applies moses (or none)", tname)
	}
	r := &TokenizerRef{}
	switch name {
	case "subword_nmt", "fastbpe":
		codes, _ := bpe["bpe_codes"].(string)
		sep, _ := bpe["bpe_separator"].(string)
		r.Kind, r.Option, r.Named, r.Separator = TokenizerSubwordNMT, option+".bpe_codes", codes, sep
		if name == "fastbpe" {
			f.Notes = append(f.Notes, "fairseq --bpe fastbpe: its codes are applied by subword-nmt's algorithm, which fastBPE implements")
		}
	case "sentencepiece":
		model, _ := bpe["sentencepiece_model"].(string)
		r.Kind, r.Option, r.Named = TokenizerSentencePiece, option+".sentencepiece_model", model
	case "":
		for _, h := range []struct{ file, kind string }{{"bpecodes", TokenizerSubwordNMT}, {"code", TokenizerSubwordNMT}, {"sentencepiece.bpe.model", TokenizerSentencePiece}} {
			l := findBeside(h.file, dir)
			if l.path == "" && len(l.outside) == 0 {
				continue
			}
			r.Kind, r.Option, r.Named, r.Path, r.Tried, r.Outside = h.kind, "fairseq hub's file", h.file, l.path, l.tried, l.outside
			if l.path != "" {
				f.Notes = append(f.Notes, fmt.Sprintf("fairseq BPE: the cfg names none; %s beside the checkpoint is taken as %s codes, as fairseq's hub takes it (--tokenizer overrides)", h.file, h.kind))
			}
			break
		}
		if r.Kind == "" {
			f.Notes = append(f.Notes, fmt.Sprintf("fairseq BPE: the cfg names none and no bpecodes, code or sentencepiece.bpe.model is beside the checkpoint in %s: if the model was trained on BPE pieces (prepare-*.sh's codes, fairseq's --bpe), add its codes with --tokenizer FILE (fairseq applies one BPE to both sides), or translate text segmented already with --pretokenized", dir))
			if moses {
				f.Notes = append(f.Notes, "fairseq --tokenizer moses without a BPE: pass --moses "+f.SrcLang+" for its tokenizer")
			}
			return refs, nil
		}
	default:
		return refs, fmt.Errorf("fairseq --bpe %s: attnx applies subword_nmt, fastbpe and sentencepiece", name)
	}
	if r.Named == "" {
		return refs, fmt.Errorf("fairseq --bpe %s names no file (%s)", name, r.Option)
	}
	if r.Path == "" && r.Outside == nil {
		r.find(dir)
	}
	if r.Kind == TokenizerSentencePiece {
		// fairseq's SentencepieceBPE.decode joins the pieces itself: an
		// <unk> stays "<unk>" (spm_decode writes " ⁇ ").
		r.Decode = "fairseq"
	}
	srcLang, tgtLang := f.SrcLang, f.TgtLang
	if moses {
		// fairseq's MosesTokenizer: aggressive dash splits and escaping
		// unless --moses-no-dash-splits or --moses-no-escape, in the
		// languages of its own options (moses_source_lang and
		// moses_target_lang in the args of fairseq 0.9).
		flag := func(names ...string) bool {
			for _, n := range names {
				if v, ok := tok[n].(bool); ok {
					return v
				}
			}
			return false
		}
		lang := func(def string, names ...string) string {
			for _, n := range names {
				if v, ok := tok[n].(string); ok && v != "" {
					return v
				}
			}
			return def
		}
		srcLang, tgtLang = lang(srcLang, "moses_source_lang", "source_lang"), lang(tgtLang, "moses_target_lang", "target_lang")
		r.Pretokenizer, r.Lang = "moses", srcLang
		r.MosesDashSplits, r.MosesNoEscape = !flag("moses_no_dash_splits"), flag("moses_no_escape")
		f.Notes = append(f.Notes, fmt.Sprintf("fairseq --tokenizer moses: sacremoses' tokenizer of %s before the BPE (dashes %s, %s) and its detokenizer of %s after, as fairseq's MosesTokenizer",
			srcLang, map[bool]string{true: "split as --moses-no-dash-splits is not set", false: "not split (--moses-no-dash-splits)"}[r.MosesDashSplits],
			map[bool]string{true: "no escaping (--moses-no-escape)", false: "escaped"}[r.MosesNoEscape], tgtLang))
	}
	tgt := *r
	if moses {
		tgt.Lang = tgtLang
	}
	refs[0], refs[1] = r, &tgt
	return refs, nil
}

// fairseqModelArgs are the model's options: cfg.model, else args.
func fairseqModelArgs(o *Origin) map[string]any {
	if o == nil {
		return nil
	}
	if m := asAttrs(fairseqCfg(o)["model"]); m != nil {
		return m
	}
	return asAttrs(o.Entries["args"])
}

// fairseqSection is the cfg's section called name (a dict, or a
// Namespace's attributes), nil when it has none.
func fairseqSection(o *Origin, name string) map[string]any {
	return asAttrs(fairseqCfg(o)[name])
}

func fairseqCfg(o *Origin) map[string]any {
	cfg, _ := o.Entries["cfg"].(map[string]any)
	if c, ok := o.Entries["cfg"].(*Object); ok {
		cfg = c.Attrs
	}
	return cfg
}

// asAttrs is a dict's entries or an object's attributes.
func asAttrs(v any) map[string]any {
	switch x := v.(type) {
	case map[string]any:
		return x
	case *Object:
		return x.Attrs
	}
	return nil
}

// FairseqArch is the architecture a fairseq checkpoint names: its model
// options' arch, else _name; "" when they name none.
func FairseqArch(o *Origin) string {
	if o == nil || o.Toolkit != ToolkitFairseq {
		return ""
	}
	args := fairseqModelArgs(o)
	for _, k := range []string{"arch", "_name"} {
		if a, ok := args[k].(string); ok && a != "" {
			return a
		}
	}
	return ""
}

// ReadFairseqDict reads a fairseq dictionary file as fairseq's
// Dictionary.add_from_file does: <s>, <pad>, </s>, <unk> first, then per
// line "SYMBOL COUNT" or "SYMBOL COUNT #fairseq:overwrite" (the symbol may
// hold spaces: the count is the last field). A symbol seen before is an
// error unless the line says #fairseq:overwrite; it is then listed again
// (fairseq appends it and maps the symbol to its last id).
func ReadFairseqDict(path string) ([]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("fairseq dictionary: %w", err)
	}
	defer fh.Close()
	toks := slices.Clone(fairseqSpecials)
	seen := map[string]bool{}
	for _, t := range toks {
		seen[t] = true
	}
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimRight(sc.Text(), " \t\r\v\f")
		word, field, ok := cutLast(line)
		overwrite := false
		if ok && field == "#fairseq:overwrite" {
			overwrite = true
			word, field, ok = cutLast(word)
		}
		if !ok {
			return nil, fmt.Errorf("fairseq dictionary %s line %d: %q: expected \"SYMBOL COUNT [#fairseq:overwrite]\"", path, n, line)
		}
		if _, err := strconv.Atoi(field); err != nil {
			return nil, fmt.Errorf("fairseq dictionary %s line %d: %q: the count %q is not a whole number (expected \"SYMBOL COUNT [#fairseq:overwrite]\")", path, n, line, field)
		}
		if seen[word] && !overwrite {
			return nil, fmt.Errorf("fairseq dictionary %s line %d: symbol %q is listed twice (fairseq refuses that unless the line ends with #fairseq:overwrite)", path, n, word)
		}
		seen[word] = true
		toks = append(toks, word)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("fairseq dictionary %s: line %d is longer than 1 MiB: not a dictionary", path, n+1)
		}
		return nil, fmt.Errorf("fairseq dictionary %s: %w", path, err)
	}
	return toks, nil
}

// cutLast splits s at its last space.
func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

func sameFile(a, b string) bool {
	x, err1 := os.ReadFile(a)
	y, err2 := os.ReadFile(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

// dataBinPair returns the language pair of a data-bin directory's
// binarized files as fairseq's infer_language_pair reads it: the first
// file named SPLIT.SRC-TGT.*, "" when there is none.
func dataBinPair(dir string) (src, tgt, file string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", "", ""
	}
	for _, e := range entries {
		parts := strings.Split(e.Name(), ".")
		if len(parts) < 3 {
			continue
		}
		if a, b, ok := strings.Cut(parts[1], "-"); ok && a != "" && b != "" && !strings.Contains(b, "-") {
			return a, b, e.Name()
		}
	}
	return "", "", ""
}
