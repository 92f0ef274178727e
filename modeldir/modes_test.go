package modeldir

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestExportedModesReadableByOthers exports under umask 022 into a new
// DIR, into an existing empty DIR and over an existing model (--force):
// the directory is 0755 and every file 0644 each time, and the user nobody
// (as the Docker image's non-root user) really reads every file, through
// setpriv, when the test runs as root.
func TestExportedModesReadableByOthers(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	// t.TempDir's directories are 0700: others could not even reach DIR.
	root, err := os.MkdirTemp("", "attnx-modes-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	if err := os.Chmod(root, 0o755); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(root, "empty")
	if err := os.Mkdir(empty, 0o700); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, dir string
		opt       Options
	}{
		{"new directory", filepath.Join(root, "new"), Options{Greedy: true}},
		{"existing empty directory", empty, Options{}},
		{"replacing a model", filepath.Join(root, "new"), Options{Force: true, Beam: true}},
	}
	for _, c := range cases {
		mustExport(t, ckpt("bahdanau_b4_l2", "checkpoint.pt"), c.dir, c.opt)
		st, err := os.Stat(c.dir)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o755 {
			t.Errorf("%s: %s has mode %v, want 0755", c.name, c.dir, st.Mode().Perm())
		}
		for _, name := range entries(t, c.dir) {
			st, err := os.Stat(filepath.Join(c.dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o644 {
				t.Errorf("%s: %s has mode %v, want 0644", c.name, name, st.Mode().Perm())
			}
		}
		if os.Geteuid() != 0 {
			continue
		}
		setpriv, err := exec.LookPath("setpriv")
		if err != nil {
			t.Fatalf("setpriv (util-linux) is needed to read as nobody: %v", err)
		}
		for _, name := range entries(t, c.dir) {
			cmd := exec.Command(setpriv, "--reuid=nobody", "--regid=nogroup", "--clear-groups", "cat", filepath.Join(c.dir, name))
			out, err := cmd.Output()
			want, _ := os.ReadFile(filepath.Join(c.dir, name))
			if err != nil || len(out) != len(want) {
				var stderr string
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = string(ee.Stderr)
				}
				t.Errorf("%s: nobody reading %s: %v %s (read %d of %d bytes)", c.name, name, err, strings.TrimSpace(stderr), len(out), len(want))
			}
		}
	}
	if os.Geteuid() != 0 {
		t.Log("not root: the modes were checked, the read as nobody was not")
	}
}

// TestExportIntoWorkingDirectory exports with -o . (the working
// directory, empty), then again with --force over it: the model is
// written in place (the working directory stays the same directory), and
// the second export removes the graph the first named and it does not.
func TestExportIntoWorkingDirectory(t *testing.T) {
	src, err := filepath.Abs(ckpt("bahdanau_b4_l2", "checkpoint.pt"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	before, err := os.Stat(".")
	if err != nil {
		t.Fatal(err)
	}
	mustExport(t, src, ".", Options{Greedy: true})
	if got := entries(t, "."); !slices.Equal(got, []string{InfoFile, DecoderFile, EncoderFile, GreedyFile}) {
		t.Errorf("after -o .: %v", got)
	}
	if _, err := Export(src, ".", Options{}); err == nil || !strings.Contains(err.Error(), "pass --force") {
		t.Errorf("a second export without --force: %v", err)
	}
	res := mustExport(t, src, ".", Options{Force: true})
	if !res.Replaced {
		t.Error("Replaced is false after replacing the model in place")
	}
	if got := entries(t, "."); !slices.Equal(got, []string{InfoFile, DecoderFile, EncoderFile}) {
		t.Errorf("after -o . --force: %v (greedy.onnx should be gone)", got)
	}
	after, err := os.Stat(".")
	if err != nil || !os.SameFile(before, after) {
		t.Errorf("the working directory was replaced: %v", err)
	}
	if _, err := ReadInfo(InfoFile); err != nil {
		t.Error(err)
	}
}
