package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The files a checkpoint or a toolkit's configuration names (tokenizers,
// vocabularies, dictionaries) are read only inside the checkpoint's
// folder, and above it only where a toolkit's own layout puts them
// (fairseq's data directories, named relative to where fairseq-train
// ran: the folder above its checkpoints). A model directory is what
// people ship to others: a name written into one must not make export
// read a file elsewhere on the machine and copy it into the model it
// writes. A name resolves to a file only when, every link resolved, it
// is inside the folder, as onnxfile keeps a model's external data inside
// the model's directory. Paths the user gives (--tokenizer, --data,
// --config) are the user's choice and are read as given.

// A folder is a directory the files a checkpoint names may be read from.
type folder struct {
	// dir is the directory as the caller named it (for messages and the
	// paths built from it), real the same absolute, with every link
	// resolved: "" when it cannot be resolved, and then nothing is inside.
	dir, real string
}

// folderOf returns the folder dir.
func folderOf(dir string) folder {
	f := folder{dir: dir}
	if abs, err := filepath.Abs(dir); err == nil {
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			f.real = real
		}
	}
	return f
}

// parent returns the folder above f, which holds f.
func (f folder) parent() folder {
	up := folder{dir: filepath.Join(f.dir, "..")}
	if f.real != "" {
		up.real = filepath.Dir(f.real)
	}
	return up
}

// holds reports whether the resolved path real is f or inside it.
func (f folder) holds(real string) bool {
	if f.real == "" {
		return false
	}
	rel, err := filepath.Rel(f.real, real)
	return err == nil && !filepath.IsAbs(rel) && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// file reports whether p (a path under f.dir) is a regular file inside
// f once its links are resolved. When p exists but resolves to a place
// outside f, outside says where, and p is not to be read.
func (f folder) file(p string) (ok bool, outside string) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return false, ""
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return false, ""
	}
	if !f.holds(real) {
		how := "resolves to"
		if fi, err := os.Lstat(p); err == nil && fi.Mode()&os.ModeSymlink != 0 {
			how = "is a link to"
		}
		return false, fmt.Sprintf("%s %s %s, outside %s", p, how, real, f.dir)
	}
	return isFile(real), ""
}

// leaves reports whether named, a path a checkpoint gives, leaves any
// folder it is joined to before links are resolved: it is absolute, or
// its ".." components climb out.
func leaves(named string) bool {
	if filepath.IsAbs(named) || filepath.VolumeName(named) != "" || strings.HasPrefix(named, "/") || strings.HasPrefix(named, `\`) {
		return true
	}
	c := filepath.Clean(named)
	return c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator))
}

// A lookup is where findBeside looked for one file a checkpoint names.
type lookup struct {
	// path is the file found, "" for none.
	path string
	// tried are the paths inside the folder that were looked at and hold
	// no file, in order.
	tried []string
	// outside says, for each way the name led out of the folder, where
	// to: nothing there was read.
	outside []string
}

// findBeside looks for a file a checkpoint or configuration names, by one
// rule for every toolkit: inside the folder dir beside it (the toolkits
// copy tokenizers and vocabularies into their model directories, and a
// path recorded at training time may name another machine's file):
// named relative to dir, its base name in dir, then each of fallbacks
// (base names in dir). A name that leads out of dir (absolute, through
// "..", or through a link) is not read; the lookup says where it led.
func findBeside(named, dir string, fallbacks ...string) lookup {
	f := folderOf(dir)
	var l lookup
	var paths []string
	if named != "" {
		if leaves(named) {
			l.outside = append(l.outside, fmt.Sprintf("%q is outside %s", named, dir))
		} else {
			paths = append(paths, filepath.Join(dir, named))
		}
		if base := filepath.Base(named); base != "." && base != ".." && base != string(filepath.Separator) {
			paths = append(paths, filepath.Join(dir, base))
		}
	}
	for _, fb := range fallbacks {
		paths = append(paths, filepath.Join(dir, fb))
	}
	for _, p := range uniqueStrings(paths) {
		ok, outside := f.file(p)
		switch {
		case ok:
			l.path = p
			return l
		case outside != "":
			l.outside = append(l.outside, outside)
		default:
			l.tried = append(l.tried, p)
		}
	}
	return l
}

// notFound says why a lookup found no file: where it is not, and where
// the name led out of the folder; it follows "names FILE".
func notFound(tried, outside []string) string {
	if len(outside) == 0 {
		return ", which is not at " + strings.Join(tried, ", ")
	}
	s := ", which attnx does not read: " + strings.Join(outside, "; ") +
		" (attnx reads the files a checkpoint names only inside its folder: copy it in to use it)"
	if len(tried) > 0 {
		s += "; nor is it at " + strings.Join(tried, ", ")
	}
	return s
}
