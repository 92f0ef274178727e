package checkpoint

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nlpodyssey/gopickle/types"
)

// WeightEntries are the top-level entries under which training scripts and
// frameworks store a model's weights beside epoch, loss, optimizer state
// and hyper-parameters, in the order they are looked for.
var WeightEntries = []string{"state_dict", "model_state_dict", "model", "net", "network", "module"}

// Bounds on the object tree walked for tensors: a hostile pickle can nest
// deeply, share one dict many times over (2^depth paths) or contain itself.
const (
	maxDepth   = 64
	maxTensors = 1 << 17 // large language models have a few thousand
	maxVisits  = 1 << 20
)

type ptEntry struct {
	key string
	t   any // *ptTensor or *unsupportedTensor
}

// collector walks a decoded pickle for tensors and names them as
// state_dict() would: dict keys joined with ".", a pickled nn.Module's
// parameters and buffers along its _modules.
type collector struct {
	entries []ptEntry
	seen    map[string]bool
	ignored []string // where non-tensor values were dropped
	nested  []string // top-level dicts whose keys were joined
	modules []string // notes on whole modules read
	onPath  map[any]bool
	visits  int
}

func newCollector() *collector {
	return &collector{seen: map[string]bool{}, onPath: map[any]bool{}}
}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func isTensor(v any) bool {
	switch v.(type) {
	case *ptTensor, *unsupportedTensor:
		return true
	}
	return false
}

func (c *collector) add(key string, t any) error {
	if c.seen[key] {
		return fmt.Errorf("two tensors are named %q", key)
	}
	if len(c.entries) >= maxTensors {
		return fmt.Errorf("more than %d tensors", maxTensors)
	}
	c.seen[key] = true
	c.entries = append(c.entries, ptEntry{key: key, t: t})
	return nil
}

// enter guards against cycles and runaway trees.
func (c *collector) enter(v any, depth int, where string) error {
	if depth > maxDepth {
		return fmt.Errorf("%s: nested more than %d levels deep", orTop(where), maxDepth)
	}
	if c.onPath[v] {
		return fmt.Errorf("%s: contains itself", orTop(where))
	}
	if c.visits++; c.visits > maxVisits {
		return fmt.Errorf("more than %d values to walk", maxVisits)
	}
	c.onPath[v] = true
	return nil
}

func orTop(where string) string {
	if where == "" {
		return "the top-level object"
	}
	return where
}

// walk collects the tensors in v under prefix and returns how many it found.
// Values that are not tensors are recorded in c.ignored, a subtree without
// tensors as one entry.
func (c *collector) walk(v any, prefix string, depth int) (int, error) {
	if isTensor(v) {
		if prefix == "" {
			return 0, errors.New("the pickle holds a single tensor, not a dict of tensors")
		}
		return 1, c.add(prefix, v)
	}
	if o, ok := v.(*pyObject); ok && o.isModule() {
		if prefix == "" {
			c.modules = append(c.modules, o.className())
		} else {
			c.modules = append(c.modules, fmt.Sprintf("%s in %q", o.className(), prefix))
		}
		return c.module(o, prefix, depth)
	}
	entries, ok := dictEntries(v)
	if !ok || !stringKeys(entries) {
		c.ignored = append(c.ignored, prefix)
		return 0, nil
	}
	if err := c.enter(v, depth, prefix); err != nil {
		return 0, err
	}
	defer delete(c.onPath, v)
	mark := len(c.ignored)
	found := 0
	for _, e := range entries {
		k := e.Key.(string)
		n, err := c.walk(e.Value, join(prefix, k), depth+1)
		if err != nil {
			return 0, err
		}
		if n > 0 && depth == 0 && !isTensor(e.Value) {
			if o, ok := e.Value.(*pyObject); !ok || !o.isModule() {
				c.nested = append(c.nested, k)
			}
		}
		found += n
	}
	if found == 0 && prefix != "" {
		c.ignored = append(c.ignored[:mark], prefix)
	}
	return found, nil
}

func stringKeys(entries []types.DictEntry) bool {
	for _, e := range entries {
		if _, ok := e.Key.(string); !ok {
			return false
		}
	}
	return true
}

// module collects a pickled nn.Module's state as Module.state_dict() does:
// its parameters, then its persistent buffers, then each child module's
// under "name.", skipping None entries.
func (c *collector) module(m *pyObject, prefix string, depth int) (int, error) {
	where := orTop(prefix)
	if err := c.enter(m, depth, prefix); err != nil {
		return 0, err
	}
	defer delete(c.onPath, m)
	nonPersistent := map[string]bool{}
	if s, ok := m.attr("_non_persistent_buffers_set"); ok {
		if set, ok := s.(*pySet); ok {
			nonPersistent = set.strs
		}
	}
	found := 0
	for _, part := range []string{"_parameters", "_buffers"} {
		v, _ := m.attr(part)
		entries, ok := dictEntries(v)
		if !ok && v != nil {
			return 0, fmt.Errorf("module %s (%s): %s is %s, not a dict", where, m.className(), part, describe(v))
		}
		for _, e := range entries {
			name, ok := e.Key.(string)
			if !ok {
				return 0, fmt.Errorf("module %s (%s): a key of %s is %s, not a string", where, m.className(), part, describe(e.Key))
			}
			if e.Value == nil || part == "_buffers" && nonPersistent[name] {
				continue
			}
			if !isTensor(e.Value) {
				return 0, fmt.Errorf("module %s (%s): %s entry %q is %s, not a tensor", where, m.className(), part, name, describe(e.Value))
			}
			if err := c.add(join(prefix, name), e.Value); err != nil {
				return 0, err
			}
			found++
		}
	}
	v, _ := m.attr("_modules")
	children, ok := dictEntries(v)
	if !ok {
		return 0, fmt.Errorf("module %s (%s): _modules is %s, not a dict", where, m.className(), describe(v))
	}
	for _, e := range children {
		name, ok := e.Key.(string)
		if !ok {
			return 0, fmt.Errorf("module %s (%s): a key of _modules is %s, not a string", where, m.className(), describe(e.Key))
		}
		if e.Value == nil {
			continue
		}
		child, ok := e.Value.(*pyObject)
		if !ok || !child.isModule() {
			return 0, fmt.Errorf("module %s (%s): child %q is %s, not a module", where, m.className(), name, describe(e.Value))
		}
		n, err := c.module(child, join(prefix, name), depth+1)
		if err != nil {
			return 0, err
		}
		found += n
	}
	return found, nil
}

// notes describes what the walk did to the names.
func (c *collector) notes() []string {
	var out []string
	if len(c.modules) > 0 {
		out = append(out, "read the whole pickled module "+strings.Join(c.modules, ", ")+
			" without its class code: parameters and buffers named along _modules, as state_dict() names them")
	}
	if len(c.nested) > 0 {
		names := make([]string, len(c.nested))
		for i, n := range c.nested {
			names[i] = n + ".*"
		}
		out = append(out, `joined the keys of nested dicts with ".": `+strings.Join(names, ", "))
	}
	if ign := nonEmpty(c.ignored); len(ign) > 0 {
		out = append(out, "ignored entries that hold no tensors: "+strings.Join(ign, ", "))
	}
	return out
}

func nonEmpty(s []string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}

// selectStateDict finds the tensors in a decoded pickle: a dict of tensors,
// a training checkpoint holding them under one of WeightEntries, nested
// dicts, or a whole pickled nn.Module (anywhere in these).
func selectStateDict(obj any) ([]ptEntry, []string, error) {
	top, isDict := dictEntries(obj)
	if isDict && stringKeys(top) {
		for _, name := range WeightEntries {
			for _, e := range top {
				if k := e.Key.(string); k != name || isTensor(e.Value) {
					continue
				}
				c := newCollector()
				n, err := c.walk(e.Value, "", 0)
				if err != nil {
					return nil, nil, fmt.Errorf("top-level entry %q: %w", name, err)
				}
				if n == 0 {
					continue
				}
				note := fmt.Sprintf("tensors read from the top-level %q entry", name)
				if others := otherEntries(top, name); len(others) > 0 {
					note += "; other entries ignored: " + strings.Join(others, ", ")
				}
				return c.entries, append([]string{note}, c.notes()...), nil
			}
		}
	}
	c := newCollector()
	n, err := c.walk(obj, "", 0)
	if err != nil {
		return nil, nil, err
	}
	if n > 0 {
		return c.entries, c.notes(), nil
	}
	switch {
	case !isDict:
		return nil, nil, fmt.Errorf("the pickle holds %s, not a dict of tensors", describe(obj))
	case !stringKeys(top):
		for _, e := range top {
			if _, ok := e.Key.(string); !ok {
				return nil, nil, fmt.Errorf("not a dict of tensors: a key is %s, not a string", describe(e.Key))
			}
		}
	}
	return nil, nil, fmt.Errorf("no tensors in the pickle: %s", listEntries(top))
}

// otherEntries names the top-level entries but skip, sorted; those holding
// tensors say so.
func otherEntries(top []types.DictEntry, skip string) []string {
	var out []string
	for _, e := range top {
		k := e.Key.(string)
		if k == skip {
			continue
		}
		c := newCollector()
		if n, err := c.walk(e.Value, k, 1); err == nil && n > 0 {
			k += fmt.Sprintf(" (%d tensors)", n)
		}
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// listEntries says what a dict without tensors holds.
func listEntries(top []types.DictEntry) string {
	if len(top) == 0 {
		return "the dict is empty"
	}
	var parts []string
	for i, e := range top {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(top)-i))
			break
		}
		k, _ := e.Key.(string)
		parts = append(parts, fmt.Sprintf("%q is %s", k, describe(e.Value)))
	}
	return "the dict's entries hold none (" + strings.Join(parts, ", ") + ")"
}

// dictEntries returns the entries of a pickled dict or OrderedDict in order.
func dictEntries(v any) ([]types.DictEntry, bool) {
	switch d := v.(type) {
	case *types.OrderedDict:
		var out []types.DictEntry
		for e := d.List.Front(); e != nil; e = e.Next() {
			if oe, ok := e.Value.(*types.OrderedDictEntry); ok {
				out = append(out, types.DictEntry{Key: oe.Key, Value: oe.Value})
			}
		}
		return out, true
	case *types.Dict:
		return *d, true
	}
	return nil, false
}
