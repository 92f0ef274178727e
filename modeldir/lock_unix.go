//go:build unix

package modeldir

import (
	"os"
	"path/filepath"
	"syscall"
)

// lockDir takes an exclusive flock on a directory and returns its release.
// Locks are advisory and die with the process, which is what tells a
// killed run's leftovers from a live run's. A lock that cannot be taken
// (a file system without flock) is skipped: the directory then works
// unlocked, as it would on a system without locks.
func lockDir(path string, nonblock bool) func() {
	unlock, _ := flockDir(path, nonblock)
	return unlock
}

// tryLockDir takes the lock without waiting; ok is false when another
// process (or another open in this one) holds it.
func tryLockDir(path string) (unlock func(), ok bool) {
	return flockDir(path, true)
}

func flockDir(path string, nonblock bool) (func(), bool) {
	f, err := os.Open(path)
	if err != nil {
		return func() {}, false
	}
	how := syscall.LOCK_EX
	if nonblock {
		how |= syscall.LOCK_NB
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return func() {}, false
	}
	return func() { f.Close() }, true
}

// lockParent serializes cleaning and swapping between runs that write into
// the same parent directory.
func lockParent(dir string) func() {
	return lockDir(filepath.Dir(dir), false)
}

// renameDir renames the directory from to to, replacing to when it is an
// empty directory, atomically (rename(2); os.Rename refuses an existing
// directory as the target).
func renameDir(from, to string) error {
	if err := syscall.Rename(from, to); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return nil
}
