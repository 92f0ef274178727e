package kernel

import (
	"math/rand/v2"
	"testing"
)

func BenchmarkZZSoftmaxParts(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := randVec(r, 16000)
	z := make([]float32, 16000)
	b.Run("max", func(b *testing.B) {
		for b.Loop() {
			Max(x)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16000, "ns/elem")
	})
	b.Run("expsum", func(b *testing.B) {
		for b.Loop() {
			ExpSum(x, 3)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16000, "ns/elem")
	})
	b.Run("subsub", func(b *testing.B) {
		for b.Loop() {
			SubSub(x, 3, 1, z)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/16000, "ns/elem")
	})
}
