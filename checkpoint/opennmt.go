package checkpoint

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"
)

// OpenNMT is what an OpenNMT-py checkpoint holds beside the weights
// (onmt/models/model_saver.py): the options the model was built with and
// the vocabularies.
type OpenNMT struct {
	// Version is 3 for OpenNMT-py 3.x, 2 for 2.x (torchtext vocabularies,
	// generator keys 0.weight and 0.bias).
	Version int
	// Opt holds the argparse.Namespace's attributes as plain values.
	Opt map[string]any
	// SrcVocab and TgtVocab are the vocabularies, index = id.
	SrcVocab, TgtVocab []string
	// DecoderStart is the token decoding starts with (v3's vocab
	// decoder_start_token; "<s>" for v2).
	DecoderStart string
	// WeightsFile is the safetensors file the weights came from when the
	// .pt did not hold them (v3's safetensors saving); "" otherwise.
	WeightsFile string
}

// ReadOpenNMT reads an OpenNMT-py checkpoint's options and vocabularies
// from sd (read from path), and finishes its tensors: v2's generator keys
// are renamed generator.weight and generator.bias, and a v3 .pt saved
// without weights gets them from the safetensors file beside it
// (<base>_step_N.safetensors as its trainer names it, or <base>.*.safetensors
// as its loader looks for shards).
func ReadOpenNMT(sd *StateDict, path string) (*OpenNMT, error) {
	if sd.Origin == nil || sd.Origin.Toolkit != ToolkitOpenNMT {
		return nil, fmt.Errorf("%s: not an OpenNMT-py checkpoint (no model, generator, vocab and opt entries)", path)
	}
	o := &OpenNMT{Version: 3, DecoderStart: "<s>"}
	opt, ok := sd.Origin.Entries["opt"].(*Object)
	if !ok || opt.Attrs == nil {
		return nil, fmt.Errorf("%s: the checkpoint's opt entry is %s, not the argparse.Namespace OpenNMT-py saves", path, describePlain(sd.Origin.Entries["opt"]))
	}
	o.Opt = opt.Attrs
	vocab, ok := sd.Origin.Entries["vocab"].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s: the checkpoint's vocab entry is %s, not a dict of the source and target vocabularies", path, describePlain(sd.Origin.Entries["vocab"]))
	}
	var err error
	if _, isList := vocab["src"].([]any); isList {
		o.SrcVocab, err = tokenList(vocab["src"], "vocab['src']")
		if err == nil {
			o.TgtVocab, err = tokenList(vocab["tgt"], "vocab['tgt']")
		}
		if s, ok := vocab["decoder_start_token"].(string); ok && s != "" {
			o.DecoderStart = s
		}
	} else {
		o.Version = 2
		o.SrcVocab, err = torchtextItos(vocab["src"], "vocab['src']")
		if err == nil {
			o.TgtVocab, err = torchtextItos(vocab["tgt"], "vocab['tgt']")
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if _, v3 := o.Opt["enc_hid_size"]; !v3 {
		if _, v2 := o.Opt["rnn_size"]; v2 {
			o.Version = 2
		}
	}
	// v2 saved the generator as a Sequential: 0.weight, 0.bias.
	for _, p := range []string{"weight", "bias"} {
		if t, ok := sd.Tensors["generator.0."+p]; ok {
			if _, dup := sd.Tensors["generator."+p]; dup {
				return nil, fmt.Errorf("%s: the generator has both 0.%s and %s", path, p, p)
			}
			delete(sd.Tensors, "generator.0."+p)
			c := *t
			c.Name = "generator." + p
			sd.Tensors["generator."+p] = &c
			for i, k := range sd.Keys {
				if k == "generator.0."+p {
					sd.Keys[i] = "generator." + p
				}
			}
			o.Version = 2
		}
	}
	if len(sd.Tensors) == 0 {
		if err := o.readSafetensors(sd, path); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// readSafetensors loads the weights of a v3 checkpoint saved with
// safetensors: one file beside the .pt.
func (o *OpenNMT) readSafetensors(sd *StateDict, path string) error {
	base := strings.TrimSuffix(path, filepath.Ext(path))
	var found []string
	for _, pattern := range []string{base + "_step_*.safetensors", base + ".*.safetensors", base + ".safetensors"} {
		m, _ := filepath.Glob(pattern)
		found = append(found, m...)
	}
	sort.Strings(found)
	found = uniqueStrings(found)
	switch len(found) {
	case 0:
		return fmt.Errorf("%s holds OpenNMT-py's options and vocabulary but no weights: they are in a safetensors file beside it (%s_step_N.safetensors or %s.*.safetensors), and there is none", path, filepath.Base(base), filepath.Base(base))
	case 1:
	default:
		return fmt.Errorf("%s holds no weights, and several safetensors files beside it could hold them (%s): keep the one of this checkpoint", path, strings.Join(found, ", "))
	}
	w, err := LoadSafetensors(found[0])
	if err != nil {
		return err
	}
	sd.Keys, sd.Tensors = w.Keys, w.Tensors
	sd.Format += "+" + FormatSafetensors
	sd.Notes = append(sd.Notes, fmt.Sprintf("weights read from %s, beside the checkpoint", filepath.Base(found[0])))
	o.WeightsFile = found[0]
	return nil
}

func uniqueStrings(s []string) []string {
	var out []string
	for i, x := range s {
		if i == 0 || x != s[i-1] {
			out = append(out, x)
		}
	}
	return out
}

// tokenList checks a plain list of token strings.
func tokenList(v any, what string) ([]string, error) {
	l, ok := v.([]any)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a list of tokens", what, describePlain(v))
	}
	out := make([]string, len(l))
	for i, x := range l {
		s, ok := x.(string)
		if !ok {
			return nil, fmt.Errorf("%s[%d] is %s, not a token", what, i, describePlain(x))
		}
		out[i] = s
	}
	return out, nil
}

// torchtextItos finds the itos list of an OpenNMT-py 2 vocabulary: a
// TextMultiField whose fields hold (name, Field) pairs, a Field's vocab a
// torchtext Vocab with itos. Nothing of torchtext runs: these are the
// objects' recorded states.
func torchtextItos(v any, what string) ([]string, error) {
	o, ok := v.(*Object)
	if !ok {
		return nil, fmt.Errorf("%s is %s, not a torchtext field", what, describePlain(v))
	}
	if fields, ok := o.Attr("fields"); ok {
		l, ok := fields.([]any)
		if !ok || len(l) == 0 {
			return nil, fmt.Errorf("%s (%s): fields is %s, want a list of (name, Field) pairs", what, o.Class, describePlain(fields))
		}
		pair, ok := l[0].([]any)
		if !ok || len(pair) != 2 {
			return nil, fmt.Errorf("%s (%s): fields[0] is %s, want a (name, Field) pair", what, o.Class, describePlain(l[0]))
		}
		return torchtextItos(pair[1], what+".fields[0]")
	}
	if voc, ok := o.Attr("vocab"); ok {
		vo, ok := voc.(*Object)
		if !ok {
			return nil, fmt.Errorf("%s (%s): vocab is %s, want a torchtext Vocab", what, o.Class, describePlain(voc))
		}
		return torchtextItos(vo, what+".vocab")
	}
	if itos, ok := o.Attr("itos"); ok {
		return tokenList(itos, what+".itos")
	}
	return nil, fmt.Errorf("%s (%s) has no fields, vocab or itos: not an OpenNMT-py 2 vocabulary", what, o.Class)
}

// describePlain names a plain value's kind, for messages.
func describePlain(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case string:
		return "a string"
	case int64:
		return "an int"
	case float64:
		return "a float"
	case bool:
		return "a bool"
	case []any:
		return "a list"
	case map[string]any:
		return "a dict"
	case *Object:
		return "an object of class " + x.Class
	}
	return fmt.Sprintf("%T", v)
}
