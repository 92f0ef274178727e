// Package procstat reads memory figures of the running process from
// /proc/self/status (Linux), for benchmarks and leak tests.
package procstat

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Bytes returns a "kB" field of /proc/self/status, such as "VmRSS" (resident
// set size) or "VmHWM" (its peak), in bytes; 0 when it cannot be read.
func Bytes(field string) uint64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb * 1024
		}
	}
	return 0
}

// RSS returns the process's resident set size in bytes, 0 when unknown.
func RSS() uint64 { return Bytes("VmRSS") }
