//go:build !unix

package atomicfile

import (
	"errors"
	"os"
)

// dupFD is unix only; openFD recognises no names elsewhere.
func dupFD(int, string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}
