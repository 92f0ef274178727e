// Package kernel holds the float32 loops where a decoder step spends its
// time: dot products of one row against four, axpy, and the products built
// on them. On amd64 with AVX2 and FMA they run in assembly (kernel_amd64.s);
// everywhere else, and when the CPU lacks those, in Go.
package kernel

import "sync"

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
	b0, b1, b2, b3 := b[:k], b[ldb:ldb+k], b[2*ldb:2*ldb+k], b[3*ldb:3*ldb+k]
	for i, v := range a {
		s0 += v * b0[i]
		s1 += v * b1[i]
		s2 += v * b2[i]
		s3 += v * b3[i]
	}
	return
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
	const minWork = 1 << 17 // multiply-adds per goroutine worth starting one
	t := min(threads, n/16, m*n*k/minWork)
	if t <= 1 {
		gemmNT(0, n, m, k, a, lda, b, ldb, c, ldc, acc)
		return
	}
	// Column blocks of a multiple of 4, one per goroutine.
	per := (n/t + 3) &^ 3
	var wg sync.WaitGroup
	for j0 := 0; j0 < n; j0 += per {
		j1 := min(n, j0+per)
		if j1 == n {
			gemmNT(j0, j1, m, k, a, lda, b, ldb, c, ldc, acc)
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			gemmNT(j0, j1, m, k, a, lda, b, ldb, c, ldc, acc)
		}()
	}
	wg.Wait()
}

// gemmNT computes columns j0..j1 of C = A B^T.
func gemmNT(j0, j1, m, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int, acc bool) {
	j := j0
	for ; j+4 <= j1; j += 4 {
		bj := b[j*ldb:]
		for i := 0; i < m; i++ {
			s0, s1, s2, s3 := Dot4(a[i*lda:i*lda+k], bj, ldb)
			ci := c[i*ldc+j : i*ldc+j+4]
			if acc {
				ci[0] += s0
				ci[1] += s1
				ci[2] += s2
				ci[3] += s3
			} else {
				ci[0], ci[1], ci[2], ci[3] = s0, s1, s2, s3
			}
		}
	}
	for ; j < j1; j++ {
		bj := b[j*ldb : j*ldb+k]
		for i := 0; i < m; i++ {
			s := Dot(a[i*lda:i*lda+k], bj)
			if acc {
				c[i*ldc+j] += s
			} else {
				c[i*ldc+j] = s
			}
		}
	}
}

// Accelerated reports which implementation runs: "avx2+fma" or "go".
func Accelerated() string {
	if useAsm {
		return "avx2+fma"
	}
	return "go"
}
