package deploy

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/serve"
)

// TestDockerfileStatic checks the static image as TestDockerfile checks
// the other, then, with no container engine here, runs the Dockerfile's
// own build step as buildx runs it for linux/amd64 and linux/arm64 (the
// same shell command, TARGETOS and TARGETARCH set, /out in a temporary
// directory): the binaries are built without cgo for the right machine,
// and the one for this machine translates with the exported demo model in
// an empty environment, as the distroless image would run it.
func TestDockerfileStatic(t *testing.T) {
	df := readDockerfileAt(t, "../Dockerfile.static")
	froms := df["FROM"]
	if len(froms) < 2 || !strings.HasPrefix(froms[len(froms)-1], "gcr.io/distroless/static") {
		t.Errorf("FROM %q: want a multi-stage build ending on distroless's static base", froms)
	}
	if !strings.Contains(froms[0], "--platform=$BUILDPLATFORM") {
		t.Errorf("build stage %q: want --platform=$BUILDPLATFORM (cross-compiled, not emulated)", froms[0])
	}
	users := df["USER"]
	if len(users) == 0 || strings.HasPrefix(users[len(users)-1], "0") || strings.HasPrefix(users[len(users)-1], "root") {
		t.Errorf("USER %q: want a non-root user", users)
	}
	var cmd []string
	if len(df["CMD"]) != 1 || json.Unmarshal([]byte(df["CMD"][0]), &cmd) != nil || len(cmd) == 0 || cmd[0] != "serve" ||
		flagValue(cmd, "--addr") != fmt.Sprintf(":%d", serve.DefaultPort) || !slices.Contains(df["EXPOSE"], strconv.Itoa(serve.DefaultPort)) {
		t.Errorf("CMD %q, EXPOSE %q: want serve ... --addr :%d, exposed", df["CMD"], df["EXPOSE"], serve.DefaultPort)
	}
	var build string
	for _, r := range df["RUN"] {
		if strings.Contains(r, "go build") {
			build = r
		}
	}
	if !strings.Contains(build, "CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build") {
		t.Fatalf("build step %q: want CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build", build)
	}
	goBin := testenv.Command(t, "go", "golang")
	sh := testenv.Command(t, "sh", "dash")
	for _, arch := range []struct {
		goarch  string
		machine elf.Machine
	}{{"amd64", elf.EM_X86_64}, {"arm64", elf.EM_AARCH64}} {
		out := t.TempDir()
		c := exec.Command(sh, "-ec", strings.ReplaceAll(build, "/out/", out+"/"))
		c.Dir = ".."
		c.Env = append(os.Environ(), "TARGETOS=linux", "TARGETARCH="+arch.goarch, "PATH="+filepath.Dir(goBin)+":"+os.Getenv("PATH"))
		if msg, err := c.CombinedOutput(); err != nil {
			t.Fatalf("the build step for linux/%s: %v\n%s", arch.goarch, err, msg)
		}
		bin := filepath.Join(out, "attnx")
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("linux/%s: %v", arch.goarch, err)
		}
		interp := f.Section(".interp")
		f.Close()
		if f.Machine != arch.machine || interp != nil {
			t.Errorf("linux/%s: an ELF for %v, interpreter section %v; want %v, static", arch.goarch, f.Machine, interp != nil, arch.machine)
		}
		if _, err := os.Stat(filepath.Join(out, "models", "dates", "attnx.json")); err != nil {
			t.Errorf("linux/%s: the demo model was not exported: %v", arch.goarch, err)
		}
		if _, err := os.Stat(filepath.Join(out, "build")); err == nil {
			t.Errorf("linux/%s: the build machine's binary was left in the image's files", arch.goarch)
		}
		if arch.goarch != runtime.GOARCH {
			continue // built for another machine: checked above, not run
		}
		for _, args := range [][]string{
			{"version"},
			{"translate", "--model", filepath.Join(out, "models", "dates"), "3rd of March 2021"},
		} {
			run := exec.Command(bin, args...)
			run.Env = []string{} // env -i: no ATTNX_ORT_LIB, no PATH
			got, err := run.CombinedOutput()
			t.Logf("env -i attnx %s:\n%s", strings.Join(args, " "), got)
			want := map[string]string{"version": "backends     go (default go", "translate": "3rd of March 2021 -> 2021-03-03"}[args[0]]
			if err != nil || !strings.Contains(string(got), want) {
				t.Errorf("env -i attnx %s: %v, want %q in\n%s", strings.Join(args, " "), err, want, got)
			}
		}
	}
}
