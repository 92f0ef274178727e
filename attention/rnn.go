package attention

import (
	"fmt"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/ops"
)

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
func (s *modelGraph) rnnStack(prefix string, layers []RNNLayer, x *builder.Value, init rnnState, seqLens *builder.Value, needY bool) (*builder.Value, rnnState) {
	L, cell := len(layers), s.cfg.Cell
	h0s, c0s := init.layers(L)
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
