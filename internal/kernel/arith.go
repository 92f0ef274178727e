package kernel

// Op is an elementwise float32 operation of Arith and ArithScalar.
type Op int

// The operations, as ONNX's Add, Sub, Mul and Div compute them: each
// result rounded once to float32.
const (
	Add Op = iota
	Sub
	Mul
	Div
)

// ArithValue returns x op y.
func ArithValue(op Op, x, y float32) float32 { return op.apply(x, y) }

func (op Op) apply(x, y float32) float32 {
	switch op {
	case Add:
		return x + y
	case Sub:
		return x - y
	case Mul:
		return x * y
	}
	return x / y
}

// Arith writes z[i] = x[i] op y[i] for every i of x (y and z at least as
// long; z may be x or y).
func Arith(op Op, x, y, z []float32) {
	n := len(x)
	y, z = y[:n], z[:n]
	done := 0
	if useAsm && n >= 8 {
		done = n &^ 7
		arithVVAsm(int(op), &x[0], &y[0], &z[0], done)
	}
	for i := done; i < n; i++ {
		z[i] = op.apply(x[i], y[i])
	}
}

// ArithScalar writes z[i] = x[i] op v for every i of x, or v op x[i]
// when swap (z at least as long; z may be x).
func ArithScalar(op Op, x []float32, v float32, z []float32, swap bool) {
	n := len(x)
	z = z[:n]
	done := 0
	if useAsm && n >= 8 {
		done = n &^ 7
		code := int(op)
		switch {
		case swap && op == Sub:
			code = 4 // v - x
		case swap && op == Div:
			code = 5 // v / x
		}
		arithVSAsm(code, &x[0], v, &z[0], done)
	}
	if swap {
		for i := done; i < n; i++ {
			z[i] = op.apply(v, x[i])
		}
		return
	}
	for i := done; i < n; i++ {
		z[i] = op.apply(x[i], v)
	}
}

// FirstBeyond returns the index of the first x[i] > t, or x[i] < t when
// below, or len(x) when there is none; a NaN is never beyond t, nor is
// anything beyond a NaN t.
func FirstBeyond(x []float32, t float32, below bool) int {
	mode := 0
	if below {
		mode = 1
	}
	return firstBeyond(x, t, mode)
}

// FirstAboveOrNaN returns the index of the first x[i] that is not <= t
// (greater, or NaN), or len(x) when there is none.
func FirstAboveOrNaN(x []float32, t float32) int { return firstBeyond(x, t, 2) }

func firstBeyond(x []float32, t float32, mode int) int {
	n := 0
	if useAsm && len(x) >= 8 {
		n = len(x) &^ 7
		if i := firstBeyondAsm(&x[0], n, t, mode); i < n {
			return i
		}
	}
	for i := n; i < len(x); i++ {
		v := x[i]
		if mode == 0 && v > t || mode == 1 && v < t || mode == 2 && !(v <= t) {
			return i
		}
	}
	return len(x)
}

// SubSub writes z[i] = (x[i] - a) - b for every i of x (z at least as
// long; z may be x), each subtraction rounded as Go's float32 one.
func SubSub(x []float32, a, b float32, z []float32) {
	n := len(x)
	z = z[:n]
	done := 0
	if useAsm && n >= 8 {
		done = n &^ 7
		subSubAsm(&x[0], a, b, &z[0], done)
	}
	for i := done; i < n; i++ {
		z[i] = (x[i] - a) - b
	}
}
