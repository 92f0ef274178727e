package onnxeval

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestDefaultRunBytes: the default limit is half GOMEMLIMIT or the
// cgroup's memory.max (the Kubernetes manifest's 1 GiB gives 512 MiB), and
// DefaultMaxRunBytes without either.
func TestDefaultRunBytes(t *testing.T) {
	for _, c := range []struct {
		file string
		want int64
		ok   bool
	}{
		{"1073741824\n", 1 << 30, true},
		{"max\n", 0, false},
		{"9223372036854771712\n", 0, false}, // cgroup v1's "no limit"
		{"garbage", 0, false},
	} {
		got, ok := parseCgroupLimit(c.file)
		if got != c.want || ok != c.ok {
			t.Errorf("parseCgroupLimit(%q) = %d, %v; want %d, %v", c.file, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct{ limit, want int64 }{
		{math.MaxInt64, DefaultMaxRunBytes},
		{0, DefaultMaxRunBytes},
		{1 << 30, 512 << 20},
		{64 << 30, DefaultMaxRunBytes},
	} {
		if got := runBytesFor(c.limit); got != c.want {
			t.Errorf("runBytesFor(%d) = %d, want %d", c.limit, got, c.want)
		}
	}
	old := debug.SetMemoryLimit(1 << 30)
	defer debug.SetMemoryLimit(old)
	if got := DefaultRunBytes(); got > 512<<20 {
		t.Errorf("with GOMEMLIMIT=1GiB DefaultRunBytes() = %d, want at most 512 MiB", got)
	}
}
