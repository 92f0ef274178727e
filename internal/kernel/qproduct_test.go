package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestQuantProduct compares QuantProduct.Run (the VNNI blocks where the
// CPU has them, with their partial last block and the rows left to the
// four- and one-row kernels after the six-row one's) with the
// integer sums and the two roundings written out, bit for bit, scales
// holding NaN, infinities and subnormals included.
func TestQuantProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-45, 0, -3e38}
	for _, c := range []struct{ m, n, k, extra int }{
		{1, 1, 1, 0}, {1, 64, 4, 0}, {4, 64, 256, 0}, {5, 65, 3, 1}, {3, 130, 5, 7},
		{32, 1000, 256, 0}, {9, 200, 257, 3}, {8, 10000 % 256, 64, 0}, {2, 17, 768, 0}, {7, 129, 2, 0},
		{11, 70, 9, 2}, {12, 128, 64, 0}, {10, 64, 256, 5}, {6, 200, 20, 1},
	} {
		for trial, azp := range []int32{128, 0, 3} {
			w := make([]int8, c.n*c.k)
			for i := range w {
				w[i] = int8(r.IntN(256) - 128)
			}
			sc := make([]float32, c.n)
			for j := range sc {
				sc[j] = r.Float32() / 100
				if r.IntN(20) == 0 {
					sc[j] = special[r.IntN(len(special))]
				}
			}
			var bias []float32 // with a bias on the second trial
			if trial == 1 {
				bias = make([]float32, c.n)
				for j := range bias {
					bias[j] = r.Float32() - 0.5
					if j%7 == 3 {
						bias[j] = special[r.IntN(len(special))]
					}
				}
			}
			q := NewQuantProduct(w, c.n, c.k, azp, sc, bias)
			lda := q.Stride() + c.extra
			a := make([]uint8, (c.m-1)*lda+q.Stride())
			for i := range a {
				a[i] = uint8(r.IntN(256))
			}
			rs := make([]float32, c.m)
			for i := range rs {
				rs[i] = r.Float32()
			}
			if c.m > 2 {
				rs[1] = float32(math.NaN())
			}
			if c.m > 5 { // in the six-row kernel's last row
				rs[5] = float32(math.Inf(-1))
			}
			ldy := c.n + c.extra
			y := make([]float32, (c.m-1)*ldy+c.n)
			for _, threads := range []int{1, 2} {
				q.Run(c.m, a, lda, rs, y, ldy, threads)
				for i := 0; i < c.m; i++ {
					for j := 0; j < c.n; j++ {
						var s int32
						for l := 0; l < c.k; l++ {
							s += (int32(a[i*lda+l]) - azp) * int32(w[j*c.k+l])
						}
						want := (float32(s) * sc[j]) * rs[i]
						if bias != nil {
							want += bias[j]
						}
						if got := y[i*ldy+j]; math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
							t.Fatalf("%+v azp %d threads %d: y[%d][%d] = %v, want %v", c, azp, threads, i, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestQuantProductRowQuantized is TestQuantProduct on activations as the
// fused row quantization makes them (zero point 128, bytes 1 to 255), the
// AVX2 kernel's case on CPUs without VNNI: weights of -128 and 127 and
// rows of bytes 1 and 255 at the extremes of its int16 pairs, rows with a
// 0 byte (a NaN or infinite row) among them taking the Go loop, groups of
// four rows taken in place or copied, partial blocks of 16 columns.
func TestQuantProductRowQuantized(t *testing.T) {
	r := rand.New(rand.NewPCG(25, 26))
	for _, c := range []struct{ m, n, k, extra int }{
		{1, 1, 1, 0}, {4, 16, 4, 0}, {5, 17, 3, 1}, {9, 65, 257, 2}, {8, 130, 768, 0}, {13, 1000, 64, 5}, {3, 48, 512, 0},
	} {
		w := make([]int8, c.n*c.k)
		for i := range w {
			w[i] = []int8{-128, 127, int8(r.IntN(256) - 128)}[r.IntN(3)]
		}
		sc := make([]float32, c.n)
		for j := range sc {
			sc[j] = r.Float32() / 100
		}
		bias := make([]float32, c.n)
		for j := range bias {
			bias[j] = r.Float32() - 0.5
		}
		for _, b := range [][]float32{nil, bias} {
			q := NewQuantProduct(w, c.n, c.k, 128, sc, b)
			if want := Path() == PathAVX2 || Path() == PathAVX512 || Path() == PathAVXVNNI; q.lanes8 != want {
				t.Fatalf("path %s: the 8-lane kernel taken %v", Path(), q.lanes8)
			}
			lda := q.Stride() + c.extra
			a := make([]uint8, (c.m-1)*lda+q.Stride())
			for i := range a {
				a[i] = []uint8{1, 255, uint8(1 + r.IntN(255))}[r.IntN(3)]
			}
			if c.m > 4 {
				a[2*lda] = 0 // row 2: a NaN row's byte
			}
			rs := make([]float32, c.m)
			for i := range rs {
				rs[i] = r.Float32()
			}
			ldy := c.n + c.extra
			y := make([]float32, (c.m-1)*ldy+c.n)
			for _, threads := range []int{1, 2} {
				clear(y)
				q.Run(c.m, a, lda, rs, y, ldy, threads)
				for i := 0; i < c.m; i++ {
					for j := 0; j < c.n; j++ {
						var s int32
						for l := 0; l < c.k; l++ {
							s += (int32(a[i*lda+l]) - 128) * int32(w[j*c.k+l])
						}
						want := (float32(s) * sc[j]) * rs[i]
						if b != nil {
							want += b[j]
						}
						if got := y[i*ldy+j]; math.Float32bits(got) != math.Float32bits(want) {
							t.Fatalf("%+v bias %v threads %d: y[%d][%d] = %v, want %v", c, b != nil, threads, i, j, got, want)
						}
					}
				}
			}
		}
	}
}

func TestAbsMaxAndQuantizeU8(t *testing.T) {
	r := rand.New(rand.NewPCG(23, 24))
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 64, 100, 256, 1000} {
		for trial := 0; trial < 4; trial++ {
			x := make([]float32, n)
			for i := range x {
				x[i] = (r.Float32() - 0.5) * 8
				switch r.IntN(30) {
				case 0:
					x[i] = float32(r.IntN(9)) - 4.5 // ties to even
				case 1:
					x[i] = float32(math.Copysign(0, -1))
				case 2:
					x[i] = 3e38
				}
			}
			if trial == 1 && n > 0 {
				x[r.IntN(n)] = nan
			}
			if trial == 2 && n > 0 {
				x[r.IntN(n)] = -inf
			}
			want := float32(math.Inf(-1))
			for _, v := range x {
				if a := max(v, -v); a > want || a != a {
					want = a
				}
			}
			got := AbsMax(x)
			if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
				t.Fatalf("n %d trial %d: AbsMax = %v, want %v", n, trial, got, want)
			}
			for _, sc := range []struct{ s, one, zp float32 }{{max(want/127, 1e-8), 1, 128}, {0.01, 1, 128}, {0.5, 2, 0}, {inf, 1, 128}, {nan, 1, 128}, {1e-30, 3, 7}} {
				q := make([]uint8, n)
				QuantizeU8(x, sc.s, sc.one, sc.zp, q)
				for i, v := range x {
					f := float32(math.RoundToEven(float64((v/sc.s)/sc.one))) + sc.zp
					want := uint8(max(0, min(255, f)))
					if q[i] != want {
						t.Fatalf("n %d trial %d %+v: q[%d] = %d for %v, want %d", n, trial, sc, i, q[i], v, want)
					}
				}
			}
		}
	}
}

func BenchmarkQuantProduct150(b *testing.B) { benchQuant(b, 150) }
func BenchmarkQuantProduct32(b *testing.B)  { benchQuant(b, 32) }
func BenchmarkQuantProduct1(b *testing.B)   { benchQuant(b, 1) }

func benchQuant(b *testing.B, m int) {
	const n, k = 10000, 256
	w := make([]int8, n*k)
	for i := range w {
		w[i] = int8(i*7 - 3)
	}
	sc := make([]float32, n)
	for j := range sc {
		sc[j] = 0.01
	}
	q := NewQuantProduct(w, n, k, 128, sc, nil)
	a := make([]uint8, m*k)
	for i := range a {
		a[i] = uint8(1 + i%255) // row-quantized bytes: the AVX2 kernel takes them
	}
	rs := make([]float32, m)
	y := make([]float32, m*n)
	b.SetBytes(int64(n * k))
	for b.Loop() {
		q.Run(m, a, k, rs, y, n, 1)
	}
	b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}
