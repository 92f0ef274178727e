// Package kernel holds the float32 loops where a decoder step spends its
// time: dot products of one row against four, axpy, and the products built
// on them. On amd64 with AVX2 and FMA they run in assembly (kernel_amd64.s);
// everywhere else, and when the CPU lacks those, in Go.
package kernel

// Dot returns sum a[i]*b[i] over len(a) elements (b at least as long).
func Dot(a, b []float32) float32 {
	if len(a) == 0 {
		return 0
	}
	b = b[:len(a)]
	if useAsm && len(a) >= 16 {
		n := len(a) &^ 15
		s := dotAsm(&a[0], &b[0], n)
		for i := n; i < len(a); i++ {
			s += a[i] * b[i]
		}
		return s
	}
	return dotGo(a, b)
}

func dotGo(a, b []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Dot4 returns the dot products of a with four rows of b, each of len(a)
// elements, the rows ldb apart: b[0:], b[ldb:], b[2*ldb:], b[3*ldb:].
func Dot4(a, b []float32, ldb int) (s0, s1, s2, s3 float32) {
	k := len(a)
	if k == 0 {
		return
	}
	_ = b[3*ldb+k-1]
	if useAsm && k >= 16 {
		n := k &^ 15
		var out [4]float32
		dot4Asm(&a[0], &b[0], ldb, n, &out)
		s0, s1, s2, s3 = out[0], out[1], out[2], out[3]
		for i := n; i < k; i++ {
			v := a[i]
			s0 += v * b[i]
			s1 += v * b[ldb+i]
			s2 += v * b[2*ldb+i]
			s3 += v * b[3*ldb+i]
		}
		return
	}
	// Each row as Dot sums it: the same bits as a row taken alone.
	return dotGo(a, b[:k]), dotGo(a, b[ldb:ldb+k]), dotGo(a, b[2*ldb:2*ldb+k]), dotGo(a, b[3*ldb:3*ldb+k])
}

// ScaleInt32 writes y[j] = (float32(acc[j]) * sc[j]) * s for every j of
// acc: integer sums scaled back by their column's scale and their row's,
// each product rounded to float32 in that order (an int8 product's
// dequantization, bit for bit the two Mul nodes it replaces).
func ScaleInt32(acc []int32, sc []float32, s float32, y []float32) {
	n := len(acc)
	sc, y = sc[:n], y[:n]
	done := 0
	if useAsm && n >= 16 {
		done = n &^ 15
		scaleInt32Asm(&acc[0], &sc[0], s, &y[0], done)
	}
	for j := done; j < n; j++ {
		y[j] = (float32(acc[j]) * sc[j]) * s
	}
}

// Axpy adds alpha*x to y (len(x) elements).
func Axpy(alpha float32, x, y []float32) {
	if len(x) == 0 {
		return
	}
	y = y[:len(x)]
	if useAsm && len(x) >= 16 {
		n := len(x) &^ 15
		axpyAsm(alpha, &x[0], &y[0], n)
		for i := n; i < len(x); i++ {
			y[i] += alpha * x[i]
		}
		return
	}
	for i, v := range x {
		y[i] += alpha * v
	}
}

// GemmNT computes C = A B^T (+ C when acc): A is m x k (rows lda apart),
// B is n x k (rows ldb apart), C is m x n (rows ldc apart). It splits the
// columns among up to threads goroutines when the product is large enough
// to pay for them.
func GemmNT(m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, acc bool, threads int) {
	if m == 0 || n == 0 {
		return
	}
	t := min(threads, n/16, m*n*k/minWork)
	if t <= 1 {
		// No closure for one thread: the attention calls this once per
		// row and step, and a closure handed to parallel is allocated.
		gemmNT(0, n, m, k, a, lda, b, ldb, c, ldc, acc)
		return
	}
	parallel(n, t, func(j0, j1 int) { gemmNT(j0, j1, m, k, a, lda, b, ldb, c, ldc, acc) })
}

// minWork is the multiply-adds per goroutine worth starting one.
const minWork = 1 << 17

// Parallel splits the n rows of a loop among up to threads goroutines when
// its work (in multiply-adds or element operations) pays for them: f is
// called on ranges lo..hi covering 0..n, each once.
func Parallel(n, threads, work int, f func(lo, hi int)) {
	parallel(n, min(threads, n, work/minWork), f)
}

// gemmNT computes columns j0..j1 of C = A B^T. It walks B's rows in
// order, one sequential stream through memory (B is the weights, usually
// too large for the caches: a single stream is what the hardware
// prefetchers follow best, 36 GB/s here against 20 for four interleaved
// rows), and takes each against four rows of A at a time (A is small and
// stays in cache).
func gemmNT(j0, j1, m, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, acc bool) {
	if m == 1 && !acc && useAsm && k%16 == 0 && j1 > j0 {
		// One row of A: the rows of B in one assembly loop (software
		// prefetching measured slower than the hardware's here).
		_ = b[(j1-1)*ldb+k-1]
		_ = a[k-1]
		_ = c[j1-1]
		gemvAsm(&a[0], &b[j0*ldb], k, j1-j0, ldb, &c[j0])
		return
	}
	for j := j0; j < j1; j++ {
		bj := b[j*ldb : j*ldb+k]
		i := 0
		for ; i+4 <= m; i += 4 {
			s0, s1, s2, s3 := Dot4(bj, a[i*lda:], lda)
			if acc {
				c[i*ldc+j] += s0
				c[(i+1)*ldc+j] += s1
				c[(i+2)*ldc+j] += s2
				c[(i+3)*ldc+j] += s3
			} else {
				c[i*ldc+j] = s0
				c[(i+1)*ldc+j] = s1
				c[(i+2)*ldc+j] = s2
				c[(i+3)*ldc+j] = s3
			}
		}
		for ; i < m; i++ {
			s := Dot(a[i*lda:i*lda+k], bj)
			if acc {
				c[i*ldc+j] += s
			} else {
				c[i*ldc+j] = s
			}
		}
	}
}

// Accelerated reports the kernels dispatched on this CPU: "go" without
// assembly, else "avx2+fma" and, where the path has them, "avx-vnni" (the
// 8-bit and 4-bit products on VEX VPDPBUSD), "avx512f" (the packed
// float32 products on 16 lanes) and "avx512-vnni" (the 8-bit and 4-bit
// products on 64 columns), joined with commas.
func Accelerated() string {
	if !useAsm {
		return "go"
	}
	k := "avx2+fma"
	if useVexVNNI {
		k += ", avx-vnni"
	}
	if usePanels {
		k += ", avx512f"
	}
	if useVNNI {
		k += ", avx512-vnni"
	}
	return k
}
