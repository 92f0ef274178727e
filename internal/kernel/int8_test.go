package kernel

import (
	"math/rand/v2"
	"testing"
)

// TestDotsU8S8 compares the kernel (assembly where the
// CPU has VNNI) with plain integer sums.
func TestDotsU8S8(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	for _, c := range []struct{ blk, nblk, n, ldb int }{{64, 1, 3, 64}, {128, 2, 5, 300}, {256, 1, 1, 256}, {64, 4, 7, 256}, {48, 2, 2, 96}, {256, 1, 9, 256}, {512, 1, 8, 600}} {
		k := c.blk * c.nblk
		a := make([]uint8, k)
		for i := range a {
			a[i] = uint8(r.IntN(256))
		}
		b := make([]int8, (c.n-1)*c.ldb+k)
		for i := range b {
			b[i] = int8(r.IntN(256) - 128)
		}
		got := make([]int32, c.n*c.nblk)
		DotsU8S8(a, b, c.blk, c.nblk, c.n, c.ldb, got)
		for j := 0; j < c.n; j++ {
			for tt := 0; tt < c.nblk; tt++ {
				var s int32
				for i := tt * c.blk; i < (tt+1)*c.blk; i++ {
					s += int32(a[i]) * int32(b[j*c.ldb+i])
				}
				if got[j*c.nblk+tt] != s {
					t.Fatalf("%+v: row %d block %d: %d, want %d", c, j, tt, got[j*c.nblk+tt], s)
				}
			}
		}
	}
}
