package onnxeval

import (
	"slices"
	"sync"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/onnxfile"
)

// lstmGates is the elementwise half of qlayer's LSTM cell (the quantized
// decoders' cells, whose products are nodes of their own), from the gates'
// pre-activations to the next states:
//
//	[pre = Add(gx, gh)]
//	s, t = Split(pre, [3H, H], axis=-1)
//	i, f, o = Split(Sigmoid(s), [H, H, H], axis=-1)
//	c2 = Add(Mul(f, c), Mul(i, Tanh(t)))
//	h2 = Mul(o, Tanh(c2))
//
// Fused, a row's gates go through the activations and the state update
// while they are in cache, into c2 and h2 only: none of the nine [rows, H]
// to [rows, 4H] tensors in between is made (two of them copies, by the
// Splits). Each value is computed by the kernels the nodes use, in the
// nodes' operand order: bit for bit theirs. Shapes the fused loop does not
// take (c broadcast along a row, say) run the nodes one after another.
type lstmGates struct {
	hidden int64
	add    bool       // pre is Add(gx, gh), folded in
	nodes  []planNode // the nodes replaced, in order, for other shapes
	swap   [4]bool    // operands of Mul(f, c), Mul(i, tanh t), Add(fc, it), Mul(o, tanh c2) given the other way round
}

// fuseLSTMGates replaces each lstmGates pattern in nodes by one node whose
// inputs are gx and gh (or pre and ""), c and the two Splits' sizes, and
// whose outputs are h2 and c2. Every value in between must have no reader
// outside the pattern (uses counts every read).
func fuseLSTMGates(nodes []planNode, uses map[string]int, known func(string) *Tensor) []planNode {
	x := indexPlan(nodes, uses)
	readers, plain, only := x.readers, x.plain, x.only
	// splitLast reports whether node n splits its input along the last
	// axis into the constant sizes want.
	splitLast := func(n planNode, want ...int64) bool {
		if a, ok := n.Attrs["axis"]; !ok || a.Int != -1 {
			return false
		}
		if _, ok := n.Attrs["split"]; ok {
			return false
		}
		s := known(n.Inputs[1])
		return s != nil && s.DType == builder.Int64 && slices.Equal(get[int64](s), want)
	}
	// other is the input of binary node n that is not v, and whether v
	// came second.
	other := func(n planNode, v string) (string, bool, bool) {
		switch v {
		case n.Inputs[0]:
			return n.Inputs[1], false, n.Inputs[1] != v
		case n.Inputs[1]:
			return n.Inputs[0], true, true
		}
		return "", false, false
	}
	removed := map[int]bool{}
	replaced := map[int]planNode{}
	for si, s1 := range nodes {
		if !plain(s1, "Split", 2, 2) || removed[si] {
			continue
		}
		s3 := known(s1.Inputs[1])
		if s3 == nil || s3.DType != builder.Int64 || s3.Len() != 2 {
			continue
		}
		H := get[int64](s3)[1]
		if H <= 0 || !splitLast(s1, 3*H, H) {
			continue
		}
		sg, ok1 := only(s1.Outputs[0], "Sigmoid", 1)
		tt, ok2 := only(s1.Outputs[1], "Tanh", 1)
		if !ok1 || !ok2 {
			continue
		}
		if uses[nodes[sg].Outputs[0]] != 1 || len(readers[nodes[sg].Outputs[0]]) != 1 {
			continue
		}
		s2 := readers[nodes[sg].Outputs[0]][0]
		if !plain(nodes[s2], "Split", 2, 3) || !splitLast(nodes[s2], H, H, H) {
			continue
		}
		ifo := nodes[s2].Outputs
		mf, ok1 := only(ifo[1], "Mul", 2)
		mi, ok2 := only(ifo[0], "Mul", 2)
		mo, ok3 := only(ifo[2], "Mul", 2)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		var g lstmGates
		c, sw0, ok1 := other(nodes[mf], ifo[1])
		tv, sw1, ok2 := other(nodes[mi], ifo[0])
		if !ok1 || !ok2 || tv != nodes[tt].Outputs[0] || uses[tv] != 1 {
			continue
		}
		ad, ok := only(nodes[mf].Outputs[0], "Add", 2)
		if !ok || uses[nodes[mi].Outputs[0]] != 1 {
			continue
		}
		it, sw2, ok := other(nodes[ad], nodes[mf].Outputs[0])
		if !ok || it != nodes[mi].Outputs[0] {
			continue
		}
		c2 := nodes[ad].Outputs[0]
		// c2 may have other readers (the next step's state); its Tanh
		// must be one, read by o's Mul alone.
		tc := -1
		for _, r := range readers[c2] {
			if plain(nodes[r], "Tanh", 1, 1) && uses[nodes[r].Outputs[0]] == 1 && len(readers[nodes[r].Outputs[0]]) == 1 && readers[nodes[r].Outputs[0]][0] == mo {
				tc = r
			}
		}
		if tc < 0 {
			continue
		}
		tcv, sw3, ok := other(nodes[mo], ifo[2])
		if !ok || tcv != nodes[tc].Outputs[0] {
			continue
		}
		// The fused node takes h2's Mul's place, the pattern's last node:
		// c2's other readers must come after it.
		early := false
		for _, r := range readers[c2] {
			early = early || r != tc && r < mo
		}
		if early {
			continue
		}
		g.hidden, g.swap = H, [4]bool{sw0, sw1, sw2, sw3}
		pre := s1.Inputs[0]
		in := []string{pre, "", c, s1.Inputs[1], nodes[s2].Inputs[1]}
		members := []int{si, sg, tt, s2, mf, mi, ad, tc, mo}
		if a, ok := x.from(pre, "Add", 2); ok && !removed[a] {
			g.add = true
			in[0], in[1] = nodes[a].Inputs[0], nodes[a].Inputs[1]
			members = append([]int{a}, members...)
		}
		slices.Sort(members)
		for _, k := range members {
			g.nodes = append(g.nodes, nodes[k])
		}
		fused := onnxfile.GraphNode{Name: s1.Name + "/fused-lstm-gates"}
		fused.Op, fused.Domain = "LSTMGates", "attnx.fused"
		fused.Inputs = in
		fused.Outputs = []string{nodes[mo].Outputs[0], c2}
		// Every input of the pattern is defined before its members, so
		// before the last one, mo, whose place the fused node takes.
		gcopy := g
		fuseAt(removed, replaced, members, mo, planNode{GraphNode: fused, lstmGates: &gcopy})
	}
	return replaceNodes(nodes, removed, replaced)
}

// fuseAt records that the fused node pn replaces the nodes members, in
// the place of the last of them.
func fuseAt(removed map[int]bool, replaced map[int]planNode, members []int, last int, pn planNode) {
	for _, k := range members {
		removed[k] = true
	}
	delete(removed, last)
	replaced[last] = pn
}

// replaceNodes is nodes with the fused nodes of replaced in their places
// and the nodes removed left out.
func replaceNodes(nodes []planNode, removed map[int]bool, replaced map[int]planNode) []planNode {
	if len(replaced) == 0 {
		return nodes
	}
	out := make([]planNode, 0, len(nodes))
	for i, n := range nodes {
		if r, ok := replaced[i]; ok {
			out = append(out, r)
		} else if !removed[i] {
			out = append(out, n)
		}
	}
	return out
}

// compileLSTMGates compiles a fused lstmGates node (inputs gx, gh or pre,
// "", c and the two Splits' sizes; outputs h2 and c2).
func compileLSTMGates(n *node, g *lstmGates) (opFunc, error) {
	byNodes, err := compileChain(n, g.nodes)
	if err != nil {
		return nil, err
	}
	H := int(g.hidden)
	var pool sync.Pool
	return func(f *frame, in, out []*Tensor) error {
		gx, gh, c := in[0], in[1], in[2]
		if gx.DType != builder.Float || c.DType != builder.Float || len(gx.Shape) == 0 || gx.Shape[len(gx.Shape)-1] != 4*g.hidden ||
			g.add && (gh.DType != builder.Float || !slices.Equal(gx.Shape, gh.Shape)) {
			return byNodes(f, in, out)
		}
		// The states' shape: gx's leading dimensions and H, broadcast
		// with c's; the loop takes c of one value per element (leading
		// ones aside).
		hs := cloneShape(gx.Shape)
		hs[len(hs)-1] = g.hidden
		shape, err := broadcastShape(hs, c.Shape)
		if err != nil || numel(shape) != numel(hs) || numel(c.Shape) != numel(hs) || !slices.Equal(trimOnes(c.Shape), trimOnes(hs)) {
			return byNodes(f, in, out)
		}
		rows := numel(hs) / H
		x := get[float32](gx)
		var y []float32
		if g.add {
			y = get[float32](gh)
		}
		cs := get[float32](c)
		h2, c2 := f.r.f32(cloneShape(shape)), f.r.f32(cloneShape(shape))
		hd, cd := get[float32](h2), get[float32](c2)
		// binary applies a node's operation with its operands in the
		// node's order.
		binary := func(op kernel.Op, a, b, z []float32, swap bool) {
			if swap {
				a, b = b, a
			}
			kernel.Arith(op, a, b, z)
		}
		kernel.Parallel(rows, f.r.threads, 24*rows*H, func(lo, hi int) {
			sp, _ := pool.Get().(*[]float32)
			if sp == nil || len(*sp) < 9*H {
				b := make([]float32, 9*H)
				sp = &b
			}
			defer pool.Put(sp)
			sum, sg, t := (*sp)[:4*H], (*sp)[4*H:7*H], (*sp)[7*H:8*H]
			u := (*sp)[8*H : 9*H]
			for r := lo; r < hi; r++ {
				pre := x[r*4*H : (r+1)*4*H]
				cr, c2r, h2r := cs[r*H:(r+1)*H], cd[r*H:(r+1)*H], hd[r*H:(r+1)*H]
				// With AVX-512 and H a multiple of 16, or AVX2 and H a
				// multiple of 8, one pass over the row in registers (the
				// same values: IEEE products and sums do not depend on
				// their operands' order).
				var gh []float32
				if g.add {
					gh = y[r*4*H : (r+1)*4*H]
				}
				if kernel.LSTMGates(pre, gh, cr, h2r, c2r) {
					continue
				}
				if g.add {
					kernel.Arith(kernel.Add, pre, y[r*4*H:(r+1)*4*H], sum)
					pre = sum
				}
				kernel.Sigmoid(pre[:3*H], sg)
				kernel.Tanh(pre[3*H:], t)
				i, fg, o := sg[:H], sg[H:2*H], sg[2*H:]
				binary(kernel.Mul, fg, cr, u, g.swap[0]) // f * c
				binary(kernel.Mul, i, t, t, g.swap[1])   // i * tanh(t)
				binary(kernel.Add, u, t, c2r, g.swap[2]) // c2
				kernel.Tanh(c2r, u)                      // tanh(c2)
				binary(kernel.Mul, o, u, h2r, g.swap[3]) // h2
			}
		})
		out[0], out[1] = h2, c2
		return nil
	}, nil
}

// trimOnes is shape without its leading ones.
func trimOnes(shape []int64) []int64 {
	for len(shape) > 0 && shape[0] == 1 {
		shape = shape[1:]
	}
	return shape
}

// compileChain compiles the nodes a fusion replaced, for the shapes its
// fused loop does not take: the returned function runs them one after
// another on the fused node n's inputs (their constants are n's) and
// gives n's outputs, releasing the values in between.
func compileChain(n *node, nodes []planNode) (opFunc, error) {
	constOf := map[string]*Tensor{}
	for j, name := range n.Inputs {
		if name != "" && n.consts[j] != nil {
			constOf[name] = n.consts[j]
		}
	}
	type step struct {
		fn      opFunc
		in, out []string
	}
	var steps []step
	for _, pn := range nodes {
		m := &node{GraphNode: pn.GraphNode, c: n.c}
		for _, in := range pn.Inputs {
			m.consts = append(m.consts, constOf[in])
		}
		fn, err := compile(m)
		if err != nil {
			return nil, err
		}
		steps = append(steps, step{fn, pn.Inputs, pn.Outputs})
	}
	return func(f *frame, in, out []*Tensor) error {
		vals := map[string]*Tensor{}
		for j, name := range n.Inputs {
			if name != "" {
				vals[name] = in[j]
			}
		}
		var temps []*Tensor
		for _, st := range steps {
			args := make([]*Tensor, len(st.in))
			for j, name := range st.in {
				args[j] = vals[name]
			}
			res := make([]*Tensor, len(st.out))
			if err := st.fn(f, args, res); err != nil {
				return err
			}
			for j, name := range st.out {
				vals[name] = res[j]
				temps = append(temps, res[j])
			}
		}
		for j, name := range n.Outputs {
			out[j] = vals[name]
		}
		// A value in between goes back to the arena unless an output or
		// an input is, or views, its buffer.
		shares := func(t *Tensor) func(*Tensor) bool {
			return func(u *Tensor) bool { return u == t || u != nil && overlaps(t, u) }
		}
		for _, t := range temps {
			if !slices.ContainsFunc(out, shares(t)) && !slices.ContainsFunc(in, shares(t)) {
				f.r.release(t)
			}
		}
		return nil
	}, nil
}
