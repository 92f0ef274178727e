//go:build darwin

package modeldir

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the names of two directories atomically with
// renamex_np(RENAME_SWAP) (macOS 10.12, APFS and HFS+). File systems
// without it give errNoExchange.
func exchange(a, b string) error {
	err := unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return errNoExchange
	}
	return err
}
