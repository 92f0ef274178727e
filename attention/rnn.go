package attention

import (
	"fmt"
	"slices"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// RNNLayer holds one recurrent layer's weights in ONNX's layout: W is
// [1, G*H, input], R is [1, G*H, H] and B is [1, 2*G*H] (input biases, then
// recurrent biases), with G = 4 gate blocks ordered i, o, f, c for LSTM and
// G = 3 ordered z, r, h for GRU.
type RNNLayer struct {
	W, R, B *builder.Tensor
}

// onnxGateOrder gives, for each of ONNX's gate blocks in order, the index
// of the same gate in PyTorch's weights.
//
// LSTM: PyTorch stacks i, f, g, o; ONNX i, o, f, c (c = g).
// GRU: PyTorch stacks r, z, n; ONNX z, r, h (h = n). PyTorch applies the
// reset gate after the recurrent product, n = tanh(W_in x + b_in + r *
// (W_hn h + b_hn)): ONNX GRU with linear_before_reset = 1.
func onnxGateOrder(c Cell) []int {
	if c == GRU {
		return []int{1, 0, 2}
	}
	return []int{0, 3, 1, 2}
}

// reorderGates appends to dst the float32 parameter p (G gate blocks of
// hidden rows of cols values each, in PyTorch's order) with its blocks in
// ONNX's order. The bytes are copied as they are, nothing decoded.
func reorderGates(dst, p []byte, c Cell, hidden, cols int) []byte {
	block := 4 * hidden * cols
	for _, src := range onnxGateOrder(c) {
		dst = append(dst, p[src*block:(src+1)*block]...)
	}
	return dst
}

// ConvertRNNLayer converts one PyTorch recurrent layer of the given cell
// and hidden size, float32 weight_ih [G*H, in], weight_hh [G*H, H], bias_ih
// and bias_hh [G*H], into ONNX's W, R and B (see RNNLayer). It is the one
// place where attnx repacks recurrent weights. The result does not share
// memory with its inputs.
func ConvertRNNLayer(cell Cell, hidden int, wih, whh, bih, bhh *builder.Tensor) (RNNLayer, error) {
	if _, err := ParseCell(string(cell)); err != nil {
		return RNNLayer{}, err
	}
	if hidden < 1 {
		return RNNLayer{}, fmt.Errorf("hidden size %d: must be at least 1", hidden)
	}
	G, H := int64(cell.gates()), int64(hidden)
	in := int64(-1)
	if wih != nil && len(wih.Dims) == 2 {
		in = wih.Dims[1]
	}
	for _, p := range []struct {
		name string
		t    *builder.Tensor
		dims []int64
	}{
		{"weight_ih", wih, []int64{G * H, in}},
		{"weight_hh", whh, []int64{G * H, H}},
		{"bias_ih", bih, []int64{G * H}},
		{"bias_hh", bhh, []int64{G * H}},
	} {
		if err := checkFloat(p.name, p.t, p.dims); err != nil {
			return RNNLayer{}, fmt.Errorf("%s layer: %w", cell, err)
		}
	}
	if in < 1 {
		return RNNLayer{}, fmt.Errorf("%s layer: weight_ih has %d input columns, expected at least 1", cell, in)
	}
	b := reorderGates(make([]byte, 0, 2*len(bih.Raw)), bih.Raw, cell, hidden, 1)
	b = reorderGates(b, bhh.Raw, cell, hidden, 1)
	return RNNLayer{
		W: &builder.Tensor{DType: builder.Float, Dims: []int64{1, G * H, in}, Raw: reorderGates(make([]byte, 0, len(wih.Raw)), wih.Raw, cell, hidden, int(in))},
		R: &builder.Tensor{DType: builder.Float, Dims: []int64{1, G * H, H}, Raw: reorderGates(make([]byte, 0, len(whh.Raw)), whh.Raw, cell, hidden, hidden)},
		B: &builder.Tensor{DType: builder.Float, Dims: []int64{1, 2 * G * H}, Raw: b},
	}, nil
}

// checkFloat checks that t is a float32 tensor of the given dims whose data
// has the size they imply.
func checkFloat(name string, t *builder.Tensor, dims []int64) error {
	if t == nil {
		return fmt.Errorf("%s is missing (expected float32 %v)", name, dims)
	}
	if t.DType != builder.Float {
		return fmt.Errorf("%s: dtype %v, expected float32", name, t.DType)
	}
	if !slices.Equal(t.Dims, dims) {
		return fmt.Errorf("%s: shape %v, expected %v", name, t.Dims, dims)
	}
	if n := builder.NumElements(dims); int64(len(t.Raw)) != 4*n {
		return fmt.Errorf("%s: %d bytes of float32 data for shape %v, expected %d", name, len(t.Raw), dims, 4*n)
	}
	return nil
}

// checkLayers checks converted layers against cfg: one per layer, the
// first taking in0 inputs and the others H.
func checkLayers(part string, layers []RNNLayer, cfg Config, in0 int) error {
	if len(layers) != cfg.Layers {
		return fmt.Errorf("%s has %d recurrent layers, expected num_layers %d", part, len(layers), cfg.Layers)
	}
	G, H := int64(cfg.Cell.gates()), int64(cfg.Hidden)
	for k, l := range layers {
		in := H
		if k == 0 {
			in = int64(in0)
		}
		for _, p := range []struct {
			name string
			t    *builder.Tensor
			dims []int64
		}{{"W", l.W, []int64{1, G * H, in}}, {"R", l.R, []int64{1, G * H, H}}, {"B", l.B, []int64{1, 2 * G * H}}} {
			if err := checkFloat(fmt.Sprintf("%s layer %d %s", part, k, p.name), p.t, p.dims); err != nil {
				return fmt.Errorf("%w (%s cell)", err, cfg.Cell)
			}
		}
	}
	return nil
}

// rnnState is the recurrent state between steps: h, and c for LSTM (nil
// for GRU); each [L, batch, H].
type rnnState struct{ h, c *builder.Value }

// rnnStack runs the stacked recurrent layers over x ([seq, batch, in]) and
// returns the top layer's Y ([seq, batch, H], nil unless needY) and the
// final state. init holds the initial state (zero when its h is nil);
// seqLens is int32 [batch] or nil.
func (s *stepGraph) rnnStack(prefix string, layers []RNNLayer, x *builder.Value, init rnnState, seqLens *builder.Value, needY bool) (*builder.Value, rnnState) {
	L, cell := len(layers), s.cfg.Cell
	var h0s, c0s []*builder.Value
	switch {
	case init.h != nil && L > 1:
		h0s = ops.Split(init.h, nil, 0, L)
		if init.c != nil {
			c0s = ops.Split(init.c, nil, 0, L)
		}
	case init.h != nil:
		h0s, c0s = []*builder.Value{init.h}, []*builder.Value{init.c}
	}
	var hs, cs []*builder.Value
	for k, layer := range layers {
		name := func(p string) string { return fmt.Sprintf("%s.%s.l%d.%s", prefix, cell, k, p) }
		opts := ops.RNNOpts{B: s.w.add(name("B"), layer.B), SequenceLens: seqLens, OmitY: k == L-1 && !needY}
		if h0s != nil {
			opts.InitialH = h0s[k]
		}
		W, R := s.w.add(name("W"), layer.W), s.w.add(name("R"), layer.R)
		var y *builder.Value
		if cell == GRU {
			var yh *builder.Value
			y, yh = ops.GRU(x, W, R, ops.GRUOpts{RNNOpts: opts, LinearBeforeReset: true})
			hs = append(hs, yh)
		} else {
			lo := ops.LSTMOpts{RNNOpts: opts}
			if c0s != nil {
				lo.InitialC = c0s[k]
			}
			var yh, yc *builder.Value
			y, yh, yc = ops.LSTM(x, W, R, lo)
			hs, cs = append(hs, yh), append(cs, yc)
		}
		if !opts.OmitY {
			// Y is [seq, 1, batch, H]: drop the direction axis.
			x = ops.Squeeze(y, s.c.ints(1))
		}
	}
	var final rnnState
	if L == 1 {
		final.h = hs[0]
	} else {
		final.h = ops.Concat(0, hs...)
	}
	if cell.HasCellState() {
		if L == 1 {
			final.c = cs[0]
		} else {
			final.c = ops.Concat(0, cs...)
		}
	}
	if !needY {
		x = nil
	}
	return x, final
}
