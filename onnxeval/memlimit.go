package onnxeval

import (
	"math"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// cgroupLimitFiles are where a container's memory limit is read: cgroup
// v2's memory.max, then cgroup v1's limit_in_bytes.
var cgroupLimitFiles = []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}

// DefaultRunBytes is the MaxRunBytes a Model gets when Options leave it 0:
// half the process's memory limit when it has one (the Go runtime's
// GOMEMLIMIT, or the cgroup's memory.max as a container runs under, the
// smaller of the two), since the model's weights and the other runs
// need the rest; DefaultMaxRunBytes when it has none or that is smaller.
// A run that needs more fails with a *LimitError naming the node, where
// it would otherwise end the process with a fatal out-of-memory.
func DefaultRunBytes() int64 {
	return runBytesFor(memoryLimit())
}

func runBytesFor(limit int64) int64 {
	if limit <= 0 || limit == math.MaxInt64 {
		return DefaultMaxRunBytes
	}
	return min(limit/2, DefaultMaxRunBytes)
}

// memoryLimit returns the smaller of GOMEMLIMIT and the cgroup's limit,
// or math.MaxInt64 when neither is set.
func memoryLimit() int64 {
	limit := debug.SetMemoryLimit(-1) // reads it; math.MaxInt64 when unset
	for _, f := range cgroupLimitFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if n, ok := parseCgroupLimit(string(b)); ok {
			limit = min(limit, n)
		}
		break
	}
	return limit
}

// parseCgroupLimit reads a cgroup memory limit file: bytes, or "max" (v2)
// or a number near 2^63 (v1) for none.
func parseCgroupLimit(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "max" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n >= 1<<62 {
		return 0, false
	}
	return n, true
}
