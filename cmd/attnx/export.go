package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/modeldir"
	"github.com/attnx/attnx/onmttok"
	"github.com/attnx/attnx/quant"
	"github.com/attnx/attnx/subword"
)

func init() {
	commandDocs["export"] = `
Reads the weights of an attention seq2seq model, infers its architecture
and sizes from the keys, and writes a model directory: encoder.onnx,
decoder.onnx (one decoder step), greedy.onnx with --greedy (the whole greedy
decoding in one graph), beam.onnx with --beam (the whole beam search in one
graph; the beam size, max_len and length penalty are inputs given when it
runs, so one file serves every beam size) and attnx.json (config, opset,
special token ids, vocabularies).

CHECKPOINT is what torch.save wrote (zip or the legacy format of torch < 1.6)
or a .safetensors file, holding the weights the way people save them: a
state_dict, a training checkpoint (weights under state_dict,
model_state_dict, model, net, network or module, beside epoch, optimizer
state and the like, which are ignored), nested dicts ({"encoder": ...,
"decoder": ...}), or the whole pickled module (torch.save(model)), read
without its class code; nothing in the file is executed. A prefix in front
of encoder./decoder. (DataParallel's module., Lightning's model.) is
stripped. A model saved as two files, the encoder's and the decoder's, is
given as --encoder ENC --decoder DEC instead of CHECKPOINT. --map FROM=TO
(repeatable) then renames keys starting with FROM, for models whose
attribute names differ from attnx's. The notes say each thing done to the
names.

With --average, CHECKPOINT... are several saved states of one OpenNMT-py
or fairseq model (the last few of a training run), and their average is
exported: the very float32 values OpenNMT-py's tools/average_models.py or
fairseq's scripts/average_checkpoints.py write from those files in that
order (a running mean for OpenNMT-py, a sum divided by N for fairseq), with
the first file's options and vocabulary. Give the files in the order the
script takes them: fairseq's --num-update-checkpoints takes the newest
first. The files must hold the same tensors, shapes and vocabulary; an
error names what differs (docs/toolkits.md, "Averaged checkpoints").

The directory appears all at once: it is written to .DIR.tmp-N beside DIR and
renamed into place, so an interrupted export leaves DIR as it was (the next
export removes the leftover). An existing non-empty DIR is replaced only with
--force, and only when it is an attnx model directory.

--weights int8 or int4 stores the decoder step's weights in reduced
precision, to decode faster and write smaller files (docs/quantization.md):
int8 keeps to standard ONNX operators; int4 stores the classifier 4-bit with
the com.microsoft MatMulNBits operator, which ONNX Runtime and attnx's native
backend (--backend go) run, other ONNX engines not. The encoder's RNN stays float32. attnx verify on such a model reports
how far its decoding is from the float32 PyTorch model.

Special token ids default to <pad>=0, <sos>=1, <eos>=2, <unk>=3, and for
the two architectures of PyTorch's seq2seq tutorial (tutorial-location,
tutorial-bahdanau) to the tutorial's SOS 0, EOS 1, padding 0 and no unknown
token, with a note. With vocabularies (JSON arrays of strings, index = id)
they are the positions of <sos>, <eos>, <pad> in the target vocabulary and
<unk> in the source one (for the tutorial's models also of "SOS" and
"EOS", the names its Lang gives them). --sos/--eos/--pad/--unk override
either.

--src-tokenizer FILE and --tgt-tokenizer FILE (--tokenizer FILE for both
sides) name the subword tokenizer the model was trained with: a
SentencePiece model (.model, unigram or BPE) or subword-nmt BPE codes
(--bpe-separator, --bpe-glossary as apply_bpe's --separator and
--glossaries; the text is split at spaces, as apply_bpe does). --moses
LANG runs the Moses tokenizer of LANG first and its detokenizer on the
output (sacremoses' rules; JoeyNMT's pretokenizer: moses). The kind is
told from the file's content. The file is checked against the vocabulary
(most of the vocabulary's tokens must be pieces it produces) and copied into
the model directory; translate, serve and the viewer then take raw text and
give raw text back. --onmttok KWARGS tokenizes with the OpenNMT Tokenizer
(OpenNMT-py's onmt_tokenize transform) instead, for a checkpoint whose
options lack it: KWARGS are its options as -src_onmttok_kwargs gives them
("{'mode': 'aggressive', 'joiner_annotate': True}"), and the tokenizer
files, if any, its subword models.

Example:
  attnx export model.pt -o model/ --src-vocab src.json --tgt-vocab tgt.json --greedy --beam
  attnx export model.pt -o model-int8/ --weights int8 --greedy
  attnx export model.pt -o model/ --src-vocab src.json --tgt-vocab tgt.json --tokenizer spm.model
  attnx verify --model model/ --checkpoint model.pt
  attnx export --encoder encoder.pt --decoder decoder.pt -o model/
      (a model trained with PyTorch's seq2seq tutorial: SOS 0, EOS 1)
  attnx export model.pt -o model/ --map decoder.attention.W1=decoder.fc_hidden
  attnx export ckpt/model_step_800.pt ckpt/model_step_900.pt ckpt/model_step_1000.pt --average -o model/`
}

// optionalInt is an int64 flag that remembers whether it was given.
type optionalInt struct{ v *int64 }

func (o *optionalInt) String() string {
	if o == nil || o.v == nil {
		return ""
	}
	return strconv.FormatInt(*o.v, 10)
}

// Type names the value in the help, as pflag.Value requires.
func (o *optionalInt) Type() string { return "int" }

func (o *optionalInt) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("not an integer")
	}
	o.v = &n
	return nil
}

// renameFlags collects the --map FROM=TO flags, in order.
type renameFlags []checkpoint.Rename

func (r *renameFlags) String() string {
	s := make([]string, len(*r))
	for i, rn := range *r {
		s[i] = rn.String()
	}
	return strings.Join(s, " ")
}

// Type names the value in the help, as pflag.Value requires.
func (r *renameFlags) Type() string { return "FROM=TO" }

func (r *renameFlags) Set(s string) error {
	rn, err := checkpoint.ParseRename(s)
	if err != nil {
		return err
	}
	*r = append(*r, rn)
	return nil
}

func runExport(args []string) error {
	fs := newFlagSet("export")
	out := fs.StringP("output", "o", "", "the model directory to write (required)")
	arch := fs.String("arch", "", "expected architecture ("+archNames()+"); an error if the checkpoint's keys say otherwise")
	srcVocab := fs.String("src-vocab", "", "source vocabulary: JSON array of strings, index = id; its length must equal Vs")
	tgtVocab := fs.String("tgt-vocab", "", "target vocabulary: JSON array of strings, index = id; its length must equal Vt")
	var sos, eos, pad, unk optionalInt
	fs.Var(&sos, "sos", "start-of-sequence id (default: <sos> in --tgt-vocab, else 1; 0 for the tutorial's models)")
	fs.Var(&eos, "eos", "end-of-sequence id (default: <eos> in --tgt-vocab, else 2; 1 for the tutorial's models)")
	fs.Var(&pad, "pad", "padding id (default: <pad> in --tgt-vocab, else 0)")
	fs.Var(&unk, "unk", "unknown-token id in the source vocabulary (default: <unk> in --src-vocab, else 3; none for the tutorial's models)")
	greedy := fs.Bool("greedy", false, "also write greedy.onnx, the whole greedy decoding as one graph")
	beam := fs.Bool("beam", false, "also write beam.onnx, the whole beam search as one graph (beam size, max_len and length penalty are its inputs)")
	force := fs.Bool("force", false, "replace an existing non-empty model directory")
	allowNonFinite := fs.Bool("allow-nonfinite", false, "export weights that hold NaN or Inf")
	encoder := fs.String("encoder", "", "the encoder's checkpoint, for a model saved as two files (with --decoder, instead of CHECKPOINT)")
	decoder := fs.String("decoder", "", "the decoder's checkpoint, for a model saved as two files (with --encoder)")
	var maps renameFlags
	fs.Var(&maps, "map", "rename keys starting with FROM to start with TO once the checkpoint is read (repeatable, applied in order)")
	average := fs.Bool("average", false, "export the average of several checkpoints of one OpenNMT-py or fairseq model, given as CHECKPOINT..., with the arithmetic of the toolkit's own script (average_models.py, average_checkpoints.py)")
	toolkitConfig := fs.String("config", "", "a JoeyNMT model's config.yaml (default: config.yaml beside CHECKPOINT)")
	fairseqData := fs.String("data", "", "a fairseq model's data-bin `DIR`, with its dictionaries dict.SRC.txt and dict.TGT.txt (default: beside CHECKPOINT, its data-bin, then the cfg's task.data)")
	srcLang := fs.String("source-lang", "", "a fairseq model's source language, when its cfg names none (fairseq's --source-lang)")
	tgtLang := fs.String("target-lang", "", "a fairseq model's target language, when its cfg names none (fairseq's --target-lang)")
	weights := fs.String("weights", string(quant.PrecisionFP32), "precision of the weights: fp32, int8 (standard ONNX operators) or int4 (com.microsoft MatMulNBits: ONNX Runtime or the native backend); see docs/quantization.md")
	srcTok := fs.String("src-tokenizer", "", "the source side's subword tokenizer: a SentencePiece `FILE.model` or subword-nmt BPE codes")
	tgtTok := fs.String("tgt-tokenizer", "", "the target side's subword tokenizer (`FILE`, as --src-tokenizer)")
	bothTok := fs.String("tokenizer", "", "one subword tokenizer `FILE` for both sides (a joint SentencePiece model or BPE codes)")
	bpeSep := fs.String("bpe-separator", subword.DefaultSeparator, "subword-nmt's joiner (apply_bpe --separator)")
	bpeGloss := fs.StringArray("bpe-glossary", nil, "a subword-nmt glossary (regular expression of words never split; repeatable)")
	onmtKw := fs.String("onmttok", "", "tokenize with the OpenNMT Tokenizer (OpenNMT-py's onmt_tokenize) of these `KWARGS`: pyonmttok's keyword arguments as a Python dict or JSON, as -src_onmttok_kwargs takes them; the tokenizer files become its subword models (SentencePiece or BPE, told from their content)")
	mosesLang := fs.String("moses", "", "run the Moses tokenizer of `LANG` (en, de, fr, ...) before the subword tokenizer and its detokenizer after (JoeyNMT's pretokenizer: moses)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	prec, err := quant.ParsePrecision(*weights)
	if err != nil {
		return &usageError{"--weights: " + err.Error()}
	}
	pos := fs.Args()
	pair := *encoder != "" || *decoder != ""
	switch {
	case pair && len(pos) > 0:
		return &usageError{fmt.Sprintf("give either CHECKPOINT (%s) or --encoder and --decoder, not both", strings.Join(pos, " "))}
	case pair && *encoder == "":
		return &usageError{"--decoder needs --encoder (the encoder's checkpoint)"}
	case pair && *decoder == "":
		return &usageError{"--encoder needs --decoder (the decoder's checkpoint)"}
	case !pair && len(pos) == 0:
		return &usageError{"missing CHECKPOINT (a .pt or .safetensors state_dict), or --encoder ENC --decoder DEC"}
	case *average && pair:
		return &usageError{"--average takes the checkpoints to average as CHECKPOINT..., not --encoder and --decoder"}
	case *average && len(pos) < 2:
		return &usageError{fmt.Sprintf("--average needs two or more checkpoints of one model, got %d: %s", len(pos), strings.Join(pos, " "))}
	case len(pos) > 1 && !*average:
		return &usageError{fmt.Sprintf("one CHECKPOINT expected, got %d arguments: %s (to export their average, add --average)", len(pos), strings.Join(pos, " "))}
	case *out == "":
		return &usageError{"missing -o DIR (the model directory to write)"}
	}
	opt := modeldir.Options{
		AllowNonFinite: *allowNonFinite, Greedy: *greedy, Beam: *beam, Force: *force,
		SrcVocab: *srcVocab, TgtVocab: *tgtVocab,
		SOS: sos.v, EOS: eos.v, PAD: pad.v, UNK: unk.v,
		EncoderCheckpoint: *encoder, DecoderCheckpoint: *decoder, Maps: maps,
		Weights: prec, ToolkitConfig: *toolkitConfig,
		Fairseq: checkpoint.FairseqFiles{DataDir: *fairseqData, SrcLang: *srcLang, TgtLang: *tgtLang},
	}
	if *bothTok != "" && (*srcTok != "" || *tgtTok != "") {
		return &usageError{"give --tokenizer (both sides) or --src-tokenizer/--tgt-tokenizer, not both"}
	}
	if *bothTok != "" {
		*srcTok, *tgtTok = *bothTok, *bothTok
	}
	for _, t := range []struct {
		path, flag string
		dst        **subword.Spec
	}{{*srcTok, "--src-tokenizer", &opt.SrcTokenizer}, {*tgtTok, "--tgt-tokenizer", &opt.TgtTokenizer}} {
		if t.path == "" {
			continue
		}
		spec, err := subword.Detect(t.path)
		if err != nil {
			return fmt.Errorf("%s: %w", t.flag, err)
		}
		if spec.Kind == subword.KindSubwordNMT {
			if *bpeSep != subword.DefaultSeparator {
				spec.Separator = *bpeSep
			}
			spec.Glossaries = *bpeGloss
		}
		if *mosesLang != "" {
			spec.Pretokenizer, spec.Lang = subword.PretokenizeMoses, *mosesLang
		}
		*t.dst = &spec
	}
	if *onmtKw != "" {
		if err := onmtTokenizers(&opt, *onmtKw, *srcTok, *tgtTok, *mosesLang != "" || *bpeSep != subword.DefaultSeparator || len(*bpeGloss) > 0); err != nil {
			return err
		}
	}
	files := checkpoint.Files{Encoder: *encoder, Decoder: *decoder}
	if !pair {
		files.Path = pos[0]
	}
	if *average {
		files.Average, opt.Average = pos, pos
	}
	if *arch != "" {
		a, err := attention.ParseArch(*arch)
		if err != nil {
			return &usageError{"--arch: " + err.Error()}
		}
		opt.Arch = a
	}
	bar := newProgress(4, "export")
	opt.Progress = func(stage string, done, total int) {
		if bar != nil && done == 0 {
			bar.bar.ChangeMax(total)
		}
		bar.Set(done, stage)
	}
	res, err := modeldir.Export(files.Path, *out, opt)
	bar.Finish()
	if err != nil {
		return err
	}
	printExport(stdout, files.Base(), res)
	return nil
}

// printExport writes export's summary; source names the checkpoint
// file(s) without their directories.
func printExport(w io.Writer, source string, res *modeldir.Result) {
	c := res.Config
	verb := "wrote"
	if res.Replaced {
		verb = "replaced"
	}
	fmt.Fprintf(w, "%s %s from %s\n", verb, res.Dir, source)
	printToolkit(w, res.Toolkit, res.SrcPrefix, res.SrcSuffix, res.Decoding)
	printConfig(w, c)
	printTokenizers(w, res.Dir, res.SrcTokenizer, res.TgtTokenizer)
	sp := res.Special
	fmt.Fprintf(w, "  special  sos=%d eos=%d pad=%d unk=%s\n", sp.SOS, sp.EOS, sp.PAD, idOrUnknown(sp.UNK))
	fmt.Fprintf(w, "  weights  %s\n", attention.DescribeWeights(res.Weights))
	for i, n := range res.Notes {
		label := "         "
		if i == 0 {
			label = "  notes  "
		}
		fmt.Fprintf(w, "%s%s\n", label, n)
	}
	fmt.Fprintf(w, "  files\n")
	for _, f := range res.Files {
		nodes := ""
		if f.Nodes > 0 {
			nodes = fmt.Sprintf("  %d nodes", f.Nodes)
		}
		from := ""
		if f.From != "" {
			from = "  from " + f.From
		}
		fmt.Fprintf(w, "    %-13s %10s%s%s\n", f.Name, humanBytes(f.Bytes), nodes, from)
	}
}

// printTokenizers writes the tokenizer lines of export and inspect; the
// files are read from the model directory dir to describe them.
func printTokenizers(w io.Writer, dir string, src, tgt *subword.Spec) {
	for _, t := range []struct {
		label string
		spec  *subword.Spec
	}{{"src-tok", src}, {"tgt-tok", tgt}} {
		if t.spec == nil {
			continue
		}
		extra := ""
		if t.spec.Kind == subword.KindSubwordNMT {
			// The tokenizer's description names its joiner.
			if t.spec.Pretokenizer != subword.PretokenizeMoses {
				extra += ", text split at spaces"
			}
			if len(t.spec.Glossaries) > 0 {
				extra += fmt.Sprintf(", glossaries %q", t.spec.Glossaries)
			}
		}
		what := t.spec.Kind
		if tok, err := subword.Open(*t.spec, dir, nil); err != nil {
			what += " (unreadable: " + err.Error() + ")"
		} else {
			what = subword.Describe(tok)
		}
		if t.spec.File != "" {
			what = t.spec.File + ": " + what
		}
		if c := t.spec.OpenNMT; c != nil && c.SubwordModel != "" {
			what = c.SubwordModel + ": " + what
			if c.Vocabulary != "" {
				extra += fmt.Sprintf(", pieces kept to %s (counted %d or more)", c.Vocabulary, c.VocabularyThreshold)
			}
		}
		fmt.Fprintf(w, "  %-8s %s%s\n", t.label, what, extra)
	}
}

// printConfig writes a model configuration's arch, cell and sizes lines,
// as export and inspect show them.
func printConfig(w io.Writer, c attention.Config) {
	c = c.WithDefaults()
	fmt.Fprintf(w, "  arch     %s\n", c.Arch)
	fmt.Fprintf(w, "  cell     %s\n", c.Cell)
	maxLen := ""
	if c.MaxLength > 0 {
		maxLen = fmt.Sprintf(" M=%d (max_length: longer sources cannot run)", c.MaxLength)
	}
	fmt.Fprintf(w, "  sizes    H=%d E=%d L=%d Vs=%d Vt=%d%s\n", c.Hidden, c.Embedding, c.Layers, c.SrcVocab, c.TgtVocab, maxLen)
	if c.Arch.IsToolkit() {
		enc := "unidirectional"
		if c.Bidirectional {
			merge := "outputs concatenated"
			if c.SumsDirections() {
				merge = "outputs summed"
			}
			enc = "bidirectional, " + merge
		}
		fmt.Fprintf(w, "  encoder  %s %s, h=%d per direction, %s, E=%d (outputs %d wide)\n", strings.ToUpper(string(c.Cell)), enc, c.EncHidden(), layers(c.EncLayers()), c.Embedding, c.EncoderWidth())
		init := map[string]string{
			"": "the encoder's final states", "relu-linear": "relu(Linear) bridge of the final states",
			"bridge": "tanh(Linear) bridge of the top layer's final state", "last": "the top layer's final state", "zero": "zeros",
		}[c.Bridge]
		switch {
		case c.Arch == attention.Bentrevett:
			init = "tanh(fc) of the final forward and backward states"
		case c.SumsDirections():
			init = fmt.Sprintf("encoder_hidden[:%d] (the tutorial's first entries)", c.Layers)
		case c.Bidirectional && strings.HasPrefix(string(c.Arch), "onmt-"):
			init += ", directions concatenated per layer"
		case strings.HasPrefix(string(c.Arch), "fairseq-"):
			if c.Bidirectional {
				init += ", directions concatenated per layer"
			}
			if c.EncoderWidth() != c.Hidden {
				init += fmt.Sprintf(", through encoder_hidden_proj/encoder_cell_proj (%d to %d)", c.EncoderWidth(), c.Hidden)
			}
		}
		if c.Arch == attention.FairseqLSTMNoAttention {
			init += "; no attention (the attention output is zeros)"
		}
		if c.OutEmbedding > 0 {
			init += fmt.Sprintf("; additional_fc to %d features", c.OutEmbedding)
		}
		if c.TiedOutput {
			init += "; classifier tied to the target embedding"
		}
		feed := "no input feeding"
		if c.InputFeed {
			feed = "input feeding"
		}
		fmt.Fprintf(w, "  decoder  %s %s, H=%d, Et=%d, %s; initial state: %s\n", strings.ToUpper(string(c.Cell)), layers(c.Layers), c.Hidden, c.TgtEmbeddingSize(), feed, init)
		var states []string
		for _, s := range c.States() {
			states = append(states, s.String())
		}
		fmt.Fprintf(w, "  states   %s\n", strings.Join(states, ", "))
		if c.ScaleSrcEmbedding || c.ScaleTgtEmbedding {
			fmt.Fprintf(w, "  scale    embeddings times sqrt(size): source %v, target %v\n", c.ScaleSrcEmbedding, c.ScaleTgtEmbedding)
		}
	}
}

func layers(n int) string {
	if n == 1 {
		return "1 layer"
	}
	return fmt.Sprintf("%d layers", n)
}

// printToolkit writes where a toolkit's model came from and how its
// sources are wrapped and its decoding is ruled.
func printToolkit(w io.Writer, t *modeldir.Toolkit, prefix, suffix []int64, rules *attention.Rules) {
	if t == nil {
		return
	}
	v := ""
	if t.Version != "" {
		v = " " + t.Version
	}
	fmt.Fprintf(w, "  toolkit  %s%s: %s\n", t.Name, v, t.Format)
	if len(prefix) > 0 || len(suffix) > 0 {
		fmt.Fprintf(w, "  source   text is wrapped as %v + tokens + %v (token ids given with --ids are not)\n", prefix, suffix)
	}
	if rules != nil {
		fmt.Fprintf(w, "  decoding %s\n", rules.Origin)
	}
}

// archNames lists the architectures for flag help, comma-separated.
func archNames() string {
	names := make([]string, len(attention.AllArchs))
	for i, a := range attention.AllArchs {
		names[i] = string(a)
	}
	return strings.Join(names, ", ")
}

func idOrUnknown(id int64) string {
	if id < 0 {
		return "unknown"
	}
	return strconv.FormatInt(id, 10)
}

// humanBytes formats a size as 812 B, 12.3 KiB, 4.0 MiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, suffix := float64(n)/unit, "KiB"
	for _, s := range []string{"MiB", "GiB", "TiB"} {
		if f < unit {
			break
		}
		f, suffix = f/unit, s
	}
	return fmt.Sprintf("%.1f %s", f, suffix)
}

// onmtTokenizers makes both sides' tokenizers the OpenNMT Tokenizer of
// kwargs, with the tokenizer files as their subword models.
func onmtTokenizers(opt *modeldir.Options, kwargs, src, tgt string, otherFlags bool) error {
	if otherFlags {
		return &usageError{"--onmttok takes its options from KWARGS: --moses, --bpe-separator and --bpe-glossary are subword-nmt's and JoeyNMT's"}
	}
	kw, err := onmttok.ParseKwargs(kwargs)
	if err != nil {
		return &usageError{"--onmttok: " + err.Error()}
	}
	o, err := onmttok.FromKwargs(kw)
	if err == nil {
		err = o.Check()
	}
	if err != nil {
		return &usageError{"--onmttok: " + err.Error()}
	}
	for _, side := range []struct {
		path, flag string
		dst        **subword.Spec
	}{{src, "--src-tokenizer", &opt.SrcTokenizer}, {tgt, "--tgt-tokenizer", &opt.TgtTokenizer}} {
		c := onmttok.Config{Options: o, SubwordType: onmttok.SubwordNone}
		if side.path != "" {
			spec, err := subword.Detect(side.path)
			if err != nil {
				return fmt.Errorf("%s: %w", side.flag, err)
			}
			c.SubwordType, c.SubwordModel = onmttok.SubwordBPE, side.path
			if spec.Kind == subword.KindSentencePiece {
				c.SubwordType = onmttok.SubwordSentencePiece
			}
		}
		*side.dst = &subword.Spec{Kind: subword.KindOpenNMT, OpenNMT: &c}
	}
	return nil
}
