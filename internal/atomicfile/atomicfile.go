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
//
// What the path names decides how it is written:
//   - a symbolic link is followed, through every link of a chain (a
//     dangling one too), and its target is replaced atomically in the
//     target's own directory: the link stays a link;
//   - a path that exists and is not a regular file (a character device,
//     a FIFO, a socket), and any path that is or whose links lead into
//     /dev or /proc (/dev/stdout, /proc/self/fd/1), is written straight
//     through as it is opened, streamed, never renamed over: replacing
//     /dev/stdout with a regular file would break it for every process
//     that shares /dev;
//   - "-" is the process's standard output, written straight through and
//     never closed;
//   - a directory is refused.
//
// Such writes through cannot be undone: Discard only closes them.
// SameFile refuses an output that is one of the inputs, before anything
// is read.
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
	"strings"
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
	// through: f is the destination itself (a device, a FIFO, stdout),
	// written straight through; keepOpen: f is not ours to close (stdout).
	through, keepOpen bool
}

// Stdout is the path that names the process's standard output.
const Stdout = "-"

// maxLinks bounds a chain of symbolic links, as the kernel's ELOOP does.
const maxLinks = 40

// resolve follows path's symbolic links. It returns the file to replace
// (the last link's target, which may not exist yet) or, with through set,
// a path to open and write as it is.
func resolve(path string) (dest string, through bool, err error) {
	p := path
	for range maxLinks {
		if special(p) { // /dev/stdout and /proc/self/fd/N among them
			return p, true, nil
		}
		st, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			// Nothing there yet (or a parent is a file: creating it
			// says so).
			return p, false, nil
		}
		if err != nil {
			return "", false, err
		}
		switch {
		case st.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return "", false, err
			}
			if !filepath.IsAbs(link) {
				link = filepath.Join(filepath.Dir(p), link)
			}
			p = link
		case st.IsDir():
			return p, false, nil
		case !st.Mode().IsRegular():
			return p, true, nil
		default:
			return p, false, nil
		}
	}
	return "", false, fmt.Errorf("%s: more than %d symbolic links", path, maxLinks)
}

// openFD recognises the names of the process's own open files, which
// resolve leaves as they are (they lie in /dev and /proc):
// /dev/stdout, /dev/stderr, /dev/fd/N and /proc/self/fd/N. Writing them
// must go through the open file itself: opening the name again would
// start a regular file over from its beginning, under the shell's
// redirection and over what the process already wrote there.
func openFD(p string) (int, bool) {
	if runtime.GOOS == "windows" {
		return 0, false
	}
	switch p = filepath.Clean(p); p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	for _, dir := range []string{"/dev/fd/", "/proc/self/fd/"} {
		if n, ok := strings.CutPrefix(p, dir); ok {
			fd, err := strconv.Atoi(n)
			return fd, err == nil && fd >= 0
		}
	}
	return 0, false
}

// special reports whether p lies in /dev or /proc, whose entries are
// devices and the kernel's views of open files, never to be replaced.
func special(p string) bool {
	if runtime.GOOS == "windows" {
		return false
	}
	p = filepath.Clean(p)
	for _, dir := range []string{"/dev", "/proc"} {
		if p == dir || strings.HasPrefix(p, dir+"/") {
			return true
		}
	}
	return false
}

// Resolve returns the path whose file (or directory) a write to path
// replaces: path with its symbolic links followed (see the package
// comment). For a path that is written straight through it returns path
// itself.
func Resolve(path string) (string, error) {
	if path == Stdout {
		return path, nil
	}
	dest, through, err := resolve(path)
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	if through {
		return path, nil
	}
	return dest, nil
}

// SameFile refuses an output that is the same file as one of inputs
// (os.SameFile, so through links and other names too), before either is
// read or written: translating a test set into itself would replace it.
// An input "-" is the process's standard input, checked through its file
// (`attnx translate --src - --output g.txt < g.txt` replaced g.txt). An
// output that does not exist yet, "-" and empty names pass.
func SameFile(output string, inputs ...string) error {
	if output == "" || output == Stdout {
		return nil
	}
	out, err := os.Stat(output)
	if err != nil {
		return nil
	}
	for _, in := range inputs {
		var st os.FileInfo
		var err error
		switch in {
		case "":
			continue
		case Stdout: // as an input, standard input
			in = "standard input"
			st, err = os.Stdin.Stat()
		default:
			st, err = os.Stat(in)
		}
		if err == nil && os.SameFile(out, st) {
			return fmt.Errorf("the output %s is the input %s: it would be replaced before it is read; write elsewhere", output, in)
		}
	}
	return nil
}

// Create starts writing path: it creates a new temporary file in path's
// directory with permissions perm (less the umask, as os.WriteFile). The
// destination is not touched until Commit.
func Create(path string, perm fs.FileMode) (*File, error) {
	if path == Stdout {
		return &File{f: os.Stdout, path: path, through: true, keepOpen: true}, nil
	}
	dest, through, err := resolve(path)
	if err != nil {
		return nil, fmt.Errorf("writing %s: %w", path, err)
	}
	if fd, ok := openFD(dest); through && ok {
		switch fd {
		case 1:
			return &File{f: os.Stdout, path: path, through: true, keepOpen: true}, nil
		case 2:
			return &File{f: os.Stderr, path: path, through: true, keepOpen: true}, nil
		}
		f, err := dupFD(fd, path)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		return &File{f: f, path: path, through: true}, nil
	}
	if through {
		f, err := os.OpenFile(dest, os.O_WRONLY, 0)
		if err != nil {
			return nil, fmt.Errorf("writing %s: %w", path, err)
		}
		return &File{f: f, path: path, through: true}, nil
	}
	if st, err := os.Stat(dest); err == nil && st.IsDir() {
		return nil, fmt.Errorf("writing %s: %s is a directory", path, dest)
	}
	path = dest
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

// Through reports whether the file is written straight through (a device,
// a FIFO, stdout) rather than replaced atomically.
func (f *File) Through() bool { return f.through }

// TempName returns the temporary file's path (the destination itself for
// a file written straight through).
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
	if !f.through && filepath.Clean(filepath.Dir(path)) != filepath.Clean(filepath.Dir(f.path)) {
		return fmt.Errorf("writing %s: not in the directory of %s", path, f.path)
	}
	f.done = true
	if f.through {
		if path != f.path {
			return fmt.Errorf("writing %s: cannot rename %s, which is written straight through", path, f.path)
		}
		if f.keepOpen {
			return nil
		}
		if err := f.f.Close(); err != nil {
			return fmt.Errorf("writing %s: %w", path, err)
		}
		return nil
	}
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
	if f.through {
		if !f.keepOpen {
			f.f.Close()
		}
		return
	}
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
