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

// installHint ends every "library not found" error.
const installHint = "run `make deps` (or scripts/install-deps.sh) or set " + EnvLib + "=/path/to/libonnxruntime.so.1"

// systemDirs are checked, in order, for libonnxruntime.so.1 and
// libonnxruntime.so after the project's own install location.
var systemDirs = []string{
	"/usr/local/lib", "/usr/local/lib64",
	"/usr/lib", "/usr/lib64", "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
	"/lib", "/lib64", "/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
}

// systemNames are the library names tried in each system directory and, last,
// through the dynamic loader's own search path.
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
//  1. $ATTNX_ORT_LIB, when set (nothing else is tried then);
//  2. libonnxruntime.so.1 beside the executable and in its ../lib (make
//     install's layout), then .deps/onnxruntime/lib/libonnxruntime.so.1 in
//     the executable's parent directory (bin/attnx in a checkout) and in
//     this module's own directory (scripts/install-deps.sh's install);
//  3. libonnxruntime.so.1 and libonnxruntime.so in /usr/local/lib, /usr/lib
//     and the other usual system directories;
//  4. the same two names through the dynamic loader's default search path.
//
// The first file that exists is the one loaded; if it is not a loadable ONNX
// Runtime library, or someone other than root or the current user could
// have written it (checkOwner), Init fails naming it rather than trying
// the next. When
// there is no library file at all (none found, or $ATTNX_ORT_LIB names a
// file that does not exist), errors.Is(err, fs.ErrNotExist) holds.
func Init() error {
	initMu.Lock()
	defer initMu.Unlock()
	if !initDone {
		initDone = true
		libPath, initErr = initialize()
	}
	return initErr
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

func initialize() (string, error) {
	if _, err := logLevel(os.Getenv(EnvLogLevel)); err != nil {
		return "", fmt.Errorf("onnxrun: %w", err)
	}
	if p := os.Getenv(EnvLib); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("onnxrun: ONNX Runtime library from %s=%s: %w; %s", EnvLib, p, err, installHint)
		}
		if err := checkOwner(p); err != nil {
			return "", fmt.Errorf("onnxrun: %s=%s: %w", EnvLib, p, err)
		}
		if err := load(p); err != nil {
			return "", fmt.Errorf("onnxrun: %s=%s is not a loadable ONNX Runtime library: %w; %s", EnvLib, p, err, installHint)
		}
		return p, nil
	}
	var searched []string
	for _, c := range candidates() {
		searched = append(searched, c)
		if st, err := os.Stat(c); err != nil || st.IsDir() {
			continue
		}
		if err := checkOwner(c); err != nil {
			return "", fmt.Errorf("onnxrun: %w", err)
		}
		if err := load(c); err != nil {
			return "", fmt.Errorf("onnxrun: found %s but it is not a loadable ONNX Runtime library: %w; %s", c, err, installHint)
		}
		return c, nil
	}
	for _, name := range systemNames {
		searched = append(searched, name+" (dynamic loader path)")
		if load(name) == nil {
			return name, nil
		}
	}
	return "", &notFoundError{fmt.Sprintf("onnxrun: ONNX Runtime shared library not found; searched %s=(unset), %s; %s",
		EnvLib, strings.Join(searched, ", "), installHint)}
}

// notFoundError is Init's error when no library file exists anywhere it
// looked; it is an fs.ErrNotExist, as a missing $ATTNX_ORT_LIB file is.
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

// candidates lists the files to look for, in order, without duplicates:
// beside the executable and in its ../lib (where make install puts it),
// the .deps of the checkout the executable was built in (bin/attnx) and
// of this module, then the system directories. Only these explicit
// places: directories above the executable or the working directory are
// not searched, since anyone who can write one (/tmp/.deps/...) would get
// code loaded into whoever runs attnx below it.
func candidates() []string {
	var out []string
	seen := map[string]bool{}
	add := func(p string) {
		if p != "" && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		dir := filepath.Dir(exe)
		add(filepath.Join(dir, systemNames[0]))
		add(filepath.Join(filepath.Dir(dir), "lib", systemNames[0]))
		add(filepath.Join(filepath.Dir(dir), projectLib))
	}
	add(moduleLib)
	for _, dir := range systemDirs {
		for _, name := range systemNames {
			add(filepath.Join(dir, name))
		}
	}
	return out
}

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
