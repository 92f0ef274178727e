package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestExpSumAndMax compares the vector exponential sum and maximum with
// float64 ones, over lengths around the assembly's 8 and 16 lanes, and
// the sum's terms with ExpVec's (the 16-lane exponential computes each
// lane as the 8-lane one does: the sums differ by their order only).
func TestExpSumAndMax(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 16, 17, 24, 31, 33, 100, 10000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*1.7)) * 30
		}
		m := Max(x)
		want := math.Inf(-1)
		for _, v := range x {
			want = math.Max(want, float64(v))
		}
		if float64(m) != want {
			t.Fatalf("n=%d: Max = %v, want %v", n, m, want)
		}
		var ws float64
		for _, v := range x {
			ws += math.Exp(float64(v - m))
		}
		got := ExpSum(x, m)
		if math.Abs(got-ws)/ws > 5e-7 {
			t.Errorf("n=%d: ExpSum = %v, want %v", n, got, ws)
		}
		if n%8 == 0 {
			e := make([]float32, n)
			for i, v := range x {
				e[i] = v - m
			}
			ExpVec(e, e)
			var terms float64
			for _, v := range e {
				terms += float64(v)
			}
			if math.Abs(got-terms)/terms > 1e-13 {
				t.Errorf("n=%d: ExpSum = %v, its terms by ExpVec sum to %v", n, got, terms)
			}
		}
	}
	nan := []float32{1, 2, 3, 4, 5, 6, float32(math.NaN()), 8, 9}
	if m := Max(nan); m == m {
		t.Errorf("Max with a NaN = %v, want NaN", m)
	}
}

// TestVectorActivations compares ExpVec, Tanh and Sigmoid with float64
// math over a range of inputs, in place too.
func TestVectorActivations(t *testing.T) {
	for _, n := range []int{1, 8, 13, 1000} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(math.Sin(float64(i)*0.37)) * 12
			if i%5 == 0 {
				x[i] *= 1e-3
			}
		}
		z := make([]float32, n)
		ExpVec(x, z)
		for i, v := range x {
			if w := math.Exp(float64(v)); math.Abs(float64(z[i])-w)/w > 3e-7 {
				t.Fatalf("ExpVec(%v) = %v, want %v", v, z[i], w)
			}
		}
		Tanh(x, z)
		for i, v := range x {
			if w := math.Tanh(float64(v)); math.Abs(float64(z[i])-w) > 2e-7 {
				t.Fatalf("Tanh(%v) = %v, want %v", v, z[i], w)
			}
		}
		in := append([]float32(nil), x...)
		Tanh(in, in)
		for i := range in {
			if in[i] != z[i] {
				t.Fatalf("Tanh in place: %v, not %v", in[i], z[i])
			}
		}
		y := append([]float32(nil), x...)
		Sigmoid(y, y)
		for i, v := range x {
			if w := 1 / (1 + math.Exp(-float64(v))); math.Abs(float64(y[i])-w) > 2e-7 {
				t.Fatalf("Sigmoid(%v) = %v, want %v", v, y[i], w)
			}
		}
	}
	big := []float32{100, -100, 88.5, -88.5, 0, 1, 2, 3, 4}
	z := make([]float32, len(big))
	Tanh(big, z)
	if z[0] != 1 || z[1] != -1 || z[4] != 0 {
		t.Errorf("Tanh(%v) = %v", big, z)
	}
	Sigmoid(big, z)
	if z[0] != 1 || z[1] > 1e-30 || z[4] != 0.5 {
		t.Errorf("Sigmoid(%v) = %v", big, z)
	}
}

// TestActivationsLanes: with AVX-512, Tanh and Sigmoid take sixteen
// elements at a time and the rest eight at a time; each element's bits
// are the eight-lane kernel's whichever group it falls in (NaN,
// infinities, zeros of both signs, subnormals, the clamps' edges and
// ordinary values), so a value's activation does not depend on the
// length of its row or its place in it.
func TestActivationsLanes(t *testing.T) {
	if !useAsm {
		t.Skip("no assembly on this path")
	}
	r := rand.New(rand.NewPCG(21, 22))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)),
		1e-40, -1e-40, 88.37626, 88.5, -87.33654, -88.5, 44.2, -44.2, 1e-8, -1e-8, 3e38, -3e38}
	x := make([]float32, 0, 1003)
	x = append(x, special...)
	for len(x) < cap(x) {
		x = append(x, (r.Float32()*2-1)*float32(math.Pow(10, float64(r.IntN(4)-1))))
	}
	for _, c := range []struct {
		name  string
		f     func(x, z []float32)
		eight func(x, z *float32, n int)
	}{{"Tanh", Tanh, tanhAsm}, {"Sigmoid", Sigmoid, sigmoidAsm}} {
		want := make([]float32, len(x))
		lanes8(c.eight, x, want)
		for shift := 0; shift < 17; shift++ {
			got := make([]float32, len(x)-shift)
			c.f(x[shift:], got)
			for i, v := range got {
				w := want[shift+i]
				if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
					t.Fatalf("%s(%v) at %d of a row of %d: %v, eight lanes at a time %v", c.name, x[shift+i], i, len(got), v, w)
				}
			}
		}
	}
}

// TestLSTMGatesOnePass: the one-pass state update gives, bit for bit,
// what the cell's steps give one after another (Sigmoid of the three
// gates, Tanh of the candidate, the products and the sum, Tanh of the new
// cell state), with the gates' sum taken first or given, over gates and
// states holding NaN, infinities, zeros of both signs and huge values.
func TestLSTMGatesOnePass(t *testing.T) {
	if !useAsm {
		if LSTMGates(make([]float32, 64), nil, make([]float32, 16), make([]float32, 16), make([]float32, 16)) {
			t.Fatal("LSTMGates ran on the Go path")
		}
		t.Skip("no assembly on this path")
	}
	r := rand.New(rand.NewPCG(31, 32))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 3e38, -3e38, 1e-40, 90, -90}
	for _, H := range []int{8, 16, 24, 32, 40, 48, 512} {
		x, y, c := make([]float32, 4*H), make([]float32, 4*H), make([]float32, H)
		for i := range x {
			x[i], y[i] = (r.Float32()*2-1)*6, (r.Float32()*2-1)*6
		}
		for i := range c {
			c[i] = (r.Float32()*2 - 1) * 4
		}
		for i, v := range special {
			x[(i*37)%(4*H)] = v
			y[(i*53+5)%(4*H)] = v
			c[(i*11+3)%H] = v
		}
		for _, add := range []bool{false, true} {
			// The steps one after another.
			pre := append([]float32(nil), x...)
			if add {
				Arith(Add, x, y, pre)
			}
			sg, tt := make([]float32, 3*H), make([]float32, H)
			Sigmoid(pre[:3*H], sg)
			Tanh(pre[3*H:], tt)
			u, wantC, wantH := make([]float32, H), make([]float32, H), make([]float32, H)
			Arith(Mul, sg[H:2*H], c, u)
			Arith(Mul, sg[:H], tt, tt)
			Arith(Add, u, tt, wantC)
			Tanh(wantC, u)
			Arith(Mul, sg[2*H:], u, wantH)
			var yy []float32
			if add {
				yy = y
			}
			h2, c2 := make([]float32, H), make([]float32, H)
			if !LSTMGates(x, yy, c, h2, c2) {
				t.Fatalf("H=%d: LSTMGates did not run", H)
			}
			for name, p := range map[string][2][]float32{"c2": {c2, wantC}, "h2": {h2, wantH}} {
				for i, v := range p[0] {
					w := p[1][i]
					if math.Float32bits(v) != math.Float32bits(w) && !(v != v && w != w) {
						t.Fatalf("H=%d add=%v: %s[%d] = %v, the steps give %v", H, add, name, i, v, w)
					}
				}
			}
		}
	}
	if LSTMGates(make([]float32, 4*20), nil, make([]float32, 20), make([]float32, 20), make([]float32, 20)) {
		t.Fatal("LSTMGates took H=20, not a multiple of 8")
	}
}
