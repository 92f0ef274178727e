// Package atomicfile is attnx's one way of writing a file atomically: the
// content goes into a temporary file in the destination's directory, which
// is synced, closed and then renamed over the destination, and the
// directory is synced so that the rename itself survives a power loss.
// Readers, and the file system after a crash at any point, see either the
// previous file (or none) or the complete new one, never a partial file.
//
// The temporary file is named ".BASE.tmp-RANDOM" (BASE is the
// destination's base name). It is removed when writing fails; a process
// killed mid-write leaves it behind, and since a live writer's temporary
// file cannot be told from a dead one's without a lock, it is not removed
// by later writes. Callers that need that (modeldir) write into a private
// temporary directory of their own, which they can clean up as a whole.
//
// Typical use, streaming:
//
//	f, err := atomicfile.Create(path, 0o644)
//	if err != nil { ... }
//	defer f.Discard() // no-op after a successful Commit
//	if err := write(f); err != nil { return err }
//	return f.Commit()
//
// or, for data already in memory, WriteFile(path, data, 0o644).
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
)

// TempInfix separates the destination's base name from the random part in
// temporary file names: ".BASE" + TempInfix + "RANDOM".
const TempInfix = ".tmp-"

// File is a file being written under a temporary name; Commit puts it in
// place. A File is not safe for concurrent use.
type File struct {
	f    *os.File
	path string
	done bool
}

// Create starts writing path: it creates a new temporary file in path's
// directory with permissions perm (less the umask, as os.WriteFile). The
// destination is not touched until Commit.
func Create(path string, perm fs.FileMode) (*File, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if base == "" {
		return nil, fmt.Errorf("writing %q: no file name", path)
	}
	for try := 0; ; try++ {
		name := filepath.Join(dir, "."+base+TempInfix+strconv.FormatUint(rand.Uint64(), 36))
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err == nil {
			return &File{f: f, path: path}, nil
		}
		if !errors.Is(err, fs.ErrExist) || try == 100 {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
	}
}

// Write writes to the temporary file.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// TempName returns the temporary file's path.
func (f *File) TempName() string { return f.f.Name() }

// Commit syncs and closes the temporary file, renames it to the path given
// to Create (replacing any file there) and syncs the directory. When it
// fails before the rename, the temporary file is removed and the
// destination is unchanged.
func (f *File) Commit() error { return f.CommitAs(f.path) }

// CommitAs is Commit to another name, which must be in the same directory
// as the path given to Create (a rename cannot cross file systems). It is
// for names that depend on the content, known only once it is written.
func (f *File) CommitAs(path string) error {
	if f.done {
		return fmt.Errorf("writing %s: already committed or discarded", path)
	}
	if filepath.Clean(filepath.Dir(path)) != filepath.Clean(filepath.Dir(f.path)) {
		return fmt.Errorf("writing %s: not in the directory of %s", path, f.path)
	}
	f.done = true
	tmp := f.f.Name()
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return SyncDir(filepath.Dir(path))
}

// Discard closes and removes the temporary file, leaving the destination
// as it was. After Commit (successful or not) it does nothing, so it can
// be deferred right after Create.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	os.Remove(f.f.Name())
}

// Write writes path atomically with what write produces (see Create); an
// error from write leaves the destination unchanged.
func Write(path string, perm fs.FileMode, write func(w io.Writer) error) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Discard()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return f.Commit()
}

// WriteFile writes data to path atomically, like os.WriteFile but never
// leaving a partial file (see Create).
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return Write(path, perm, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// SyncDir syncs a directory, making the renames and removals done in it
// durable. On Windows, which cannot sync a directory (NTFS journals its
// metadata), and on file systems that refuse to (EINVAL, ENOTSUP), it only
// checks that dir can be opened.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	defer d.Close()
	if runtime.GOOS == "windows" {
		return nil
	}
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, errors.ErrUnsupported) {
		return fmt.Errorf("syncing directory %s: %w", dir, err)
	}
	return nil
}
