// Package builder builds ONNX graphs in Go: a Graph holds inputs,
// initializers, nodes and outputs; every value is a *Value that carries its
// element type and shape, worked out as the graph is built.
//
// Errors stick: the first failure (a type mismatch, a bad shape, a value
// from another graph) is recorded with the operator's signature and the
// caller's file:line, later operations become no-ops that return dead
// values, and Err (or Model.Check) returns it. Code that builds a whole
// model therefore checks for an error once, at the end.
//
// Names are deterministic: the same program always produces the same names
// and, through package onnxfile, byte-identical files.
package builder

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
)

// Value is a tensor value in a graph: a graph input, an initializer or a
// node output. Values are created by Graph methods and by package ops.
type Value struct {
	g        *Graph
	name     string
	named    bool // the name was chosen by the user
	typ      Type
	node     *Node
	constant *Tensor
	dead     bool
}

// Name returns the value's name in the graph ("" for a dead value).
func (v *Value) Name() string { return v.name }

// Type returns the value's type.
func (v *Value) Type() Type { return v.typ }

// Elem returns the value's element type.
func (v *Value) Elem() DataType { return v.typ.Elem }

// Shape returns the value's shape (nil when the rank is unknown).
func (v *Value) Shape() Shape { return v.typ.Shape }

// Rank returns the number of dimensions, or -1 when unknown.
func (v *Value) Rank() int { return v.typ.Shape.Rank() }

// Graph returns the graph the value is defined in.
func (v *Value) Graph() *Graph { return v.g }

// Producer returns the node that computes the value, or nil for inputs and
// initializers.
func (v *Value) Producer() *Node { return v.node }

// Const returns the value's contents when they are known at build time (an
// initializer or the output of a Constant node), or nil.
func (v *Value) Const() *Tensor { return v.constant }

// Dead reports whether the value is a placeholder returned after an error.
func (v *Value) Dead() bool { return v == nil || v.dead }

// String formats the value as name: type.
func (v *Value) String() string {
	if v == nil {
		return "<none>"
	}
	if v.dead {
		return "<dead>"
	}
	return v.name + ": " + v.typ.String()
}

// SetConst records that v always holds t. Package ops calls it for the
// outputs of Constant so that later shape inference can read them.
func SetConst(v *Value, t *Tensor) {
	if v != nil && !v.dead {
		v.constant = t
	}
}

// Node is one operator application.
type Node struct {
	// Name is the node's unique name.
	Name string
	// OpType is the operator, such as "LSTM".
	OpType string
	// Domain is the operator set domain; "" is the default ONNX domain.
	Domain string
	// Inputs holds the inputs in order; a nil entry is an omitted optional input.
	Inputs []*Value
	// Outputs holds the outputs in order; a nil entry is an omitted optional output.
	Outputs []*Value
	// Attrs holds the attributes that were set, sorted by name.
	Attrs []Attr
	// Doc is an optional doc string.
	Doc string
}

// Attr returns the attribute called name, or nil.
func (n *Node) Attr(name string) *Attr {
	for i := range n.Attrs {
		if n.Attrs[i].Name == name {
			return &n.Attrs[i]
		}
	}
	return nil
}

// state is shared by a graph and all its subgraphs.
type state struct {
	counter map[string]int
	names   map[string]bool
	err     error
}

// Graph is an ONNX graph under construction: the main graph of a model or
// the body of a Loop or If.
type Graph struct {
	// Name is the graph's name.
	Name string
	// Doc is an optional doc string.
	Doc string

	parent  *Graph
	st      *state
	inputs  []*Value
	outputs []*Value
	inits   []*Value
	nodes   []*Node
}

// New returns an empty main graph called name.
func New(name string) *Graph {
	return &Graph{Name: name, st: &state{counter: map[string]int{}, names: map[string]bool{}}}
}

// Sub returns an empty subgraph of g, for the body of a Loop or If. Nodes in
// it may use any value of g or of g's ancestors.
func (g *Graph) Sub(name string) *Graph {
	return &Graph{Name: name, parent: g, st: g.st}
}

// Parent returns the enclosing graph of a subgraph, or nil.
func (g *Graph) Parent() *Graph { return g.parent }

// Err returns the first error recorded while building g or any graph that
// shares its state (its parent and subgraphs).
func (g *Graph) Err() error { return g.st.err }

// Inputs returns the graph inputs in order.
func (g *Graph) Inputs() []*Value { return g.inputs }

// Outputs returns the graph outputs in order.
func (g *Graph) Outputs() []*Value { return g.outputs }

// Initializers returns the initializer values in order; Const gives each one's tensor.
func (g *Graph) Initializers() []*Value { return g.inits }

// Nodes returns the nodes in the order they were added, which is a
// topological order.
func (g *Graph) Nodes() []*Node { return g.nodes }

// Contains reports whether v is visible in g: defined in g or an ancestor.
func (g *Graph) Contains(v *Value) bool {
	for h := g; h != nil; h = h.parent {
		if v.g == h {
			return true
		}
	}
	return false
}

// depth returns the nesting depth (0 for a main graph).
func (g *Graph) depth() int {
	d := 0
	for h := g.parent; h != nil; h = h.parent {
		d++
	}
	return d
}

// uniqueName returns a fresh name starting with prefix.
func (g *Graph) uniqueName(prefix string) string {
	for {
		n := g.st.counter[prefix]
		g.st.counter[prefix] = n + 1
		name := fmt.Sprintf("%s_%d", prefix, n)
		if !g.st.names[name] {
			g.st.names[name] = true
			return name
		}
	}
}

// claim reserves a user-chosen name, recording an error when it is taken.
func (g *Graph) claim(what, name string) bool {
	if name == "" {
		g.fail(what, "", fmt.Errorf("empty name"))
		return false
	}
	if g.st.names[name] {
		g.fail(what, "", fmt.Errorf("name %q is already used in this model", name))
		return false
	}
	g.st.names[name] = true
	return true
}

// dead returns a placeholder value for use after an error.
func (g *Graph) dead() *Value { return &Value{g: g, dead: true} }

// Input adds a graph input called name.
func (g *Graph) Input(name string, elem DataType, shape Shape) *Value {
	if g.Err() != nil || !g.claim("Input", name) {
		return g.dead()
	}
	v := &Value{g: g, name: name, named: true, typ: Type{Elem: elem, Shape: shape.Clone()}}
	g.inputs = append(g.inputs, v)
	return v
}

// Init adds an initializer holding t. An empty name is replaced by a fresh
// one ("init_N"). The tensor is stored as given, not copied: do not modify
// it afterwards.
func (g *Graph) Init(name string, t *Tensor) *Value {
	if g.Err() != nil {
		return g.dead()
	}
	if t == nil {
		g.fail("Init", "", errors.New("nil tensor"))
		return g.dead()
	}
	if err := t.Validate(); err != nil {
		g.fail("Init", "", err)
		return g.dead()
	}
	if name == "" {
		name = g.uniqueName("init")
	} else if !g.claim("Init", name) {
		return g.dead()
	}
	t.Name = name
	v := &Value{g: g, name: name, named: true, typ: t.Type(), constant: t}
	g.inits = append(g.inits, v)
	return v
}

// Output makes v a graph output called name and returns the output value.
// A node output of g that has no name of its own yet is renamed; otherwise
// (an input, an initializer, an existing output, a value of an enclosing
// graph) an Identity node is added.
func (g *Graph) Output(name string, v *Value) *Value {
	if g.Err() != nil {
		return g.dead()
	}
	if v.Dead() {
		g.fail("Output", "", fmt.Errorf("output %q: value is missing (nil or from a failed operation)", name))
		return g.dead()
	}
	if !g.Contains(v) {
		g.fail("Output", "", fmt.Errorf("output %q: value %s belongs to another graph", name, v))
		return g.dead()
	}
	if v.g == g && v.node != nil && !v.named && !g.isOutput(v) {
		if !g.claim("Output", name) {
			return g.dead()
		}
		delete(g.st.names, v.name)
		v.name = name
		v.named = true
		g.outputs = append(g.outputs, v)
		return v
	}
	if !g.claim("Output", name) {
		return g.dead()
	}
	n := &Node{Name: g.uniqueName("Identity"), OpType: "Identity", Inputs: []*Value{v}}
	out := &Value{g: g, name: name, named: true, typ: v.typ, node: n, constant: v.constant}
	n.Outputs = []*Value{out}
	g.nodes = append(g.nodes, n)
	g.outputs = append(g.outputs, out)
	return out
}

func (g *Graph) isOutput(v *Value) bool {
	for _, o := range g.outputs {
		if o == v {
			return true
		}
	}
	return false
}

// Call describes one operator application for Graph.Apply and Apply. Package
// ops fills it in for each operator.
type Call struct {
	// Graph is where the node goes when no input decides it (operators
	// without inputs, such as Constant). Otherwise the node goes into the
	// innermost graph among its inputs' graphs.
	Graph *Graph
	// Op and Domain name the operator.
	Op, Domain string
	// InputNames name the inputs for error messages; optional.
	InputNames []string
	// Inputs are the inputs; nil entries are omitted optional inputs.
	Inputs []*Value
	// Attrs are the attributes to record (unset ones are left out).
	Attrs []Attr
	// Infer returns the output types; a nil entry in the result means an
	// omitted optional output. It runs only when all given inputs are
	// valid, and an error from it is recorded with the call's signature.
	Infer func() ([]*Type, error)
}

// Apply adds the node described by c and returns its outputs (nil for
// omitted optional outputs). After an error anywhere in the model it does
// nothing and returns dead values (numOut of them, at least one).
func Apply(c Call, numOut int) []*Value {
	g := c.Graph
	for _, in := range c.Inputs {
		if in == nil {
			continue
		}
		if g == nil || (in.g != nil && in.g.depth() > g.depth()) {
			g = in.g
		}
	}
	if numOut < 1 {
		numOut = 1
	}
	if g == nil {
		// No graph at all: nothing to record the error in.
		outs := make([]*Value, numOut)
		for i := range outs {
			outs[i] = &Value{dead: true}
		}
		return outs
	}
	deadOuts := func() []*Value {
		outs := make([]*Value, numOut)
		for i := range outs {
			outs[i] = g.dead()
		}
		return outs
	}
	if g.Err() != nil {
		return deadOuts()
	}
	for i, in := range c.Inputs {
		if in == nil {
			continue
		}
		if in.dead {
			g.fail(c.Op, c.signature(), fmt.Errorf("input %s comes from a failed operation", c.inputName(i)))
			return deadOuts()
		}
		if in.g.st != g.st || !g.Contains(in) {
			g.fail(c.Op, c.signature(), fmt.Errorf("input %s (%s) belongs to another graph", c.inputName(i), in))
			return deadOuts()
		}
	}
	types, err := c.Infer()
	if err != nil {
		g.fail(c.Op, c.signature(), err)
		return deadOuts()
	}
	n := &Node{Name: g.uniqueName(c.Op), OpType: c.Op, Domain: c.Domain, Inputs: c.Inputs, Attrs: sortAttrs(c.Attrs)}
	outs := make([]*Value, len(types))
	for i, t := range types {
		if t == nil {
			continue
		}
		name := n.Name
		if len(types) > 1 {
			name = fmt.Sprintf("%s_out%d", n.Name, i)
			g.st.names[name] = true
		}
		outs[i] = &Value{g: g, name: name, typ: Type{Elem: t.Elem, Shape: t.Shape.Clone()}, node: n}
	}
	// Drop trailing omitted outputs, as ONNX does.
	last := len(outs)
	for last > 0 && outs[last-1] == nil {
		last--
	}
	n.Outputs = outs[:last]
	g.nodes = append(g.nodes, n)
	return outs
}

func (c Call) inputName(i int) string {
	if i < len(c.InputNames) && c.InputNames[i] != "" {
		return c.InputNames[i]
	}
	return fmt.Sprintf("#%d", i)
}

// signature formats the call as Op(A: float32[2,3], B: <none>; axis=1).
func (c Call) signature() string {
	var b strings.Builder
	b.WriteString(c.Op)
	b.WriteByte('(')
	for i, in := range c.Inputs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.inputName(i))
		b.WriteString(": ")
		switch {
		case in == nil:
			b.WriteString("<none>")
		case in.dead:
			b.WriteString("<dead>")
		default:
			b.WriteString(in.typ.String())
		}
	}
	for i, a := range sortAttrs(c.Attrs) {
		if i == 0 {
			b.WriteString("; ")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(a.String())
	}
	b.WriteByte(')')
	return b.String()
}

// Error is a build error: the operator, its signature as called, where it was
// called from and what went wrong.
type Error struct {
	// Op is the operator or Graph method that failed.
	Op string
	// Signature is the call with its input types and attributes.
	Signature string
	// Where is the caller's file:line, outside packages builder and ops.
	Where string
	// Err is the underlying problem.
	Err error
}

// Error implements error.
func (e *Error) Error() string {
	sig := e.Signature
	if sig == "" {
		sig = e.Op
	}
	if e.Where != "" {
		return fmt.Sprintf("%s at %s: %v", sig, e.Where, e.Err)
	}
	return fmt.Sprintf("%s: %v", sig, e.Err)
}

// Unwrap returns the underlying error.
func (e *Error) Unwrap() error { return e.Err }

// Fail records err as the graph's error unless one is already recorded. It
// is for code outside package ops that detects a problem while building.
func (g *Graph) Fail(err error) { g.fail("", "", err) }

func (g *Graph) fail(op, sig string, err error) {
	if g.st.err != nil {
		return
	}
	g.st.err = &Error{Op: op, Signature: sig, Where: callerOutside(), Err: err}
}

// callerOutside returns file:line of the first caller outside this package
// and package ops.
func callerOutside() string {
	pcs := make([]uintptr, 32)
	n := runtime.Callers(3, pcs)
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		fn := f.Function
		inside := strings.HasPrefix(fn, "github.com/attnx/attnx/builder.") || strings.HasPrefix(fn, "github.com/attnx/attnx/ops.")
		if !inside || strings.HasSuffix(f.File, "_test.go") {
			return fmt.Sprintf("%s:%d", filepath.Base(f.File), f.Line)
		}
		if !more {
			return ""
		}
	}
}

// OutputAs is Output with a declared shape: where v's inferred shape has an
// unknown dimension, the declared one (such as a symbolic "out_len") is
// used. A declared shape of another rank, or with a dimension that provably
// differs from the inferred one, is an error.
func (g *Graph) OutputAs(name string, v *Value, shape Shape) *Value {
	if g.Err() != nil || v.Dead() {
		return g.Output(name, v)
	}
	inferred := v.Shape()
	if inferred != nil && len(inferred) != len(shape) {
		g.fail("Output", "", fmt.Errorf("output %q: declared shape %v has rank %d, but the value is %s", name, shape, len(shape), v.typ))
		return g.dead()
	}
	merged := shape.Clone()
	for i := range merged {
		if inferred == nil {
			break
		}
		d := inferred[i]
		switch {
		case d.Conflicts(merged[i]) || (d.Param != "" && merged[i].Param != "" && d.Param != merged[i].Param):
			g.fail("Output", "", fmt.Errorf("output %q: declared shape %v disagrees with the inferred %v at dimension %d", name, shape, inferred, i))
			return g.dead()
		case d.Known() || d.Param != "":
			merged[i] = d
		}
	}
	out := g.Output(name, v)
	if !out.Dead() {
		out.typ.Shape = merged
	}
	return out
}
