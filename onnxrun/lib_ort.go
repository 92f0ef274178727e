//go:build cgo

package onnxrun

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"

	ort "github.com/yalue/onnxruntime_go"
)

// EnvLib is the environment variable that names the ONNX Runtime shared
// library to load, overriding every other location.
const EnvLib = "ATTNX_ORT_LIB"

// projectLib is where scripts/install-deps.sh puts the library, relative to
// the repository root.
const projectLib = ".deps/onnxruntime/lib/libonnxruntime.so.1"

// systemDirs are checked, in order, for libonnxruntime.so.1 and
// libonnxruntime.so after the dynamic loader's own search.
var systemDirs = []string{
	"/usr/local/lib", "/usr/local/lib64",
	"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib", "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
}

// systemNames are the library names given to the dynamic loader and tried
// in each system directory.
var systemNames = []string{"libonnxruntime.so.1", "libonnxruntime.so"}

var (
	initMu   sync.Mutex
	initDone bool
	initErr  error
	libPath  string
)

// Init finds and loads the ONNX Runtime shared library and creates the
// process-wide ORT environment. It is idempotent and safe to call from many
// goroutines: the first call does the work, later calls return its result.
// Open calls it, so callers need not.
//
// The library is looked for, in order:
//  1. Options.ORTLibrary of the first session opened on ONNX Runtime, when
//     set (nothing else is tried then);
//  2. $ATTNX_ORT_LIB, when set (nothing else is tried then);
//  3. libonnxruntime.so.1 beside the executable and in its ../lib (make
//     install's layout: an install's own library);
//  4. libonnxruntime.so.1 and libonnxruntime.so as the dynamic loader finds
//     them (LD_LIBRARY_PATH, the ld.so cache, its default directories);
//  5. the same two names in /usr/local/lib, /usr/lib and the other usual
//     system directories;
//  6. the .deps/onnxruntime/lib/libonnxruntime.so.1 that make deps
//     installs, in the executable's parent directory (bin/attnx in a
//     checkout) and in this module's own directory.
//
// The first file that exists is the one loaded; if it is not a loadable ONNX
// Runtime library (attnx needs release 1.24.x), or someone other than root
// or the current user could have written it (checkOwner), Init fails
// naming it rather than trying the next. When there is no library file at
// all (none found, or the file named does not exist),
// errors.Is(err, fs.ErrNotExist) holds, and the error says what to install.
func Init() error { return initLibrary("") }

// initLibrary is Init for a session whose Options.ORTLibrary is lib: when
// no library is loaded yet (or the search failed), lib is loaded; once
// one is, lib must be that file.
func initLibrary(lib string) error {
	initMu.Lock()
	defer initMu.Unlock()
	if initDone && initErr == nil {
		if lib != "" && !sameFile(lib, libPath) {
			return fmt.Errorf("onnxrun: Options.ORTLibrary=%s, but this process has loaded ONNX Runtime from %s, and it loads one library per process: give every session the same file, or none", lib, libPath)
		}
		return nil
	}
	if initDone && lib == "" {
		return initErr
	}
	initDone = true
	if _, err := logLevel(os.Getenv(EnvLogLevel)); err != nil {
		libPath, initErr = "", fmt.Errorf("onnxrun: %w", err)
		return initErr
	}
	// onnxruntime_go calls dlopen and then dlerror in two cgo calls, and
	// dlerror's message is the calling thread's: pinned, a failed load's
	// reason is the one dlopen left (unpinned, the goroutine could move
	// to another thread in between and read an empty one, which find took
	// for a library found but not loadable, stopping the search before
	// the directories after the dynamic loader's).
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	libPath, initErr = processSearch(lib).find()
	return initErr
}

// sameFile reports whether a and b name one file (b as Init loaded it).
func sameFile(a, b string) bool {
	if a == b {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// LibraryPath returns the ONNX Runtime library Init loaded, or "" when Init
// has not succeeded. It is the name given to the dynamic loader: an absolute
// path, or a bare library name when found through the loader's search path.
func LibraryPath() string {
	initMu.Lock()
	defer initMu.Unlock()
	if initErr != nil {
		return ""
	}
	return libPath
}

// Version returns the loaded ONNX Runtime's version, e.g. "1.24.1", or ""
// when Init has not succeeded.
func Version() string {
	if LibraryPath() == "" {
		return ""
	}
	return ort.GetVersion()
}

// ortRelease is the ONNX Runtime release attnx is built and tested
// against (onnxruntime_go v1.27.0 asks for its C API).
const ortRelease = "1.24.1"

// installHint says what to install when no usable library was found: for
// a program that imports attnx as a module as much as for a checkout.
func installHint() string {
	arch := map[string]string{"amd64": "x64", "arm64": "aarch64"}[runtime.GOARCH]
	if arch == "" {
		arch = runtime.GOARCH
	}
	return fmt.Sprintf("install ONNX Runtime 1.24.x for the CPU (onnxruntime-linux-%s-%s.tgz from https://github.com/microsoft/onnxruntime/releases/tag/v%s: copy its lib/libonnxruntime.so* into /usr/local/lib and run ldconfig), "+
		"or name the file in %s or in Options.ORTLibrary; in an attnx checkout, make deps installs it in .deps/; the native backend (Backend %q) needs no library",
		arch, ortRelease, ortRelease, EnvLib, BackendGo)
}

// libSearch holds the places Init looks at, in its order (see Init), and
// how it looks: the process's own (processSearch), or a test's fakes.
type libSearch struct {
	option, env string   // Options.ORTLibrary, $ATTNX_ORT_LIB
	bundled     []string // beside the executable, in its ../lib
	loaderNames []string // given to the dynamic loader
	systemFiles []string // in the usual system directories
	checkout    []string // make deps' .deps: the executable's checkout, this module
	stat        func(string) (fs.FileInfo, error)
	owner       func(string) error // checkOwner
	load        func(string) error
}

// processSearch is the search of this process, with lib as
// Options.ORTLibrary.
func processSearch(lib string) libSearch {
	s := libSearch{option: lib, env: os.Getenv(EnvLib), loaderNames: systemNames,
		stat: os.Stat, owner: checkOwner, load: load}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		s.bundled = []string{filepath.Join(dir, systemNames[0]), filepath.Join(filepath.Dir(dir), "lib", systemNames[0])}
		s.checkout = []string{filepath.Join(filepath.Dir(dir), projectLib)}
	}
	for _, dir := range systemDirs {
		for _, name := range systemNames {
			s.systemFiles = append(s.systemFiles, filepath.Join(dir, name))
		}
	}
	if moduleLib != "" {
		s.checkout = append(s.checkout, moduleLib)
	}
	return s
}

// find loads the first library of the search and returns the name it was
// loaded by. Only these explicit places are searched: directories above
// the executable or the working directory are not, since anyone who can
// write one (/tmp/.deps/...) would get code loaded into whoever runs attnx
// below it.
func (s libSearch) find() (string, error) {
	if s.option != "" {
		return s.explicit("Options.ORTLibrary", s.option)
	}
	if s.env != "" {
		return s.explicit(EnvLib, s.env)
	}
	var searched []string
	seen := map[string]bool{}
	try := func(files []string) (string, bool, error) {
		for _, f := range files {
			if seen[f] {
				continue
			}
			seen[f] = true
			searched = append(searched, f)
			if st, err := s.stat(f); err != nil || st.IsDir() {
				continue
			}
			if err := s.owner(f); err != nil {
				return "", true, fmt.Errorf("onnxrun: %w", err)
			}
			if err := s.load(f); err != nil {
				return "", true, fmt.Errorf("onnxrun: found %s, but it is not a loadable ONNX Runtime library: %w; %s", f, err, installHint())
			}
			return f, true, nil
		}
		return "", false, nil
	}
	if p, done, err := try(s.bundled); done {
		return p, err
	}
	for _, name := range s.loaderNames {
		searched = append(searched, name+" (the dynamic loader's search)")
		err := s.load(name)
		if err == nil {
			return name, nil
		}
		// A failure whose reason is empty (dlerror read on another thread
		// than dlopen's, were initLibrary not pinned) says nothing was
		// found, as "cannot open shared object file" does.
		if !strings.Contains(err.Error(), "cannot open shared object file") && !strings.HasSuffix(err.Error(), ": ") {
			return "", fmt.Errorf("onnxrun: the dynamic loader found %s, but it is not a loadable ONNX Runtime library: %w; %s", name, err, installHint())
		}
	}
	for _, files := range [][]string{s.systemFiles, s.checkout} {
		if p, done, err := try(files); done {
			return p, err
		}
	}
	return "", &notFoundError{fmt.Sprintf("onnxrun: the ONNX Runtime shared library was not found; searched Options.ORTLibrary (unset), %s (unset), %s; %s",
		EnvLib, strings.Join(searched, ", "), installHint())}
}

// explicit loads the one file the user named in what (a field or the
// environment variable).
func (s libSearch) explicit(what, p string) (string, error) {
	if _, err := s.stat(p); err != nil {
		return "", fmt.Errorf("onnxrun: ONNX Runtime library from %s=%s: %w; %s", what, p, err, installHint())
	}
	if err := s.owner(p); err != nil {
		return "", fmt.Errorf("onnxrun: %s=%s: %w", what, p, err)
	}
	if err := s.load(p); err != nil {
		return "", fmt.Errorf("onnxrun: %s=%s is not a loadable ONNX Runtime library: %w; %s", what, p, err, installHint())
	}
	return p, nil
}

// notFoundError is Init's error when no library file exists anywhere it
// looked; it is an fs.ErrNotExist, as a missing file named by
// $ATTNX_ORT_LIB or Options.ORTLibrary is.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }

// Is makes errors.Is(err, fs.ErrNotExist) true.
func (e *notFoundError) Is(target error) bool { return target == fs.ErrNotExist }

// moduleLib is this module's own install of the library
// (scripts/install-deps.sh's .deps), located from this source file's path
// as the compiler recorded it; "" when built with -trimpath. Tests clear it
// to see what a binary built elsewhere finds.
var moduleLib = func() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok || !filepath.IsAbs(file) {
		return ""
	}
	return filepath.Join(filepath.Dir(filepath.Dir(file)), projectLib)
}()

// checkOwner refuses a library file that someone other than root or the
// current user could have written: one writable by its group or everyone,
// one owned by another user, or one in a directory others can write
// without the sticky bit (they could replace it). path is resolved
// through symbolic links first.
func checkOwner(path string) error {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(real)
	if err != nil {
		return err
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("refusing %s: it is writable by its group or by everyone (mode %04o), so anyone could have replaced it; make it writable by its owner only (chmod go-w)", real, st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && sys.Uid != 0 && int(sys.Uid) != os.Geteuid() {
		return fmt.Errorf("refusing %s: it is owned by user %d, neither root nor you (user %d); install it yourself or as root", real, sys.Uid, os.Geteuid())
	}
	dir := filepath.Dir(real)
	if dst, err := os.Stat(dir); err == nil && dst.Mode().Perm()&0o002 != 0 && dst.Mode()&os.ModeSticky == 0 {
		return fmt.Errorf("refusing %s: its directory %s is writable by everyone (mode %04o, no sticky bit), so anyone could have replaced it", real, dir, dst.Mode().Perm())
	}
	return nil
}

// load makes path the library onnxruntime_go uses and initialises the ORT
// environment from it. A failure leaves onnxruntime_go uninitialised, so
// another path could be tried.
func load(path string) error {
	if ort.IsInitialized() {
		return errors.New("onnxruntime_go is already initialised by another package")
	}
	ort.SetSharedLibraryPath(path)
	level, _ := logLevel(os.Getenv(EnvLogLevel)) // checked by initialize
	return ort.InitializeEnvironment(level)
}

// EnvLogLevel names the environment variable that sets ONNX Runtime's own
// log level: verbose, info, warning, error or fatal (the default). Errors
// reach callers as Go errors either way; ORT's log lines on stderr only
// repeat them, so they are off unless asked for.
const EnvLogLevel = "ATTNX_ORT_LOG"

func logLevel(name string) (ort.EnvironmentOption, error) {
	switch strings.ToLower(name) {
	case "verbose":
		return ort.WithLogLevelVerbose(), nil
	case "info":
		return ort.WithLogLevelInfo(), nil
	case "warning":
		return ort.WithLogLevelWarning(), nil
	case "error":
		return ort.WithLogLevelError(), nil
	case "", "fatal":
		return ort.WithLogLevelFatal(), nil
	}
	return nil, fmt.Errorf("%s=%q: want verbose, info, warning, error or fatal", EnvLogLevel, name)
}
