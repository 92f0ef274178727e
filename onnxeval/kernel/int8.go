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

// DotsNibble is DotsU8S8 for 4-bit unsigned values packed two to a byte
// (the first in the low bits, ONNX Runtime's MatMulNBits layout) against
// signed a: blk is a block's packed bytes (2*blk values), b's rows hold
// nblk*blk bytes, ldb apart. a is in the order Interleave gives: per 128
// values, the 64 even-indexed ones, then the 64 odd ones (for a block of
// fewer than 128 values, per block: its even ones, then its odd ones).
func DotsNibble(a []int8, b []uint8, blk, nblk, n, ldb int, c []int32) {
	k := blk * nblk
	if len(a) < 2*k || len(c) < n*nblk || (n > 0 && len(b) < (n-1)*ldb+k) {
		panic(fmt.Sprintf("kernel.DotsNibble: %d, %d, %d bytes for %d rows of %d blocks of %d", len(a), len(b), len(c), n, nblk, blk))
	}
	if n == 0 || k == 0 {
		return
	}
	if useVNNI && blk == 64 && ldb == k && n*nblk%4 == 0 {
		// Contiguous rows of one-chunk blocks: four blocks at a time.
		dots4NibbleAsm(&a[0], &b[0], nblk, n*nblk, &c[0])
		return
	}
	if useVNNI && blk%64 == 0 {
		dotsNibbleAsm(&a[0], &b[0], blk, nblk, n, ldb, &c[0])
		return
	}
	chunk := min(64, blk) // packed bytes per group of even/odd values
	for j := 0; j < n; j++ {
		row := b[j*ldb : j*ldb+k]
		for t := 0; t < nblk; t++ {
			var s int32
			for g := t * blk; g < (t+1)*blk; g += chunk {
				ev, od := a[2*g:2*g+chunk], a[2*g+chunk:2*g+2*chunk]
				for i := 0; i < chunk; i++ {
					x := row[g+i]
					s += int32(x&15)*int32(ev[i]) + int32(x>>4)*int32(od[i])
				}
			}
			c[j*nblk+t] = s
		}
	}
}

// Interleave writes a (2*blk*nblk values) into dst in DotsNibble's order.
func Interleave(dst, a []int8, blk int) {
	chunk := min(64, blk)
	for g := 0; 2*g < len(a); g += chunk {
		for i := 0; i < chunk; i++ {
			dst[2*g+i] = a[2*(g+i)]
			dst[2*g+chunk+i] = a[2*(g+i)+1]
		}
	}
}

// HasInt8 reports whether the 8-bit kernels run in assembly (AVX-512 VNNI).
func HasInt8() bool { return useVNNI }
