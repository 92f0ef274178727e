// Package testenv decides, in one place, what a test does when something it
// needs from the machine is missing: Debian's PyTorch or ONNX for
// /usr/bin/python3, the ONNX Runtime library, the ONNX backend test data,
// protoc. Outside CI the test skips, saying what is missing and how to
// install it. Under CI (the CI variable set, as CI services and .ci/run's
// callers do) it fails with the same message: `make test` installs all of it
// first, so a skip there would only hide that a check did not run.
package testenv

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Python is the interpreter the tests use: Debian's, which has torch and
// onnx (the python3 first on PATH may have neither).
const Python = "/usr/bin/python3"

// BackendData is where Debian's libonnx-testdata installs the ONNX backend
// test cases.
const BackendData = "/usr/share/libonnx-testdata/data"

// InCI reports whether the tests run under CI: the CI variable is set to
// anything but "", "0" or "false".
func InCI() bool {
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false":
		return false
	}
	return true
}

// Missing ends tb because what it needs is absent: it fails tb under CI and
// skips it otherwise. what names the missing thing, install says how to get
// it, err (optional) is what the probe saw.
func Missing(tb testing.TB, what, install string, err error) {
	tb.Helper()
	msg := missingMessage(what, install, err)
	if InCI() {
		tb.Fatalf("%s [CI=%s: a missing dependency fails the test instead of skipping it]", msg, os.Getenv("CI"))
	}
	tb.Skip(msg)
}

// MissingPart is Missing for a test that can still check something without
// what is missing: outside CI it logs what will not be checked and returns,
// so the test goes on with the rest; under CI it fails tb as Missing does.
func MissingPart(tb testing.TB, what, install string, err error) {
	tb.Helper()
	msg := missingMessage(what, install, err)
	if InCI() {
		tb.Fatalf("%s [CI=%s: a missing dependency fails the test instead of being left out]", msg, os.Getenv("CI"))
	}
	tb.Logf("%s; the test goes on without it", msg)
}

// PythonInterpreter makes sure Python exists; otherwise see Missing.
func PythonInterpreter(tb testing.TB) {
	tb.Helper()
	if _, err := os.Stat(Python); err != nil {
		Missing(tb, Python, "apt-get install python3 (or make deps)", err)
	}
}

// PythonModule makes sure Python can import module, which Debian package
// pkg provides; otherwise see Missing.
func PythonModule(tb testing.TB, module, pkg string) {
	tb.Helper()
	PythonInterpreter(tb)
	out, err := exec.Command(Python, "-E", "-c", "import "+module).CombinedOutput()
	if err != nil {
		Missing(tb, fmt.Sprintf("Python module %s for %s", module, Python), "apt-get install "+pkg+" (or make deps)",
			fmt.Errorf("%v: %s", err, lastLine(out)))
	}
}

// Torch makes sure Debian's PyTorch is installed; otherwise see Missing.
func Torch(tb testing.TB) {
	tb.Helper()
	PythonModule(tb, "torch", "python3-torch")
}

// PythonONNX makes sure Debian's onnx module (the ONNX checker) is
// installed; otherwise see Missing.
func PythonONNX(tb testing.TB) {
	tb.Helper()
	PythonModule(tb, "onnx.checker", "python3-onnx")
}

// Backend returns the directory of the ONNX backend test cases of one
// group ("node", "simple", ...), making sure it is there; otherwise see
// Missing.
func Backend(tb testing.TB, group string) string {
	tb.Helper()
	dir := BackendData + "/" + group
	if _, err := os.Stat(dir); err != nil {
		Missing(tb, "the ONNX backend test data", "apt-get install libonnx-testdata (or make deps)", err)
	}
	return dir
}

// Command returns the path of the program name, making sure it is on PATH;
// otherwise see Missing (pkg is the Debian package that has it).
func Command(tb testing.TB, name, pkg string) string {
	tb.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(tb, name, "apt-get install "+pkg+" (or make deps)", err)
	}
	return p
}

// ORT takes the result of onnxrun.Init (this package cannot import onnxrun,
// whose own tests use it) and ends tb when ONNX Runtime cannot be used: an
// absent library (an error that is fs.ErrNotExist) goes to Missing; any
// other failure, such as a file that is not a loadable library, fails tb
// everywhere. In a build without cgo (an error whose NativeOnly is true)
// it returns: the test runs on the native backend, the default there.
func ORT(tb testing.TB, initErr error) {
	tb.Helper()
	var native interface{ NativeOnly() bool }
	switch {
	case initErr == nil:
	case errors.As(initErr, &native) && native.NativeOnly():
		// A build without cgo: sessions use the native backend by
		// default, and the test runs on it.
	case errors.Is(initErr, fs.ErrNotExist):
		Missing(tb, "the ONNX Runtime shared library", "make deps (scripts/install-deps.sh), or set ATTNX_ORT_LIB", initErr)
	default:
		tb.Fatalf("ONNX Runtime: %v", initErr)
	}
}

// missingMessage says what is missing, what the probe saw and how to
// install it.
func missingMessage(what, install string, err error) string {
	msg := what + " is missing"
	if err != nil {
		msg += fmt.Sprintf(" (%v)", err)
	}
	return msg + "; install it with: " + install
}

// lastLine returns the last non-empty line of out, where Python puts the
// exception.
func lastLine(out []byte) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// Lines reads a test data file's lines, without their line ends (lines of
// up to 1 MiB), ending tb on error.
func Lines(tb testing.TB, path string) []string {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	if err := sc.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	return out
}
