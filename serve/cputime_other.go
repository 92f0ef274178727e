//go:build !unix

package serve

import "time"

// processCPU returns 0 where getrusage is missing (Windows, WebAssembly):
// the load test's CPU column reads 0 there.
func processCPU() time.Duration { return 0 }
