package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

// stackShape is the shape of one side's stacked recurrent layers: n
// layers of dirs directions and hidden size per direction, the first
// taking in0 inputs, the others dirs*hidden.
type stackShape struct {
	n, dirs, hidden, in0 int
	// field names n in attnx.json.
	field string
}

// encoderStack and decoderStack are the shapes cfg implies.
func (c Config) encoderStack() stackShape {
	c = c.WithDefaults()
	field := "num_layers"
	if c.EncoderLayers > 0 {
		field = "encoder_layers"
	}
	return stackShape{c.EncLayers(), c.Directions(), c.EncHidden(), c.Embedding, field}
}

// checkLayers checks converted layers against their shape and cfg's
// cell.
func checkLayers(part string, layers []RNNLayer, cfg Config, sh stackShape) error {
	if len(layers) != sh.n {
		return fmt.Errorf("%s has %d recurrent layers, expected %s %d", part, len(layers), sh.field, sh.n)
	}
	G, H, D := int64(cfg.Cell.gates()), int64(sh.hidden), int64(sh.dirs)
	for k, l := range layers {
		in := D * H
		if k == 0 {
			in = int64(sh.in0)
		}
		for _, p := range []struct {
			name string
			t    *builder.Tensor
			dims []int64
		}{{"W", l.W, []int64{D, G * H, in}}, {"R", l.R, []int64{D, G * H, H}}, {"B", l.B, []int64{D, 2 * G * H}}} {
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
// returns the top layer's Y ([seq, batch, D*H] with the directions
// concatenated, or [seq, D, batch, H] when keepDirs; nil unless needY)
// and the final state ([L*D, batch, H] each, PyTorch's order). Layers
// whose weights hold two directions run bidirectionally. init holds the
// initial state (zero when its h is nil); seqLens is int32 [batch] or nil.
func (s *modelGraph) rnnStack(prefix string, layers []RNNLayer, x *builder.Value, init rnnState, seqLens *builder.Value, needY, keepDirs bool) (*builder.Value, rnnState) {
	L, cell := len(layers), s.cfg.Cell
	h0s, c0s := init.layers(L)
	var hs, cs []*builder.Value
	for k, layer := range layers {
		name := func(p string) string { return fmt.Sprintf("%s.%s.l%d.%s", prefix, cell, k, p) }
		bi := layer.W != nil && len(layer.W.Dims) == 3 && layer.W.Dims[0] == 2
		opts := ops.RNNOpts{B: s.w.add(name("B"), layer.B), SequenceLens: seqLens, OmitY: k == L-1 && !needY}
		if bi {
			opts.Direction = "bidirectional"
		}
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
		switch {
		case opts.OmitY:
		case !bi:
			// Y is [seq, 1, batch, H]: drop the direction axis.
			x = ops.Squeeze(y, s.c.ints(1))
		case k == L-1 && keepDirs:
			x = y
		default:
			// Y is [seq, 2, batch, H]: the directions side by side,
			// [seq, batch, 2H], as PyTorch's output has them.
			t := ops.Transpose(y, []int64{0, 2, 1, 3})
			x = ops.Reshape(t, s.c.ints(0, 0, -1), ops.ReshapeOpts{})
		}
	}
	if !needY {
		x = nil
	}
	return x, stackLayers(hs, cs)
}

// layers splits a state [L, batch, H] into its L layers' states, each
// [1, batch, H]; nil when the state is (h is nil: zero).
func (st rnnState) layers(L int) (hs, cs []*builder.Value) {
	switch {
	case st.h != nil && L > 1:
		hs = ops.Split(st.h, nil, 0, L)
		if st.c != nil {
			cs = ops.Split(st.c, nil, 0, L)
		}
	case st.h != nil:
		hs, cs = []*builder.Value{st.h}, []*builder.Value{st.c}
	}
	return hs, cs
}

// stackLayers is the state [L, batch, H] of the layers' states hs (and cs,
// empty for GRU), each [1, batch, H].
func stackLayers(hs, cs []*builder.Value) rnnState {
	var st rnnState
	if len(hs) == 1 {
		st.h = hs[0]
	} else {
		st.h = ops.Concat(0, hs...)
	}
	switch {
	case len(cs) == 1:
		st.c = cs[0]
	case len(cs) > 1:
		st.c = ops.Concat(0, cs...)
	}
	return st
}
