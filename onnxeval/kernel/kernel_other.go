//go:build !amd64 || purego

package kernel

const useAsm = false

func dotAsm(a, b *float32, n int) float32                { panic("no assembly") }
func dot4Asm(a, b *float32, ldb, n int, out *[4]float32) { panic("no assembly") }
func axpyAsm(alpha float32, x, y *float32, n int)        { panic("no assembly") }

func gemvAsm(a, b *float32, k, n, ldb int, c *float32) { panic("no assembly") }
