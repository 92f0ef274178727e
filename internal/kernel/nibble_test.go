package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestNibbleProduct compares NibbleProduct.Run (the VNNI blocks where the
// CPU has them: 4-row and 1-row kernels, a partial last column block, a
// partial last block along k) with the integer sums and the block terms
// written out in order, bit for bit, scales holding NaN, infinities and
// subnormals included; one case at the extremes (weights 15, row values
// -128 and 127), where a 16-bit partial sum of the AVX2 kernel is largest.
func TestNibbleProduct(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), 1e-45, 0, -3e38}
	for _, c := range []struct {
		m, n, k, block, extra int
		extreme               bool
	}{
		{1, 64, 128, 128, 0, false}, {4, 64, 128, 128, 0, false}, {5, 70, 256, 128, 8, false}, {32, 1000, 512, 128, 0, false},
		{3, 17, 40, 16, 0, false}, {9, 130, 200, 32, 16, false}, {2, 1, 8, 8, 0, false}, {7, 129, 512, 64, 0, false},
		{6, 40, 96, 32, 0, true},
	} {
		nb := (c.k + c.block - 1) / c.block
		w := make([]uint8, c.n*c.k)
		for i := range w {
			w[i] = uint8(r.IntN(16))
			if c.extreme {
				w[i] = 15
			}
		}
		ws, zp := make([]float32, c.n*nb), make([]float32, c.n*nb)
		for i := range ws {
			ws[i] = r.Float32() / 50
			zp[i] = float32(r.IntN(16))
			if r.IntN(25) == 0 {
				ws[i] = special[r.IntN(len(special))]
			}
		}
		q := NewNibbleProduct(w, c.n, c.k, c.block, ws, zp)
		lda := q.Stride() + c.extra
		aq := make([]int8, (c.m-1)*lda+q.Stride())
		for i := 0; i < c.m; i++ {
			for k := 0; k < c.k; k++ {
				aq[i*lda+k] = int8(r.IntN(256) - 128)
				if c.extreme {
					aq[i*lda+k] = int8(127 - 255*((i+k/8)%2))
				}
			}
		}
		as, su := make([]float32, c.m*nb), make([]float32, c.m*nb)
		for i := range as {
			as[i] = r.Float32() / 10
			su[i] = float32(r.IntN(2000) - 1000)
		}
		if c.m > 1 {
			as[nb] = float32(math.NaN())
		}
		ldy := c.n + c.extra
		y := make([]float32, (c.m-1)*ldy+c.n)
		for _, threads := range []int{1, 2} {
			q.Run(c.m, aq, lda, as, su, y, ldy, threads)
			for i := 0; i < c.m; i++ {
				for j := 0; j < c.n; j++ {
					var want float32
					for tt := 0; tt < nb; tt++ {
						var d int32
						for k := tt * c.block; k < min(c.k, (tt+1)*c.block); k++ {
							d += int32(aq[i*lda+k]) * int32(w[j*c.k+k])
						}
						u := j*nb + tt
						want += as[i*nb+tt] * ws[u] * (float32(d) - zp[u]*su[i*nb+tt])
					}
					if got := y[i*ldy+j]; !sameBits(got, want) {
						t.Fatalf("%+v threads %d: y[%d][%d] = %v, want %v", c, threads, i, j, got, want)
					}
				}
			}
		}
	}
}

func BenchmarkNibbleProduct32(b *testing.B) { benchNibble(b, 32) }
func BenchmarkNibbleProduct1(b *testing.B)  { benchNibble(b, 1) }

func benchNibble(b *testing.B, m int) {
	const n, k, block = 10000, 512, 128
	nb := k / block
	w := make([]uint8, n*k)
	for i := range w {
		w[i] = uint8(i % 16)
	}
	ws, zp := make([]float32, n*nb), make([]float32, n*nb)
	q := NewNibbleProduct(w, n, k, block, ws, zp)
	aq := make([]int8, m*k)
	as, su := make([]float32, m*nb), make([]float32, m*nb)
	y := make([]float32, m*n)
	b.SetBytes(int64(n * k / 2))
	for i := 0; i < b.N; i++ {
		q.Run(m, aq, k, as, su, y, n, 1)
	}
	b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}
