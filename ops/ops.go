// Package ops has one typed Go function per ONNX operator (opset 17), in the
// style of spox: each function adds a node through builder.Apply and works out
// its output types, checking element types against the operator schema, ranks,
// dimensions that must agree and attribute values. Symbolic dimensions such as
// "batch" flow through.
//
// Conventions:
//   - Inputs are *builder.Value; an optional input is nil when omitted.
//   - An attribute that the operator cannot do without is a positional
//     parameter (Concat's axis, Cast's to). The others live in an XxxOpts
//     struct whose zero value means the schema's defaults; a field whose zero
//     value is a legal, different setting is a pointer (see Int and Float).
//     Only attributes that differ from the default are written to the node.
//   - Constants become Constant nodes (see Constant), never initializers, so
//     that they work the same inside Loop and If bodies, and their contents
//     are known to later shape inference (Reshape, Slice, Unsqueeze...).
//   - Errors stick in the graph (see package builder); a function called
//     after an error returns dead values and adds nothing.
package ops

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/builder"
)

// Int returns a pointer to v, for optional int attributes in XxxOpts structs.
func Int(v int64) *int64 { return &v }

// Float returns a pointer to v, for optional float attributes in XxxOpts
// structs.
func Float(v float32) *float32 { return &v }

// typeSet is the set of element types a type parameter of a schema allows.
type typeSet []builder.DataType

var (
	floatTypes  = typeSet{builder.Float16, builder.Float, builder.Double, builder.BFloat16}
	rnnTypes    = typeSet{builder.Float16, builder.Float, builder.Double}
	intTypes    = typeSet{builder.Uint8, builder.Uint16, builder.Uint32, builder.Uint64, builder.Int8, builder.Int16, builder.Int32, builder.Int64}
	numTypes    = append(append(typeSet{}, intTypes...), floatTypes...)
	allTypes    = append(append(typeSet{}, numTypes...), builder.String, builder.Bool, builder.Complex64, builder.Complex128)
	indexTypes  = typeSet{builder.Int32, builder.Int64}
	boolTypes   = typeSet{builder.Bool}
	int64Types  = typeSet{builder.Int64}
	matmulTypes = typeSet{builder.Float16, builder.Float, builder.Double, builder.Uint32, builder.Uint64, builder.Int32, builder.Int64, builder.BFloat16}
	reduceTypes = matmulTypes
	signedTypes = typeSet{builder.Float, builder.Int32, builder.Int8, builder.Int16, builder.Int64, builder.Float16, builder.Double, builder.BFloat16}
	castTypes   = typeSet{builder.Float16, builder.Float, builder.Double, builder.Int8, builder.Int16, builder.Int32, builder.Int64, builder.Uint8, builder.Uint16, builder.Uint32, builder.Uint64, builder.Bool, builder.String, builder.BFloat16}
	rangeTypes  = typeSet{builder.Float, builder.Double, builder.Int16, builder.Int32, builder.Int64}
	powTypes    = typeSet{builder.Int32, builder.Int64, builder.Float16, builder.Float, builder.Double, builder.BFloat16}
)

func (s typeSet) has(d builder.DataType) bool {
	for _, t := range s {
		if t == d {
			return true
		}
	}
	return false
}

func (s typeSet) String() string {
	names := make([]string, len(s))
	for i, t := range s {
		names[i] = t.String()
	}
	return strings.Join(names, ", ")
}

// checkElem checks that v's element type is in allowed.
func checkElem(name string, v *builder.Value, allowed typeSet) error {
	if !allowed.has(v.Elem()) {
		if len(allowed) == 1 {
			return fmt.Errorf("%s is %s, want %s", name, v.Type(), allowed[0])
		}
		return fmt.Errorf("%s is %s, want one of %s", name, v.Type(), allowed)
	}
	return nil
}

// operand is one input of a node: its name in the operator's schema and its
// value (nil for an omitted optional input). Checks take operands, not
// parallel lists of names and values, so that an error can only ever name
// the input it is about.
type operand struct {
	name string
	v    *builder.Value
}

// operands are a node's inputs in schema order.
type operands []operand

// names returns the inputs' schema names, for builder.Call.InputNames.
func (ins operands) names() []string {
	out := make([]string, len(ins))
	for i, in := range ins {
		out[i] = in.name
	}
	return out
}

// values returns the inputs' values, for builder.Call.Inputs.
func (ins operands) values() []*builder.Value {
	out := make([]*builder.Value, len(ins))
	for i, in := range ins {
		out[i] = in.v
	}
	return out
}

// numbered names the values of a variadic input prefix_0, prefix_1, ...
func numbered(prefix string, vs []*builder.Value) operands {
	out := make(operands, len(vs))
	for i, v := range vs {
		out[i] = operand{fmt.Sprintf("%s_%d", prefix, i), v}
	}
	return out
}

// sameElem checks that every given (non-nil) operand has first's element
// type.
func sameElem(first operand, rest ...operand) error {
	for _, o := range rest {
		if o.v != nil && o.v.Elem() != first.v.Elem() {
			return fmt.Errorf("%s is %s but %s is %s: element types must match", first.name, first.v.Type(), o.name, o.v.Type())
		}
	}
	return nil
}

// checkRank checks that v has one of the given ranks when its rank is known.
func checkRank(name string, v *builder.Value, ranks ...int) error {
	r := v.Rank()
	if r < 0 {
		return nil
	}
	for _, want := range ranks {
		if r == want {
			return nil
		}
	}
	if len(ranks) == 1 {
		return fmt.Errorf("%s is %s, want rank %d", name, v.Type(), ranks[0])
	}
	return fmt.Errorf("%s is %s, want rank %v", name, v.Type(), ranks)
}

// checkMinRank checks that v has rank at least min when its rank is known.
func checkMinRank(name string, v *builder.Value, min int) error {
	if r := v.Rank(); r >= 0 && r < min {
		return fmt.Errorf("%s is %s, want rank %d or more", name, v.Type(), min)
	}
	return nil
}

// one wraps a single output type.
func one(elem builder.DataType, shape builder.Shape) ([]*builder.Type, error) {
	return []*builder.Type{{Elem: elem, Shape: shape}}, nil
}

// constInts returns the contents of v when known at build time and of an
// integer type (int64 or int32).
func constInts(v *builder.Value) ([]int64, bool) {
	if v == nil {
		return nil, false
	}
	t := v.Const()
	if t == nil {
		return nil, false
	}
	switch t.DType {
	case builder.Int64:
		vals, err := t.Int64s()
		return vals, err == nil
	case builder.Int32:
		if len(t.Raw)%4 != 0 {
			return nil, false
		}
		vals := make([]int64, len(t.Raw)/4)
		for i := range vals {
			u := uint32(t.Raw[4*i]) | uint32(t.Raw[4*i+1])<<8 | uint32(t.Raw[4*i+2])<<16 | uint32(t.Raw[4*i+3])<<24
			vals[i] = int64(int32(u))
		}
		return vals, true
	}
	return nil, false
}

// unknownShape returns a shape of the given rank with unknown dimensions, or
// nil (unknown rank) when rank < 0.
func unknownShape(rank int) builder.Shape {
	if rank < 0 {
		return nil
	}
	s := make(builder.Shape, rank)
	for i := range s {
		s[i] = builder.UnknownDim()
	}
	return s
}

// mergeDim combines two dimensions that must be equal at run time: the more
// precise one wins; provably different ones are an error.
func mergeDim(a, b builder.Dim) (builder.Dim, bool) {
	switch {
	case a.Conflicts(b):
		return a, false
	case a.Known():
		return a, true
	case b.Known():
		return b, true
	case a.Param != "":
		return a, true
	}
	return b, true
}

// len1D returns the length of a 1-D value (such as a shape or axes input)
// when it is known.
func len1D(v *builder.Value) (int, bool) {
	if vals, ok := constInts(v); ok {
		return len(vals), true
	}
	s := v.Shape()
	if len(s) == 1 && s[0].Known() {
		return int(s[0].Value), true
	}
	return 0, false
}

// normAxes normalizes axes for a tensor of the given rank, refusing
// duplicates.
func normAxes(axes []int64, rank int) ([]int, error) {
	seen := map[int]bool{}
	out := make([]int, len(axes))
	for i, a := range axes {
		n, err := builder.NormAxis(a, rank)
		if err != nil {
			return nil, err
		}
		if seen[n] {
			return nil, fmt.Errorf("axis %d appears twice in %v", a, axes)
		}
		seen[n] = true
		out[i] = n
	}
	return out, nil
}

// errNilInput reports a required input that is nil.
func errNilInput(name string) error { return fmt.Errorf("input %s is required but nil", name) }

// required returns an error naming the first nil among required inputs.
func required(ins ...operand) error {
	for _, in := range ins {
		if in.v == nil {
			return errNilInput(in.name)
		}
	}
	return nil
}
