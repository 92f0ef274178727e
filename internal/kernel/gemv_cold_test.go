package kernel

import (
	"math/rand/v2"
	"testing"
)

func coldSet() ([][]float32, []float32, []float32) {
	r := rand.New(rand.NewPCG(5, 6))
	const n, k = 10000, 256
	var ws [][]float32
	for i := 0; i < 8; i++ {
		ws = append(ws, randVec(r, n*k))
	}
	return ws, randVec(r, k), make([]float32, n)
}

func BenchmarkGemvColdDot4(b *testing.B) {
	ws, a, c := coldSet()
	b.SetBytes(4 * 10000 * 256)
	i := 0
	for b.Loop() {
		GemmNT(1, 10000, 256, a, 256, ws[i%8], 256, c, 10000, false, 1)
		i++
	}
}

func BenchmarkGemvColdDot(b *testing.B) {
	ws, a, c := coldSet()
	b.SetBytes(4 * 10000 * 256)
	i := 0
	for b.Loop() {
		w := ws[i%8]
		for j := 0; j < 10000; j++ {
			c[j] = Dot(a, w[j*256:(j+1)*256])
		}
		i++
	}
}
