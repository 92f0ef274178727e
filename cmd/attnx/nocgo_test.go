package main

import (
	"github.com/attnx/attnx/internal/testenv"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestBuildsWithoutCgo builds attnx with CGO_ENABLED=0 and runs it with no
// ONNX Runtime anywhere it could find one: `version` lists the native
// backend alone, and the binary exports and translates a demo model on it.
// It also cross-builds for windows/arm64 (no unix, no amd64 assembly).
func TestBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds attnx twice")
	}
	gobin := testenv.Command(t, "go", "golang-go")
	dir := t.TempDir()
	bin := filepath.Join(dir, "attnx")
	build := func(env []string, out string) {
		t.Helper()
		cmd := exec.Command(gobin, "build", "-trimpath", "-o", out, ".") // -trimpath: the flags of Dockerfile.static's build, whose cached packages it shares
		cmd.Env = append(os.Environ(), env...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %v: %v\n%s", env, err, b)
		}
	}
	build([]string{"CGO_ENABLED=0"}, bin)
	build([]string{"CGO_ENABLED=0", "GOOS=windows", "GOARCH=arm64"}, filepath.Join(dir, "attnx.exe"))

	// A directory of its own, an ATTNX_ORT_LIB that names nothing: no
	// library to fall back on even if the code tried.
	env := append(os.Environ(), "ATTNX_ORT_LIB="+filepath.Join(dir, "none.so"))
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(bin, args...)
		cmd.Env, cmd.Dir = env, dir
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("attnx %v: %v\n%s", args, err, b)
		}
		return string(b)
	}
	if v := run("version"); !strings.Contains(v, "backends     go (default go;") || !strings.Contains(v, "built without cgo") {
		t.Errorf("version without cgo:\n%s", v)
	}
	demo, err := filepath.Abs(filepath.Join("..", "..", "testdata", "demo"))
	if err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "luong")
	run("export", filepath.Join(demo, "luong.pt"), "-o", model, "--greedy", "--beam",
		"--src-vocab", filepath.Join(demo, "src_vocab.json"), "--tgt-vocab", filepath.Join(demo, "tgt_vocab.json"))
	for _, args := range [][]string{{}, {"--beam", "3"}, {"--engine", "steps"}} {
		got := run(append([]string{"translate", "--model", model, "march 3, 2021", "12/07/1999"}, args...)...)
		if got != "march 3, 2021 -> 2021-03-03\n12/07/1999 -> 1999-12-07\n" {
			t.Errorf("translate %v without cgo on %s:\n%s", args, runtime.GOARCH, got)
		}
	}
	cmd := exec.Command(bin, "translate", "--model", model, "--backend", "ort", "x")
	cmd.Env, cmd.Dir = env, dir
	if b, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(b), "built without cgo") {
		t.Errorf("--backend ort without cgo: %v\n%s", err, b)
	}
}
