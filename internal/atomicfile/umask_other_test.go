//go:build !unix

package atomicfile

import "os"

// currentUmask is 0 where the system has no umask.
func currentUmask() os.FileMode { return 0 }
