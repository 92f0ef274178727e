package onnxeval

import (
	"fmt"
	"strings"

	"github.com/attnx/attnx/builder"
	"github.com/attnx/attnx/internal/kernel"
)

// rnnKind is the cell: its gate count and equations.
type rnnKind int

const (
	cellRNN rnnKind = iota
	cellGRU
	cellLSTM
)

func (k rnnKind) gates() int { return [...]int{1, 3, 4}[k] }

// act is an RNN activation on float32 slices (in place).
type act func(x []float32)

func actByName(name string, alpha, beta float32) (act, error) {
	switch strings.ToLower(name) {
	case "sigmoid":
		return func(x []float32) { sigmoid32(x, x) }, nil
	case "tanh":
		return func(x []float32) { tanh32(x, x) }, nil
	case "relu":
		return func(x []float32) {
			for i, v := range x {
				x[i] = max(v, 0)
			}
		}, nil
	case "hardsigmoid":
		return func(x []float32) {
			for i, v := range x {
				x[i] = max(0, min(1, alpha*v+beta))
			}
		}, nil
	case "leakyrelu":
		return func(x []float32) {
			for i, v := range x {
				if v < 0 {
					x[i] = alpha * v
				}
			}
		}, nil
	}
	return nil, fmt.Errorf("activation %s is not supported", name)
}

type rnnOp struct {
	kind       rnnKind
	hidden     int
	dirs       int
	reverse    []bool // per direction
	f, g, h    []act  // per direction (h unused but by LSTM)
	clip       float32
	lbr        bool // GRU linear_before_reset
	numOutputs int
	// wp and rp are the constant W and R per direction, packed.
	wp, rp []*kernel.Packed
}

func compileRNN(kind rnnKind) compileFunc {
	return func(n *node) (opFunc, error) {
		if err := n.needInputs(3, 8); err != nil {
			return nil, err
		}
		op := &rnnOp{kind: kind, hidden: int(n.int("hidden_size", 0)), clip: n.float("clip", 0), lbr: n.int("linear_before_reset", 0) == 1}
		if n.int("layout", 0) != 0 {
			return nil, n.unsupported("layout=1")
		}
		if n.int("input_forget", 0) != 0 {
			return nil, n.unsupported("input_forget=1")
		}
		switch dir := n.str("direction", "forward"); dir {
		case "forward":
			op.dirs, op.reverse = 1, []bool{false}
		case "reverse":
			op.dirs, op.reverse = 1, []bool{true}
		case "bidirectional":
			op.dirs, op.reverse = 2, []bool{false, true}
		default:
			return nil, n.errorf("direction %q", dir)
		}
		defaults := map[rnnKind][]string{cellRNN: {"Tanh"}, cellGRU: {"Sigmoid", "Tanh"}, cellLSTM: {"Sigmoid", "Tanh", "Tanh"}}[kind]
		per := len(defaults)
		names := defaults
		if a, ok := n.attr("activations"); ok {
			names = a.Strings
			if len(names) == per && op.dirs == 2 {
				names = append(append([]string{}, names...), names...)
			}
		} else if op.dirs == 2 {
			names = append(append([]string{}, defaults...), defaults...)
		}
		if len(names) != per*op.dirs {
			return nil, n.errorf("%d activations for %d directions of %d", len(names), op.dirs, per)
		}
		alphas, _ := n.attr("activation_alpha")
		betas, _ := n.attr("activation_beta")
		for d := 0; d < op.dirs; d++ {
			for j := 0; j < per; j++ {
				i := d*per + j
				alpha, beta := float32(0.01), float32(0)
				if strings.EqualFold(names[i], "HardSigmoid") {
					alpha, beta = 0.2, 0.5
				}
				if i < len(alphas.Floats) {
					alpha = alphas.Floats[i]
				}
				if i < len(betas.Floats) {
					beta = betas.Floats[i]
				}
				a, err := actByName(names[i], alpha, beta)
				if err != nil {
					return nil, n.unsupported("%v", err)
				}
				switch j {
				case 0:
					op.f = append(op.f, a)
				case 1:
					op.g = append(op.g, a)
				case 2:
					op.h = append(op.h, a)
				}
			}
		}
		op.numOutputs = len(n.Outputs)
		G, H := kind.gates(), op.hidden
		if w, r := n.consts[1], n.consts[2]; w != nil && r != nil && w.DType == builder.Float && r.DType == builder.Float &&
			len(w.Shape) == 3 && len(r.Shape) == 3 && int(w.Shape[0]) == op.dirs && int(w.Shape[1]) == G*H && sameShape(r.Shape, []int64{int64(op.dirs), int64(G * H), int64(H)}) {
			I := int(w.Shape[2])
			owns := true
			for d := 0; d < op.dirs; d++ {
				op.wp = append(op.wp, kernel.Pack(get[float32](w)[d*G*H*I:(d+1)*G*H*I], G*H, I))
				op.rp = append(op.rp, kernel.Pack(get[float32](r)[d*G*H*H:(d+1)*G*H*H], G*H, H))
				owns = owns && op.wp[d].Owns() && op.rp[d].Owns()
			}
			if owns {
				n.prepare(1)
				if kind != cellGRU || op.lbr { // a GRU without linear_before_reset reads Rh itself
					n.prepare(2)
				}
			}
		}
		return op.run, nil
	}
}

func init() {
	register("RNN", compileRNN(cellRNN))
	register("GRU", compileRNN(cellGRU))
	register("LSTM", compileRNN(cellLSTM))
}

// minParallelWork is the multiply-adds worth a second goroutine.
const minParallelWork = 1 << 17

func (op *rnnOp) run(f *frame, in, out []*Tensor) error {
	r := f.r
	x, w, rr := in[0], in[1], in[2]
	for i, t := range []*Tensor{x, w, rr} {
		if t.DType != builder.Float {
			return fmt.Errorf("input %d is %v, want float32", i, t.DType)
		}
	}
	G, H := op.kind.gates(), op.hidden
	if len(x.Shape) != 3 {
		return fmt.Errorf("X is %v, want [seq, batch, input]", x)
	}
	S, B, I := int(x.Shape[0]), int(x.Shape[1]), int(x.Shape[2])
	D := op.dirs
	if !sameShape(w.Shape, []int64{int64(D), int64(G * H), int64(I)}) || !sameShape(rr.Shape, []int64{int64(D), int64(G * H), int64(H)}) {
		return fmt.Errorf("W is %v and R %v; want [%d,%d,%d] and [%d,%d,%d]", w, rr, D, G*H, I, D, G*H, H)
	}
	opt := func(i int) *Tensor {
		if i < len(in) {
			return in[i]
		}
		return nil
	}
	bias, lens, h0 := opt(3), opt(4), opt(5)
	var c0, peep *Tensor
	if op.kind == cellLSTM {
		c0, peep = opt(6), opt(7)
	}
	if bias != nil && (bias.DType != builder.Float || bias.Len() != D*2*G*H) {
		return fmt.Errorf("B is %v, want float32 [%d,%d]", bias, D, 2*G*H)
	}
	seqLen := make([]int, B)
	for b := range seqLen {
		seqLen[b] = S
	}
	if lens != nil {
		l, err := ints(lens, "sequence_lens")
		if err != nil {
			return err
		}
		if len(l) != B {
			return fmt.Errorf("sequence_lens has %d entries for a batch of %d", len(l), B)
		}
		for b, v := range l {
			if v < 0 || v > int64(S) {
				return fmt.Errorf("sequence_lens[%d] = %d is outside 0..%d", b, v, S)
			}
			seqLen[b] = int(v)
		}
	}
	for _, t := range []*Tensor{h0, c0} {
		if t != nil && (t.DType != builder.Float || t.Len() != D*B*H) {
			return fmt.Errorf("initial state is %v, want float32 [%d,%d,%d]", t, D, B, H)
		}
	}
	if peep != nil && (peep.DType != builder.Float || peep.Len() != D*3*H) {
		return fmt.Errorf("P is %v, want float32 [%d,%d]", peep, D, 3*H)
	}
	Y := r.f32([]int64{int64(S), int64(D), int64(B), int64(H)})
	y := get[float32](Y)
	clear(y)
	Yh := r.f32([]int64{int64(D), int64(B), int64(H)})
	yh := get[float32](Yh)
	var Yc *Tensor
	var yc []float32
	if op.kind == cellLSTM {
		Yc = r.f32([]int64{int64(D), int64(B), int64(H)})
		yc = get[float32](Yc)
	}
	xs := get[float32](x)
	// direction d runs with threads goroutines for its products: the two
	// directions of a bidirectional layer are independent, and run side
	// by side when the run has two threads or more (each with its own
	// scratch; their outputs are disjoint).
	// The input projections (the largest scratch, written whole by the
	// product) come from the run's arena, taken here, before the
	// directions may run side by side, and given back after both.
	// So do the recurrent projections of a step (written whole by theirs).
	xws, hrs := make([][]float32, D), make([][]float32, D)
	for d := range xws {
		xws[d] = r.arena.get(r, S*B*G*H)
		hrs[d] = r.arena.get(r, B*G*H)
	}
	defer func() {
		for d := range xws {
			r.arena.put(xws[d])
			r.arena.put(hrs[d])
		}
	}()
	direction := func(d, threads int) {
		xw, hr := xws[d], hrs[d]
		// The states are updated in place in the outputs' rows for the
		// direction: the last step's are Y_h and Y_c, with no copy.
		hs := yh[d*B*H : (d+1)*B*H]
		var cs []float32 // an LSTM's (the other cells have none)
		if yc != nil {
			cs = yc[d*B*H : (d+1)*B*H]
		}
		gbuf := make([]float32, G*H)
		var wd, rd []float32
		if op.wp == nil {
			wd = get[float32](w)[d*G*H*I : (d+1)*G*H*I]
		}
		if op.rp == nil || op.kind == cellGRU && !op.lbr {
			rd = get[float32](rr)[d*G*H*H : (d+1)*G*H*H]
		}
		var wb, rb, bs, pd []float32
		if bias != nil {
			bb := get[float32](bias)[d*2*G*H : (d+1)*2*G*H]
			wb, rb = bb[:G*H], bb[G*H:]
			// Wb + Rb once for all steps: each step adds it to its
			// gates (a GRU's z and r), as it added wb[i] + rb[i] element
			// by element.
			bs = make([]float32, G*H)
			kernel.Arith(kernel.Add, wb, rb, bs)
		}
		if peep != nil {
			pd = get[float32](peep)[d*3*H : (d+1)*3*H]
		}
		// Input projections of every step at once.
		if S*B > 0 {
			if op.wp != nil {
				op.wp[d].Mul(S*B, xs, I, xw, G*H, threads)
			} else {
				kernel.GemmNT(S*B, G*H, I, xs, I, wd, I, xw, G*H, false, threads)
			}
		}
		if h0 != nil {
			copy(hs, get[float32](h0)[d*B*H:(d+1)*B*H])
		} else {
			clear(hs)
		}
		if c0 != nil {
			copy(cs, get[float32](c0)[d*B*H:(d+1)*B*H])
		} else {
			clear(cs)
		}
		rev := op.reverse[d]
		for s := 0; s < S; s++ {
			if op.rp != nil {
				op.rp[d].Mul(B, hs, H, hr, G*H, threads)
			} else {
				kernel.GemmNT(B, G*H, H, hs, H, rd, H, hr, G*H, false, threads)
			}
			cells := func(b0, b1 int, g []float32) {
				for b := b0; b < b1; b++ {
					if s >= seqLen[b] {
						continue
					}
					t := s
					if rev {
						t = seqLen[b] - 1 - s
					}
					gx := xw[(t*B+b)*G*H : (t*B+b+1)*G*H]
					gh := hr[b*G*H : (b+1)*G*H]
					h := hs[b*H : (b+1)*H]
					var c []float32
					if cs != nil {
						c = cs[b*H : (b+1)*H]
					}
					op.cell(d, g, gx, gh, wb, rb, bs, pd, rd[min(2*H*H, len(rd)):], h, c)
					copy(y[((t*D+d)*B+b)*H:], h)
				}
			}
			if threads > 1 {
				// The rows' cells are independent: split them too, each
				// range with its own scratch.
				kernel.Parallel(B, threads, 16*B*G*H, func(b0, b1 int) {
					if b0 == 0 {
						cells(b0, b1, gbuf)
					} else {
						cells(b0, b1, make([]float32, G*H))
					}
				})
			} else {
				cells(0, B, gbuf)
			}
		}
	}
	// Each direction's other scratch (gbuf, bs), for both when they run
	// side by side (xw and hr were charged by the arena).
	r.chargeTemp(4 * int64(D) * 2 * int64(G) * int64(H))
	if D == 2 && r.threads >= 2 && S*B*G*H*(I+H) >= 4*minParallelWork {
		// On the products' helpers, not a goroutine of its own: a helper
		// spinning after its last part (and yielding its thread to the
		// scheduler's global queue, where it finds itself again) kept a
		// new goroutine, queued on this goroutine's thread, waiting until
		// this direction was done. A kernel's panic comes back here, and
		// becomes the run's error.
		kernel.Parallel(2, 2, S*B*G*H*(I+H), func(lo, _ int) {
			if lo == 0 {
				direction(1, r.threads/2)
			} else {
				direction(0, r.threads-r.threads/2)
			}
		})
	} else {
		for d := 0; d < D; d++ {
			direction(d, r.threads)
		}
	}
	outs := []*Tensor{Y, Yh, Yc}
	for i := range out {
		if i < len(outs) {
			out[i] = outs[i]
		}
	}
	return nil
}

func (op *rnnOp) clipped(x []float32) {
	if op.clip > 0 {
		for i, v := range x {
			x[i] = max(-op.clip, min(op.clip, v))
		}
	}
}

// gates writes the pre-activations of len(g) gates to g: (gx + gh) + bs,
// each sum rounded (bs, Wb + Rb, omitted when nil).
func gates(g, gx, gh, bs []float32) {
	n := len(g)
	kernel.Arith(kernel.Add, gx[:n], gh[:n], g)
	if bs != nil {
		kernel.Arith(kernel.Add, g, bs[:n], g)
	}
}

// cell advances one batch row by one step: gx are its input projections,
// gh its recurrent ones (without biases), h and c its states, updated in
// place. g is scratch of G*H; rh is a GRU's Rh (for linear_before_reset=0);
// bs is wb + rb (nil without biases).
func (op *rnnOp) cell(d int, g, gx, gh, wb, rb, bs, p, rh, h, c []float32) {
	H := op.hidden
	switch op.kind {
	case cellRNN:
		gates(g[:H], gx, gh, bs)
		op.clipped(g[:H])
		op.f[d](g[:H])
		copy(h, g[:H])
	case cellGRU:
		// On vectors, the element loops' float32 operations in their
		// order, each rounded: the z and r gates; with
		// linear_before_reset hh = (gx + r*(gh + rbh)) + wbh (without
		// biases, adding 0 as the loop did, which decides a zero's sign);
		// h = (1-z)*hh + z*h.
		gates(g[:2*H], gx, gh, bs)
		op.clipped(g[:2*H])
		op.f[d](g[:2*H])
		z, rg, hh := g[:H], g[H:2*H], g[2*H:3*H]
		if op.lbr {
			if wb != nil {
				kernel.Arith(kernel.Add, gh[2*H:3*H], rb[2*H:3*H], hh)
			} else {
				kernel.ArithScalar(kernel.Add, gh[2*H:3*H], 0, hh, false)
			}
			kernel.Arith(kernel.Mul, rg, hh, hh)
			kernel.Arith(kernel.Add, gx[2*H:3*H], hh, hh)
			if wb != nil {
				kernel.Arith(kernel.Add, hh, wb[2*H:3*H], hh)
			} else {
				kernel.ArithScalar(kernel.Add, hh, 0, hh, false)
			}
		} else {
			for i := 0; i < H; i++ {
				var wbh, rbh float32
				if wb != nil {
					wbh, rbh = wb[2*H+i], rb[2*H+i]
				}
				hh[i] = gx[2*H+i] + wbh + rbh // + (r*h) Rh added below
			}
		}
		if !op.lbr {
			// (r ⊙ h) Rh^T: the recurrent product of the gated state, which
			// the step's shared product (of h itself) cannot give.
			rhv := make([]float32, H)
			for i := 0; i < H; i++ {
				rhv[i] = rg[i] * h[i]
			}
			for i := 0; i < H; i++ {
				hh[i] += kernel.Dot(rhv, rh[i*H:(i+1)*H])
			}
		}
		op.clipped(hh)
		op.g[d](hh)
		kernel.ArithScalar(kernel.Sub, z, 1, rg, true) // 1 - z, in r's place
		kernel.Arith(kernel.Mul, rg, hh, rg)
		kernel.Arith(kernel.Mul, z, h, h)
		kernel.Arith(kernel.Add, rg, h, h)
	case cellLSTM:
		// The same float32 operations as element loops would do, each
		// rounded (no fused multiply-add), on vectors: the gates; c = f*c
		// + i*g; h = o*h(c).
		gates(g[:4*H], gx, gh, bs)
		ig, og, fg, cg := g[:H], g[H:2*H], g[2*H:3*H], g[3*H:]
		if p != nil {
			for i := 0; i < H; i++ {
				ig[i] += p[i] * c[i]
				fg[i] += p[2*H+i] * c[i]
			}
		}
		op.clipped(g)
		op.f[d](ig)
		op.f[d](fg)
		op.g[d](cg)
		kernel.Arith(kernel.Mul, fg, c, c)
		kernel.Arith(kernel.Mul, ig, cg, ig) // i is not needed after
		kernel.Arith(kernel.Add, c, ig, c)
		if p != nil {
			for i := 0; i < H; i++ {
				og[i] += p[H+i] * c[i]
			}
			op.clipped(og)
		}
		op.f[d](og)
		// h(C) in the candidate gate's slot, free once C is updated.
		hc := g[3*H : 4*H]
		copy(hc, c)
		op.h[d](hc)
		kernel.Arith(kernel.Mul, og, hc, h)
	}
}
