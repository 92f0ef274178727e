package onnxeval

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attnx/attnx/internal/kernel"
)

// cellInputs returns a generator of test vectors (one in six elements
// NaN, an infinity, a zero of either sign, a huge, tiny or saturating
// value, the rest normal around 0), and the sigmoid and tanh activations.
func cellInputs(seed uint64) (vals func(n int) []float32, sig, tnh act) {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	odd := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 3e38, -3e38, 1e-40, 90, -90}
	vals = func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			if rng.IntN(6) == 0 {
				x[i] = odd[rng.IntN(len(odd))]
			} else {
				x[i] = float32(rng.NormFloat64() * 3)
			}
		}
		return x
	}
	sig, _ = actByName("sigmoid", 0, 0)
	tnh, _ = actByName("tanh", 0, 0)
	return vals, sig, tnh
}

// applyOne is f of one value.
func applyOne(f act, v float32) float32 {
	x := []float32{v}
	f(x)
	return x[0]
}

// TestLSTMCellMatchesElementLoop: an LSTM cell step on vectors gives, bit
// for bit, what the element loop of its definition gives, each product
// and sum rounded to float32 on its own: the gates (gx + gh) + (wb + rb),
// i, f, o = σ, c = f*c + i*tanh(g), h = o*tanh(c); sizes that are no
// multiple of the vector width, values that include NaN, infinities,
// zeros, huge and tiny ones, with biases and without.
func TestLSTMCellMatchesElementLoop(t *testing.T) {
	vals, sig, tnh := cellInputs(21)
	for _, H := range []int{1, 7, 16, 37} {
		for _, biased := range []bool{true, false} {
			op := &rnnOp{kind: cellLSTM, hidden: H, dirs: 1, f: []act{sig}, g: []act{tnh}, h: []act{tnh}}
			gx, gh, h, c := vals(4*H), vals(4*H), vals(H), vals(H)
			var wb, rb, bs []float32
			if biased {
				wb, rb = vals(4*H), vals(4*H)
				bs = make([]float32, 4*H)
				for i := range bs {
					bs[i] = wb[i] + rb[i]
				}
			}
			// The definition, element by element (ONNX's gate blocks i, o, f, c).
			gate := func(i int) float32 {
				v := gx[i] + gh[i]
				if biased {
					v += float32(wb[i] + rb[i])
				}
				return v
			}
			wantC, wantH := make([]float32, H), make([]float32, H)
			for k := range H {
				ig, og, fg := applyOne(sig, gate(k)), applyOne(sig, gate(H+k)), applyOne(sig, gate(2*H+k))
				cg := applyOne(tnh, gate(3*H+k))
				// Conversions keep each product rounded (no fused multiply-add).
				wantC[k] = float32(fg*c[k]) + float32(ig*cg)
				hc := applyOne(tnh, wantC[k])
				wantH[k] = og * hc
			}
			op.cell(0, make([]float32, 4*H), gx, gh, wb, rb, bs, nil, nil, h, c)
			for k := range H {
				for _, p := range []struct {
					what      string
					got, want float32
				}{{"c", c[k], wantC[k]}, {"h", h[k], wantH[k]}} {
					if math.Float32bits(p.got) != math.Float32bits(p.want) && !(p.got != p.got && p.want != p.want) {
						t.Fatalf("H %d biased %v: %s[%d] = %v, want %v", H, biased, p.what, k, p.got, p.want)
					}
				}
			}
		}
	}
}

// TestGRUCellMatchesElementLoop: a GRU cell step on vectors gives, bit for
// bit, the element loop of its definition (ONNX's gate blocks z, r, h):
// z, r = σ((gx + gh) + (wb + rb)); with linear_before_reset hh =
// tanh((gx + r*(gh + rbh)) + wbh), without it tanh((gx + wbh + rbh) +
// (r*h)·Rh); h = (1-z)*hh + z*h; without biases the loop's +0 included.
func TestGRUCellMatchesElementLoop(t *testing.T) {
	vals, sig, tnh := cellInputs(23)
	for _, H := range []int{1, 7, 16, 37} {
		for _, biased := range []bool{true, false} {
			for _, lbr := range []bool{true, false} {
				op := &rnnOp{kind: cellGRU, hidden: H, dirs: 1, lbr: lbr, f: []act{sig}, g: []act{tnh}}
				gx, gh, h, rh := vals(3*H), vals(3*H), vals(H), vals(H*H)
				var wb, rb, bs []float32
				var wbh, rbh []float32 // the candidate's biases, zeros without
				wbh, rbh = make([]float32, H), make([]float32, H)
				if biased {
					wb, rb = vals(3*H), vals(3*H)
					bs = make([]float32, 3*H)
					for i := range bs {
						bs[i] = wb[i] + rb[i]
					}
					copy(wbh, wb[2*H:])
					copy(rbh, rb[2*H:])
				}
				gate := func(i int) float32 {
					v := gx[i] + gh[i]
					if biased {
						v += float32(wb[i] + rb[i])
					}
					return applyOne(sig, v)
				}
				want := make([]float32, H)
				rhv := make([]float32, H)
				for k := range H {
					rhv[k] = gate(H+k) * h[k]
				}
				for k := range H {
					z, r := gate(k), gate(H+k)
					var hh float32
					if lbr {
						hh = float32(gx[2*H+k]+float32(r*float32(gh[2*H+k]+rbh[k]))) + wbh[k]
					} else {
						hh = gx[2*H+k] + wbh[k] + rbh[k]
						hh += dotRef(rhv, rh[k*H:(k+1)*H])
					}
					hh = applyOne(tnh, hh)
					want[k] = float32((1-z)*hh) + float32(z*h[k])
				}
				op.cell(0, make([]float32, 3*H), gx, gh, wb, rb, bs, nil, rh, h, nil)
				for k := range H {
					if math.Float32bits(h[k]) != math.Float32bits(want[k]) && !(h[k] != h[k] && want[k] != want[k]) {
						t.Fatalf("H %d biased %v lbr %v: h[%d] = %v, want %v", H, biased, lbr, k, h[k], want[k])
					}
				}
			}
		}
	}
}

// dotRef is kernel.Dot, which the cell's Rh product of a gated state
// calls (its sums' order is the kernel's own).
func dotRef(a, b []float32) float32 { return kernel.Dot(a, b) }
