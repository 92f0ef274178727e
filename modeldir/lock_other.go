//go:build !unix

package modeldir

import "os"

func lockDir(string, bool) func()      { return func() {} }
func tryLockDir(string) (func(), bool) { return func() {}, true }
func lockParent(string) func()         { return func() {} }

// renameDir renames from to to, first removing to when it is an empty
// directory (not atomic on this system).
func renameDir(from, to string) error {
	if err := os.Remove(to); err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.Rename(from, to)
}
