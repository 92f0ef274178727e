package onnxeval

import (
	"fmt"
	"sort"

	"github.com/attnx/attnx/builder"
)

// compileFunc prepares a node: it reads the attributes and constant inputs
// once and returns the function that evaluates the node.
type compileFunc func(n *node) (opFunc, error)

// registry maps "Op" (default domain) and "domain.Op" to compile functions.
var registry = map[string]compileFunc{}

func register(op string, f compileFunc) { registry[op] = f }

// Operators returns the operators the evaluator implements, sorted; those
// of other domains are written domain.Op.
func Operators() []string {
	out := make([]string, 0, len(registry))
	for op := range registry {
		out = append(out, op)
	}
	sort.Strings(out)
	return out
}

// Implements reports whether the evaluator implements op of domain.
func Implements(domain, op string) bool {
	n := &node{}
	n.Op, n.Domain = op, domain
	_, ok := registry[n.opName()]
	return ok
}

func compile(n *node) (opFunc, error) {
	f, ok := registry[n.opName()]
	if !ok {
		return nil, n.unsupported("operator not implemented by the native evaluator")
	}
	fn, err := f(n)
	if err != nil {
		return nil, err
	}
	return fn, nil
}

// attribute helpers

func (n *node) attr(name string) (builder.Attr, bool) {
	a, ok := n.Attrs[name]
	return a.Attr, ok
}

func (n *node) int(name string, def int64) int64 {
	if a, ok := n.attr(name); ok {
		return a.Int
	}
	return def
}

func (n *node) float(name string, def float32) float32 {
	if a, ok := n.attr(name); ok {
		return a.Float
	}
	return def
}

func (n *node) str(name, def string) string {
	if a, ok := n.attr(name); ok {
		return a.Str
	}
	return def
}

func (n *node) ints(name string) ([]int64, bool) {
	if a, ok := n.attr(name); ok {
		return a.Ints, true
	}
	return nil, false
}

// nin is the number of inputs given (trailing omitted ones dropped).
func (n *node) nin() int {
	k := len(n.Inputs)
	for k > 0 && n.Inputs[k-1] == "" {
		k--
	}
	return k
}

func (n *node) has(i int) bool { return i < len(n.Inputs) && n.Inputs[i] != "" }

// needInputs checks the input count.
func (n *node) needInputs(lo, hi int) error {
	if k := n.nin(); k < lo || k > hi {
		if lo == hi {
			return n.errorf("takes %d inputs, got %d", lo, k)
		}
		return n.errorf("takes %d to %d inputs, got %d", lo, hi, k)
	}
	return nil
}

func init() {
	register("Constant", func(n *node) (opFunc, error) {
		if _, err := constantValue(n); err != nil {
			return nil, err
		}
		return nil, nil // folded by the planner
	})
}

// constantValue is a Constant node's value.
func constantValue(n *node) (*Tensor, error) {
	for name, a := range n.Attrs {
		switch name {
		case "value":
			if a.Tensor == nil {
				return nil, fmt.Errorf("Constant: attribute value holds no tensor")
			}
			return FromBuilder(a.Tensor)
		case "value_float":
			return New([]int64{}, []float32{a.Float}), nil
		case "value_floats":
			return New([]int64{int64(len(a.Floats))}, append([]float32{}, a.Floats...)), nil
		case "value_int":
			return New([]int64{}, []int64{a.Int}), nil
		case "value_ints":
			return New([]int64{int64(len(a.Ints))}, append([]int64{}, a.Ints...)), nil
		default:
			return nil, n.unsupported("attribute %s", name)
		}
	}
	return nil, n.errorf("Constant has no value")
}

// errType names an unsupported element type.
func errType(what string, dt builder.DataType) error {
	return fmt.Errorf("%s: element type %v is not supported", what, dt)
}
