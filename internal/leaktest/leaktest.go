// Package leaktest finds goroutines a test leaves behind: those running,
// or started by, functions of the packages it is asked about, as a
// goleak-style check does, without the dependency.
package leaktest

import (
	"runtime"
	"strings"
	"time"
)

// Module is the prefix of the function names of every attnx package.
const Module = "github.com/attnx/attnx/"

// Goroutines returns the stack of each goroutine but the caller's whose
// stack or "created by" line names a function containing one of match
// (Module when none is given). Goroutines running a test (testing.tRunner)
// are left out: they are the test's own, not what it started.
func Goroutines(match ...string) []string {
	if len(match) == 0 {
		match = []string{Module}
	}
	buf := make([]byte, 64<<10)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	// The first block is the calling goroutine's.
	blocks := strings.Split(string(buf), "\n\n")
	var found []string
	for _, b := range blocks[1:] {
		if strings.Contains(b, "\ntesting.tRunner(") {
			continue
		}
		for _, m := range match {
			if strings.Contains(b, m) {
				found = append(found, strings.TrimSpace(b))
				break
			}
		}
	}
	return found
}

// Wait polls Goroutines until none is found or timeout has passed, and
// returns those still found at the end. Like goleak's VerifyNone it does
// not collect garbage: what ends goroutines must be the code's own doing
// (Close), not a cleanup run when an object is collected.
func Wait(timeout time.Duration, match ...string) []string {
	deadline := time.Now().Add(timeout)
	for {
		g := Goroutines(match...)
		if len(g) == 0 || time.Now().After(deadline) {
			return g
		}
		time.Sleep(10 * time.Millisecond)
	}
}
