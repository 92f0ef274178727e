package kernel

import (
	"fmt"
	"slices"
	"strings"
)

// The kernel paths, best first. Each runs every kernel: where a path lacks
// a kernel's instructions, that kernel runs as on the next path down (see
// docs/native.md's table for which instructions each kernel uses).
const (
	// PathVNNI: AVX-512 with VNNI: the 8-bit and 4-bit products in
	// assembly, and everything below.
	PathVNNI = "avx512-vnni"
	// PathAVX512: AVX-512F: the packed float32 products and the vector
	// passes on 16 lanes; MatMulInteger on the float32 kernels.
	PathAVX512 = "avx512f"
	// PathAVXVNNI: AVX2, FMA and AVX-VNNI (VPDPBUSD in its VEX form, on
	// CPUs that have it without AVX-512, as Intel's cores since Alder
	// Lake do): everything of PathAVX2, the fused int8 product on
	// VPDPBUSD over 8 lanes.
	PathAVXVNNI = "avx-vnni"
	// PathAVX2: AVX2 and FMA: the packed float32 products, dot products,
	// gemv and the vector passes on 8 lanes, the fused int8 product and
	// the 4-bit product on VPMADDUBSW.
	PathAVX2 = "avx2"
	// PathGo: the Go version of every kernel (any CPU, any GOARCH; the
	// purego build tag gives the same).
	PathGo = "go"
)

// EnvPath is the environment variable that picks a kernel path instead of
// the best this CPU runs: one of the Path constants, or "auto" (the
// default). It is read once, when the program starts; a path the CPU
// cannot run, or a name not known, makes PathError report it, and the
// best path runs meanwhile. For tests of each path (make
// test-kernel-paths) and for CPUs where a path misbehaves.
const EnvPath = "ATTNX_KERNELS"

var allPaths = []string{PathVNNI, PathAVX512, PathAVXVNNI, PathAVX2, PathGo}

// choosePath returns the dispatch for the value of EnvPath given the paths
// the CPU and the build can run (best first): the flags of the chosen
// path and an error when want cannot be honoured.
func choosePath(want string, can []string) (asm, panels, vnni bool, path string, err error) {
	path = can[0]
	want = strings.ToLower(strings.TrimSpace(want))
	switch {
	case want == "" || want == "auto":
	case !slices.Contains(allPaths, want):
		err = fmt.Errorf("%s=%q: want auto, %s", EnvPath, want, strings.Join(allPaths, ", "))
	case !slices.Contains(can, want):
		err = fmt.Errorf("%s=%s: this CPU (or this build) cannot run that path; it can run %s", EnvPath, want, strings.Join(can, ", "))
	default:
		path = want
	}
	switch path {
	case PathVNNI:
		asm, panels, vnni = true, true, true
	case PathAVX512:
		asm, panels = true, true
	case PathAVXVNNI, PathAVX2:
		asm = true
	}
	return asm, panels, vnni, path, err
}

// Path returns the kernel path in use: the best the CPU runs, or the one
// EnvPath picked.
func Path() string { return path }

// Paths returns the paths this CPU and build can run, best first.
func Paths() []string { return append([]string(nil), canPaths...) }

// PathError reports an EnvPath value that could not be honoured (nil when
// there is none): the native backend refuses to run with it, naming the
// variable and the paths there are, rather than run on another path than
// the one asked for.
func PathError() error { return pathErr }
