package onnxeval

import (
	"fmt"

	"github.com/attnx/attnx/onnxfile"
)

// opFunc evaluates one node: in holds its inputs (nil for an omitted one),
// out has room for its outputs, which it fills with new tensors (from the
// runner's arena where float32) or, for the aliasing operators, views of
// in[0]. f gives Loop its enclosing frame.
type opFunc func(f *frame, in, out []*Tensor) error

// aliasing operators return a view of their first input: its data with
// another shape.
var aliasing = map[string]bool{"Reshape": true, "Squeeze": true, "Unsqueeze": true, "Identity": true, "Flatten": true}

// viewsInput reports whether node n's output j is a view of its first
// input's buffer: the aliasing operators' output, and the parts of it
// that are contiguous whatever the shapes, which Split along axis 0 and
// Gather of one constant index along axis 0 return as views (a decoder's
// states split into layers, the top layer's state taken out).
func viewsInput(n *node, j int) bool {
	switch {
	case aliasing[n.Op]:
		return j == 0
	case n.Op == "Split" && (n.Domain == "" || n.Domain == "ai.onnx"):
		return splitViews(n)
	case n.Op == "Gather" && (n.Domain == "" || n.Domain == "ai.onnx"):
		return j == 0 && gatherViews(n)
	}
	return false
}

// plan is a graph made ready to run: a slot per value, the steps in order,
// and after each step the slots whose buffers are dead.
type plan struct {
	nslots   int
	inputs   []int // formal inputs' slots
	outputs  []int
	consts   []constSlot
	captures []capture // values of enclosing graphs a subgraph reads
	steps    []step
	// producer is, for each output slot, the step that computes its
	// buffer (through aliasing operators): -1 for an input or a constant,
	// and for the outputs of a step that computes more than one.
	producer map[int]int
}

type constSlot struct {
	slot int
	t    *Tensor
}

type capture struct{ outer, inner int }

type step struct {
	name, op string
	in, out  []int // -1: omitted
	fn       opFunc
	free     []int // slots whose storage root dies after this step
	body     *plan // a Loop's body
}

// frame is one evaluation of a plan: its slots.
type frame struct {
	r   *runner
	env []*Tensor
}

// compiler plans graphs; opset is the default domain's version.
type compiler struct {
	opset int64
}

// scope maps a graph's value names to slots, reaching enclosing graphs'
// values through captures.
type scope struct {
	parent *scope
	p      *plan
	slots  map[string]int
	consts map[int]*Tensor // the slots holding constants
}

func (s *scope) newSlot(name string) int {
	k := s.p.nslots
	s.p.nslots++
	if name != "" {
		s.slots[name] = k
	}
	return k
}

func (s *scope) lookup(name string) (int, bool) {
	if k, ok := s.slots[name]; ok {
		return k, true
	}
	if s.parent == nil {
		return 0, false
	}
	outer, ok := s.parent.lookup(name)
	if !ok {
		return 0, false
	}
	k := s.newSlot(name)
	if t := s.parent.consts[outer]; t != nil {
		// An enclosing graph's constant is a constant here too, so that
		// kernels can prepare it (a Loop body's weights).
		s.p.consts = append(s.p.consts, constSlot{k, t})
		s.consts[k] = t
		return k, true
	}
	s.p.captures = append(s.p.captures, capture{outer: outer, inner: k})
	return k, true
}

// node is what an operator's compile function sees of a node.
type node struct {
	onnxfile.GraphNode
	c      *compiler
	consts []*Tensor // constant inputs (initializers, Constant outputs), else nil
	body   *plan
	// prepared marks the constant inputs whose contents the kernel has
	// copied into its own layout and never reads at run time (it may
	// still read their shape and type).
	prepared []bool
}

// prepare records that the kernel keeps constant input i in its own layout.
func (n *node) prepare(i int) {
	for len(n.prepared) <= i {
		n.prepared = append(n.prepared, false)
	}
	n.prepared[i] = true
}

func (n *node) opName() string {
	if n.Domain != "" && n.Domain != "ai.onnx" {
		return n.Domain + "." + n.Op
	}
	return n.Op
}

func (n *node) unsupported(format string, args ...any) error {
	return &UnsupportedError{Node: n.Name, Op: n.opName(), Why: fmt.Sprintf(format, args...)}
}

func (n *node) errorf(format string, args ...any) error {
	return fmt.Errorf("node %s (%s): %s", nodeName(n.Name), n.opName(), fmt.Sprintf(format, args...))
}

// plan makes g's plan; inputs are the names of g's runtime inputs in order.
func (c *compiler) plan(g *onnxfile.Graph, parent *scope, inputs []string) (*plan, error) {
	p := &plan{}
	constOf := map[int]*Tensor{}
	s := &scope{parent: parent, p: p, slots: map[string]int{}, consts: constOf}
	for _, name := range inputs {
		p.inputs = append(p.inputs, s.newSlot(name))
	}
	for _, it := range g.Initializers {
		if _, isInput := s.slots[it.Name]; isInput {
			continue // an input with a default: the caller's value wins
		}
		t, err := FromBuilder(it)
		if err != nil {
			return nil, fmt.Errorf("initializer %q: %w", it.Name, err)
		}
		k := s.newSlot(it.Name)
		p.consts = append(p.consts, constSlot{k, t})
		constOf[k] = t
	}
	// root[k] is the slot whose buffer value k's data lives in.
	root := map[int]int{}
	pinned := map[int]bool{} // roots never returned to the arena
	for _, k := range p.inputs {
		pinned[k] = true
	}
	for k := range constOf {
		pinned[k] = true
	}
	lastUse := map[int]int{}
	var prepared []int // constant slots a kernel holds in its own layout
	nodes := fuseNodes(g, func(name string) *Tensor {
		for sc := s; sc != nil; sc = sc.parent {
			if k, ok := sc.slots[name]; ok {
				return sc.consts[k]
			}
		}
		return nil
	})
	for i := range nodes {
		gn := nodes[i].GraphNode
		n := &node{GraphNode: gn, c: c}
		st := step{name: gn.Name, op: n.opName()}
		for _, name := range gn.Inputs {
			if name == "" {
				st.in = append(st.in, -1)
				n.consts = append(n.consts, nil)
				continue
			}
			k, ok := s.lookup(name)
			if !ok {
				return nil, n.errorf("input %q is not defined before the node", name)
			}
			if _, own := root[k]; !own {
				root[k] = k
			}
			st.in = append(st.in, k)
			n.consts = append(n.consts, constOf[k])
		}
		if gn.Op == "Loop" && (gn.Domain == "" || gn.Domain == "ai.onnx") {
			body := gn.Graphs["body"]
			if body == nil {
				return nil, n.errorf("Loop without a body")
			}
			names := make([]string, len(body.Inputs))
			for j, v := range body.Inputs {
				names[j] = v.Name
			}
			bp, err := c.plan(body, s, names)
			if err != nil {
				return nil, fmt.Errorf("Loop %q body: %w", gn.Name, err)
			}
			n.body = bp
			st.body = bp
			// Captured values are read by the body: they live until the Loop ends.
			for _, cp := range bp.captures {
				if _, own := root[cp.outer]; !own {
					root[cp.outer] = cp.outer
				}
				lastUse[root[cp.outer]] = i
			}
		}
		fn, err := compileNode(n, nodes[i])
		if err != nil {
			return nil, err
		}
		st.fn = fn
		for j, p := range n.prepared {
			if p && j < len(st.in) && st.in[j] >= 0 {
				prepared = append(prepared, st.in[j])
			}
		}
		for _, k := range st.in {
			if k >= 0 {
				lastUse[root[k]] = i
			}
		}
		for j, name := range gn.Outputs {
			if name == "" {
				st.out = append(st.out, -1)
				continue
			}
			if _, dup := s.slots[name]; dup {
				return nil, n.errorf("output %q is defined twice", name)
			}
			k := s.newSlot(name)
			st.out = append(st.out, k)
			if viewsInput(n, j) && len(st.in) > 0 && st.in[0] >= 0 {
				root[k] = root[st.in[0]]
				lastUse[root[k]] = i
			} else {
				root[k] = k
				lastUse[k] = i
			}
			if gn.Op == "Constant" {
				// Folded: Constant's value is known now.
				t, err := constantValue(n)
				if err != nil {
					return nil, err
				}
				constOf[k] = t
				pinned[k] = true
			}
		}
		p.steps = append(p.steps, st)
	}
	for _, v := range g.Outputs {
		k, ok := s.lookup(v.Name)
		if !ok {
			return nil, fmt.Errorf("graph %q: output %q is never computed", g.Name, v.Name)
		}
		if _, own := root[k]; !own {
			root[k] = k
		}
		p.outputs = append(p.outputs, k)
		pinned[root[k]] = true
	}
	for _, cp := range p.captures {
		pinned[cp.inner] = true
		pinned[root[cp.inner]] = true
	}
	for r, i := range lastUse {
		if root[r] == r && !pinned[r] {
			p.steps[i].free = append(p.steps[i].free, r)
		}
	}
	// The step that fills each output's buffer: its root's producer.
	made := map[int]int{}
	for i, st := range p.steps {
		for _, k := range st.out {
			if k >= 0 {
				made[k] = i
			}
		}
	}
	p.producer = map[int]int{}
	steps := map[int]int{} // graph outputs per producing step
	for _, k := range p.outputs {
		p.producer[k] = -1
		if i, ok := made[root[k]]; ok && p.steps[i].op != "Constant" {
			p.producer[k] = i
			steps[i]++
		}
	}
	for k, i := range p.producer {
		if i >= 0 && steps[i] > 1 {
			// A step that computes two outputs (or one twice) might put
			// one in the other's destination: it gets none.
			p.producer[k] = -1
		}
	}
	p.dropPrepared(prepared, constOf, outputSlots(p))
	// Constant nodes become constants: their steps do nothing at run time.
	for i := range p.steps {
		if p.steps[i].op == "Constant" {
			for _, k := range p.steps[i].out {
				if k >= 0 {
					p.consts = append(p.consts, constSlot{k, constOf[k]})
				}
			}
			p.steps[i].fn = nil
		}
	}
	return p, nil
}

// run evaluates the plan with its formal inputs in and, for a subgraph, the
// enclosing frame outer (whose captured slots it reads).
func (p *plan) run(r *runner, in []*Tensor, outer *frame) ([]*Tensor, error) {
	f := &frame{r: r, env: make([]*Tensor, p.nslots)}
	for i, k := range p.inputs {
		f.env[k] = in[i]
	}
	for _, c := range p.consts {
		f.env[c.slot] = c.t
	}
	for _, c := range p.captures {
		f.env[c.inner] = outer.env[c.outer]
	}
	var ins, outs []*Tensor
	for i := range p.steps {
		st := &p.steps[i]
		if st.fn == nil {
			continue
		}
		ins = ins[:0]
		for _, k := range st.in {
			if k < 0 {
				ins = append(ins, nil)
			} else {
				ins = append(ins, f.env[k])
			}
		}
		outs = append(outs[:0], make([]*Tensor, len(st.out))...)
		r.node, r.op = st.name, st.op
		if err := r.ctx.Err(); err != nil {
			return nil, fmt.Errorf("stopped before node %s (%s): %w", nodeName(st.name), st.op, err)
		}
		// The node's temporary buffers are charged while it runs (a Loop's
		// body nodes inside it, each on its own) and given back after.
		temp := r.temp
		r.temp = 0
		r.dest = nil
		if outer == nil && r.dst != nil {
			r.dest = p.destFor(i, r.dst)
		}
		err := st.fn(f, ins, outs)
		r.dest = nil
		r.budget += r.temp
		r.temp = temp
		if err != nil {
			return nil, fmt.Errorf("node %s (%s): %w", nodeName(st.name), st.op, err)
		}
		for j, k := range st.out {
			if k >= 0 {
				f.env[k] = outs[j]
			}
		}
		for _, k := range st.free {
			r.release(f.env[k])
		}
	}
	res := make([]*Tensor, len(p.outputs))
	for i, k := range p.outputs {
		t := f.env[k]
		if t == nil {
			return nil, fmt.Errorf("output %d was not computed", i)
		}
		res[i] = t
	}
	return res, nil
}

// destFor is the destination of the graph output that step i computes
// (its first output, or the buffer an aliasing output views), nil when it
// computes none that has one.
func (p *plan) destFor(i int, dst [][]float32) []float32 {
	for o, k := range p.outputs {
		if o >= len(dst) || dst[o] == nil {
			continue
		}
		if p.producer[k] == i {
			return dst[o]
		}
	}
	return nil
}

func (p *plan) ops(seen map[string]bool) {
	for _, st := range p.steps {
		seen[st.op] = true
		if st.body != nil {
			st.body.ops(seen)
		}
	}
}

func outputSlots(p *plan) map[int]bool {
	out := map[int]bool{}
	for _, k := range p.outputs {
		out[k] = true
	}
	return out
}

// dropPrepared frees the weights kernels have copied into their own
// layouts: a constant that only such kernels read keeps its shape and type
// (for the kernels' checks) but not its data; a constant no step of this
// graph reads (one a Loop body took as its own constant) is dropped.
func (p *plan) dropPrepared(prepared []int, constOf map[int]*Tensor, outputs map[int]bool) {
	uses := map[int]int{}
	for _, st := range p.steps {
		for _, k := range st.in {
			if k >= 0 {
				uses[k]++
			}
		}
	}
	stub := map[int]*Tensor{}
	for _, k := range prepared {
		if t := constOf[k]; t != nil && uses[k] == 1 && !outputs[k] {
			d, err := makeData(t.DType, 0)
			if err == nil {
				stub[k] = &Tensor{DType: t.DType, Shape: t.Shape, Data: d, hollow: true}
			}
		}
	}
	kept := p.consts[:0]
	for _, c := range p.consts {
		switch {
		case stub[c.slot] != nil:
			c.t = stub[c.slot]
			constOf[c.slot] = c.t
		case uses[c.slot] == 0 && !outputs[c.slot]:
			continue // read by no step here
		}
		kept = append(kept, c)
	}
	p.consts = kept
}
