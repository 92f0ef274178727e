//go:build cgo

package onnxrun

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
)

// fakeInfo is a file or directory of fakeFS.
type fakeInfo struct {
	name string
	dir  bool
}

func (f fakeInfo) Name() string       { return filepath.Base(f.name) }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return map[bool]fs.FileMode{true: fs.ModeDir}[f.dir] }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.dir }
func (f fakeInfo) Sys() any           { return nil }

// fakeFS is a machine for libSearch: the files that exist, those whose
// owner is refused, those that fail to load (a file not named here loads),
// and the names the dynamic loader resolves. loads records every load.
type fakeFS struct {
	files     []string
	dirs      []string
	badOwner  []string
	broken    []string // exist but are not loadable
	loader    []string // names the dynamic loader finds (and loads)
	oldLoader []string // names the dynamic loader finds, an old release
	noReason  []string // names whose failed load reads an empty dlerror
	loads     []string
}

func (f *fakeFS) search(option, env string) libSearch {
	return libSearch{
		option: option, env: env,
		bundled:     []string{"/opt/app/bin/libonnxruntime.so.1", "/opt/app/lib/libonnxruntime.so.1"},
		loaderNames: systemNames,
		systemFiles: []string{"/usr/local/lib/libonnxruntime.so.1", "/usr/local/lib/libonnxruntime.so", "/usr/lib/libonnxruntime.so.1"},
		checkout:    []string{"/opt/app/.deps/onnxruntime/lib/libonnxruntime.so.1", "/src/attnx/.deps/onnxruntime/lib/libonnxruntime.so.1"},
		stat: func(p string) (fs.FileInfo, error) {
			if slices.Contains(f.files, p) || slices.Contains(f.badOwner, p) || slices.Contains(f.broken, p) {
				return fakeInfo{name: p}, nil
			}
			if slices.Contains(f.dirs, p) {
				return fakeInfo{name: p, dir: true}, nil
			}
			return nil, &fs.PathError{Op: "stat", Path: p, Err: fs.ErrNotExist}
		},
		owner: func(p string) error {
			if slices.Contains(f.badOwner, p) {
				return errors.New("refusing " + p + ": it is writable by its group or by everyone (mode 0664)")
			}
			return nil
		},
		load: func(p string) error {
			f.loads = append(f.loads, p)
			switch {
			case slices.Contains(f.broken, p):
				return errors.New(`Error loading ONNX shared library "` + p + `": ` + p + `: invalid ELF header`)
			case slices.Contains(f.noReason, p):
				return errors.New(`Platform-specific initialization failed: Error loading ONNX shared library "` + p + `": `)
			case slices.Contains(f.oldLoader, p):
				return errors.New("The requested API version [24] is not available, only API versions [1, 16] are supported in this build")
			case filepath.IsAbs(p), slices.Contains(f.loader, p):
				return nil
			}
			return errors.New(`Error loading ONNX shared library "` + p + `": ` + p + `: cannot open shared object file: No such file or directory`)
		},
	}
}

// TestLibrarySearchOrder: Init's search, on fake machines: the field
// Options.ORTLibrary alone when set, then $ATTNX_ORT_LIB alone, then the
// install's own library beside the executable, the dynamic loader's
// search, the system directories, and last the .deps of a checkout; the
// first file found is loaded or its failure reported, never passed over;
// nothing anywhere is an fs.ErrNotExist naming every place, in order, and
// what to install.
func TestLibrarySearchOrder(t *testing.T) {
	const (
		opt     = "/home/u/ort/libonnxruntime.so.1.24.1"
		env     = "/srv/ort/libonnxruntime.so.1"
		bundled = "/opt/app/bin/libonnxruntime.so.1"
		libdir  = "/opt/app/lib/libonnxruntime.so.1"
		system  = "/usr/local/lib/libonnxruntime.so.1"
		sysSo   = "/usr/local/lib/libonnxruntime.so"
		deps    = "/opt/app/.deps/onnxruntime/lib/libonnxruntime.so.1"
		module  = "/src/attnx/.deps/onnxruntime/lib/libonnxruntime.so.1"
	)
	every := []string{opt, env, bundled, libdir, system, deps, module}
	for _, c := range []struct {
		name        string
		fs          fakeFS
		option, env string
		want        string   // the library loaded; "" for an error
		loads       []string // every load tried, in order
		errHas      []string
		notExist    bool
	}{
		{name: "the field first", fs: fakeFS{files: every, loader: systemNames}, option: opt, env: env,
			want: opt, loads: []string{opt}},
		{name: "the field alone, even when missing", fs: fakeFS{files: every[1:], loader: systemNames}, option: opt, env: env,
			loads: nil, errHas: []string{"Options.ORTLibrary=" + opt, "file does not exist", "install ONNX Runtime 1.24.x"}, notExist: true},
		{name: "the field alone, even when broken", fs: fakeFS{files: every[1:], broken: []string{opt}}, option: opt,
			loads: []string{opt}, errHas: []string{"Options.ORTLibrary=" + opt + " is not a loadable ONNX Runtime library", "invalid ELF header"}},
		{name: "then the environment", fs: fakeFS{files: every, loader: systemNames}, env: env,
			want: env, loads: []string{env}},
		{name: "the environment alone, even when missing", fs: fakeFS{files: every[2:], loader: systemNames}, env: env,
			errHas: []string{"ATTNX_ORT_LIB=" + env, "file does not exist", "Options.ORTLibrary"}, notExist: true},
		{name: "the environment's refused file", fs: fakeFS{files: every[2:], badOwner: []string{env}}, env: env,
			errHas: []string{"ATTNX_ORT_LIB=" + env + ": refusing " + env}},
		{name: "then beside the executable", fs: fakeFS{files: every[2:], loader: systemNames},
			want: bundled, loads: []string{bundled}},
		{name: "then the executable's ../lib", fs: fakeFS{files: every[3:], dirs: []string{bundled}, loader: systemNames},
			want: libdir, loads: []string{libdir}},
		{name: "then the dynamic loader", fs: fakeFS{files: every[4:], loader: systemNames},
			want: "libonnxruntime.so.1", loads: []string{"libonnxruntime.so.1"}},
		{name: "the loader's unversioned name", fs: fakeFS{files: every[4:], loader: []string{"libonnxruntime.so"}},
			want: "libonnxruntime.so", loads: []string{"libonnxruntime.so.1", "libonnxruntime.so"}},
		{name: "an old release the loader finds is reported", fs: fakeFS{files: every[4:], oldLoader: []string{"libonnxruntime.so.1"}},
			loads: []string{"libonnxruntime.so.1"}, errHas: []string{"the dynamic loader found libonnxruntime.so.1, but it is not a loadable ONNX Runtime library", "API version", "install ONNX Runtime 1.24.x"}},
		{name: "a loader's failure without a reason is not a library found", fs: fakeFS{files: every[5:], noReason: systemNames},
			want: deps, loads: []string{"libonnxruntime.so.1", "libonnxruntime.so", deps}},
		{name: "then the system directories", fs: fakeFS{files: every[4:]},
			want: system, loads: []string{"libonnxruntime.so.1", "libonnxruntime.so", system}},
		{name: "the unversioned name in a system directory", fs: fakeFS{files: []string{sysSo, deps}},
			want: sysSo, loads: []string{"libonnxruntime.so.1", "libonnxruntime.so", sysSo}},
		{name: "a refused system file is not passed over", fs: fakeFS{files: every[5:], badOwner: []string{system}},
			loads: []string{"libonnxruntime.so.1", "libonnxruntime.so"}, errHas: []string{"refusing " + system}},
		{name: "a broken bundled file is not passed over", fs: fakeFS{files: every[3:], broken: []string{bundled}, loader: systemNames},
			loads: []string{bundled}, errHas: []string{"found " + bundled + ", but it is not a loadable ONNX Runtime library", "invalid ELF header"}},
		{name: "last the checkout's .deps", fs: fakeFS{files: every[5:]},
			want: deps, loads: []string{"libonnxruntime.so.1", "libonnxruntime.so", deps}},
		{name: "this module's .deps", fs: fakeFS{files: every[6:]},
			want: module, loads: []string{"libonnxruntime.so.1", "libonnxruntime.so", module}},
		{name: "nothing anywhere", fs: fakeFS{},
			loads: []string{"libonnxruntime.so.1", "libonnxruntime.so"}, notExist: true,
			errHas: []string{"the ONNX Runtime shared library was not found; searched Options.ORTLibrary (unset), ATTNX_ORT_LIB (unset), " +
				bundled + ", " + libdir + ", libonnxruntime.so.1 (the dynamic loader's search), libonnxruntime.so (the dynamic loader's search), " +
				system + ", " + sysSo + ", /usr/lib/libonnxruntime.so.1, " + deps + ", " + module + "; ",
				"install ONNX Runtime 1.24.x for the CPU (onnxruntime-linux-", "-1.24.1.tgz from https://github.com/microsoft/onnxruntime/releases/tag/v1.24.1",
				"/usr/local/lib and run ldconfig", "name the file in ATTNX_ORT_LIB or in Options.ORTLibrary", "make deps", `the native backend (Backend "go")`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := c.fs
			got, err := f.search(c.option, c.env).find()
			if !slices.Equal(f.loads, c.loads) {
				t.Errorf("loads tried %q, want %q", f.loads, c.loads)
			}
			if c.want != "" {
				if err != nil || got != c.want {
					t.Errorf("find() = %q, %v; want %q", got, err, c.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("find() = %q, want an error", got)
			}
			for _, w := range append(c.errHas, "onnxrun: ") {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if errors.Is(err, fs.ErrNotExist) != c.notExist {
				t.Errorf("errors.Is(err, fs.ErrNotExist) = %v, want %v: %v", !c.notExist, c.notExist, err)
			}
		})
	}
}

// TestORTLibraryOnceLoaded: once ONNX Runtime is loaded, a session whose
// Options.ORTLibrary names that file (or a link to it) opens, and one
// naming another file is refused, naming both.
func TestORTLibraryOnceLoaded(t *testing.T) {
	testenv.ORT(t, Init())
	loaded := LibraryPath()
	abs, err := filepath.Abs(loaded)
	if err != nil || !filepath.IsAbs(loaded) {
		t.Skipf("loaded through the dynamic loader's search (%s): no file to name", loaded)
	}
	link := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.Symlink(abs, link); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join("testdata", "add.onnx")
	for _, lib := range []string{loaded, link} {
		s, err := Open(model, Options{Backend: BackendORT, ORTLibrary: lib})
		if err != nil {
			t.Fatalf("ORTLibrary %s (the loaded library): %v", lib, err)
		}
		s.Close()
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(other, []byte("another library\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = Open(model, Options{Backend: BackendORT, ORTLibrary: other})
	if err == nil || !strings.Contains(err.Error(), "Options.ORTLibrary="+other+", but this process has loaded ONNX Runtime from "+loaded) {
		t.Errorf("ORTLibrary naming another file: %v, want a refusal naming both", err)
	}
}
