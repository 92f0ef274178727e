package quant

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestQuantizeInt8KnownValues(t *testing.T) {
	w := []float32{
		1, -2, 0.5,
		0, 0, 0,
	}
	tests := []struct {
		name   string
		axis   int
		scales []float32
		q      []int8
		deq    []float32
	}{
		// Row 0: scale 2/127; 1 -> 63.5 rounds half to even to 64, 0.5 ->
		// 31.75 -> 32. Row 1 is all zero: scale 1.
		{"per row", 0, []float32{2.0 / 127, 1}, []int8{64, -127, 32, 0, 0, 0},
			[]float32{64 * 2.0 / 127, -2, 32 * 2.0 / 127, 0, 0, 0}},
		// Columns: max |.| 1, 2, 0.5.
		{"per column", 1, []float32{1.0 / 127, 2.0 / 127, 0.5 / 127}, []int8{127, -127, 127, 0, 0, 0},
			[]float32{1, -2, 0.5, 0, 0, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q, err := QuantizeInt8(w, 2, 3, tc.axis)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(q.Q, tc.q) {
				t.Errorf("Q = %v, want %v", q.Q, tc.q)
			}
			if !closeAll(q.Scales, tc.scales, 1e-9) {
				t.Errorf("Scales = %v, want %v", q.Scales, tc.scales)
			}
			if d := q.Dequantize(); !closeAll(d, tc.deq, 1e-6) {
				t.Errorf("Dequantize = %v, want %v", d, tc.deq)
			}
			if got := q.Tensor(); got.DType.String() != "int8" || len(got.Raw) != 6 || int8(got.Raw[1]) != tc.q[1] {
				t.Errorf("Tensor = %v %v %v", got.DType, got.Dims, got.Raw)
			}
		})
	}
}

func TestQuantizeInt8RandomBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	rows, cols := 37, 53
	w := randMatrix(rng, rows*cols, 3)
	for _, axis := range []int{0, 1} {
		q, err := QuantizeInt8(w, rows, cols, axis)
		if err != nil {
			t.Fatal(err)
		}
		d := q.Dequantize()
		worst := float32(0)
		for r := 0; r < rows; r++ {
			for c := 0; c < cols; c++ {
				e := abs(w[r*cols+c] - d[r*cols+c])
				if e > q.MaxError(r, c)*(1+1e-5) {
					t.Fatalf("axis %d: element [%d,%d] %v dequantizes to %v: error %v > %v", axis, r, c, w[r*cols+c], d[r*cols+c], e, q.MaxError(r, c))
				}
				worst = max(worst, e/q.MaxError(r, c))
			}
		}
		// Rounding error is spread over [0, scale/2]: some element gets
		// close to the bound, or the bound is not the one in use.
		if worst < 0.9 {
			t.Errorf("axis %d: largest error is %.2f of the bound, want the bound nearly reached", axis, worst)
		}
		for i, v := range q.Q {
			if v == -128 {
				t.Fatalf("Q[%d] is -128: the range must stay symmetric", i)
			}
		}
		// Every channel's largest magnitude is represented exactly: ±127.
		u := q.Uint8()
		if u[0] != uint8(int(q.Q[0])+128) {
			t.Errorf("Uint8()[0] = %d, want %d", u[0], int(q.Q[0])+128)
		}
	}
}

func TestInt8Transpose(t *testing.T) {
	q, err := QuantizeInt8([]float32{1, 2, 3, -4, 5, 6}, 2, 3, 0)
	if err != nil {
		t.Fatal(err)
	}
	tr := q.Transpose()
	if tr.Rows != 3 || tr.Cols != 2 || tr.Axis != 1 {
		t.Fatalf("transposed is %dx%d axis %d, want 3x2 axis 1", tr.Rows, tr.Cols, tr.Axis)
	}
	d, dt := q.Dequantize(), tr.Dequantize()
	for r := 0; r < 2; r++ {
		for c := 0; c < 3; c++ {
			if d[r*3+c] != dt[c*2+r] {
				t.Errorf("[%d,%d] = %v, transposed [%d,%d] = %v", r, c, d[r*3+c], c, r, dt[c*2+r])
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"nan", errOf(QuantizeInt8([]float32{1, float32(math.NaN())}, 1, 2, 0)), "element [0,1] is NaN"},
		{"length", errOf(QuantizeInt8([]float32{1, 2, 3}, 2, 2, 0)), "3 values for a 2x2 matrix"},
		{"axis", errOf(QuantizeInt8([]float32{1}, 1, 1, 2)), "axis is 2"},
		{"empty", errOf(QuantizeInt8(nil, 0, 4, 0)), "0x4"},
		{"bits", errOf(QuantizeBlockwise(make([]float32, 32), 1, 32, 3, 32, true)), "3 bits"},
		{"block", errOf(QuantizeBlockwise(make([]float32, 32), 1, 32, 4, 24, true)), "block size 24"},
		{"small block", errOf(QuantizeBlockwise(make([]float32, 32), 1, 32, 4, 8, true)), "block size 8"},
		{"inf", errOf(QuantizeBlockwise([]float32{float32(math.Inf(1))}, 1, 1, 4, 16, true)), "+Inf"},
	}
	for _, tc := range tests {
		if tc.err == nil || !strings.Contains(tc.err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, tc.err, tc.want)
		}
	}
}

func errOf[T any](_ T, err error) error { return err }

func TestQuantizeBlockwiseKnownLayout(t *testing.T) {
	// One row of 16 values -8..7: the largest magnitude is -8, so the scale
	// is -8/-8 = 1, the zero point 8, and value j is stored as j.
	row := make([]float32, 16)
	for j := range row {
		row[j] = float32(j - 8)
	}
	b, err := QuantizeBlockwise(row, 1, 16, 4, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	wantB := []byte{0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe}
	if !slices.Equal(b.B, wantB) || !slices.Equal(b.Scales, []float32{1}) || b.ZeroPoints != nil {
		t.Fatalf("B %x scales %v zp %v, want B %x scales [1] no zero points", b.B, b.Scales, b.ZeroPoints, wantB)
	}
	if d := b.Dequantize(); !slices.Equal(d, row) {
		t.Errorf("Dequantize = %v, want %v", d, row)
	}

	// The largest magnitude positive: the scale is negative and 8 goes to 0.
	b, err = QuantizeBlockwise([]float32{8, 4, 0, -7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, 1, 16, 4, 16, true)
	if err != nil {
		t.Fatal(err)
	}
	if b.Scales[0] != -1 || b.Value(0, 0) != 0 || b.Value(0, 1) != 4 || b.Value(0, 2) != 8 || b.Value(0, 3) != 15 {
		t.Errorf("scale %v values %d %d %d %d, want -1 and 0 4 8 15", b.Scales[0], b.Value(0, 0), b.Value(0, 1), b.Value(0, 2), b.Value(0, 3))
	}
}

func TestQuantizeBlockwiseAsymmetricKnown(t *testing.T) {
	// Two rows, K = 20 in blocks of 16: two blocks per row, the second one
	// padded with its zero point.
	w := make([]float32, 40)
	for j := 0; j < 20; j++ {
		w[j] = float32(j) * 0.5          // row 0: 0 .. 9.5
		w[20+j] = float32(j)*0.25 - 1.25 // row 1: -1.25 .. 3.5
	}
	b, err := QuantizeBlockwise(w, 2, 20, 4, 16, false)
	if err != nil {
		t.Fatal(err)
	}
	if b.Blocks() != 2 || b.BlobSize() != 8 || len(b.B) != 2*2*8 || len(b.Scales) != 4 || len(b.ZeroPoints) != 2 {
		t.Fatalf("blocks %d blob %d len(B) %d scales %d zero points %d", b.Blocks(), b.BlobSize(), len(b.B), len(b.Scales), len(b.ZeroPoints))
	}
	// Row 0 block 0: [0, 7.5], scale 0.5, zero point 0, so q = j.
	if b.Scales[0] != 0.5 || b.ZeroPoint(0, 0) != 0 {
		t.Errorf("row 0 block 0: scale %v zero point %d, want 0.5 and 0", b.Scales[0], b.ZeroPoint(0, 0))
	}
	for j := 0; j < 16; j++ {
		if b.Value(0, j) != j {
			t.Errorf("row 0 value %d = %d, want %d", j, b.Value(0, j), j)
		}
	}
	// Row 1 block 0: [-1.25, 2.5], scale 3.75/15 = 0.25, zero point 5.
	// Block 1: [2.75, 3.5] widened to [0, 3.5], zero point 0.
	if b.Scales[2] != 0.25 || b.ZeroPoint(1, 0) != 5 || b.ZeroPoint(1, 1) != 0 {
		t.Errorf("row 1: scale %v zero points %d %d, want 0.25, 5, 0", b.Scales[2], b.ZeroPoint(1, 0), b.ZeroPoint(1, 1))
	}
	if b.ZeroPoints[1] != 0x05 {
		t.Errorf("row 1's packed zero points = %#x, want 0x05 (5 low, 0 high)", b.ZeroPoints[1])
	}
	// Padding past K holds the block's zero point.
	if got := getBits(b.B[(1*2+1)*8:], 10, 4); got != b.ZeroPoint(1, 1) {
		t.Errorf("padding = %d, want the zero point %d", got, b.ZeroPoint(1, 1))
	}
	d := b.Dequantize()
	for i := range w {
		if e := abs(d[i] - w[i]); e > b.MaxError(i/20, i%20) {
			t.Errorf("element %d: %v -> %v", i, w[i], d[i])
		}
	}
	packed, scales, zps := b.Tensors()
	if !slices.Equal(packed.Dims, []int64{2, 2, 8}) || !slices.Equal(scales.Dims, []int64{4}) || !slices.Equal(zps.Dims, []int64{2}) {
		t.Errorf("tensor shapes %v %v %v, want [2 2 8] [4] [2]", packed.Dims, scales.Dims, zps.Dims)
	}
}

func TestQuantizeBlockwiseRandomBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	n, k := 9, 200
	w := randMatrix(rng, n*k, 1)
	for _, bits := range []int{2, 4, 8} {
		for _, bs := range []int{16, 32, 128} {
			for _, sym := range []bool{true, false} {
				b, err := QuantizeBlockwise(w, n, k, bits, bs, sym)
				if err != nil {
					t.Fatal(err)
				}
				if len(b.B) != n*b.Blocks()*bs*bits/8 {
					t.Fatalf("bits %d block %d: len(B) = %d", bits, bs, len(b.B))
				}
				d := b.Dequantize()
				for i := range w {
					if e := abs(d[i] - w[i]); e > b.MaxError(i/k, i%k)*(1+1e-5) {
						t.Fatalf("bits %d block %d symmetric %v: element %d %v -> %v, error %v > %v", bits, bs, sym, i, w[i], d[i], e, b.MaxError(i/k, i%k))
					}
				}
			}
		}
	}
}

func TestQuantizeBlockwiseZeroBlock(t *testing.T) {
	for _, sym := range []bool{true, false} {
		b, err := QuantizeBlockwise(make([]float32, 32), 1, 32, 4, 16, sym)
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range b.Dequantize() {
			if v != 0 {
				t.Fatalf("symmetric %v: element %d dequantizes to %v, want 0", sym, i, v)
			}
		}
	}
}

func randMatrix(rng *rand.Rand, n int, scale float64) []float32 {
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * scale)
	}
	return w
}

func abs(x float32) float32 { return float32(math.Abs(float64(x))) }

func closeAll(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return true
}
