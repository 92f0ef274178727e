// Package reference runs attnx's PyTorch reference: the Python modules in
// this directory (attnx_reference.py, the reference.py CLI, bench.py, and
// user_module.py, which runs a user's own modules instead) that
// define what every attnx model computes. The scripts are embedded in the
// Go binary, so that an attnx built elsewhere or installed with `go
// install` can verify models: each run writes them to a private temporary
// directory, runs them there and removes the directory.
//
// The interpreter is /usr/bin/python3 (Debian's, with python3-torch) unless
// Runner.Python says otherwise; the environment variable ATTNX_REFERENCE
// (a reference.py file or the directory holding it) replaces the embedded
// scripts with other ones, for working on the reference without rebuilding.
//
// The reference reads checkpoints as safetensors (its own reader) or with
// torch.load(weights_only=True); callers hand it weights that attnx's Go
// reader extracted, never a user's pickle.
package reference

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed attnx_reference.py reference.py bench.py user_module.py user_toolkit.py toolkits.py
var scripts embed.FS

// The scripts callers run.
const (
	// Script is the reference CLI: make-model, random-inputs, run, beam,
	// export-onnx, run-module (your own modules as the oracle, see
	// user_module.py) and batch (see its --help).
	Script = "reference.py"
	// BenchScript times PyTorch eager greedy decoding for `attnx bench`.
	BenchScript = "bench.py"
)

// EnvReference names the environment variable that replaces the embedded
// scripts: the path of a reference.py, or of the directory holding it (and
// bench.py and attnx_reference.py).
const EnvReference = "ATTNX_REFERENCE"

// DefaultPython is the interpreter with torch: Debian's python3, where
// `apt-get install python3-torch` puts PyTorch.
const DefaultPython = "/usr/bin/python3"

// InstallHint says how to get PyTorch.
const InstallHint = "install it with `apt-get install python3-torch` (or `make deps` in the attnx repository)"

// ErrNoTorch is matched (errors.Is) by the errors of a Runner whose
// interpreter is missing or cannot import torch.
var ErrNoTorch = errors.New("PyTorch is not available")

// noTorch is an error that says what is missing and how to install it.
type noTorch struct{ msg string }

func (e *noTorch) Error() string        { return e.msg }
func (e *noTorch) Is(target error) bool { return target == ErrNoTorch }

// Runner runs the reference's scripts. The zero value runs the embedded
// scripts (or $ATTNX_REFERENCE's) with DefaultPython. A Runner is safe for
// concurrent use: every run has its own copy of the scripts.
type Runner struct {
	// Python is the interpreter with torch; "" means DefaultPython.
	Python string
	// Dir is a directory holding the scripts, used instead of
	// $ATTNX_REFERENCE and the embedded copy when set.
	Dir string
}

// Default is the Runner callers use unless they choose an interpreter.
var Default Runner

func (r Runner) python() string {
	if r.Python != "" {
		return r.Python
	}
	return DefaultPython
}

// source returns the directory of the scripts to run when they live on
// disk (r.Dir or $ATTNX_REFERENCE), or "" for the embedded copy.
func (r Runner) source() (string, error) {
	if r.Dir != "" {
		if _, err := os.Stat(filepath.Join(r.Dir, Script)); err != nil {
			return "", fmt.Errorf("reference scripts: %w", err)
		}
		return r.Dir, nil
	}
	p := os.Getenv(EnvReference)
	if p == "" {
		return "", nil
	}
	st, err := os.Stat(p)
	if err != nil {
		return "", fmt.Errorf("%s=%s: %w", EnvReference, p, err)
	}
	if !st.IsDir() {
		return filepath.Dir(p), nil
	}
	if _, err := os.Stat(filepath.Join(p, Script)); err != nil {
		return "", fmt.Errorf("%s=%s: the directory has no %s", EnvReference, p, Script)
	}
	return p, nil
}

// Check finds the scripts and the interpreter without starting Python, so
// that a caller can fail early: it reports a bad ATTNX_REFERENCE or a
// missing interpreter (matching ErrNoTorch, with how to install it).
// Whether the interpreter has torch shows when a script runs.
func (r Runner) Check() error {
	if _, err := r.source(); err != nil {
		return err
	}
	py := r.python()
	if _, err := os.Stat(py); err != nil {
		return &noTorch{fmt.Sprintf("%s is missing: the PyTorch reference needs Python 3 with torch there; %s", py, InstallHint)}
	}
	return nil
}

// CheckTorch starts the interpreter and imports torch: nil when the
// reference can run, else an error matching ErrNoTorch that says how to
// install PyTorch. Tests call it to skip (or, under CI, fail) early.
func (r Runner) CheckTorch(ctx context.Context) error {
	if err := r.Check(); err != nil {
		return err
	}
	py := r.python()
	out, err := exec.CommandContext(ctx, py, "-c", "import torch").CombinedOutput()
	if err != nil {
		return &noTorch{fmt.Sprintf("%s cannot import torch (%s): the PyTorch reference needs it; %s", py, lastLine(out, err), InstallHint)}
	}
	return nil
}

// Run runs one of the reference's scripts (Script, BenchScript) with args
// and returns what it printed on stdout. On failure the error carries the
// script's last line on stderr (the reference's own message for bad input);
// a missing interpreter or torch gives an error matching ErrNoTorch.
func (r Runner) Run(ctx context.Context, script string, args ...string) ([]byte, error) {
	if err := r.Check(); err != nil {
		return nil, err
	}
	dir, err := r.source()
	if err != nil {
		return nil, err
	}
	if dir == "" {
		tmp, err := extract()
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	path := filepath.Join(dir, script)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("reference script %s: %w", script, err)
	}
	py := r.python()
	cmd := exec.CommandContext(ctx, py, append([]string{path}, args...)...)
	// The copy is private and short-lived: no __pycache__ beside it.
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if strings.Contains(stderr.String(), "No module named 'torch'") {
			return nil, &noTorch{fmt.Sprintf("%s has no torch module: the PyTorch reference needs it; %s", py, InstallHint)}
		}
		what := script
		if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
			what += " " + args[0]
		}
		return nil, fmt.Errorf("PyTorch reference (%s) failed: %s", what, lastLine(stderr.Bytes(), err))
	}
	return stdout.Bytes(), nil
}

// Run runs a script with the Default runner.
func Run(ctx context.Context, script string, args ...string) ([]byte, error) {
	return Default.Run(ctx, script, args...)
}

// extract writes the embedded scripts to a new private directory (mode
// 0700) and returns it; the caller removes it.
func extract() (dir string, err error) {
	dir, err = os.MkdirTemp("", "attnx-reference-")
	if err != nil {
		return "", fmt.Errorf("copying the PyTorch reference: %w", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	entries, err := fs.ReadDir(scripts, ".")
	if err != nil {
		return "", fmt.Errorf("copying the PyTorch reference: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		data, err := scripts.ReadFile(name)
		if err != nil {
			return "", fmt.Errorf("copying the PyTorch reference: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return "", fmt.Errorf("copying the PyTorch reference: %w", err)
		}
	}
	return dir, nil
}

// lastLine is the last non-empty line of out, else err's text.
func lastLine(out []byte, err error) string {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return err.Error()
}
