package kernel

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestPacked multiplies through the packed layout (or the plain one without
// AVX-512) and compares with float64 sums, for row counts around the
// kernels' 4 and column counts around the panel's 16 and the three
// panels of the wider kernel; each row's result is, bit for bit, what the
// row alone gives (a row's answer does not depend on its batch-mates).
func TestPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for _, c := range []struct{ m, n, k, threads int }{{1, 16, 8, 1}, {1, 37, 33, 1}, {3, 50, 64, 1}, {4, 16, 1, 1}, {5, 100, 256, 2}, {32, 1000, 256, 2}, {9, 31, 7, 1},
		{4, 48, 5, 1}, {8, 97, 3, 1}, {6, 160, 65, 2}, {12, 47, 16, 1}, {7, 100, 33, 1}, {31, 96, 512, 2}, {2, 160, 40, 2}, {5, 161, 33, 1},
		{9, 200, 37, 2}, {13, 100, 16, 1}, {17, 400, 9, 2}, {25, 130, 64, 1}, {9, 31, 8, 1}} {
		w := randVec(r, c.n*c.k)
		p := Pack(w, c.n, c.k)
		if got := p.Unpacked(); !slices.Equal(got, w) {
			t.Fatalf("%+v: Unpacked differs from the matrix packed", c)
		}
		lda, ldc := c.k+1, c.n+2
		a := randVec(r, c.m*lda)
		const guard = 4 * panel // after the last row: must stay zero
		out := make([]float32, c.m*ldc+guard)
		p.Mul(c.m, a, lda, out[:c.m*ldc], ldc, c.threads)
		for j, v := range out[c.m*ldc:] {
			if v != 0 {
				t.Fatalf("%+v: wrote %d past the last row", c, j)
			}
		}
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				var want float64
				for l := 0; l < c.k; l++ {
					want += float64(a[i*lda+l]) * float64(w[j*c.k+l])
				}
				if math.Abs(float64(out[i*ldc+j])-want) > 1e-4 {
					t.Fatalf("%+v: C[%d,%d] = %v, want %v", c, i, j, out[i*ldc+j], want)
				}
			}
			for j := c.n; j < ldc; j++ {
				if out[i*ldc+j] != 0 {
					t.Fatalf("%+v: wrote past row %d's %d columns", c, i, c.n)
				}
			}
			alone := make([]float32, c.n)
			p.Mul(1, a[i*lda:], lda, alone, c.n, 1)
			for j, v := range alone {
				if math.Float32bits(v) != math.Float32bits(out[i*ldc+j]) {
					t.Fatalf("%+v: C[%d,%d] = %v in the batch, %v alone", c, i, j, out[i*ldc+j], v)
				}
			}
		}
	}
}

func BenchmarkPackedGemm32(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const m, n, k = 32, 10000, 256
	p := Pack(randVec(r, n*k), n, k)
	a, c := randVec(r, m*k), make([]float32, m*n)
	b.SetBytes(4 * n * k)
	for b.Loop() {
		p.Mul(m, a, k, c, n, 1)
	}
	b.ReportMetric(float64(m*n*k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
}

func BenchmarkPackedGemvCold(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, k = 10000, 256
	var ps []*Packed
	for i := 0; i < 8; i++ {
		ps = append(ps, Pack(randVec(r, n*k), n, k))
	}
	a, c := randVec(r, k), make([]float32, n)
	b.SetBytes(4 * n * k)
	i := 0
	for b.Loop() {
		ps[i%8].Mul(1, a, k, c, n, 1)
		i++
	}
}

// BenchmarkPackedRecipe multiplies at the shapes of a beam-5 step of the
// OpenNMT-py recipe model (bench --corpus: batches of 30 sentences, 150
// hypotheses, H=512, 16,000 target words) and of its encoder's recurrence
// (30 rows, 256 per direction), where the operands no longer fit in the
// first-level cache as BenchmarkPackedGemm32's do.
func BenchmarkPackedRecipe(b *testing.B) {
	for _, s := range []struct {
		name    string
		m, n, k int
	}{
		{"gates-input-150x1024x2048", 150, 2048, 1024},
		{"gates-hidden-150x512x2048", 150, 2048, 512},
		{"attn-out-150x1024x512", 150, 512, 1024},
		{"generator-150x512x16000", 150, 16000, 512},
		{"encoder-30x256x1024", 30, 1024, 256},
	} {
		b.Run(s.name, func(b *testing.B) {
			r := rand.New(rand.NewPCG(5, 6))
			p := Pack(randVec(r, s.n*s.k), s.n, s.k)
			a, c := randVec(r, s.m*s.k), make([]float32, s.m*s.n)
			for b.Loop() {
				p.Mul(s.m, a, s.k, c, s.n, 1)
			}
			b.ReportMetric(float64(s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
