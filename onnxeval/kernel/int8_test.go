package kernel

import (
	"math/rand/v2"
	"testing"
)

// TestDotsU8S8 and TestDotsNibble compare the kernels (assembly where the
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

func TestDotsNibble(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	for _, c := range []struct{ blk, nblk, n, ldb int }{{64, 1, 3, 64}, {64, 2, 4, 200}, {128, 2, 2, 256}, {8, 4, 3, 32}, {64, 2, 6, 128}, {64, 4, 3, 256}, {64, 1, 8, 64}} {
		k := c.blk * c.nblk // packed bytes per row
		vals := make([]int8, 2*k)
		for i := range vals {
			vals[i] = int8(r.IntN(256) - 128)
		}
		a := make([]int8, 2*k)
		Interleave(a, vals, c.blk)
		b := make([]uint8, (c.n-1)*c.ldb+k)
		for i := range b {
			b[i] = uint8(r.IntN(256))
		}
		got := make([]int32, c.n*c.nblk)
		DotsNibble(a, b, c.blk, c.nblk, c.n, c.ldb, got)
		for j := 0; j < c.n; j++ {
			for tt := 0; tt < c.nblk; tt++ {
				var s int32
				for v := 2 * tt * c.blk; v < 2*(tt+1)*c.blk; v++ {
					x := b[j*c.ldb+v/2]
					q := x & 15
					if v%2 == 1 {
						q = x >> 4
					}
					s += int32(q) * int32(vals[v])
				}
				if got[j*c.nblk+tt] != s {
					t.Fatalf("%+v: row %d block %d: %d, want %d", c, j, tt, got[j*c.nblk+tt], s)
				}
			}
		}
	}
}
