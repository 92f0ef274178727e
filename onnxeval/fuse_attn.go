package onnxeval

import (
	"slices"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/onnxfile"
)

// attention is the scoring, masking, softmax and context of a decoder's
// attention over its encoder's outputs, as attnx's Luong and OpenNMT-py
// graphs compute it for each row (hypothesis) r:
//
//	s = Squeeze(MatMul(enc, Unsqueeze(q, -1)), -1)   // [R, S]: enc[r] . q[r]
//	w = Where(mask, s, fill)                          // optional
//	a = Softmax(w, -1)                                // the attention
//	c = Squeeze(MatMul(Unsqueeze(a, 1), enc), 1)      // [R, H]: the context
//
// Fused, each row's scores, weights and context are made one after the
// other: the row's encoder outputs (S x H floats) are read twice while
// they are in cache instead of the whole [R, S, H] tensor twice from
// memory, and none of the values in between is made. Each value is
// computed by the kernels the nodes use, in their order: bit for bit
// theirs. Shapes the fused loop does not take (a broadcast mask, say) run
// the nodes one after another.
type attention struct {
	masked  bool
	softmax onnxfile.GraphNode // the Softmax node, for its axis
	nodes   []planNode         // the nodes replaced, in order, for other shapes
}

// fuseAttention replaces each attention pattern in nodes by one node whose
// inputs are enc, q, the mask and the fill value ("" when not masked) and
// the members' other inputs (the axes), and whose outputs are a and c.
// The values in between must have no reader outside the pattern; a may
// have others, after the pattern's last node (whose place the fused node
// takes).
func fuseAttention(nodes []planNode, uses map[string]int, known func(string) *Tensor) []planNode {
	x := indexPlan(nodes, uses)
	// axesAre reports whether the Squeeze or Unsqueeze node n (opset 13's
	// axes input or the older attribute) has one axis, one of want.
	axesAre := func(n planNode, want ...int64) bool {
		var axes []int64
		switch {
		case len(n.Inputs) == 2:
			t := known(n.Inputs[1])
			if t == nil || t.DType != builder.Int64 {
				return false
			}
			axes = get[int64](t)
		case len(n.Inputs) == 1:
			a, ok := n.Attrs["axes"]
			if !ok {
				return false
			}
			axes = a.Ints
		}
		return len(axes) == 1 && slices.Contains(want, axes[0])
	}
	// fromAxes is x.from for Squeeze and Unsqueeze, whose axes are an
	// input from opset 13 and an attribute before.
	fromAxes := func(value, op string) (int, bool) {
		if i, ok := x.from(value, op, 2); ok {
			return i, true
		}
		return x.from(value, op, 1)
	}
	removed := map[int]bool{}
	replaced := map[int]planNode{}
	for si, sm := range nodes {
		if !x.plain(sm, "Softmax", 1, 1) || removed[si] || sm.Outputs[0] == "" {
			continue
		}
		a := sm.Outputs[0]
		var members []int
		fa := attention{}
		s := sm.Inputs[0]
		var cond, fill string
		if wi, ok := x.from(s, "Where", 3); ok {
			fa.masked = true
			cond, s, fill = nodes[wi].Inputs[0], nodes[wi].Inputs[1], nodes[wi].Inputs[2]
			members = append(members, wi)
		}
		sq, ok := fromAxes(s, "Squeeze")
		if !ok || !axesAre(nodes[sq], 2, -1) {
			continue
		}
		mm, ok := x.from(nodes[sq].Inputs[0], "MatMul", 2)
		if !ok {
			continue
		}
		enc, u := nodes[mm].Inputs[0], nodes[mm].Inputs[1]
		un, ok := fromAxes(u, "Unsqueeze")
		if !ok || !axesAre(nodes[un], 2, -1) {
			continue
		}
		q := nodes[un].Inputs[0]
		// The context: a's Unsqueeze, its MatMul by the same enc, and
		// that MatMul's Squeeze.
		ua := -1
		for _, r := range x.readers[a] {
			n := nodes[r]
			if (x.plain(n, "Unsqueeze", 1, 1) || x.plain(n, "Unsqueeze", 2, 1)) && n.Inputs[0] == a && axesAre(n, 1, -2) {
				ua = r
			}
		}
		if ua < 0 {
			continue
		}
		cm, ok := x.only(nodes[ua].Outputs[0], "MatMul", 2)
		if !ok || nodes[cm].Inputs[0] != nodes[ua].Outputs[0] || nodes[cm].Inputs[1] != enc {
			continue
		}
		cs := -1
		for _, ins := range []int{1, 2} {
			if i, ok := x.only(nodes[cm].Outputs[0], "Squeeze", ins); ok && axesAre(nodes[i], 1, -2) {
				cs = i
			}
		}
		if cs < 0 {
			continue
		}
		members = append(members, sq, mm, un, si, ua, cm, cs)
		slices.Sort(members)
		// The fused node takes the context's Squeeze's place, the last
		// member: a's other readers must come after it, and the pattern's
		// inputs before its first member.
		late := true
		for _, r := range x.readers[a] {
			late = late && (r == ua || r > cs)
		}
		if !late || slices.ContainsFunc(members, func(i int) bool { return removed[i] }) {
			continue
		}
		for _, k := range members {
			fa.nodes = append(fa.nodes, nodes[k])
		}
		fa.softmax = sm.GraphNode
		fused := onnxfile.GraphNode{Name: sm.Name + "/fused-attention"}
		fused.Op, fused.Domain = "Attention", "attnx.fused"
		fused.Inputs = []string{enc, q, cond, fill}
		// Then the members' other inputs (the axes), for the nodes when
		// they run one after another.
		made := map[string]bool{}
		for _, k := range members {
			for _, o := range nodes[k].Outputs {
				made[o] = true
			}
		}
		for _, k := range members {
			for _, v := range nodes[k].Inputs {
				if v != "" && !made[v] && !slices.Contains(fused.Inputs, v) {
					fused.Inputs = append(fused.Inputs, v)
				}
			}
		}
		fused.Outputs = []string{a, nodes[cs].Outputs[0]}
		fcopy := fa
		fuseAt(removed, replaced, members, cs, planNode{GraphNode: fused, attention: &fcopy})
	}
	return replaceNodes(nodes, removed, replaced)
}

// compileAttention compiles a fused attention node (inputs enc, q, the
// mask and the fill value or "", then the axes; outputs a and c).
func compileAttention(n *node, fa *attention) (opFunc, error) {
	byNodes, err := compileChain(n, fa.nodes)
	if err != nil {
		return nil, err
	}
	ax := softmaxAxisOf(&node{GraphNode: fa.softmax, c: n.c})
	return func(f *frame, in, out []*Tensor) error {
		enc, q := in[0], in[1]
		if enc.DType != builder.Float || q.DType != builder.Float || len(enc.Shape) != 3 || len(q.Shape) != 2 ||
			enc.Shape[0] != q.Shape[0] || enc.Shape[2] != q.Shape[1] || numel(enc.Shape) == 0 {
			return byNodes(f, in, out)
		}
		R, S, H := int(enc.Shape[0]), int(enc.Shape[1]), int(enc.Shape[2])
		var cond []bool
		var fill float32
		if fa.masked {
			c, v := in[2], in[3]
			if c.DType != builder.Bool || !slices.Equal(c.Shape, []int64{int64(R), int64(S)}) || v.DType != builder.Float || v.Len() != 1 {
				return byNodes(f, in, out)
			}
			cond, fill = get[bool](c), get[float32](v)[0]
		}
		// The softmax runs along the scores' rows ([R, S], inner 1) in
		// either opset's reading of its axis.
		if k, err := normAxis(ax.axis, 2, "axis"); err != nil || k != 1 {
			return byNodes(f, in, out)
		}
		// a first: a graph output's destination is the first tensor of
		// its size the node asks for.
		at := f.r.f32([]int64{int64(R), int64(S)})
		ct := f.r.f32([]int64{int64(R), int64(H)})
		e, qs, av, cv := get[float32](enc), get[float32](q), get[float32](at), get[float32](ct)
		kernel.Parallel(R, f.r.threads, 2*R*S*H, func(lo, hi int) {
			for r := lo; r < hi; r++ {
				er, row, cr := e[r*S*H:(r+1)*S*H], av[r*S:(r+1)*S], cv[r*H:(r+1)*H]
				// The scores, as MatMul by a column computes them.
				kernel.GemmNT(1, S, H, qs[r*H:], H, er, H, row, S, false, 1)
				if cond != nil {
					for i, keep := range cond[r*S : (r+1)*S] {
						if !keep {
							row[i] = fill
						}
					}
				}
				softmaxRow32(row, row, false)
				// The context, as MatMul's row loop computes it.
				clear(cr)
				for l, v := range row {
					if v != 0 {
						kernel.Axpy(v, er[l*H:(l+1)*H], cr)
					}
				}
			}
		})
		out[0], out[1] = at, ct
		return nil
	}, nil
}
