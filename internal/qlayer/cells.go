package qlayer

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// CellOpts chooses how a recurrent cell's products are laid out.
type CellOpts struct {
	// TwoProducts computes x · Wᵀ and h · Rᵀ as two products and adds
	// them, instead of one product of the concatenation [x ; h] with the
	// stacked weights.
	TwoProducts bool
}

// RNNWeights is one direction of an ONNX LSTM or GRU layer: W [G*H, In],
// R [G*H, H] and B [2*G*H] (Wb then Rb), G = 4 gates (i, o, f, c) for LSTM,
// 3 (z, r, h) for GRU, row-major.
type RNNWeights struct {
	W, R, B    []float32
	In, Hidden int
}

func (w RNNWeights) check(gates int) error {
	h, in := w.Hidden, w.In
	if h <= 0 || in <= 0 || len(w.W) != gates*h*in || len(w.R) != gates*h*h || len(w.B) != 2*gates*h {
		return fmt.Errorf("W, R, B have %d, %d, %d values; want %d, %d, %d for %d gates, input %d, hidden %d",
			len(w.W), len(w.R), len(w.B), gates*h*in, gates*h*h, 2*gates*h, gates, in, h)
	}
	return nil
}

// rows returns rows [gate*H, (gate+1)*H) of m (cols wide).
func rows(m []float32, gate, h, cols int) []float32 { return m[gate*h*cols : (gate+1)*h*cols] }

// stack builds the weight of one product of [x ; h]: for each (gate, part)
// of blocks, H rows whose first In columns come from W's gate (or zeros)
// and last H from R's gate (or zeros), and the matching bias.
type stack struct {
	w          RNNWeights
	rowsW, b   []float32
	useX, useH bool
}

// add appends the H rows of output gate block: W's gate wg (when useX)
// next to R's gate rg (when useH); the bias is the sum of the biases used.
func (s *stack) add(wg, rg int, useX, useH bool, gates int) {
	h, in := s.w.Hidden, s.w.In
	wb, rb := s.w.B[:gates*h], s.w.B[gates*h:]
	for u := 0; u < h; u++ {
		row := make([]float32, in+h)
		bias := float32(0)
		if useX {
			copy(row[:in], s.w.W[(wg*h+u)*in:(wg*h+u+1)*in])
			bias += wb[wg*h+u]
		}
		if useH {
			copy(row[in:], s.w.R[(rg*h+u)*h:(rg*h+u+1)*h])
			bias += rb[rg*h+u]
		}
		s.rowsW = append(s.rowsW, row...)
		s.b = append(s.b, bias)
	}
}

func (s *stack) layer() Layer {
	return Layer{W: s.rowsW, B: s.b, Out: len(s.b), In: s.w.In + s.w.Hidden}
}

// gatherGates returns the rows of m (cols wide) and of the bias vector bias
// for the given gates, in that order, each H rows.
func gatherGates(m, bias []float32, order []int, h, cols int) Layer {
	var w, b []float32
	for _, g := range order {
		w = append(w, rows(m, g, h, cols)...)
		if bias != nil {
			b = append(b, bias[g*h:(g+1)*h]...)
		}
	}
	return Layer{W: w, B: b, Out: len(order) * h, In: cols}
}

// splitLast splits v along its last axis into pieces of the given sizes.
func splitLast(g *builder.Graph, name string, v *builder.Value, sizes ...int64) []*builder.Value {
	return ops.Split(v, g.Init(name, builder.Int64Tensor([]int64{int64(len(sizes))}, sizes)), -1, len(sizes))
}

// LSTMCell adds one step of an ONNX LSTM layer (default activations, no
// peepholes), computed as products in scheme s plus elementwise gates. x is
// [..., In], h and c [..., Hidden] (the same leading dimensions: [batch, .]
// or [1, batch, .], as the LSTM operator's states); it returns the next h
// and c. Initializers go into g, named name.*.
func LSTMCell(g *builder.Graph, name string, x, h, c *builder.Value, w RNNWeights, s Scheme, o CellOpts) (h2, c2 *builder.Value, bytes int) {
	if err := w.check(4); err != nil {
		g.Fail(fmt.Errorf("qlayer: %s: LSTM cell: %w", name, err))
		return ops.Identity(h), ops.Identity(c), 0
	}
	H := int64(w.Hidden)
	// Products in the order i, f, o (sigmoid) then c (tanh); ONNX's blocks
	// are i, o, f, c.
	order := []int{0, 2, 1, 3}
	var pre *builder.Value
	if o.TwoProducts {
		gx := Linear(g, name+".x", x, gatherGates(w.W, addHalves(w.B, 4*w.Hidden), order, w.Hidden, w.In), s)
		gh := Linear(g, name+".h", h, gatherGates(w.R, nil, order, w.Hidden, w.Hidden), s)
		pre, bytes = ops.Add(gx.Y, gh.Y), gx.Bytes+gh.Bytes
	} else {
		st := &stack{w: w}
		for _, gate := range order {
			st.add(gate, gate, true, true, 4)
		}
		b := Linear(g, name, ops.Concat(-1, x, h), st.layer(), s)
		pre, bytes = b.Y, b.Bytes
	}
	parts := splitLast(g, name+".split", pre, 3*H, H)
	ifo := splitLast(g, name+".split_ifo", ops.Sigmoid(parts[0]), H, H, H)
	c2 = ops.Add(ops.Mul(ifo[1], c), ops.Mul(ifo[0], ops.Tanh(parts[1])))
	h2 = ops.Mul(ifo[2], ops.Tanh(c2))
	return h2, c2, bytes
}

// GRUCell adds one step of an ONNX GRU layer with linear_before_reset = 1
// (PyTorch's GRU), computed as products in scheme s plus elementwise gates.
// x is [..., In] and h [..., Hidden]; it returns the next h. With one
// product, [x ; h] is multiplied by a stacked weight whose candidate gate is
// split in an x half and an h half (a quarter of it zeros), because the
// reset gate multiplies only h's part.
func GRUCell(g *builder.Graph, name string, x, h *builder.Value, w RNNWeights, s Scheme, o CellOpts) (h2 *builder.Value, bytes int) {
	if err := w.check(3); err != nil {
		g.Fail(fmt.Errorf("qlayer: %s: GRU cell: %w", name, err))
		return ops.Identity(h), 0
	}
	H := int64(w.Hidden)
	var zr, nx, nh *builder.Value
	if o.TwoProducts {
		gx := Linear(g, name+".x", x, Layer{W: w.W, B: w.B[:3*w.Hidden], Out: 3 * w.Hidden, In: w.In}, s)
		gh := Linear(g, name+".h", h, Layer{W: w.R, B: w.B[3*w.Hidden:], Out: 3 * w.Hidden, In: w.Hidden}, s)
		px, ph := splitLast(g, name+".split_x", gx.Y, 2*H, H), splitLast(g, name+".split_h", gh.Y, 2*H, H)
		zr, nx, nh, bytes = ops.Add(px[0], ph[0]), px[1], ph[1], gx.Bytes+gh.Bytes
	} else {
		st := &stack{w: w}
		st.add(0, 0, true, true, 3) // z
		st.add(1, 1, true, true, 3) // r
		st.add(2, 2, true, false, 3)
		st.add(2, 2, false, true, 3)
		b := Linear(g, name, ops.Concat(-1, x, h), st.layer(), s)
		parts := splitLast(g, name+".split", b.Y, 2*H, H, H)
		zr, nx, nh, bytes = parts[0], parts[1], parts[2], b.Bytes
	}
	zrs := splitLast(g, name+".split_zr", ops.Sigmoid(zr), H, H)
	n := ops.Tanh(ops.Add(nx, ops.Mul(zrs[1], nh)))
	// (1 - z) * n + z * h = n + z * (h - n)
	return ops.Add(n, ops.Mul(zrs[0], ops.Sub(h, n))), bytes
}

// addHalves returns b[:n] + b[n:2n] (the W and R biases summed).
func addHalves(b []float32, n int) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = b[i] + b[n+i]
	}
	return out
}
