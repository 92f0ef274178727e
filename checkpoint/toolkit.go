package checkpoint

import (
	"fmt"
	"math/big"
	"sort"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
)

// The toolkits whose checkpoint dicts the readers recognise (see
// docs/toolkits.md). Their tensors are read under the names the toolkit's
// model has, and their other entries are kept, as plain values, in
// StateDict.Origin.
const (
	ToolkitOpenNMT = "opennmt-py"
	ToolkitJoeyNMT = "joeynmt"
	ToolkitChatbot = "chatbot"
	// ToolkitFairseq is fairseq's checkpoint_utils.save_state dict.
	ToolkitFairseq = "fairseq"
	// ToolkitGNMT is the Seq2SeqTrainer.save dict of NVIDIA
	// DeepLearningExamples' GNMT and of the MLPerf rnn_translator.
	ToolkitGNMT = "gnmt"
)

// Origin is what a toolkit's checkpoint holds beside its tensors.
type Origin struct {
	// Toolkit is ToolkitOpenNMT, ToolkitJoeyNMT or ToolkitChatbot.
	Toolkit string
	// Entries holds the checkpoint dict's entries that are not tensors, as
	// plain values (see Plain): OpenNMT-py's opt and vocab, the chatbot's
	// voc_dict, JoeyNMT's steps and scores.
	Entries map[string]any
}

// Object is an instance of a Python class as a pickle records it, read
// without running anything: the class's name, the arguments it was made
// with and the state it was given (its __dict__), as plain values.
type Object struct {
	Class string
	Args  []any
	// Attrs is the object's state when it is a dict with string keys;
	// State holds any other state.
	Attrs map[string]any
	State any
	// Items are the items a dict subclass (collections.defaultdict) was
	// given, as Plain turns a dict: map[string]any for string keys, else
	// []any of [2]any pairs; nil when it was given none.
	Items any
}

// Attr returns the attribute name, when the object has it.
func (o *Object) Attr(name string) (any, bool) {
	v, ok := o.Attrs[name]
	return v, ok
}

// toolkitNames are the toolkits' names for people.
var toolkitNames = map[string]string{ToolkitOpenNMT: "OpenNMT-py", ToolkitJoeyNMT: "JoeyNMT", ToolkitChatbot: "chatbot tutorial", ToolkitFairseq: "fairseq", ToolkitGNMT: "GNMT"}

// toolkitSignature says which toolkit a checkpoint dict comes from, by its
// top-level entries, and where its tensors are: entry -> key prefix.
func toolkitSignature(top []types.DictEntry) (string, [][2]string) {
	has := map[string]bool{}
	for _, e := range top {
		if k, ok := e.Key.(string); ok {
			has[k] = true
		}
	}
	switch {
	// OpenNMT-py's ModelSaver: {model, generator, vocab, opt, optim}; with
	// -save_format safetensors (3.x _st_save) {vocab, opt, optim}, the
	// weights in a .safetensors file beside it.
	case has["opt"] && has["vocab"] && (has["model"] || has["generator"] || has["optim"]):
		return ToolkitOpenNMT, [][2]string{{"model", ""}, {"generator", "generator"}}
	case has["en"] && has["de"] && has["voc_dict"]:
		return ToolkitChatbot, [][2]string{{"en", "encoder"}, {"de", "decoder"}, {"embedding", "embedding"}}
	case has["model_state"]:
		return ToolkitJoeyNMT, [][2]string{{"model_state", ""}}
	// fairseq's checkpoint_utils.save_state: {args or cfg, model,
	// optimizer_history, extra_state, last_optimizer_state}.
	case has["model"] && has["optimizer_history"] && (has["cfg"] || has["args"]):
		return ToolkitFairseq, [][2]string{{"model", ""}}
	// GNMT's Seq2SeqTrainer.save: {epoch, state_dict, optimizer,
	// scheduler, loss} and train.py's save_info {model_config, config,
	// tokenizer}.
	case has["state_dict"] && has["model_config"] && has["tokenizer"]:
		return ToolkitGNMT, [][2]string{{"state_dict", ""}}
	}
	return "", nil
}

// selectToolkit reads a toolkit's checkpoint dict: its tensors, under the
// names the toolkit's model gives them, and its other entries as plain
// values. ok is false when top is no toolkit's.
func selectToolkit(top []types.DictEntry) (entries []ptEntry, notes []string, origin *Origin, ok bool, err error) {
	toolkit, parts := toolkitSignature(top)
	if toolkit == "" {
		return nil, nil, nil, false, nil
	}
	origin = &Origin{Toolkit: toolkit, Entries: map[string]any{}}
	c := newCollector()
	tensorEntry := map[string]bool{}
	for _, p := range parts {
		tensorEntry[p[0]] = true
	}
	for _, e := range top {
		k := e.Key.(string)
		if !tensorEntry[k] {
			v, err := Plain(e.Value)
			if err != nil {
				return nil, nil, nil, true, fmt.Errorf("%s checkpoint entry %q: %w", toolkit, k, err)
			}
			origin.Entries[k] = v
		}
	}
	for _, p := range parts {
		for _, e := range top {
			if k := e.Key.(string); k != p[0] || e.Value == nil {
				continue
			}
			if _, err := c.walk(e.Value, p[1], 0); err != nil {
				return nil, nil, nil, true, fmt.Errorf("%s checkpoint entry %q: %w", toolkit, p[0], err)
			}
		}
	}
	var read []string
	for _, p := range parts {
		for _, e := range top {
			if k := e.Key.(string); k == p[0] && e.Value != nil {
				read = append(read, fmt.Sprintf("%q", p[0]))
			}
		}
	}
	what := fmt.Sprintf("tensors read from %s", strings.Join(read, ", "))
	if len(read) == 0 {
		what = "no tensors in the file itself"
	}
	notes = append([]string{fmt.Sprintf("%s checkpoint: %s", toolkitNames[toolkit], what)}, c.notes()...)
	return c.entries, notes, origin, true, nil
}

// Bounds on Plain: the option and vocabulary entries of real checkpoints
// are far smaller.
const (
	maxPlainDepth  = 64
	maxPlainValues = 1 << 24
)

// Plain turns a decoded pickle value into plain Go values: nil, bool,
// int64 (ints beyond 64 bits as *big.Int), float64, string, []byte,
// []any (lists, tuples, sets), map[string]any (dicts with string keys;
// other dicts as []any of [2]any pairs), *Object (class instances) and,
// for a class or function named but not called, its dotted name as a
// string. Tensors become the string "<tensor>".
func Plain(v any) (any, error) {
	n := 0
	return plain(v, 0, &n, map[any]bool{})
}

func plain(v any, depth int, n *int, onPath map[any]bool) (any, error) {
	if depth > maxPlainDepth {
		return nil, fmt.Errorf("nested more than %d levels deep", maxPlainDepth)
	}
	if *n++; *n > maxPlainValues {
		return nil, fmt.Errorf("more than %d values", maxPlainValues)
	}
	switch x := v.(type) {
	case nil, bool, string, float64, []byte:
		return x, nil
	case int:
		return int64(x), nil
	case int64:
		return x, nil
	case *big.Int:
		if x.IsInt64() {
			return x.Int64(), nil
		}
		return x, nil
	case *ptTensor, *unsupportedTensor:
		return "<tensor>", nil
	case *pyClass:
		return x.module + "." + x.name, nil
	case *storageClass:
		return x.name, nil
	}
	// Containers: guard against cycles.
	switch v.(type) {
	case *types.List, *types.Tuple, *types.Dict, *types.OrderedDict, *pyObject, *types.Set, *types.FrozenSet, *pySet:
		if onPath[v] {
			return nil, fmt.Errorf("a value contains itself")
		}
		onPath[v] = true
		defer delete(onPath, v)
	}
	list := func(items []any) ([]any, error) {
		out := make([]any, len(items))
		for i, it := range items {
			p, err := plain(it, depth+1, n, onPath)
			if err != nil {
				return nil, err
			}
			out[i] = p
		}
		return out, nil
	}
	switch x := v.(type) {
	case *types.List:
		return list(*x)
	case *types.Tuple:
		return list(*x)
	case *types.Set:
		var items []any
		for k := range *x {
			items = append(items, k)
		}
		return list(setOrder(items))
	case *types.FrozenSet:
		var items []any
		for k := range *x {
			items = append(items, k)
		}
		return list(setOrder(items))
	case *pySet:
		var items []any
		for k := range x.strs {
			items = append(items, k)
		}
		return list(setOrder(items))
	case *pyObject:
		o := &Object{Class: x.className()}
		var err error
		if o.Args, err = list(x.args); err != nil {
			return nil, err
		}
		st, err := plain(x.state, depth+1, n, onPath)
		if err != nil {
			return nil, err
		}
		if m, ok := st.(map[string]any); ok {
			o.Attrs = m
		} else {
			o.State = st
		}
		if x.items != nil {
			if o.Items, err = plain(x.items, depth+1, n, onPath); err != nil {
				return nil, err
			}
		}
		return o, nil
	}
	if entries, ok := dictEntries(v); ok {
		if stringKeys(entries) {
			out := make(map[string]any, len(entries))
			for _, e := range entries {
				p, err := plain(e.Value, depth+1, n, onPath)
				if err != nil {
					return nil, err
				}
				out[e.Key.(string)] = p
			}
			return out, nil
		}
		out := make([]any, 0, len(entries))
		for _, e := range entries {
			k, err := plain(e.Key, depth+1, n, onPath)
			if err != nil {
				return nil, err
			}
			val, err := plain(e.Value, depth+1, n, onPath)
			if err != nil {
				return nil, err
			}
			out = append(out, [2]any{k, val})
		}
		return out, nil
	}
	return fmt.Sprintf("<%s>", describe(v)), nil
}

// setOrder sorts a set's items (by their printed form), so that a set,
// which has no order in Python and is a map here, reads the same each
// time: OpenNMT-py's opt holds sets (_all_transform).
func setOrder(items []any) []any {
	sort.SliceStable(items, func(i, j int) bool { return fmt.Sprint(items[i]) < fmt.Sprint(items[j]) })
	return items
}
