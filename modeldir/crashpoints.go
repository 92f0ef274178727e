//go:build attnx_crashpoints && unix

package modeldir

import (
	"os"
	"syscall"
)

// This file exists only in binaries built with -tags attnx_crashpoints
// (reliability/ builds attnx so); a normal build has no way to reach it.
// There, ATTNX_CRASH_AT=POINT makes the process SIGKILL itself at that
// point of the swap (see crashHook for the points), and ATTNX_SWAP=rename
// forces the rename fallback of swapIn.
func init() {
	if at := os.Getenv("ATTNX_CRASH_AT"); at != "" {
		crashHook = func(point string) {
			if point == at {
				syscall.Kill(os.Getpid(), syscall.SIGKILL)
				select {} // the signal is on its way
			}
		}
	}
	forceRenameSwap = os.Getenv("ATTNX_SWAP") == "rename"
}
