package modeldir

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/subword"
)

// toolkitModel is a toolkit's checkpoint read and converted, with what its
// files say beyond the weights: vocabularies, special tokens, how a
// source sentence is wrapped and the toolkit's decoding rules.
type toolkitModel struct {
	w        *attention.Weights
	notes    []string
	toolkit  Toolkit
	src, tgt []string
	special  attention.Special
	prefix   []int64
	suffix   []int64
	rules    *attention.Rules
	// defaults are the toolkit's translate command's decoding defaults.
	defaults *Defaults
	// tokenizers are the subword tokenizers the toolkit's configuration
	// names, source and target.
	tokenizers [2]*checkpoint.TokenizerRef
}

// ConfigMetadata is the safetensors metadata entry in which attnx writes
// a toolkit model's configuration (attnx.json's model fields as JSON)
// beside its weights under the toolkit's own names: what attnx verify
// hands the PyTorch reference, and a file attnx export reads back.
const ConfigMetadata = "attnx.config"

// metadataConfig is the toolkit configuration a safetensors file carries
// in ConfigMetadata; ok is false when it carries none.
func metadataConfig(sd *checkpoint.StateDict) (cfg attention.Config, ok bool, err error) {
	js, has := sd.Metadata[ConfigMetadata]
	if !has {
		return cfg, false, nil
	}
	if err := json.Unmarshal([]byte(js), &cfg); err != nil {
		return cfg, true, fmt.Errorf("safetensors metadata %s: %w", ConfigMetadata, err)
	}
	if !cfg.Arch.IsToolkit() {
		return cfg, true, fmt.Errorf("safetensors metadata %s: arch %q is not a toolkit architecture", ConfigMetadata, cfg.Arch)
	}
	return cfg, true, nil
}

// isToolkit reports whether a state dict is a toolkit's checkpoint: one
// the reader recognised by its entries (OpenNMT-py, JoeyNMT, chatbot), a
// safetensors file with its configuration in ConfigMetadata, or a
// bentrevett tutorial state_dict by its keys.
func isToolkit(sd *checkpoint.StateDict) bool {
	_, meta, _ := metadataConfig(sd)
	shapes := shapesOf(sd)
	return sd.Origin != nil || meta || attention.IsBentrevett(shapes) || attention.IsOpenNMT(shapes) || attention.IsJoeyNMT(shapes)
}

func shapesOf(sd *checkpoint.StateDict) map[string][]int64 {
	shapes := make(map[string][]int64, len(sd.Tensors))
	for k, t := range sd.Tensors {
		shapes[k] = t.Dims
	}
	return shapes
}

// readToolkit converts a toolkit's checkpoint. With cfg set (attnx verify,
// which has attnx.json) the model's configuration is cfg and the
// toolkit's own options are not read again.
func readToolkit(sd *checkpoint.StateDict, files checkpoint.Files, ro ReadOptions, cfg *attention.Config, aopt attention.Options) (*toolkitModel, error) {
	path, toolkitConfig := files.Path, ro.ToolkitConfig
	convert := func(read func() (attention.Config, error)) (*attention.Weights, []string, error) {
		c := attention.Config{}
		if cfg != nil {
			c = *cfg
		} else {
			var err error
			if c, err = read(); err != nil {
				return nil, nil, err
			}
		}
		return attention.FromToolkit(c, sd.Tensors, aopt)
	}
	tm := &toolkitModel{special: attention.Special{SOS: -1, EOS: -1, PAD: -1, UNK: -1}}
	var err error
	if mc, ok, err := metadataConfig(sd); ok {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if cfg == nil {
			cfg = &mc
		}
		if tm.w, tm.notes, err = convert(nil); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tm.toolkit = Toolkit{Name: cfg.Arch.Toolkit(), Format: "safetensors with the configuration in its " + ConfigMetadata + " metadata"}
		return tm, nil
	}
	switch {
	case sd.Origin != nil && sd.Origin.Toolkit == checkpoint.ToolkitOpenNMT:
		o, err := checkpoint.ReadOpenNMT(sd, path)
		if err != nil {
			return nil, err
		}
		if tm.w, tm.notes, err = convert(func() (attention.Config, error) {
			return attention.OpenNMTConfig(attention.OpenNMTOptions{Opt: o.Opt, Version: o.Version, TgtPad: int(index(o.TgtVocab, "<blank>"))}, shapesOf(sd))
		}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		format := "OpenNMT-py .pt (model, generator, vocab, opt)"
		if o.WeightsFile != "" {
			format = "OpenNMT-py .pt (vocab, opt) with " + filepath.Base(o.WeightsFile)
		}
		tm.toolkit = Toolkit{Name: "OpenNMT-py", Version: strconv.Itoa(o.Version) + ".x", Format: format}
		// onmt_translate's defaults and its beam search, so that attnx
		// translate with no decoding flags decodes as onmt_translate of
		// the checkpoint's release does with none.
		if o.Version == 3 {
			tm.defaults = OpenNMTTranslate()
			tm.notes = append(tm.notes, "decoding defaults (attnx.json \"defaults\"): onmt_translate 3.x's, beam 5 with OpenNMT-py's beam search, -length_penalty avg, at most min(250, 1.25 x the batch's longest source + 5) tokens over its batches of 30 sentences; attnx translate's flags override them")
		} else {
			tm.defaults = OpenNMT2Translate()
			tm.notes = append(tm.notes, "decoding defaults (attnx.json \"defaults\"): onmt_translate 2.x's, beam 5 with its beam search (a sentence ends once its best hypothesis has finished and 5 have), -length_penalty none, at most 100 tokens; attnx translate's flags override them")
		}
		tm.src, tm.tgt = o.SrcVocab, o.TgtVocab
		tm.special = attention.Special{SOS: index(o.TgtVocab, o.DecoderStart), EOS: index(o.TgtVocab, "</s>"), PAD: index(o.TgtVocab, "<blank>"), UNK: index(o.SrcVocab, "<unk>")}
		tm.notes = append(tm.notes, "OpenNMT-py sources have no <s> or </s>: text is translated as its tokens alone")
		var tokNotes []string
		tm.tokenizers, tokNotes = o.Tokenizers(path)
		tm.notes = append(tm.notes, tokNotes...)
		if c := tm.w.Config; o.Version == 2 && c.Bridge != "" && c.EncLayers()*c.Directions() > 1 {
			tm.notes = append(tm.notes, attention.OpenNMTV2BridgeNote)
		}
	case sd.Origin != nil && sd.Origin.Toolkit == checkpoint.ToolkitChatbot:
		c, err := checkpoint.ReadChatbot(sd, path)
		if err != nil {
			return nil, err
		}
		// The checkpoint's keys and shapes say everything about the model.
		if tm.w, tm.notes, err = attention.ChatbotModel(sd.Tensors, aopt); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tm.toolkit = Toolkit{Name: "PyTorch chatbot tutorial", Format: fmt.Sprintf("checkpoint dict (en, de, embedding, voc_dict) of iteration %d", c.Iteration)}
		tm.src, tm.tgt = c.Vocab, c.Vocab
		tm.special = attention.Special{SOS: c.SOS, EOS: c.EOS, PAD: c.PAD, UNK: -1}
		tm.suffix = []int64{c.EOS}
		// The tutorial's evaluate() normalises what the user types before
		// looking the words up.
		tm.tokenizers[0] = &checkpoint.TokenizerRef{Kind: subword.KindChatbot, Option: "the tutorial's evaluate (normalizeString)"}
	case sd.Origin != nil && sd.Origin.Toolkit == checkpoint.ToolkitJoeyNMT:
		if toolkitConfig == "" {
			toolkitConfig = filepath.Join(filepath.Dir(path), "config.yaml")
		}
		if cfg != nil {
			if tm.w, tm.notes, err = convert(nil); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			return tm, nil
		}
		j, err := checkpoint.ReadJoeyNMT(toolkitConfig)
		if err != nil {
			return nil, fmt.Errorf("%s is a JoeyNMT checkpoint: its architecture and vocabularies are in the model directory's config.yaml (pass --config FILE): %w", path, err)
		}
		m := j.Model
		if tm.w, tm.notes, err = convert(func() (attention.Config, error) {
			return attention.JoeyConfig(attention.JoeyOptions{
				EncoderType: m.Encoder.Type, DecoderType: m.Decoder.Type,
				EncoderRNNType: m.Encoder.RNNType, DecoderRNNType: m.Decoder.RNNType,
				Bidirectional: m.Encoder.Bidirectional, Attention: m.Decoder.Attention,
				InputFeeding: m.Decoder.InputFeeding, InitHidden: m.Decoder.InitHidden, Activation: m.Decoder.Activation,
				ScaleSrc: m.Encoder.Embeddings.Scale, ScaleTgt: m.Decoder.Embeddings.Scale,
				EncoderHidden: m.Encoder.HiddenSize, DecoderHidden: m.Decoder.HiddenSize,
				EncoderLayers: m.Encoder.NumLayers, DecoderLayers: m.Decoder.NumLayers,
			}, shapesOf(sd))
		}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		version := j.Version
		if version == "" {
			version = "1.x"
		}
		tm.toolkit = Toolkit{Name: "JoeyNMT", Version: version, Format: "checkpoint (model_state) with " + filepath.Base(toolkitConfig) + ", " + filepath.Base(j.VocabFiles[0]) + ", " + filepath.Base(j.VocabFiles[1])}
		tm.src, tm.tgt = j.SrcVocab, j.TrgVocab
		tm.tokenizers = j.Tokenizers
		sp := j.Specials
		tm.special = attention.Special{SOS: index(j.TrgVocab, sp.BOS), EOS: index(j.TrgVocab, sp.EOS), PAD: index(j.TrgVocab, sp.PAD), UNK: index(j.SrcVocab, sp.UNK)}
		if eos := index(j.SrcVocab, sp.EOS); eos >= 0 {
			tm.suffix = []int64{eos}
		}
		tm.rules = joeyRules(j.Version, tm.special, j.Testing, index(j.TrgVocab, sp.UNK))
		if tm.rules != nil {
			tm.notes = append(tm.notes, "decoding as "+tm.rules.Origin)
		}
		if strings.HasPrefix(j.Version, "2.") {
			tm.defaults = joeyDefaults(j.Testing)
			tm.notes = append(tm.notes, fmt.Sprintf("decoding defaults (attnx.json \"defaults\"): joeynmt translate's from the config's testing section, beam %d, output limit %s; attnx translate's flags override them",
				max(tm.defaults.Beam, 1), joeyLimitText(tm.defaults)))
		}
	case sd.Origin == nil && attention.IsOpenNMT(shapesOf(sd)):
		// OpenNMT-py's model state_dict alone (model.state_dict(), or the
		// model and generator entries re-saved): the keys say everything
		// opt would, but not the vocabularies.
		if tm.w, tm.notes, err = convert(func() (attention.Config, error) {
			return attention.OpenNMTConfig(attention.OpenNMTOptionsFromKeys(shapesOf(sd)), shapesOf(sd))
		}); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		tm.toolkit = Toolkit{Name: "OpenNMT-py", Format: "state_dict without opt and vocab (architecture from the keys)"}
		tm.special = attention.Special{SOS: 2, EOS: 3, PAD: 1, UNK: 0}
		tm.notes = append(tm.notes, "an OpenNMT-py model's state_dict without its checkpoint dict: the architecture comes from the keys, the special tokens are OpenNMT-py's <unk> 0, <blank> 1, <s> 2, </s> 3 (pass --src-vocab/--tgt-vocab and --sos/--eos/--pad/--unk if yours differ); the checkpoint OpenNMT-py saved (with opt and vocab) needs no flags")
	case sd.Origin == nil && attention.IsJoeyNMT(shapesOf(sd)):
		return nil, fmt.Errorf("%s holds a JoeyNMT model's weights without the checkpoint dict JoeyNMT saves (model_state): export the model directory's best.ckpt (or <step>.ckpt), with its config.yaml beside it or named by --config", path)
	case attention.IsBentrevett(shapesOf(sd)):
		if tm.w, tm.notes, err = attention.BentrevettModel(sd.Tensors, aopt); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		era := "2020"
		if len(tm.notes) > 0 {
			if _, rest, ok := strings.Cut(tm.notes[0], "model, "); ok {
				era, _, _ = strings.Cut(rest, " key names")
			}
		}
		tm.toolkit = Toolkit{Name: "bentrevett/pytorch-seq2seq", Version: "tutorial 3/4, " + era + " key names", Format: "state_dict"}
		// torchtext's order, which the tutorial's vocabularies have:
		// <unk> 0, <pad> 1, <sos> 2, <eos> 3 on both sides.
		tm.special = attention.Special{SOS: 2, EOS: 3, PAD: 1, UNK: 0}
	case sd.Origin != nil && sd.Origin.Toolkit == checkpoint.ToolkitFairseq:
		if err := fairseqModel(tm, sd, path, ro.Fairseq, convert); err != nil {
			return nil, err
		}
	case sd.Origin != nil && sd.Origin.Toolkit == checkpoint.ToolkitGNMT:
		return nil, gnmtExportError(sd, path)
	default:
		return nil, fmt.Errorf("%s: not a toolkit checkpoint", path)
	}
	return tm, nil
}

// joeyRules are the decoding rules of the JoeyNMT version that wrote a
// config (its joeynmt_version): 2.3 never chooses <s> or <pad> (search.py
// sets their scores to -inf in greedy and beam search alike), nor the
// target's <unk> (tgtUNK) when the testing section says generate_unk:
// false; no version 2 ends at the first step (min_output_length 1); 1.x
// searches by plain argmax.
func joeyRules(version string, sp attention.Special, testing checkpoint.JoeyTesting, tgtUNK int64) *attention.Rules {
	major, minor := 0, 0
	parts := strings.SplitN(version, ".", 3)
	if len(parts) >= 1 {
		major, _ = strconv.Atoi(parts[0])
	}
	if len(parts) >= 2 {
		minor, _ = strconv.Atoi(parts[1])
	}
	switch {
	case major >= 3 || (major == 2 && minor >= 3):
		r := &attention.Rules{Greedy: []int64{sp.SOS, sp.PAD}, Beam: []int64{sp.SOS, sp.PAD}, EOSFromStep: 1,
			Origin: "JoeyNMT " + version + ": no <s> or <pad> in the output, and </s> not at the first step"}
		if g := testing.GenerateUnk; g != nil && !*g && tgtUNK >= 0 {
			r.Greedy, r.Beam = append(r.Greedy, tgtUNK), append(r.Beam, tgtUNK)
			r.Origin += "; no <unk> either (testing.generate_unk: false)"
		}
		return r
	case major == 2:
		return &attention.Rules{EOSFromStep: 1, Origin: "JoeyNMT " + version + ": </s> not at the first step"}
	}
	return nil
}

// joeyDefaults are joeynmt translate's decoding settings, from config.yaml's
// testing section with JoeyNMT 2.3's defaults (its config.py):
// beam_size 1, beam_alpha -1 (no length penalty; above 0 Wu's
// ((5 + len) / 6) ** alpha, which attnx's wu form computes), n_best 1,
// max_output_length -1 (1.5 times the source's tokens, </s> included),
// and no_repeat_ngram_size and repetition_penalty when set, with its own
// beam search (rules "joeynmt": decode.JoeyBeam). Its
// min_output_length is left out: 2.x's predict logs it but never passes
// it to the search, which keeps its default 1 (joeyRules).
func joeyDefaults(t checkpoint.JoeyTesting) *Defaults {
	get := func(p *int, def int) int {
		if p != nil {
			return *p
		}
		return def
	}
	d := &Defaults{Beam: get(t.BeamSize, 1), NBest: get(t.NBest, 1), Rules: "joeynmt"}
	if d.Beam <= 1 {
		d.Beam, d.NBest = 0, 0
	}
	if d.NBest <= 1 {
		d.NBest = 0
	}
	alpha := -1.0
	if t.Alpha != nil {
		alpha = *t.Alpha
	}
	if t.BeamAlpha != nil {
		alpha = *t.BeamAlpha
	}
	if alpha > 0 {
		d.LengthPenalty, d.LengthPenaltyForm = &alpha, "wu"
	} else {
		zero := 0.0
		d.LengthPenalty = &zero // raw scores
	}
	if n := get(t.NoRepeatNgram, -1); n > 1 {
		d.NoRepeatNgram = n
	}
	if p := t.RepetitionPen; p != nil && *p > 1 {
		d.RepetitionPenalty = *p
	}
	if m := get(t.MaxOutputLength, -1); m > 0 {
		d.MaxLen = m
	} else {
		// int(max(batch.src_length) * 1.5), over the batches of the
		// testing section's batch_size (64) and batch_type (sentence), in
		// file order.
		d.MaxLenFactor = 1.5
		d.Batching = &Batching{Style: BatchingJoeyNMT, Size: get(t.BatchSize, 64), Tokens: strings.EqualFold(t.BatchType, "token")}
	}
	return d
}

func joeyLimitText(d *Defaults) string {
	if d.MaxLen > 0 {
		return strconv.Itoa(d.MaxLen)
	}
	return "1.5 x the longest source of its batch, </s> included"
}

// toolkitInfo fills in attnx.json for a toolkit's model: the
// vocabularies, special tokens, source wrapping and decoding rules its
// files give, each special token overridable with its flag.
func toolkitInfo(info *Info, opt Options, tm *toolkitModel) (*Info, []string, error) {
	cfg := info.Config
	info.Toolkit = &tm.toolkit
	info.SrcPrefix, info.SrcSuffix, info.Decoding, info.Defaults = tm.prefix, tm.suffix, tm.rules, tm.defaults
	var notes []string
	for _, v := range []struct {
		toks []string
		n    int
		side string
		dst  *[]string
	}{{tm.src, cfg.SrcVocab, "source", &info.SrcTokens}, {tm.tgt, cfg.TgtVocab, "target", &info.TgtTokens}} {
		if v.toks == nil {
			continue
		}
		if len(v.toks) != v.n {
			return nil, nil, fmt.Errorf("%s: the %s vocabulary has %d tokens, but the model's %s embedding has %d rows", tm.toolkit.Name, v.side, len(v.toks), v.side, v.n)
		}
		*v.dst = v.toks
	}
	var err error
	for _, f := range []struct {
		flag, side string
		dst        *[]string
		n          int
	}{{opt.SrcVocab, "source", &info.SrcTokens, cfg.SrcVocab}, {opt.TgtVocab, "target", &info.TgtTokens, cfg.TgtVocab}} {
		if f.flag == "" {
			continue
		}
		name := "--src-vocab"
		if f.side == "target" {
			name = "--tgt-vocab"
		}
		if *f.dst, err = ReadVocab(f.flag, name, f.side, f.n); err != nil {
			return nil, nil, err
		}
		notes = append(notes, fmt.Sprintf("%s %s replaces the vocabulary of the %s files", name, f.flag, tm.toolkit.Name))
	}
	sp := tm.special
	for _, o := range []struct {
		dst  *int64
		flag *int64
		name string
	}{{&sp.SOS, opt.SOS, "sos"}, {&sp.EOS, opt.EOS, "eos"}, {&sp.PAD, opt.PAD, "pad"}, {&sp.UNK, opt.UNK, "unk"}} {
		if o.flag != nil {
			*o.dst = *o.flag
		} else if *o.dst < 0 && o.name != "unk" {
			return nil, nil, fmt.Errorf("%s: its vocabulary has no %s token; pass --%s N", tm.toolkit.Name, strings.ToUpper(o.name), o.name)
		}
	}
	info.Special = sp
	if tm.toolkit.Name == "bentrevett/pytorch-seq2seq" {
		// The tutorial wraps every source in <sos> ... <eos>; its
		// torchtext vocabularies put them at the same ids on both sides.
		info.SrcPrefix, info.SrcSuffix = []int64{sp.SOS}, []int64{sp.EOS}
		if opt.SOS == nil && opt.EOS == nil && opt.PAD == nil && opt.UNK == nil {
			notes = append(notes, "special tokens <unk> 0, <pad> 1, <sos> 2, <eos> 3: torchtext's order, which the tutorial's vocabularies have (pass --sos/--eos/--pad/--unk if yours differ); sources are wrapped in <sos> ... <eos>")
		}
	}
	if err := sp.Check(cfg); err != nil {
		return nil, nil, err
	}
	return info, notes, nil
}

// fairseqModel reads a fairseq checkpoint (checkpoint.ReadFairseq) into
// tm: an LSTMModel's weights, its dictionaries, and fairseq-interactive's
// way of decoding: every source ends with </s>, the decoder starts from
// </s>, <pad> is never chosen and </s> not at the first step (--min-len
// 1), and its defaults (decoding defaults "fairseq").
func fairseqModel(tm *toolkitModel, sd *checkpoint.StateDict, path string, files checkpoint.FairseqFiles, convert func(func() (attention.Config, error)) (*attention.Weights, []string, error)) error {
	rows := func(k string) int {
		if t := sd.Tensors[k]; t != nil && len(t.Dims) == 2 {
			return int(t.Dims[0])
		}
		return 0
	}
	f, err := checkpoint.ReadFairseq(sd.Origin, path, files, rows("encoder.embed_tokens.weight"), rows("decoder.embed_tokens.weight"))
	if err != nil {
		return err
	}
	var cfgNotes []string
	if tm.w, tm.notes, err = convert(func() (attention.Config, error) {
		c, notes, err := attention.FairseqConfig(attention.FairseqOptions{Args: f.Args}, shapesOf(sd))
		cfgNotes = notes
		return c, err
	}); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	tm.notes = append(append(tm.notes, cfgNotes...), f.Notes...)
	arch := checkpoint.FairseqArch(sd.Origin)
	tm.toolkit = Toolkit{Name: "fairseq", Format: fmt.Sprintf("checkpoint (--arch %s) with %s and %s", arch, filepath.Base(f.DictFiles[0]), filepath.Base(f.DictFiles[1]))}
	tm.src, tm.tgt = f.SrcDict, f.TgtDict
	eos, pad := index(f.TgtDict, "</s>"), index(f.TgtDict, "<pad>")
	tm.special = attention.Special{SOS: eos, EOS: eos, PAD: pad, UNK: index(f.SrcDict, "<unk>")}
	tm.suffix = []int64{index(f.SrcDict, "</s>")}
	tm.tokenizers = f.Tokenizers
	tm.rules = &attention.Rules{Greedy: []int64{pad}, Beam: []int64{pad}, EOSFromStep: 1,
		Origin: "fairseq's SequenceGenerator: never <pad>, and </s> not at the first step (--min-len 1)"}
	tm.defaults = FairseqInteractive()
	tm.notes = append(tm.notes, "fairseq sources end with </s> and the decoder starts from </s>, as fairseq's do",
		"decoding defaults (attnx.json \"defaults\"): fairseq-interactive's, beam 5 with fairseq's SequenceGenerator (--lenpen 1), at most 200 tokens before </s> (--max-len-b 200); attnx translate's flags override them")
	return nil
}

// FairseqInteractive are fairseq-interactive's decoding defaults
// (fairseq/dataclass/configs.py GenerationConfig): --beam 5, --nbest 1,
// --lenpen 1, --max-len-a 0, --max-len-b 200 (200 tokens, then </s>),
// --min-len 1, --unkpen 0, with its SequenceGenerator (rules "fairseq").
func FairseqInteractive() *Defaults {
	one := 1.0
	return &Defaults{Beam: 5, Rules: "fairseq", LengthPenalty: &one, MaxLen: 201}
}
