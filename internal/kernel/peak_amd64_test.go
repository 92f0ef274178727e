//go:build amd64 && !purego

package kernel

import (
	"slices"
	"testing"
)

// BenchmarkPeak measures one core's peak multiply-add rate with the
// products' own instructions, from registers alone (16 independent
// accumulators, so that throughput, not latency, bounds it): float32
// VFMADD231PS (16 multiply-adds each) and VNNI VPDPBUSD (64 byte
// products each); and the AVX2 path's on 256-bit registers: VFMADD231PS
// (8), the 8-bit kernel's VPMADDUBSW, VPMADDWD, VPADDD (32 byte products
// per three instructions) and the 4-bit kernel's two VPMADDUBSW, VPADDW,
// VPMADDWD, VPADDD (64 per five), and AVX-VNNI's VEX VPDPBUSD (32). The
// kernels' GMAC/s are read against these.
func BenchmarkPeak(b *testing.B) {
	for _, c := range []struct {
		name string
		kind int
		macs float64 // per group
		per  float64 // groups per iteration
	}{{"avx2-fma-f32", 0, 8, 12}, {"avx2-maddubs-u8s8", 1, 32, 6}, {"avx2-maddubs-nibble", 2, 64, 4}, {"avx-vnni-u8s8", 3, 32, 8}} {
		b.Run(c.name, func(b *testing.B) {
			if !useAsm || c.kind == 3 && !slices.Contains(Paths(), PathAVXVNNI) {
				b.Skip("needs AVX2 (and AVX-VNNI)")
			}
			const n = 1 << 16
			for b.Loop() {
				peakAVX2Asm(n, c.kind)
			}
			b.ReportMetric(float64(b.N)*n*c.per*c.macs/b.Elapsed().Seconds()/1e9, "GMAC/s")
		})
	}
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
