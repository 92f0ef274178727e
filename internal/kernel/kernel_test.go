package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

func randVec(r *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = r.Float32()*2 - 1
	}
	return v
}

// TestKernelsAgainstFloat64 checks every kernel, at lengths around the
// assembly's block of 16, against float64 sums.
func TestKernelsAgainstFloat64(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, k := range []int{0, 1, 3, 15, 16, 17, 31, 32, 33, 64, 100, 257, 1000} {
		a := randVec(r, k)
		ldb := k + 3
		b := randVec(r, 4*ldb+1)
		want := make([]float64, 4)
		for j := range want {
			for i := 0; i < k; i++ {
				want[j] += float64(a[i]) * float64(b[j*ldb+i])
			}
		}
		tol := 1e-5 * float64(k+1)
		if got := Dot(a, b[ldb:]); math.Abs(float64(got)-want[1]) > tol {
			t.Errorf("k=%d: Dot = %v, want %v", k, got, want[1])
		}
		s0, s1, s2, s3 := Dot4(a, b, ldb)
		for j, got := range []float32{s0, s1, s2, s3} {
			if math.Abs(float64(got)-want[j]) > tol {
				t.Errorf("k=%d: Dot4[%d] = %v, want %v", k, j, got, want[j])
			}
		}
		y := randVec(r, k)
		y0 := append([]float32(nil), y...)
		Axpy(0.5, a, y)
		for i := range y {
			if w := y0[i] + 0.5*a[i]; math.Abs(float64(y[i]-w)) > 1e-6 {
				t.Fatalf("k=%d: Axpy[%d] = %v, want %v", k, i, y[i], w)
			}
		}
	}
}

// TestGemmNT checks the product, accumulation and the split among
// goroutines against a plain triple loop.
func TestGemmNT(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ m, n, k, threads int }{{1, 1, 1, 1}, {1, 7, 33, 1}, {3, 10, 64, 1}, {32, 1000, 256, 4}, {5, 130, 300, 2}} {
		a, b := randVec(r, c.m*c.k), randVec(r, c.n*c.k)
		out := randVec(r, c.m*c.n)
		prev := append([]float32(nil), out...)
		GemmNT(c.m, c.n, c.k, a, c.k, b, c.k, out, c.n, true, c.threads)
		for i := 0; i < c.m; i++ {
			for j := 0; j < c.n; j++ {
				w := float64(prev[i*c.n+j])
				for l := 0; l < c.k; l++ {
					w += float64(a[i*c.k+l]) * float64(b[j*c.k+l])
				}
				if math.Abs(float64(out[i*c.n+j])-w) > 1e-4 {
					t.Fatalf("%+v: C[%d,%d] = %v, want %v", c, i, j, out[i*c.n+j], w)
				}
			}
		}
	}
}

func BenchmarkGemv(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, k = 10000, 256
	a, w, c := randVec(r, k), randVec(r, n*k), make([]float32, n)
	b.SetBytes(int64(4 * n * k))
	for b.Loop() {
		GemmNT(1, n, k, a, k, w, k, c, n, false, 1)
	}
}

// TestScaleInt32: the assembly computes (float32(acc) * sc) * s as Go does,
// bit for bit, at every length around its 16-element blocks, with sums
// beyond float32's exact integers, negative and zero sums, and scales that
// are infinite, NaN or subnormal.
func TestScaleInt32(t *testing.T) {
	specials := []float32{float32(math.Inf(1)), float32(math.NaN()), 1e-40, -3.5, 0}
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100} {
		acc := make([]int32, n)
		sc := make([]float32, n)
		for j := range n {
			acc[j] = int32((j*7919)%200000-100000) * int32(1+j%300)
			sc[j] = float32(j%13+1) * 1e-3
			if j%11 == 5 {
				sc[j] = specials[j%len(specials)]
			}
		}
		if n > 3 {
			acc[3] = math.MaxInt32
		}
		for _, s := range []float32{0.37, 3e38, float32(math.NaN())} {
			y := make([]float32, n)
			ScaleInt32(acc, sc, s, y)
			for j := range n {
				want := (float32(acc[j]) * sc[j]) * s
				if math.Float32bits(y[j]) != math.Float32bits(want) && !(y[j] != y[j] && want != want) {
					t.Fatalf("n=%d s=%v: y[%d] = %v, want %v", n, s, j, y[j], want)
				}
			}
		}
	}
}
