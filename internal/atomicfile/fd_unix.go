//go:build unix

package atomicfile

import (
	"os"
	"syscall"
)

// dupFD returns a new *os.File for a duplicate of the open file fd.
func dupFD(fd int, name string) (*os.File, error) {
	dup, err := syscall.Dup(fd)
	if err != nil {
		return nil, err
	}
	return os.NewFile(uintptr(dup), name), nil
}
