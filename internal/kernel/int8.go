package kernel

import "fmt"

// DotsU8S8 computes, for each of the n rows j of b (ldb bytes apart) and
// each of its nblk blocks t of blk bytes, the integer dot product of a's
// block t (unsigned) with b's (signed) into c[j*nblk+t]: exact int32 sums,
// the products of ONNX's 8-bit matrix products. a has nblk*blk bytes.
func DotsU8S8(a []uint8, b []int8, blk, nblk, n, ldb int, c []int32) {
	k := blk * nblk
	if len(a) < k || len(c) < n*nblk || (n > 0 && len(b) < (n-1)*ldb+k) {
		panic(fmt.Sprintf("kernel.DotsU8S8: %d, %d, %d bytes for %d rows of %d blocks of %d", len(a), len(b), len(c), n, nblk, blk))
	}
	if n == 0 || k == 0 {
		return
	}
	if useVNNI && blk%64 == 0 {
		if n4 := n &^ 3; nblk == 1 && n4 > 0 {
			// Four rows at a time, the rest one by one.
			dots4U8S8Asm(&a[0], &b[0], blk, n4, ldb, &c[0])
			if n4 < n {
				dotsU8S8Asm(&a[0], &b[n4*ldb], blk, 1, n-n4, ldb, &c[n4])
			}
			return
		}
		dotsU8S8Asm(&a[0], &b[0], blk, nblk, n, ldb, &c[0])
		return
	}
	for j := 0; j < n; j++ {
		row := b[j*ldb : j*ldb+k]
		for t := 0; t < nblk; t++ {
			var s int32
			for i := t * blk; i < (t+1)*blk; i++ {
				s += int32(a[i]) * int32(row[i])
			}
			c[j*nblk+t] = s
		}
	}
}

// HasInt8 reports whether the 8-bit kernels run in assembly (AVX-512 VNNI).
func HasInt8() bool { return useVNNI }

// QuantProductFast reports whether a QuantProduct with activations' zero
// point azp runs in assembly: on AVX-512 VNNI or AVX-VNNI, or with zero
// point 128 on AVX2 (rows with a 0 byte then take the Go loop: the fused
// row quantization gives those only for rows holding NaN or infinities).
func QuantProductFast(azp int32) bool { return useVNNI || useVexVNNI || useAsm && azp == 128 }
