// Package modeldir writes and reads attnx model directories: the ONNX graphs
// of one checkpoint (encoder.onnx, decoder.onnx and optionally greedy.onnx
// and beam.onnx) beside attnx.json, the file that makes the directory
// self-describing (docs/models.md, "ONNX interface").
//
// Export never leaves a half-written directory under the requested name,
// and a run killed at any point leaves DIR as it was or complete with the
// new model: everything is written into a temporary directory next to DIR
// (.BASE.tmp-N, BASE = filepath.Base(DIR)), each file synced, and then put
// in place in one step. A missing or empty DIR is replaced by rename(2); a
// model directory being replaced (Force) is exchanged with the new one by
// renameat2(RENAME_EXCHANGE) on Linux (renamex_np on macOS), so DIR never
// ceases to exist, and the old model, now under the temporary name, is
// removed. Where no exchange exists, DIR is renamed aside (.BASE.old-N)
// and the new one renamed in; a crash in between leaves DIR missing until
// the next Export of it puts the old directory back (swap.go).
//
// A killed run can leave temporary directories behind; the next Export of
// the same DIR removes them (never one a live run holds locked, never the
// only complete copy of a model). Directories of other names are never
// touched.
package modeldir

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/atomicfile"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/subword"
)

// File names inside a model directory.
const (
	InfoFile    = "attnx.json"
	EncoderFile = "encoder.onnx"
	DecoderFile = "decoder.onnx"
	GreedyFile  = "greedy.onnx"
	BeamFile    = "beam.onnx"
)

// Roles of the graphs: the keys of attnx.json's files.
const (
	RoleEncoder = "encoder"
	RoleDecoder = "decoder"
	// RoleGreedy is greedy.onnx, the whole greedy decoding
	// (attention.Greedy).
	RoleGreedy = "greedy"
	// RoleBeam is beam.onnx, the whole beam search (attention.Beam; its
	// inputs, outputs and padding are documented there).
	RoleBeam = "beam"
)

// Producer is the producer recorded in attnx.json.
const Producer = "attnx"

// Options controls Export.
type Options struct {
	// Arch, when set, must agree with the architecture the checkpoint's
	// keys imply.
	Arch attention.Arch
	// AllowNonFinite exports weights that hold NaN or Inf.
	AllowNonFinite bool
	// Greedy also writes greedy.onnx, the whole greedy decoding in one graph.
	Greedy bool
	// Beam also writes beam.onnx, the whole beam search in one graph, for
	// any beam size (it is an input of the graph).
	Beam bool
	// Force replaces an existing non-empty model directory.
	Force bool
	// SrcVocab and TgtVocab are JSON files holding an array of strings
	// (index = id); their lengths must equal Vs and Vt.
	SrcVocab, TgtVocab string
	// SOS, EOS, PAD and UNK override the special token ids. When nil, the
	// id is the position of <sos>, <eos>, <pad> (target vocabulary) or
	// <unk> (source vocabulary) when vocabularies are given, and
	// attention.DefaultSpecialFor's otherwise: the article's convention, or
	// for the tutorial's architectures the tutorial's (SOS 0, EOS 1,
	// padding 0, no unknown token), whose vocabularies may also call them
	// "SOS" and "EOS" and need no padding token.
	SOS, EOS, PAD, UNK *int64
	// Progress, when set, is called before each stage with the stage's
	// description, the number of stages done and the total.
	Progress func(stage string, done, total int)
	// EncoderCheckpoint and DecoderCheckpoint name a model saved as two
	// files, the encoder's and the decoder's state dicts; Export's
	// checkpointPath is then "".
	EncoderCheckpoint, DecoderCheckpoint string
	// Average lists several checkpoints of one model whose average is
	// exported (attnx export A B C --average; checkpoint.Average, the
	// toolkit's own script's arithmetic); Export's checkpointPath is then
	// the first of them.
	Average []string
	// Maps rename key prefixes, in order, once the checkpoint is read
	// (attnx export --map FROM=TO).
	Maps []checkpoint.Rename
	// ToolkitConfig is a JoeyNMT model's config.yaml (attnx export
	// --config); "" looks for config.yaml beside the checkpoint.
	ToolkitConfig string
	// Fairseq says where a fairseq checkpoint's dictionaries are and its
	// language pair (attnx export --data, --source-lang, --target-lang),
	// when the checkpoint does not.
	Fairseq checkpoint.FairseqFiles
	// Weights is the precision the graphs store their weights in (attnx
	// export --weights): "" or fp32, int8, int4. Every graph written
	// honours it, and attnx.json records it.
	Weights quant.Precision
	// SrcTokenizer and TgtTokenizer are the model's subword tokenizers,
	// their File a path on disk (attnx export --src-tokenizer,
	// --tgt-tokenizer): checked against the vocabularies and copied into
	// the directory. They override the toolkit config's.
	SrcTokenizer, TgtTokenizer *subword.Spec

	// fromConfig marks the tokenizers taken from the toolkit's
	// configuration rather than given (configTokenizers).
	fromConfig [2]bool
}

// files names the checkpoint files Export reads.
func (o Options) files(path string) checkpoint.Files {
	return checkpoint.Files{Path: path, Encoder: o.EncoderCheckpoint, Decoder: o.DecoderCheckpoint, Average: o.Average}
}

// FileInfo describes one file written into the directory.
type FileInfo struct {
	// Role is "encoder", "decoder", "greedy", "beam" or "info".
	Role string `json:"role"`
	// Name is the file name inside the directory.
	Name string `json:"name"`
	// Bytes is the file's size.
	Bytes int64 `json:"bytes"`
	// Nodes counts the graph's nodes, subgraphs included (0 for attnx.json).
	Nodes int `json:"nodes,omitempty"`
	// From is the file a copied file (a tokenizer's) was copied from, as
	// found or given; "" for the files export writes.
	From string `json:"from,omitempty"`
}

// Result describes a written model directory.
type Result struct {
	// Dir is the directory written.
	Dir string `json:"dir"`
	// Config is the model's configuration, inferred from the checkpoint.
	Config attention.Config `json:"config"`
	// Special holds the special token ids recorded.
	Special attention.Special `json:"special_tokens"`
	// Weights is the precision of the graphs' weights.
	Weights quant.Precision `json:"weights"`
	// Notes tell what the conversion did besides copying weights (ignored
	// keys, converted dtypes, where the checkpoint reader found the
	// tensors).
	Notes []string `json:"notes"`
	// Files lists the files written, in the order written.
	Files []FileInfo `json:"files"`
	// Replaced is true when an existing directory was replaced (Force).
	Replaced bool `json:"replaced"`
	// Toolkit, SrcPrefix, SrcSuffix and Decoding are attnx.json's, for a
	// toolkit's model.
	Toolkit   *Toolkit         `json:"toolkit,omitempty"`
	SrcPrefix []int64          `json:"src_prefix,omitempty"`
	SrcSuffix []int64          `json:"src_suffix,omitempty"`
	Decoding  *attention.Rules `json:"decoding,omitempty"`
	// SrcTokenizer and TgtTokenizer are attnx.json's.
	SrcTokenizer *subword.Spec `json:"src_tokenizer,omitempty"`
	TgtTokenizer *subword.Spec `json:"tgt_tokenizer,omitempty"`

	tokenizers []tokenizerCopy
}

// testHookAfterFile, set by tests, runs after each graph file is written
// into the temporary directory; an error fails the export there.
var testHookAfterFile func(name string) error

// Export converts the checkpoint at checkpointPath (or, with
// checkpointPath "", opt's EncoderCheckpoint and DecoderCheckpoint) into the
// model directory dir. The checkpoint may be in any container and layout
// checkpoint.LoadModel reads. See the package comment for how dir is
// replaced.
func Export(checkpointPath, dir string, opt Options) (res *Result, err error) {
	if dir == "" {
		return nil, errors.New("no output directory given")
	}
	// An absolute DIR has a real parent for the temporary directory and
	// the lock: "." has none (filepath.Dir(".") is ".").
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("output directory %s: %w", dir, err)
	}
	// A link to a directory is followed: the model is swapped in at its
	// target, and the link stays.
	if dir, err = atomicfile.Resolve(abs); err != nil {
		return nil, fmt.Errorf("output directory %s: %w", abs, err)
	}
	total := 4
	for _, on := range []bool{opt.Greedy, opt.Beam} {
		if on {
			total++
		}
	}
	stage := 0
	progress := func(what string) {
		if opt.Progress != nil {
			opt.Progress(what, stage, total)
		}
		stage++
	}
	// DIR's parent is created as mkdir -p would (-o out/demo/luong in a
	// fresh checkout); the temporary directory and the lock live there.
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("creating the parent of %s: %w", dir, err)
	}
	// Clean up after killed runs first (that may put a set-aside DIR
	// back), then refuse early, before the (possibly long) checkpoint read.
	unlockParent := lockParent(dir)
	cleanStale(dir)
	unlockParent()
	if err := checkTarget(dir, opt.Force); err != nil {
		return nil, err
	}

	progress("reading " + opt.files(checkpointPath).Base())
	w, info, res, err := prepare(checkpointPath, opt)
	if err != nil {
		return nil, err
	}
	res.Dir = dir

	// DIR holding the working directory (-o .) is written in place: a
	// swap would leave the user's shell in a removed directory.
	inPlace := holdsWorkingDir(dir)
	var oldInfo *Info
	tmp, unlockTmp := dir, func() {}
	if inPlace {
		if oldInfo, err = clearInPlace(dir); err != nil {
			return nil, err
		}
	} else if tmp, unlockTmp, err = makeTemp(dir); err != nil {
		return nil, err
	}
	defer func() {
		unlockTmp()
		if err != nil && !inPlace {
			os.RemoveAll(tmp)
		}
	}()

	bo := attention.BuildOptions{Weights: info.Weights, Rules: info.Decoding}
	type graph struct {
		role, file, what string
		build            func() (*builder.Model, error)
	}
	graphs := []graph{
		{RoleEncoder, EncoderFile, "building the encoder", func() (*builder.Model, error) { return attention.Encoder(w, bo) }},
		{RoleDecoder, DecoderFile, "building the decoder step", func() (*builder.Model, error) { return attention.Decoder(w, bo) }},
	}
	if opt.Greedy {
		graphs = append(graphs, graph{RoleGreedy, GreedyFile, "building the greedy decoder", func() (*builder.Model, error) { return attention.Greedy(w, info.Special, bo) }})
	}
	if opt.Beam {
		graphs = append(graphs, graph{RoleBeam, BeamFile, "building the beam search", func() (*builder.Model, error) { return attention.Beam(w, info.Special, bo) }})
	}
	info.Files = map[string]string{}
	for _, gr := range graphs {
		progress(gr.what)
		fi, err := writeGraph(filepath.Join(tmp, gr.file), gr.build)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", gr.file, err)
		}
		fi.Role = gr.role
		if testHookAfterFile != nil {
			if err := testHookAfterFile(gr.file); err != nil {
				return nil, err
			}
		}
		res.Files = append(res.Files, fi)
		info.Files[gr.role] = gr.file
	}
	tokFiles, err := copyTokenizers(tmp, res.tokenizers)
	if err != nil {
		return nil, fmt.Errorf("copying the tokenizers: %w", err)
	}
	res.Files = append(res.Files, tokFiles...)
	progress("writing " + InfoFile)
	if err := info.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", InfoFile, err)
	}
	data, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	data = append(data, '\n')
	if err := atomicfile.WriteFile(filepath.Join(tmp, InfoFile), data, 0o644); err != nil {
		return nil, err
	}
	res.Files = append(res.Files, FileInfo{Role: "info", Name: InfoFile, Bytes: int64(len(data))})

	if inPlace {
		// The old model's graphs the new one does not name go.
		if oldInfo != nil {
			res.Replaced = true
			kept := slices.Collect(maps.Values(info.Files))
			for _, fi := range tokFiles {
				kept = append(kept, fi.Name)
			}
			old := slices.Collect(maps.Values(oldInfo.Files))
			for _, t := range []*subword.Spec{oldInfo.SrcTokenizer, oldInfo.TgtTokenizer} {
				if t != nil {
					old = append(old, t.File)
				}
			}
			for _, f := range old {
				if !slices.Contains(kept, f) && filepath.Base(f) == f {
					os.Remove(filepath.Join(dir, f))
				}
			}
		}
		return res, atomicfile.SyncDir(dir)
	}
	unlockParent = lockParent(dir)
	defer unlockParent()
	replaced, err := swapIn(tmp, dir, opt.Force)
	if err != nil {
		return nil, err
	}
	res.Replaced = replaced
	return res, nil
}

// prepare reads and converts the checkpoint and fills in attnx.json's
// content but its files: what Export and Describe share.
func prepare(checkpointPath string, opt Options) (*attention.Weights, *Info, *Result, error) {
	read, err := convert(checkpointPath, opt)
	if err != nil {
		return nil, nil, nil, err
	}
	w, notes := read.Weights, read.Notes
	info, spNotes, err := buildInfo(w.Config, checkpointPath, opt, read.toolkit)
	if err != nil {
		return nil, nil, nil, err
	}
	var cfgNotes []string
	if read.toolkit != nil {
		cfgNotes = configTokenizers(&opt, read.toolkit.tokenizers)
	}
	copies, tokNotes, err := addTokenizers(info, opt)
	tokNotes = append(cfgNotes, tokNotes...)
	if err != nil {
		return nil, nil, nil, err
	}
	res := &Result{Config: w.Config, Special: info.Special, Weights: info.Weights, Notes: append(append(notes, spNotes...), tokNotes...),
		Toolkit: info.Toolkit, SrcPrefix: info.SrcPrefix, SrcSuffix: info.SrcSuffix, Decoding: info.Decoding,
		SrcTokenizer: info.SrcTokenizer, TgtTokenizer: info.TgtTokenizer, tokenizers: copies}
	return w, info, res, nil
}

// Describe reads and converts a checkpoint as Export would, and returns
// what Export would write in attnx.json (but its files) and report,
// without building or writing anything: attnx inspect CHECKPOINT.
func Describe(checkpointPath string, opt Options) (*Info, *Result, error) {
	_, info, res, err := prepare(checkpointPath, opt)
	return info, res, err
}

// convert reads the checkpoint and checks it. The state dict is dropped
// when convert returns, so that only the converted weights stay in memory
// while the graphs are built.
func convert(path string, opt Options) (*Read, error) {
	return ReadModel(opt.files(path), ReadOptions{Maps: opt.Maps, ToolkitConfig: opt.ToolkitConfig, Fairseq: opt.Fairseq,
		Convert: attention.Options{Arch: opt.Arch, AllowNonFinite: opt.AllowNonFinite}})
}

// ReadOptions controls ReadModel.
type ReadOptions struct {
	// Maps rename key prefixes once the checkpoint is read (--map).
	Maps []checkpoint.Rename
	// Convert are the conversion's options.
	Convert attention.Options
	// ToolkitConfig is a JoeyNMT model's config.yaml (attnx export
	// --config); "" looks for config.yaml beside the checkpoint.
	ToolkitConfig string
	// Fairseq is Options.Fairseq.
	Fairseq checkpoint.FairseqFiles
	// Config, when set, is the model's configuration as attnx.json has
	// it: a toolkit's checkpoint is converted with it instead of the
	// toolkit's options being read again (attnx verify).
	Config *attention.Config
}

// Read is a checkpoint read and converted.
type Read struct {
	// StateDict is the checkpoint as read (after --map).
	StateDict *checkpoint.StateDict
	// Weights are the converted weights.
	Weights *attention.Weights
	// Notes are the reader's and the converter's notes.
	Notes []string
	// toolkit is set for a toolkit's checkpoint.
	toolkit *toolkitModel
}

// ReadModel reads a model's checkpoint as attnx export does
// (checkpoint.LoadModel, then the renames) and converts it: a toolkit's
// checkpoint (OpenNMT-py, JoeyNMT, the chatbot tutorial, bentrevett's
// tutorials) with its toolkit's options, any other with
// attention.FromStateDict, whose key errors come with
// checkpoint.Diagnose's description (a *DiagnosedError).
func ReadModel(files checkpoint.Files, ro ReadOptions) (*Read, error) {
	sd, err := checkpoint.LoadModel(files, ro.Maps)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	if isToolkit(sd) {
		tm, err := readToolkit(sd, files, ro, ro.Config, ro.Convert)
		if err != nil {
			return nil, err
		}
		return &Read{StateDict: sd, Weights: tm.w, Notes: append(append([]string(nil), sd.Notes...), tm.notes...), toolkit: tm}, nil
	}
	sd2, w, notes, err := convertStateDict(sd, files, ro.Convert)
	if err != nil {
		return nil, err
	}
	return &Read{StateDict: sd2, Weights: w, Notes: notes}, nil
}

// ReadCheckpoint reads a model's checkpoint as attnx export does
// (checkpoint.LoadModel, then the renames) and converts it
// (attention.FromStateDict). It returns the state dict as read, the
// weights and the notes of both steps. When the keys fit no known
// architecture (an *attention.KeysError), the error goes on, after the
// precise message, with checkpoint.Diagnose's description of how they
// differ from the closest of attention.Layouts and the --map flags that
// would fix them.
func ReadCheckpoint(files checkpoint.Files, maps []checkpoint.Rename, opt attention.Options) (*checkpoint.StateDict, *attention.Weights, []string, error) {
	r, err := ReadModel(files, ReadOptions{Maps: maps, Convert: opt})
	if err != nil {
		return nil, nil, nil, err
	}
	return r.StateDict, r.Weights, r.Notes, nil
}

// convertStateDict converts a state dict that is no toolkit's with
// attention.FromStateDict.
func convertStateDict(sd *checkpoint.StateDict, files checkpoint.Files, opt attention.Options) (*checkpoint.StateDict, *attention.Weights, []string, error) {
	w, notes, err := attention.FromStateDict(sd.Tensors, opt)
	if err != nil {
		var ke *attention.KeysError
		if d, derr := checkpoint.Diagnose(sd.KeyShapes(), attention.Layouts()); derr == nil &&
			(errors.As(err, &ke) || d.Close && attention.IsToolkitLayout(d.Layout)) {
			// Keys that fit no layout, or the article's inference tripping
			// on a toolkit's keys under other names.
			return nil, nil, nil, &DiagnosedError{Files: files, Err: err, Diagnosis: d}
		}
		return nil, nil, nil, fmt.Errorf("%s: %w", files, err)
	}
	return sd, w, append(append([]string(nil), sd.Notes...), notes...), nil
}

// DiagnosedError is ReadCheckpoint's error for a checkpoint whose keys fit
// no known architecture: the converter's message, then the diagnosis.
type DiagnosedError struct {
	Files     checkpoint.Files
	Err       error
	Diagnosis *checkpoint.Diagnosis
}

// Error is "FILES: MESSAGE", a newline, and the diagnosis.
func (e *DiagnosedError) Error() string {
	return fmt.Sprintf("%s: %v\n%s", e.Files, e.Err, e.Diagnosis)
}

// Unwrap returns the converter's error.
func (e *DiagnosedError) Unwrap() error { return e.Err }

// buildInfo fills in attnx.json's content but its files, and returns the
// notes to show about the special token ids.
func buildInfo(cfg attention.Config, ckpt string, opt Options, tm *toolkitModel) (*Info, []string, error) {
	weights, err := quant.ParsePrecision(string(opt.Weights))
	if err != nil {
		return nil, nil, err
	}
	info := &Info{
		Weights:       weights,
		Format:        InfoFormat,
		FormatVersion: 1,
		Config:        cfg,
		Opset:         builder.DefaultOpset,
		Special:       attention.DefaultSpecialFor(cfg.Arch),
		Producer:      Producer,
		Source:        opt.files(ckpt).Base(),
		States:        cfg.States(),
	}
	if tm != nil {
		return toolkitInfo(info, opt, tm)
	}
	tutorial := cfg.Arch.IsTutorial()
	if opt.SrcVocab != "" {
		if info.SrcTokens, err = ReadVocab(opt.SrcVocab, "--src-vocab", "source", cfg.SrcVocab); err != nil {
			return nil, nil, err
		}
		info.Special.UNK = index(info.SrcTokens, "<unk>")
	}
	if opt.TgtVocab != "" {
		if info.TgtTokens, err = ReadVocab(opt.TgtVocab, "--tgt-vocab", "target", cfg.TgtVocab); err != nil {
			return nil, nil, err
		}
	}
	// An id without a flag comes from the target vocabulary, else keeps the
	// architecture's default. A tutorial model's vocabulary (the tutorial's
	// Lang) calls SOS and EOS "SOS" and "EOS" and has no padding token, so
	// its ids may keep the tutorial's defaults; an article model's
	// vocabulary must have the token.
	var defaulted, flags []string
	for _, t := range []struct {
		id       *int64
		name     string
		toks     []string
		override *int64
		flag     string
	}{
		{&info.Special.SOS, "SOS", []string{"<sos>", "SOS"}, opt.SOS, "--sos"},
		{&info.Special.EOS, "EOS", []string{"<eos>", "EOS"}, opt.EOS, "--eos"},
		{&info.Special.PAD, "PAD", []string{"<pad>"}, opt.PAD, "--pad"},
	} {
		found := int64(-1)
		for i, tok := range t.toks {
			if found < 0 && (i == 0 || tutorial) {
				found = index(info.TgtTokens, tok)
			}
		}
		switch {
		case t.override != nil:
			*t.id = *t.override
		case found >= 0:
			*t.id = found
		case info.TgtTokens != nil && !tutorial:
			return nil, nil, fmt.Errorf("--tgt-vocab %s has no %s token; pass %s N to name its id", opt.TgtVocab, t.toks[0], t.flag)
		default:
			defaulted = append(defaulted, fmt.Sprintf("%s %d", t.name, *t.id))
			flags = append(flags, t.flag)
		}
	}
	if opt.UNK != nil {
		info.Special.UNK = *opt.UNK
	}
	if err := info.Special.Check(cfg); err != nil {
		return nil, nil, err
	}
	var notes []string
	if tutorial && len(defaulted) > 0 {
		notes = append(notes, fmt.Sprintf("special tokens %s: PyTorch's seq2seq tutorial's, the default for %s models (pass %s to change them)",
			strings.Join(defaulted, ", "), cfg.Arch, strings.Join(flags, "/")))
	}
	return info, notes, nil
}

func index(tokens []string, tok string) int64 { return int64(slices.Index(tokens, tok)) }

// ReadVocab reads a vocabulary file: a JSON array of strings, index = id.
// flag and side ("source", "target") name it in errors; want is the size
// the checkpoint implies.
func ReadVocab(path, flag, side string, want int) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	var toks []string
	if err := json.Unmarshal(data, &toks); err != nil {
		return nil, fmt.Errorf("%s %s: not a JSON array of strings (index = token id): %v", flag, path, err)
	}
	if toks == nil {
		return nil, fmt.Errorf("%s %s: not a JSON array of strings (index = token id): got null", flag, path)
	}
	if len(toks) != want {
		return nil, fmt.Errorf("%s %s has %d tokens, but the checkpoint's %s vocabulary has %d (its embedding has %d rows)", flag, path, len(toks), side, want, want)
	}
	seen := make(map[string]int, len(toks))
	for i, t := range toks {
		if j, dup := seen[t]; dup {
			return nil, fmt.Errorf("%s %s: token %q appears at ids %d and %d; each token must be unique", flag, path, t, j, i)
		}
		seen[t] = i
	}
	return toks, nil
}

// writeGraph builds one graph, writes it synced to path and describes it.
// The model and its protobuf are dropped on return, so only one graph's
// copy of the weights exists at a time.
func writeGraph(path string, build func() (*builder.Model, error)) (FileInfo, error) {
	m, err := build()
	if err != nil {
		return FileInfo{}, err
	}
	mp, err := onnxfile.ToProto(m)
	if err != nil {
		return FileInfo{}, err
	}
	nodes := onnxfile.Summarize(mp).Nodes
	if err := onnxfile.WriteProtoFile(path, mp, onnxfile.WriteOptions{}); err != nil {
		return FileInfo{}, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return FileInfo{}, err
	}
	return FileInfo{Name: filepath.Base(path), Bytes: st.Size(), Nodes: nodes}, nil
}

// checkTarget refuses a dir that exists and is not an empty directory,
// unless force is set and it is a model directory.
func checkTarget(dir string, force bool) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", dir)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	if len(entries) == 0 {
		return nil
	}
	if !force {
		return fmt.Errorf("%s is not empty; pass --force to replace it", dir)
	}
	if _, err := os.Stat(filepath.Join(dir, InfoFile)); err != nil {
		return fmt.Errorf("%s is not empty and has no %s: --force only replaces attnx model directories; remove it yourself or choose another -o", dir, InfoFile)
	}
	return nil
}

// holdsWorkingDir reports whether dir is the working directory or one of
// its parents.
func holdsWorkingDir(dir string) bool {
	wd, err := os.Getwd()
	if err != nil {
		return false
	}
	for d := wd; ; d = filepath.Dir(d) {
		if d == dir {
			return true
		}
		if filepath.Dir(d) == d {
			return false
		}
	}
}

// clearInPlace prepares DIR, which holds the working directory, for an
// export in place: checkTarget has allowed it (empty, or a model directory
// with --force). The old attnx.json is removed first, so that no reader
// takes the half-written directory for a model; each graph is then
// replaced atomically and the new attnx.json written last. It returns the
// old model's attnx.json, nil when there was none.
func clearInPlace(dir string) (*Info, error) {
	path := filepath.Join(dir, InfoFile)
	old, err := ReadInfo(path)
	if err != nil {
		if _, statErr := os.Lstat(path); errors.Is(statErr, os.ErrNotExist) {
			return nil, nil
		}
		return nil, err
	}
	if err := os.Remove(path); err != nil {
		return nil, fmt.Errorf("replacing the model in %s: %w", dir, err)
	}
	return old, atomicfile.SyncDir(dir)
}
