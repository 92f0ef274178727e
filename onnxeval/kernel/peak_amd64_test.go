//go:build amd64 && !purego

package kernel

import "testing"

// BenchmarkPeak measures one core's peak multiply-add rate with the
// products' own instructions, from registers alone (16 independent
// accumulators, so that throughput, not latency, bounds it): float32
// VFMADD231PS (16 multiply-adds each) and VNNI VPDPBUSD (64 byte
// products each). The kernels' GMAC/s are read against these.
func BenchmarkPeak(b *testing.B) {
	for _, c := range []struct {
		name string
		vnni bool
		macs float64 // per instruction
	}{{"fma-f32", false, 16}, {"vnni-u8s8", true, 64}} {
		b.Run(c.name, func(b *testing.B) {
			if !usePanels || c.vnni && !useVNNI {
				b.Skip("needs AVX-512 (and VNNI)")
			}
			const n = 1 << 16
			for b.Loop() {
				peakAsm(n, c.vnni)
			}
			b.ReportMetric(float64(b.N)*n*16*c.macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
}
