package onnxeval

import (
	"fmt"
	"unsafe"

	"github.com/attnx/attnx/builder"
)

func init() {
	register("Loop", func(n *node) (opFunc, error) {
		body := n.body
		if body == nil {
			return nil, n.errorf("Loop without a body")
		}
		nCarried := len(n.Inputs) - 2
		if nCarried < 0 {
			return nil, n.errorf("Loop needs the inputs M and cond (either may be empty)")
		}
		if len(body.inputs) != 2+nCarried {
			return nil, n.errorf("the body takes %d inputs; the Loop passes %d", len(body.inputs), 2+nCarried)
		}
		nScan := len(body.outputs) - 1 - nCarried
		if nScan < 0 || len(n.Outputs) > nCarried+nScan {
			return nil, n.errorf("the body returns %d outputs for %d carried values and %d Loop outputs", len(body.outputs), nCarried, len(n.Outputs))
		}
		return func(f *frame, in, out []*Tensor) error {
			trips := int64(1) << 62
			if in[0] != nil {
				m, err := ints(in[0], "M")
				if err != nil || len(m) != 1 {
					return fmt.Errorf("M must be one int64")
				}
				trips = m[0]
			}
			cond := true
			if in[1] != nil {
				if in[1].DType != builder.Bool || in[1].Len() != 1 {
					return fmt.Errorf("cond is %v, want one bool", in[1])
				}
				cond = get[bool](in[1])[0]
			}
			carried := append([]*Tensor(nil), in[2:]...)
			scans := make([][]*Tensor, nScan)
			bodyIn := make([]*Tensor, 2+nCarried)
			for i := int64(0); i < trips && cond; i++ {
				if i == f.r.maxLoop {
					return &LimitError{What: fmt.Sprintf("more than %d iterations (onnxeval.Options.MaxLoopIterations); the trip count is %s", f.r.maxLoop, tripText(in[0], trips))}
				}
				if err := f.r.ctx.Err(); err != nil {
					return fmt.Errorf("stopped at iteration %d: %w", i, err)
				}
				bodyIn[0] = New([]int64{}, []int64{i})
				bodyIn[1] = New([]int64{}, []bool{cond})
				copy(bodyIn[2:], carried)
				outs, err := body.run(f.r, bodyIn, f)
				if err != nil {
					return fmt.Errorf("iteration %d: %w", i, err)
				}
				c := outs[0]
				if c.DType != builder.Bool || c.Len() != 1 {
					return fmt.Errorf("iteration %d: the body's condition is %v, want one bool", i, c)
				}
				cond = get[bool](c)[0]
				prev := append(bodyIn[:0:0], carried...)
				copy(carried, outs[1:1+nCarried])
				for j := range scans {
					scans[j] = append(scans[j], outs[1+nCarried+j])
				}
				if i > 0 {
					// The previous iteration's carried values are dead now,
					// unless this one's carried values, a scan output (of
					// any iteration) or a value of the enclosing graph (a
					// body may return one it captured) shares their storage.
					releaseDead(f.r, prev, append([][]*Tensor{carried, f.env}, scans...)...)
				}
			}
			defer func() {
				// What the Loop returns are copies: its own values go back,
				// not the enclosing graph's.
				all := carried // the Loop's inputs themselves when it never ran: in[2:] keeps them
				for _, sc := range scans {
					all = append(all, sc...)
				}
				releaseDead(f.r, all, in[2:], f.env)
			}()
			for j := 0; j < nCarried && j < len(out); j++ {
				c, err := cloneTensor(f.r, carried[j])
				if err != nil {
					return err
				}
				out[j] = c
			}
			for j := range scans {
				if nCarried+j >= len(out) {
					break
				}
				st, err := stack(f.r, scans[j])
				if err != nil {
					return fmt.Errorf("scan output %d: %w", j, err)
				}
				out[nCarried+j] = st
			}
			return nil
		}, nil
	})
}

// stack joins same-shaped tensors along a new first axis. With none it
// returns an empty float32 tensor.
func stack(r *runner, ts []*Tensor) (*Tensor, error) {
	if len(ts) == 0 {
		return New([]int64{0}, []float32{}), nil
	}
	first := ts[0]
	shape := append([]int64{int64(len(ts))}, first.Shape...)
	o := newLike(r, first.DType, shape)
	w := first.Len()
	for i, t := range ts {
		if t.DType != first.DType || !sameShape(t.Shape, first.Shape) {
			return nil, fmt.Errorf("iteration %d gave %v, iteration 0 %v", i, t, first)
		}
		copyBlock(o.Data, i*w, t.Data, 0, w)
	}
	return o, nil
}

// tripText describes a Loop's trip count for an error.
func tripText(m *Tensor, trips int64) string {
	if m == nil {
		return "not given (the loop runs while its condition holds)"
	}
	return fmt.Sprint(trips)
}

// releaseDead returns to the run's arena each owned tensor of old whose
// storage no tensor of live shares (views share their input's storage).
// Each buffer goes back once: a tensor owns its buffer until released,
// and no two owned tensors share one.
func releaseDead(r *runner, old []*Tensor, live ...[]*Tensor) {
	for _, t := range old {
		if t == nil || !t.owned {
			continue
		}
		shared := false
		for _, ls := range live {
			for _, u := range ls {
				shared = shared || u == t || u != nil && overlaps(t, u)
			}
		}
		if !shared {
			r.release(t)
		}
	}
}

// overlaps reports whether two float32 tensors' buffers share memory.
func overlaps(a, b *Tensor) bool {
	x, ok1 := a.Data.([]float32)
	y, ok2 := b.Data.([]float32)
	if !ok1 || !ok2 || cap(x) == 0 || cap(y) == 0 {
		return false
	}
	x0 := uintptr(unsafe.Pointer(unsafe.SliceData(x)))
	y0 := uintptr(unsafe.Pointer(unsafe.SliceData(y)))
	return x0 < y0+4*uintptr(cap(y)) && y0 < x0+4*uintptr(cap(x))
}
