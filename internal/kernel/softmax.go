package kernel

import "math"

// Max returns the largest element of x (len(x) >= 1), NaN when x holds one.
func Max(x []float32) float32 {
	n := len(x) &^ 7
	m := float32(math.Inf(-1))
	if useAsm && n >= 8 {
		var nan bool
		if m, nan = maxNaNAsm(&x[0], n); nan {
			return float32(math.NaN())
		}
	} else {
		n = 0
	}
	for _, v := range x[n:] {
		if v != v {
			return v
		}
		m = max(m, v)
	}
	return m
}

// ExpSum returns the sum of e^(x[i]-m) over x, in float64, each term to
// about one float32 ulp (terms below e^-87.3 count as that).
func ExpSum(x []float32, m float32) float64 {
	var s float64
	n := 0
	if usePanels && len(x) >= 16 { // AVX-512: sixteen lanes
		n = len(x) &^ 15
		s = expSum16Asm(&x[0], n, m)
	}
	if r := (len(x) - n) &^ 7; useAsm && r > 0 {
		s += expSumAsm(&x[n], r, m)
		n += r
	}
	for _, v := range x[n:] {
		s += float64(Exp(v - m))
	}
	return s
}

// Exp is e^x in float32 arithmetic to about one ulp: x = n ln2 + r with
// |r| <= ln2/2, e^r by a degree-6 polynomial (Cephes' expf coefficients),
// scaled by 2^n through the exponent bits. The assembly (ExpVec, Tanh,
// Sigmoid and ExpSum on CPUs with AVX2) evaluates the same steps with
// fused multiply-adds, so its results may differ from Exp's in the last
// bit.
func Exp(x float32) float32 {
	switch {
	case x > 88.72283:
		return float32(math.Inf(1))
	case x < -87.33654:
		return 0 // below float32's smallest normal: flushed
	case x != x:
		return x
	}
	// floor(t) for t in [-125.5, 128.5] by truncation of t + 256 > 0.
	n := float32(int32(x*1.442695041+0.5+256) - 256)
	r := x - n*0.693359375 - n*-2.12194440e-4
	z := r * r
	p := ((((1.9875691500e-4*r+1.3981999507e-3)*r+8.3334519073e-3)*r+4.1665795894e-2)*r+1.6666665459e-1)*r + 5.0000001201e-1
	y := p*z + r + 1
	if n > 127 { // 2^128 is not a float32: scale in two steps
		return y * 2 * math.Float32frombits(uint32(int32(n)+126)<<23)
	}
	return y * math.Float32frombits(uint32(int32(n)+127)<<23)
}

// ExpVec writes e^x[i] to z[i] (len(z) >= len(x); z may be x), x clamped
// below at -87.33654 and above at 88.37626 (the largest finite result).
func ExpVec(x, z []float32) {
	if useAsm {
		lanes8(expVecAsm, x, z)
		return
	}
	for i := range x {
		z[i] = Exp(max(-87.33654, min(88.37626, x[i])))
	}
}

// lanes8 runs f, an assembly kernel of eight lanes at a time, over x into
// z (as long; z may be x), the last len(x) mod 8 elements through a copy
// padded with zeros: the assembly's polynomials use fused multiply-adds,
// which Go's own arithmetic does not, so an element's bits would
// otherwise depend on whether it fell in the last partial group of its
// slice (on the length of a row, or of a tensor).
func lanes8(f func(x, z *float32, n int), x, z []float32) {
	n := len(x) &^ 7
	if n > 0 {
		f(&x[0], &z[0], n)
	}
	if r := len(x) - n; r > 0 {
		var t [8]float32
		copy(t[:], x[n:])
		f(&t[0], &t[0], 8)
		copy(z[n:len(x)], t[:r])
	}
}

// lanes16 runs f, the sixteen-lane (AVX-512) form of an eight-lane kernel
// (the same steps, so the same bits), over the first len(x) &^ 15
// elements of x into z, and returns how many it took: none without
// AVX-512.
func lanes16(f func(x, z *float32, n int), x, z []float32) int {
	n := len(x) &^ 15
	if !usePanels || n == 0 {
		return 0
	}
	f(&x[0], &z[0], n)
	return n
}

// Tanh writes tanh(x[i]) to z[i] (z may be x): 1 - 2/(e^(2x)+1), to an
// absolute error of about 1e-7 (e^(2x) clamped, the result reaches -1 and
// 1 exactly).
func Tanh(x, z []float32) {
	z = z[:len(x)]
	if useAsm {
		n := lanes16(tanh16Asm, x, z)
		lanes8(tanhAsm, x[n:], z[n:])
		return
	}
	for i := range x {
		z[i] = 2 * x[i]
	}
	ExpVec(z, z)
	for i := range x {
		z[i] = 1 - 2/(z[i]+1)
	}
}

// Sigmoid writes 1/(1+e^-x[i]) to z[i] (z may be x).
func Sigmoid(x, z []float32) {
	z = z[:len(x)]
	if useAsm {
		n := lanes16(sigmoid16Asm, x, z)
		lanes8(sigmoidAsm, x[n:], z[n:])
		return
	}
	for i := range x {
		z[i] = -x[i]
	}
	ExpVec(z, z)
	for i := range x {
		z[i] = 1 / (1 + z[i])
	}
}

// LSTMGates computes one row of an LSTM cell's state update in one pass:
// from the gates' pre-activations x (plus y when y is not nil), [i f o t]
// of H = len(c) values each, and the cell state c, it writes c2 = f*c +
// i*tanh(t) and h2 = o*tanh(c2) with i, f, o the sigmoids of their gates,
// every value bit for bit what Sigmoid, Tanh and Arith's products and
// sums give. Sixteen lanes at a time with AVX-512 when H is a multiple of
// 16, else eight with AVX2 when H is a multiple of 8; it reports false,
// doing nothing, otherwise (the Go path, or other H).
func LSTMGates(x, y, c, h2, c2 []float32) bool {
	H := len(c)
	lanes16 := usePanels && H%16 == 0
	if H == 0 || !lanes16 && !(useAsm && H%8 == 0) {
		return false
	}
	_, _, _ = x[4*H-1], h2[H-1], c2[H-1]
	var yp *float32
	if y != nil {
		_ = y[4*H-1]
		yp = &y[0]
	}
	if lanes16 {
		lstmGates16Asm(&x[0], yp, &c[0], &h2[0], &c2[0], H)
	} else {
		lstmGates8Asm(&x[0], yp, &c[0], &h2[0], &c2[0], H)
	}
	return true
}
