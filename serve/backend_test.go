package serve

import (
	"runtime"
	"testing"
)

// TestBatchingThreads: the batching backend's default ORT threads are half
// of GOMAXPROCS, at least one.
func TestBatchingThreads(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, c := range []struct{ procs, want int }{{1, 1}, {2, 1}, {3, 1}, {4, 2}, {7, 3}, {16, 8}} {
		runtime.GOMAXPROCS(c.procs)
		if got := BatchingThreads(); got != c.want {
			t.Errorf("GOMAXPROCS %d: BatchingThreads() = %d, want %d", c.procs, got, c.want)
		}
	}
}
