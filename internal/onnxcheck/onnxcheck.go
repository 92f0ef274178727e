// Package onnxcheck runs the ONNX reference checker,
// onnx.checker.check_model(model, full_check=True), on models that attnx
// builds. It uses Debian's /usr/bin/python3 with python3-onnx (1.12), not
// whatever python3 comes first on PATH. Tests call Check on every model
// they build; when the checker is not installed, Require (which Check calls)
// skips the test, or fails it under CI (see package testenv).
package onnxcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attnx/attnx/internal/testenv"
)

// Python is the interpreter that has the onnx module (Debian's).
const Python = testenv.Python

// Timeout bounds one checker run.
var Timeout = 2 * time.Minute

// ErrUnavailable is returned (wrapped) when /usr/bin/python3 or its onnx
// module is missing.
var ErrUnavailable = errors.New("onnx checker unavailable")

// script checks the model at argv[1]. A failed check prints the checker's
// message after a marker and exits 1; anything else that goes wrong exits 2.
const script = `
import sys
try:
    import onnx
    import onnx.checker
except Exception as e:
    print("import onnx failed: %s" % e, file=sys.stderr)
    sys.exit(3)
try:
    onnx.checker.check_model(sys.argv[1], full_check=True)
except Exception as e:
    print("ATTNX-CHECK-FAILED %s: %s" % (type(e).__name__, e))
    sys.exit(1)
print("ok")
`

var (
	availOnce sync.Once
	availErr  error
)

// Available reports whether the checker can run: nil, or an error wrapping
// ErrUnavailable that says what is missing.
func Available() error {
	availOnce.Do(func() {
		if _, err := os.Stat(Python); err != nil {
			availErr = fmt.Errorf("%w: %s not found (Debian's python3 with python3-onnx is needed)", ErrUnavailable, Python)
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), Timeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, Python, "-E", "-c", "import onnx.checker; print(onnx.__version__)").CombinedOutput()
		if err != nil {
			availErr = fmt.Errorf("%w: %s cannot import onnx (install python3-onnx): %s", ErrUnavailable, Python, strings.TrimSpace(string(out)))
		}
	})
	return availErr
}

// CheckFile runs onnx.checker.check_model(path, full_check=True), which
// also runs strict shape inference. It returns nil when the model passes,
// an error wrapping ErrUnavailable when the checker cannot run, and
// otherwise an error carrying the checker's message.
func CheckFile(path string) error {
	return checkFile(path, path)
}

// checkFile checks the file at path, naming it display in errors.
func checkFile(path, display string) error {
	if err := Available(); err != nil {
		return err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("onnxcheck: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("onnxcheck: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Python, "-E", "-c", script, abs)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("onnxcheck: %s: checker timed out after %v", display, Timeout)
	}
	out := stdout.String()
	if i := strings.Index(out, "ATTNX-CHECK-FAILED "); i >= 0 {
		return fmt.Errorf("%s: onnx checker: %s", display, strings.TrimSpace(out[i+len("ATTNX-CHECK-FAILED "):]))
	}
	return fmt.Errorf("onnxcheck: %s: running the checker: %v: %s", display, err, strings.TrimSpace(stderr.String()+out))
}

// CheckBytes writes a serialized model to a temporary file and checks it
// with CheckFile.
func CheckBytes(data []byte) error {
	if err := Available(); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "attnx-onnxcheck-")
	if err != nil {
		return fmt.Errorf("onnxcheck: %w", err)
	}
	defer os.RemoveAll(dir)
	p := filepath.Join(dir, "model.onnx")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		return fmt.Errorf("onnxcheck: %w", err)
	}
	return checkFile(p, "model")
}

// Require ends t when the checker cannot run: through testenv.Missing, a
// skip outside CI and a failure under CI.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		testenv.Missing(t, "the ONNX checker (onnx.checker for "+Python+")", "apt-get install python3-onnx (or make deps)", err)
	}
}

// Check fails t with the checker's message when data, a serialized model,
// does not pass onnx.checker.check_model(full_check=True). When the checker
// is not installed, see Require.
func Check(t testing.TB, data []byte) {
	t.Helper()
	Require(t)
	if err := CheckBytes(data); err != nil {
		t.Errorf("ONNX checker rejects the model: %v", err)
	}
}
