package reference_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attnx/attnx/checkpoint"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/reference"
)

var ctx = context.Background()

// The embedded reference runs from a private copy, whatever the working
// directory, and leaves nothing behind.
func TestEmbeddedRunsOutsideTheRepository(t *testing.T) {
	testenv.Torch(t)
	t.Setenv(reference.EnvReference, "")
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	work := t.TempDir()
	t.Chdir(work)
	ck, in, out := "m.safetensors", "in.safetensors", "out.safetensors"
	for _, args := range [][]string{
		{"make-model", "--arch", "tutorial-bahdanau", "--hidden", "5", "--src-vocab", "8", "--tgt-vocab", "9", "--out", ck},
		{"random-inputs", "--batch", "2", "--src-len", "4", "--src-vocab", "8", "--ragged", "--out", in},
		{"run", "--checkpoint", ck, "--inputs", in, "--steps", "3", "--out", out, "--sos", "0", "--eos", "1"},
	} {
		if _, err := reference.Run(ctx, reference.Script, args...); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
	}
	sd, err := checkpoint.LoadSafetensors(filepath.Join(work, out))
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range sd.Tensors {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"attention", "encoder_outputs", "greedy_lengths", "greedy_tokens", "hidden", "log_probs", "next_hidden", "step_input_ids", "tokens"}
	if !slices.Equal(keys, want) {
		t.Errorf("run wrote %v, want %v (a GRU model: no cell)", keys, want)
	}
	if lp := sd.Tensors["log_probs"]; !slices.Equal(lp.Dims, []int64{3, 2, 9}) {
		t.Errorf("log_probs %v, want [3 2 9]", lp.Dims)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("temporary files left behind: %v", left)
	}
	if names, _ := os.ReadDir(work); len(names) != 3 {
		t.Errorf("working directory holds %v, want the three files written", names)
	}
}

// A script's own error message (a bad argument, a bad checkpoint) comes back
// as one line naming the script and subcommand.
func TestScriptErrors(t *testing.T) {
	testenv.Torch(t)
	t.Setenv(reference.EnvReference, "")
	none := filepath.Join(t.TempDir(), "none.pt")
	_, err := reference.Run(ctx, reference.Script, "run", "--checkpoint", none, "--inputs", "x", "--steps", "1", "--out", "y")
	want := "PyTorch reference (reference.py run) failed: reference: checkpoint " + none + " does not exist"
	if err == nil || err.Error() != want || errors.Is(err, reference.ErrNoTorch) {
		t.Errorf("missing checkpoint: %v, want %q", err, want)
	}
	_, err = reference.Run(ctx, reference.BenchScript, "--checkpoint")
	if err == nil || !strings.HasPrefix(err.Error(), "PyTorch reference (bench.py) failed: ") {
		t.Errorf("bad bench.py arguments: %v", err)
	}
	_, err = reference.Run(ctx, "nope.py")
	if err == nil || !strings.Contains(err.Error(), "reference script nope.py: ") {
		t.Errorf("unknown script: %v", err)
	}
}

// ATTNX_REFERENCE replaces the embedded scripts: a reference.py file or its
// directory; a path that does not exist is an error naming the variable.
func TestEnvOverride(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, reference.Script)
	if err := os.WriteFile(script, []byte("import sys\nprint('override', ' '.join(sys.argv[1:]))\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(reference.DefaultPython); err != nil {
		t.Skipf("no %s", reference.DefaultPython)
	}
	for _, p := range []string{script, dir} {
		t.Setenv(reference.EnvReference, p)
		out, err := reference.Run(ctx, reference.Script, "a", "b")
		if err != nil || string(out) != "override a b\n" {
			t.Errorf("%s=%s: %q, %v", reference.EnvReference, p, out, err)
		}
	}
	missing := filepath.Join(dir, "none", "reference.py")
	t.Setenv(reference.EnvReference, missing)
	want := reference.EnvReference + "=" + missing + ": stat " + missing + ": no such file or directory"
	if err := reference.Default.Check(); err == nil || err.Error() != want {
		t.Errorf("Check: %v, want %q", err, want)
	}
	if _, err := reference.Run(ctx, reference.Script); err == nil || err.Error() != want {
		t.Errorf("Run: %v, want %q", err, want)
	}
	empty := t.TempDir()
	t.Setenv(reference.EnvReference, empty)
	if err := reference.Default.Check(); err == nil || err.Error() != reference.EnvReference+"="+empty+": the directory has no reference.py" {
		t.Errorf("directory without reference.py: %v", err)
	}
}

// A missing interpreter and one without torch are errors that match
// ErrNoTorch and say how to install PyTorch.
func TestNoTorch(t *testing.T) {
	t.Setenv(reference.EnvReference, "")
	dir := t.TempDir()
	py := filepath.Join(dir, "python3")
	r := reference.Runner{Python: py}
	want := py + " is missing: the PyTorch reference needs Python 3 with torch there; " + reference.InstallHint
	for name, err := range map[string]error{"Check": r.Check(), "CheckTorch": r.CheckTorch(ctx)} {
		if !errors.Is(err, reference.ErrNoTorch) || err.Error() != want {
			t.Errorf("%s without an interpreter: %v", name, err)
		}
	}
	if _, err := r.Run(ctx, reference.Script, "run"); !errors.Is(err, reference.ErrNoTorch) || err.Error() != want {
		t.Errorf("Run without an interpreter: %v", err)
	}
	// An interpreter whose `import torch` fails as Python's does.
	fake := "#!/bin/sh\necho 'Traceback (most recent call last):' >&2\necho \"ModuleNotFoundError: No module named 'torch'\" >&2\nexit 1\n"
	if err := os.WriteFile(py, []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := r.Run(ctx, reference.Script, "run")
	if !errors.Is(err, reference.ErrNoTorch) || err.Error() != py+" has no torch module: the PyTorch reference needs it; "+reference.InstallHint {
		t.Errorf("Run without torch: %v", err)
	}
	err = r.CheckTorch(ctx)
	if !errors.Is(err, reference.ErrNoTorch) || err.Error() != py+" cannot import torch (ModuleNotFoundError: No module named 'torch'): the PyTorch reference needs it; "+reference.InstallHint {
		t.Errorf("CheckTorch without torch: %v", err)
	}
}

// Runner.Dir runs scripts from a directory (as `attnx bench -ref-dir` does).
func TestRunnerDir(t *testing.T) {
	if _, err := os.Stat(reference.DefaultPython); err != nil {
		t.Skipf("no %s", reference.DefaultPython)
	}
	dir := t.TempDir()
	for name, text := range map[string]string{reference.Script: "", reference.BenchScript: "print('bench here')\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := reference.Runner{Dir: dir}.Run(ctx, reference.BenchScript)
	if err != nil || string(out) != "bench here\n" {
		t.Errorf("%q, %v", out, err)
	}
	if _, err := (reference.Runner{Dir: t.TempDir()}).Run(ctx, reference.BenchScript); err == nil ||
		!strings.HasPrefix(err.Error(), "reference scripts: stat ") {
		t.Errorf("directory without scripts: %v", err)
	}
}
