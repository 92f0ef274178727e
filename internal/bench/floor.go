package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/attnx/attnx/attention"
	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
	"github.com/attnx/attnx/ops"
)

// floorModel builds the floor: the decoder step's unavoidable arithmetic,
// approximated by one LSTM cell (input 2H for Bahdanau, H for Luong) and one
// classifier product of the classifier's size, [B, F] x [F, V] plus the
// bias, F = H (Bahdanau) or 2H (Luong), with nothing else: no embedding,
// attention, log-softmax or argmax. The classifier's features are a graph
// input so that the two parts are independent.
func floorModel(arch attention.Arch, H, V int, seed uint64) (*builder.Model, error) {
	in, F := H, 2*H
	if arch == attention.Bahdanau {
		in, F = 2*H, H
	}
	rng := rand.New(rand.NewPCG(seed, 11))
	rnd := func(dims ...int64) *builder.Tensor {
		v := make([]float32, builder.NumElements(dims))
		for i := range v {
			v[i] = float32(rng.Float64()*0.1 - 0.05)
		}
		return builder.FloatTensor(dims, v)
	}
	h := int64(H)
	g := builder.New("attnx_floor")
	x := g.Input("x", builder.Float, builder.Dims(1, "batch", in))
	h0 := g.Input("h", builder.Float, builder.Dims(1, "batch", H))
	c0 := g.Input("c", builder.Float, builder.Dims(1, "batch", H))
	f := g.Input("features", builder.Float, builder.Dims("batch", F))
	_, yh, yc := ops.LSTM(x, g.Init("W", rnd(1, 4*h, int64(in))), g.Init("R", rnd(1, 4*h, h)),
		ops.LSTMOpts{RNNOpts: ops.RNNOpts{B: g.Init("B", rnd(1, 8*h)), InitialH: h0, OmitY: true}, InitialC: c0})
	logits := ops.Gemm(f, g.Init("Wcls", rnd(int64(V), int64(F))), g.Init("bcls", rnd(int64(V))), ops.GemmOpts{TransB: true})
	g.Output("logits", logits)
	g.Output("next_h", yh)
	g.Output("next_c", yc)
	m := builder.NewModel(g)
	if err := m.Check(); err != nil {
		return nil, fmt.Errorf("bench: floor graph: %w", err)
	}
	return m, nil
}

// floorLoop runs the floor graph step after step with bound, reused tensors
// and the LSTM state ping-ponging, like the step loop.
type floorLoop struct {
	binds [2]*onnxrun.Binding
}

func newFloorLoop(sess *onnxrun.Session, arch attention.Arch, B, H, V int) (fl *floorLoop, err error) {
	fl = &floorLoop{}
	defer func() {
		if err != nil {
			fl.close()
			fl = nil
		}
	}()
	in, F := H, 2*H
	if arch == attention.Bahdanau {
		in, F = 2*H, H
	}
	f32 := func(dims ...int64) *onnxrun.Tensor {
		n := 1
		for _, d := range dims {
			n *= int(d)
		}
		d := make([]float32, n)
		for i := range d {
			d[i] = 0.01 * float32(i%7)
		}
		return onnxrun.NewFloat32(dims, d)
	}
	b, h := int64(B), int64(H)
	x, feats, logits := f32(1, b, int64(in)), f32(b, int64(F)), f32(b, int64(V))
	hs := [2]*onnxrun.Tensor{f32(1, b, h), f32(1, b, h)}
	cs := [2]*onnxrun.Tensor{f32(1, b, h), f32(1, b, h)}
	for p := 0; p < 2; p++ {
		bd, err := sess.NewBinding()
		if err != nil {
			return nil, err
		}
		fl.binds[p] = bd
		for _, e := range []error{
			bd.BindInputTensor("x", x), bd.BindInputTensor("h", hs[p]), bd.BindInputTensor("c", cs[p]), bd.BindInputTensor("features", feats),
			bd.BindOutputTensor("logits", logits), bd.BindOutputTensor("next_h", hs[1-p]), bd.BindOutputTensor("next_c", cs[1-p]),
		} {
			if e != nil {
				return nil, fmt.Errorf("bench: binding the floor graph: %w", e)
			}
		}
	}
	return fl, nil
}

func (fl *floorLoop) run(steps int) (time.Duration, error) {
	t0 := time.Now()
	for s := 0; s < steps; s++ {
		if err := fl.binds[s&1].Run(); err != nil {
			return 0, fmt.Errorf("bench: floor step %d: %w", s, err)
		}
	}
	return time.Since(t0), nil
}

func (fl *floorLoop) close() {
	for _, b := range fl.binds {
		if b != nil {
			b.Close()
		}
	}
}

// openFloor builds the floor graph and opens it with opt.
func openFloor(arch attention.Arch, H, V int, opt onnxrun.Options) (*onnxrun.Session, error) {
	m, err := floorModel(arch, H, V, 5)
	if err != nil {
		return nil, err
	}
	b, err := onnxfile.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("bench: floor graph: %w", err)
	}
	return onnxrun.OpenBytes(b, opt)
}
