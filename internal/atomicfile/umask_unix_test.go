//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// currentUmask reads the process's umask (setting it back at once).
func currentUmask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}
