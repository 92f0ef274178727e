package onnxeval

import (
	"fmt"
	"sync"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/onnxfile"
)

// Plan-time fusion. The planner recognises, in the graphs attnx writes,
// node patterns whose intermediate tensors a single kernel need not make,
// and runs them as one step computing bit for bit what the nodes compute:
// the per-row int8 product (below), the elementwise half of a quantized
// LSTM cell (lstmGates, fuse_lstm.go) and a classifier's LogSoftmax folded
// into the product making its logits (foldLogSoftmax).
//
// rowInt8 is qlayer's per-row symmetric int8 product (its DynamicInt8
// form's default): the scale of each row of x is max|x| / 127 (at least
// eps), the row is quantized to uint8 around the zero point 128, multiplied
// by the int8 weights, and the sums are scaled back by the weights'
// per-column scales and the row's:
//
//	a = Abs(x); m = ReduceMax(a, axes=[last], keepdims=1)
//	s = Max(Div(m, 127), eps)
//	xq = QuantizeLinear(Div(x, s), 1, zp)
//	y = Mul(Mul(Cast(MatMulInteger(xq, W, zp, [wzp]), float), scales), s)
//	[y = Add(y, bias)]
//
// Fused, the kernel makes xq and the integer sums only: no float tensors
// for |x|, the row maxima, x / s, the quantized values before their cast,
// nor the three [rows, N] float tensors after the product.

// fusionOff disables fusion (tests compare the fused and unfused plans).
var fusionOff bool

// planNode is a node of a graph's plan: the file's, or a fused one.
type planNode struct {
	onnxfile.GraphNode
	rowInt8 *rowInt8Fusion
	// logSoftmax, when set, is a LogSoftmax node folded into this one (a
	// product): see foldLogSoftmax.
	logSoftmax *foldedLogSoftmax
	lstmGates  *lstmGates
	attention  *attention
}

// foldedLogSoftmax is a LogSoftmax folded into the product before it.
type foldedLogSoftmax struct {
	ls         onnxfile.GraphNode // the LogSoftmax node
	op, domain string             // the product's own operator
}

// logitsMakers are the products a LogSoftmax folds into (besides the
// fused rowInt8 ones): each writes its result into a tensor of its own.
var logitsMakers = map[string]bool{"Gemm": true, "com.microsoft.MatMulNBits": true}

// rowInt8Fusion is one matched rowInt8 pattern: the fused node's inputs are
// x, W, zp, wzp ("" when none), scales and, when an Add of a constant
// bias follows (the node is then RowInt8MatMulAdd), the bias; its output
// is the last Mul's, or the Add's.
type rowInt8Fusion struct {
	axis     int64   // ReduceMax's axis, checked against x's last at run time
	c127     float32 // the divisor of the row maximum (127)
	eps      float32 // the least scale
	one      float32 // QuantizeLinear's scale (1)
	zp       float32 // the activations' zero point (128)
	matMul   string  // the MatMulInteger node's name, for errors
	abs, max string  // the first and last node's names
}

// fuseNodes returns g's nodes with every rowInt8 pattern replaced by one
// fused node. constant reports a value that is a constant of the graph (or
// of an enclosing one) and its tensor. A pattern fuses only when its
// intermediate values have no reader outside it (in g, its subgraphs and
// g's outputs).
func fuseNodes(g *onnxfile.Graph, constant func(name string) *Tensor) []planNode {
	out := make([]planNode, 0, len(g.Nodes))
	if fusionOff {
		for _, n := range g.Nodes {
			out = append(out, planNode{GraphNode: n})
		}
		return out
	}
	// Constant nodes' values, known before they are folded.
	folded := map[string]*Tensor{}
	for _, n := range g.Nodes {
		if n.Op == "Constant" && (n.Domain == "" || n.Domain == "ai.onnx") && len(n.Outputs) == 1 {
			if t, err := constantValue(&node{GraphNode: n}); err == nil {
				folded[n.Outputs[0]] = t
			}
		}
	}
	known := func(name string) *Tensor {
		if t := folded[name]; t != nil {
			return t
		}
		return constant(name)
	}
	producer := map[string]int{}
	for i, n := range g.Nodes {
		for _, o := range n.Outputs {
			if o != "" {
				producer[o] = i
			}
		}
	}
	readers := map[string][]int{} // value -> the nodes of g reading it
	uses := map[string]int{}      // every read, subgraphs' and outputs' included
	var count func(g *onnxfile.Graph)
	count = func(sub *onnxfile.Graph) {
		for _, n := range sub.Nodes {
			for _, in := range n.Inputs {
				uses[in]++
			}
			for _, b := range n.Graphs {
				count(b)
			}
		}
		for _, o := range sub.Outputs {
			uses[o.Name]++
		}
	}
	count(g)
	for i, n := range g.Nodes {
		for _, in := range n.Inputs {
			readers[in] = append(readers[in], i)
		}
	}
	// by returns the node producing value, when it is op of the default
	// domain with value its only output.
	by := func(value, op string) (onnxfile.GraphNode, int, bool) {
		i, ok := producer[value]
		if !ok {
			return onnxfile.GraphNode{}, 0, false
		}
		n := g.Nodes[i]
		if n.Op != op || (n.Domain != "" && n.Domain != "ai.onnx") || len(n.Outputs) != 1 {
			return onnxfile.GraphNode{}, 0, false
		}
		return n, i, true
	}
	// only returns the one node reading value, when it is op and nothing
	// else reads value.
	only := func(value, op string) (onnxfile.GraphNode, int, bool) {
		if uses[value] != 1 || len(readers[value]) != 1 {
			return onnxfile.GraphNode{}, 0, false
		}
		i := readers[value][0]
		n := g.Nodes[i]
		if n.Op != op || (n.Domain != "" && n.Domain != "ai.onnx") || len(n.Outputs) != 1 {
			return onnxfile.GraphNode{}, 0, false
		}
		return n, i, true
	}
	scalar := func(name string) (float32, bool) {
		t := known(name)
		if t == nil || t.Len() != 1 || t.DType != builder.Float {
			return 0, false
		}
		return get[float32](t)[0], true
	}
	removed := map[int]bool{}
	replaced := map[int]planNode{}
	for i, mm := range g.Nodes {
		if mm.Op != "MatMulInteger" || (mm.Domain != "" && mm.Domain != "ai.onnx") || len(mm.Inputs) < 3 || len(mm.Outputs) != 1 {
			continue
		}
		xq, w, zp := mm.Inputs[0], mm.Inputs[1], mm.Inputs[2]
		wzp := ""
		if len(mm.Inputs) > 3 {
			wzp = mm.Inputs[3]
		}
		zpT := known(zp)
		if known(w) == nil || zpT == nil || zpT.Len() != 1 || zpT.DType != builder.Uint8 || (wzp != "" && known(wzp) == nil) || uses[xq] != 1 {
			continue
		}
		q, qi, ok := by(xq, "QuantizeLinear")
		if !ok || len(q.Inputs) != 3 || q.Inputs[2] != zp {
			continue
		}
		one, ok1 := scalar(q.Inputs[1])
		d1, d1i, ok2 := by(q.Inputs[0], "Div")
		if !ok1 || !ok2 || uses[q.Inputs[0]] != 1 || len(d1.Inputs) != 2 {
			continue
		}
		x, s := d1.Inputs[0], d1.Inputs[1]
		mx, mxi, ok := by(s, "Max")
		if !ok || len(mx.Inputs) != 2 || uses[s] != 2 {
			continue
		}
		eps, ok1 := scalar(mx.Inputs[1])
		d2, d2i, ok2 := by(mx.Inputs[0], "Div")
		if !ok1 || !ok2 || uses[mx.Inputs[0]] != 1 || len(d2.Inputs) != 2 {
			continue
		}
		c127, ok1 := scalar(d2.Inputs[1])
		r, ri, ok2 := by(d2.Inputs[0], "ReduceMax")
		if !ok1 || !ok2 || uses[d2.Inputs[0]] != 1 || len(r.Inputs) != 1 {
			continue
		}
		axes, hasAxes := r.Attrs["axes"]
		keep, hasKeep := r.Attrs["keepdims"]
		if !hasAxes || len(axes.Ints) != 1 || (hasKeep && keep.Int != 1) {
			continue
		}
		abs, ai, ok := by(r.Inputs[0], "Abs")
		if !ok || uses[r.Inputs[0]] != 1 || abs.Inputs[0] != x {
			continue
		}
		c, ci, ok := only(mm.Outputs[0], "Cast")
		if !ok {
			continue
		}
		if to, has := c.Attrs["to"]; !has || to.Int != int64(builder.Float) {
			continue
		}
		m1, m1i, ok := only(c.Outputs[0], "Mul")
		if !ok || len(m1.Inputs) != 2 || m1.Inputs[0] != c.Outputs[0] {
			continue
		}
		scales := known(m1.Inputs[1])
		if scales == nil || scales.DType != builder.Float || len(scales.Shape) != 1 {
			continue
		}
		m2, m2i, ok := only(m1.Outputs[0], "Mul")
		if !ok || len(m2.Inputs) != 2 || m2.Inputs[0] != m1.Outputs[0] || m2.Inputs[1] != s {
			continue
		}
		// s has two reads (uses[s] == 2, checked above): d1's and m2's.
		// x is defined before Abs, and nothing between Abs and the last Mul
		// reads what the fused node no longer makes: it takes the last
		// Mul's place.
		fused := onnxfile.GraphNode{Name: mm.Name + "/fused-row-int8"}
		fused.Op, fused.Domain = "RowInt8MatMul", "attnx.fused"
		fused.Inputs = []string{x, w, zp, wzp, m1.Inputs[1]}
		fused.Outputs = []string{m2.Outputs[0]}
		for _, k := range []int{ai, ri, d2i, mxi, d1i, qi, i, ci, m1i} {
			removed[k] = true
		}
		// A constant bias added to the result (a classifier's) is added
		// as each value is stored: one pass over [rows, N] less.
		if ad, adi, ok := only(m2.Outputs[0], "Add"); ok && len(ad.Inputs) == 2 {
			b := ad.Inputs[1]
			if b == m2.Outputs[0] {
				b = ad.Inputs[0]
			}
			if bt := known(b); bt != nil && bt.DType == builder.Float && len(bt.Shape) == 1 && bt.Shape[0] == scales.Shape[0] {
				fused.Op = "RowInt8MatMulAdd"
				fused.Inputs = append(fused.Inputs, b)
				fused.Outputs = []string{ad.Outputs[0]}
				removed[adi] = true
			}
		}
		replaced[m2i] = planNode{GraphNode: fused, rowInt8: &rowInt8Fusion{axis: axes.Ints[0], c127: c127, eps: eps, one: one,
			zp: float32(intsOf(zpT)[0]), matMul: mm.Name, abs: abs.Name, max: m2.Name}}
	}
	for i, n := range g.Nodes {
		switch {
		case removed[i]:
		case replaced[i].rowInt8 != nil:
			out = append(out, replaced[i])
		default:
			out = append(out, planNode{GraphNode: n})
		}
	}
	return foldLogSoftmax(fuseAttention(fuseLSTMGates(out, uses, known), uses, known), uses)
}

// foldLogSoftmax folds each LogSoftmax whose input is a classifier's
// logits into the node computing them: a Gemm, a 4-bit MatMulNBits or a
// fused rowInt8 product (with its bias), when the LogSoftmax is the
// logits' only reader (uses counts every read: g's nodes, its subgraphs'
// and its outputs). The folded node writes the log-probabilities over the
// logits, in the same
// buffer, each row right after its logits are final where the product
// allows (the Gemm's bias row): [rows, V] is made once instead of twice,
// and a row is still in cache when its three passes (maximum, sum of
// exponentials, subtraction) read it. The arithmetic is the nodes', in
// their order: bit for bit what they compute.
func foldLogSoftmax(nodes []planNode, uses map[string]int) []planNode {
	at := indexPlan(nodes, uses).at
	folded := map[int]bool{}
	for i, ls := range nodes {
		if ls.Op != "LogSoftmax" || (ls.Domain != "" && ls.Domain != "ai.onnx") || len(ls.Inputs) != 1 || len(ls.Outputs) != 1 || ls.Outputs[0] == "" {
			continue
		}
		x := ls.Inputs[0]
		j, ok := at[x]
		if !ok || uses[x] != 1 {
			continue
		}
		p := &nodes[j]
		if len(p.Outputs) != 1 || p.logSoftmax != nil {
			continue
		}
		pn := &node{GraphNode: p.GraphNode}
		if !logitsMakers[pn.opName()] && p.rowInt8 == nil {
			continue
		}
		p.logSoftmax = &foldedLogSoftmax{ls: ls.GraphNode, op: p.Op, domain: p.Domain}
		p.Op, p.Domain = p.Op+"LogSoftmax", "attnx.fused"
		p.Name += "/fused-log-softmax"
		p.Outputs = []string{ls.Outputs[0]}
		folded[i] = true
	}
	if len(folded) == 0 {
		return nodes
	}
	out := nodes[:0:0]
	for i, n := range nodes {
		if !folded[i] {
			out = append(out, n)
		}
	}
	return out
}

// planIndex indexes a plan's nodes for the fusions that work on them
// (after rowInt8's): each value's producer and its readers.
type planIndex struct {
	nodes   []planNode
	uses    map[string]int   // every read of a value (fuseNodes' count)
	at      map[string]int   // value -> the index of the node making it
	readers map[string][]int // value -> the nodes reading it
}

func indexPlan(nodes []planNode, uses map[string]int) *planIndex {
	x := &planIndex{nodes: nodes, uses: uses, at: map[string]int{}, readers: map[string][]int{}}
	for i, n := range nodes {
		for _, o := range n.Outputs {
			if o != "" {
				x.at[o] = i
			}
		}
		for _, in := range n.Inputs {
			x.readers[in] = append(x.readers[in], i)
		}
	}
	return x
}

// plain reports whether n is op of the default domain, not fused, with
// ins inputs and outs outputs.
func (x *planIndex) plain(n planNode, op string, ins, outs int) bool {
	return n.Op == op && (n.Domain == "" || n.Domain == "ai.onnx") && n.rowInt8 == nil && n.logSoftmax == nil &&
		n.lstmGates == nil && n.attention == nil && len(n.Inputs) == ins && len(n.Outputs) == outs
}

// only is the index of the one node reading value when it is a plain op
// (with ins inputs and one output) and nothing else reads value.
func (x *planIndex) only(value, op string, ins int) (int, bool) {
	if x.uses[value] != 1 || len(x.readers[value]) != 1 {
		return 0, false
	}
	i := x.readers[value][0]
	return i, x.plain(x.nodes[i], op, ins, 1)
}

// from is the index of the node making value when it is a plain op (with
// ins inputs and one output) and nothing else reads value.
func (x *planIndex) from(value, op string, ins int) (int, bool) {
	i, ok := x.at[value]
	if !ok || x.uses[value] != 1 {
		return 0, false
	}
	return i, x.plain(x.nodes[i], op, ins, 1)
}

// compileNode compiles one node of a plan: a file's node by its
// operator's compile function, a fused one by its own.
func compileNode(n *node, pn planNode) (opFunc, error) {
	if pn.lstmGates != nil {
		return compileLSTMGates(n, pn.lstmGates)
	}
	if pn.attention != nil {
		return compileAttention(n, pn.attention)
	}
	if pn.logSoftmax == nil {
		if pn.rowInt8 != nil {
			return compileRowInt8(n, pn.rowInt8)
		}
		return compile(n)
	}
	fl := pn.logSoftmax
	ls := &node{GraphNode: fl.ls, c: n.c}
	ax := softmaxAxisOf(ls)
	var fn opFunc
	var err error
	switch {
	case pn.rowInt8 != nil:
		fn, err = compileRowInt8(n, pn.rowInt8)
	case fl.op == "Gemm": // its bias and the log-softmax row by row
		return gemmOp(n, &ax)
	default: // the product's own compile function, on the node as it was
		p := &node{GraphNode: n.GraphNode, c: n.c, consts: n.consts}
		p.Op, p.Domain = fl.op, fl.domain
		fn, err = compile(p)
		for j, prep := range p.prepared {
			if prep {
				n.prepare(j)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return func(f *frame, in, out []*Tensor) error {
		if err := fn(f, in, out); err != nil {
			return err
		}
		if err := ax.apply(f, out[0], out[0], true); err != nil {
			return ls.errorf("folded into %s: %v", nodeName(pn.Name), err)
		}
		return nil
	}, nil
}

// compileRowInt8 compiles a fused rowInt8 node: its product is
// MatMulInteger's own kernel, prepared from the same constants.
func compileRowInt8(n *node, fz *rowInt8Fusion) (opFunc, error) {
	mm := &node{c: n.c, consts: []*Tensor{nil, n.consts[1], n.consts[2], n.consts[3]}}
	mm.Name, mm.Op = fz.matMul, "MatMulInteger"
	mm.Inputs = []string{"", n.Inputs[1], n.Inputs[2], n.Inputs[3]}
	if n.Inputs[3] == "" {
		mm.Inputs, mm.consts = mm.Inputs[:3], mm.consts[:3]
	}
	if qp := quantProductOf(n); qp != nil {
		return runQuantProduct(qp, fz), nil
	}
	product, err := registry["MatMulInteger"](mm)
	if err != nil {
		return nil, err
	}
	for j, p := range mm.prepared {
		if p {
			n.prepare(j)
		}
	}
	scales := get[float32](n.consts[4])
	var bias []float32
	if n.has(5) {
		if n.consts[5] == nil {
			return nil, n.errorf("the fused bias %q is not a constant", n.Inputs[5])
		}
		bias = get[float32](n.consts[5])
	}
	return func(f *frame, in, out []*Tensor) error {
		x := in[0]
		if x.DType != builder.Float || len(x.Shape) == 0 {
			return fmt.Errorf("x is %v %v; float32 of rank 1 or more expected", x.DType, x.Shape)
		}
		rank := int64(len(x.Shape))
		if a := fz.axis; a != rank-1 && a != -1 {
			return fmt.Errorf("the fused %s...%s reduces axis %d of a rank-%d x; the last expected", nodeName(fz.abs), nodeName(fz.max), a, rank)
		}
		K := int(x.Shape[rank-1])
		xs := get[float32](x)
		rows := 0
		if K > 0 {
			rows = len(xs) / K
		}
		qt, err := f.r.alloc(builder.Uint8, cloneShape(x.Shape))
		if err != nil {
			return err
		}
		xq := get[uint8](qt)
		rowScale := make([]float32, rows)
		for r := range rows {
			rowScale[r] = fz.quantizeRow(xs[r*K:(r+1)*K], xq[r*K:(r+1)*K])
		}
		res := make([]*Tensor, 1)
		if err := product(f, []*Tensor{qt, in[1], in[2], in[3]}, res); err != nil {
			return err
		}
		acc := get[int32](res[0])
		N := len(scales)
		if rows > 0 && len(acc) != rows*N {
			return fmt.Errorf("the product has %d values; %d rows of the %d scales expected", len(acc), rows, N)
		}
		y := f.r.f32(cloneShape(res[0].Shape))
		ys := get[float32](y)
		for r := range rows {
			kernel.ScaleInt32(acc[r*N:(r+1)*N], scales, rowScale[r], ys[r*N:(r+1)*N])
			if bias != nil {
				kernel.Arith(kernel.Add, ys[r*N:(r+1)*N], bias, ys[r*N:(r+1)*N])
			}
		}
		out[0] = y
		return nil
	}, nil
}

// quantizeRow quantizes one row of x into q as the nodes do and returns
// its scale: max(ReduceMax(Abs(row)) / 127, eps), NaN when the row holds
// one.
func (fz *rowInt8Fusion) quantizeRow(row []float32, q []uint8) float32 {
	s := max(kernel.AbsMax(row)/fz.c127, fz.eps)
	kernel.QuantizeU8(row, s, fz.one, fz.zp, q)
	return s
}

// quantProductOf prepares the fused node's product for the 8-bit kernels
// (VNNI, or AVX2 with the activations' zero point 128) when the CPU has
// them and its constants allow: W [K, N] constant with a
// constant scalar zero point (or none), W less it within int8, and one
// scale per column. It returns nil otherwise (MatMulInteger's own kernels
// then serve).
func quantProductOf(n *node) *kernel.QuantProduct {
	w, za, sc := n.consts[1], n.consts[2], n.consts[4]
	if w == nil || len(w.Shape) != 2 || za == nil || za.Len() != 1 || sc == nil || sc.DType != builder.Float {
		return nil
	}
	if !kernel.QuantProductFast(intsOf(za)[0]) {
		return nil
	}
	var wz int32
	if n.has(3) {
		z := n.consts[3]
		if z == nil || z.Len() != 1 {
			return nil
		}
		wz = intsOf(z)[0]
	}
	K, N := int(w.Shape[0]), int(w.Shape[1])
	if len(get[float32](sc)) != N {
		return nil
	}
	// W transposed: one row per output column, read as it is stored (no
	// int32 copy of the whole matrix at load time).
	var at func(i int) int32
	switch d := w.Data.(type) {
	case []int8:
		at = func(i int) int32 { return int32(d[i]) }
	case []uint8:
		at = func(i int) int32 { return int32(d[i]) }
	default:
		return nil
	}
	rows := make([]int8, N*K)
	for k := 0; k < K; k++ {
		for j := 0; j < N; j++ {
			v := at(k*N+j) - wz
			if v < -128 || v > 127 {
				return nil
			}
			rows[j*K+k] = int8(v)
		}
	}
	var bias []float32
	if n.has(5) {
		bias = get[float32](n.consts[5])
	}
	n.prepare(1)
	return kernel.NewQuantProduct(rows, N, K, intsOf(za)[0], get[float32](sc), bias)
}

// runQuantProduct is the fused node's step on a QuantProduct: each row of
// x quantized into a scratch buffer laid out for the kernel, then one
// pass computing the dequantized product.
func runQuantProduct(qp *kernel.QuantProduct, fz *rowInt8Fusion) opFunc {
	type scratch struct {
		xq       []uint8
		rowScale []float32
	}
	var pool sync.Pool
	return func(f *frame, in, out []*Tensor) error {
		x := in[0]
		if x.DType != builder.Float || len(x.Shape) == 0 {
			return fmt.Errorf("x is %v %v; float32 of rank 1 or more expected", x.DType, x.Shape)
		}
		rank := len(x.Shape)
		if a := fz.axis; a != int64(rank-1) && a != -1 {
			return fmt.Errorf("the fused %s...%s reduces axis %d of a rank-%d x; the last expected", nodeName(fz.abs), nodeName(fz.max), a, rank)
		}
		K := int(x.Shape[rank-1])
		if K != qp.K {
			return fmt.Errorf("x is %v; its last dimension must be the weights' %d (MatMulInteger %s)", x.Shape, qp.K, nodeName(fz.matMul))
		}
		xs := get[float32](x)
		rows := 0
		if K > 0 {
			rows = len(xs) / K
		} else {
			rows = numel(x.Shape[:rank-1])
		}
		stride := qp.Stride()
		sp, _ := pool.Get().(*scratch)
		if sp == nil {
			sp = &scratch{}
		}
		defer pool.Put(sp)
		if len(sp.xq) < rows*stride {
			sp.xq = make([]uint8, rows*stride)
		}
		if len(sp.rowScale) < rows {
			sp.rowScale = make([]float32, rows)
		}
		// One thread: splitting the rows among the threads (an extra
		// meeting of the threads before the product) measured no faster
		// in one process at 150 rows (4.79 against 4.73 ms and 4.80
		// against 4.86 a decoder step).
		for r := range rows {
			sp.rowScale[r] = fz.quantizeRow(xs[r*K:(r+1)*K], sp.xq[r*stride:r*stride+K])
		}
		shape := cloneShape(x.Shape)
		shape[rank-1] = int64(qp.N)
		y := f.r.f32(shape)
		if rows > 0 {
			qp.Run(rows, sp.xq, stride, sp.rowScale[:rows], get[float32](y), qp.N, f.r.threads)
		}
		out[0] = y
		return nil
	}
}
