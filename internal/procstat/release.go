package procstat

import (
	"runtime"
	"runtime/debug"
)

// ReleaseFreeMemory returns what the process has freed to the system, so
// that the next RSS reading counts only memory in use: it runs Go's garbage
// collector, returns the Go heap's free pages (debug.FreeOSMemory), and
// asks the C allocator to do the same (glibc's malloc_trim(0), where the
// program is built with cgo against glibc: ONNX Runtime's freed buffers
// would otherwise stay resident by chance of fragmentation).
func ReleaseFreeMemory() {
	runtime.GC()
	debug.FreeOSMemory()
	trimC()
}
