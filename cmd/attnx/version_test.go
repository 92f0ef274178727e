package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"reflect"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/kernel"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxrun"
)

func TestVersionFromBuildInfo(t *testing.T) {
	platform := runtime.GOOS + "/" + runtime.GOARCH
	cases := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want versionReport
	}{
		{"no build info", nil, false, versionReport{Version: "unknown", Go: runtime.Version(), Platform: platform}},
		{"source tree without VCS", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Path: "github.com/attnx/attnx", Version: "(devel)"}}, true,
			versionReport{Version: "(devel)", Go: "go1.26.8", Platform: platform}},
		{"git clone with changes", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20260102030405-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "GOOS", Value: "linux"}, {Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef"},
				{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}, true,
			versionReport{Version: "v0.0.0-20260102030405-0123456789ab+dirty", Revision: "0123456789abcdef", Time: "2026-01-02T03:04:05Z", Modified: true, Go: "go1.26.8", Platform: platform}},
		{"go install of a release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.0"},
			Settings: []debug.BuildSetting{{Key: "vcs.modified", Value: "false"}}}, true,
			versionReport{Version: "v1.2.0", Go: "go1.26.8", Platform: platform}},
	}
	for _, c := range cases {
		if got := buildVersion(c.bi, c.ok); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: buildVersion = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestWriteVersion(t *testing.T) {
	cases := []struct {
		rep  versionReport
		want string
	}{
		{versionReport{Version: "v1.2.0", Revision: "0123abc", Time: "2026-01-02T03:04:05Z", Modified: true, Go: "go1.26.8", Platform: "linux/amd64",
			Backends: []string{"ort", "go"}, Default: "ort", Kernels: "avx2+fma", KernelPath: "avx2", KernelPaths: []string{"avx2", "go"},
			ORT: versionORT{Path: "/opt/ort/libonnxruntime.so.1", Version: "1.24.1"}},
			"attnx v1.2.0\n  commit       0123abc (2026-01-02T03:04:05Z, modified)\n  go           go1.26.8 linux/amd64\n  backends     ort, go (default ort; native kernels avx2+fma)\n  kernel path  avx2 (this CPU runs avx2, go; ATTNX_KERNELS picks one)\n  onnxruntime  1.24.1 /opt/ort/libonnxruntime.so.1\n"},
		{versionReport{Version: "(devel)", Go: "go1.26.8", Platform: "linux/arm64", Backends: []string{"go"}, Default: "go", Kernels: "go", KernelPath: "go", KernelPaths: []string{"go"},
			KernelError: `ATTNX_KERNELS="avx2": this CPU (or this build) cannot run that path; it can run go`,
			ORT:         versionORT{Error: "ONNX Runtime shared library not found; searched X"}},
			"attnx (devel)\n  commit       not recorded (built outside a git clone, in a worktree, or with -buildvcs=false)\n  go           go1.26.8 linux/arm64\n  backends     go (default go; native kernels go)\n  kernel path  go (this CPU runs go; ATTNX_KERNELS picks one)\n  kernel error ATTNX_KERNELS=\"avx2\": this CPU (or this build) cannot run that path; it can run go\n  onnxruntime  not loaded: ONNX Runtime shared library not found; searched X\n"},
	}
	for _, c := range cases {
		var b bytes.Buffer
		writeVersion(&b, c.rep)
		if b.String() != c.want {
			t.Errorf("writeVersion(%+v):\n%s\nwant:\n%s", c.rep, b.String(), c.want)
		}
	}
}

// TestVersionCommand runs `attnx version` in this process: it reports the
// library onnxrun.Init loads, and exits 0 exactly when there is one.
func TestVersionCommand(t *testing.T) {
	initErr := onnxrun.Init()
	if initErr != nil {
		testenv.MissingPart(t, "the ONNX Runtime shared library", "make deps (scripts/install-deps.sh), or set ATTNX_ORT_LIB", initErr)
	}
	for _, args := range [][]string{{"version"}, {"--version"}, {"-version"}} {
		code, out, errs := attnx(args...)
		first, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(first, "attnx ") || !strings.Contains(out, "\n  go           "+runtime.Version()+" ") || errs != "" {
			t.Errorf("attnx %q: exit %d, stdout %q, stderr %q", args, code, out, errs)
		}
		switch {
		case initErr == nil && (code != 0 || !strings.Contains(out, "\n  onnxruntime  "+onnxrun.Version()+" "+onnxrun.LibraryPath()+"\n")):
			t.Errorf("attnx %q with ONNX Runtime %s at %s: exit %d, stdout %q", args, onnxrun.Version(), onnxrun.LibraryPath(), code, out)
		case initErr != nil && (code != 1 || !strings.Contains(out, "onnxruntime  not loaded: ")):
			t.Errorf("attnx %q without ONNX Runtime (%v): exit %d, stdout %q", args, initErr, code, out)
		}
	}
	code, out, _ := attnx("version", "--json")
	var rep versionReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("version --json (exit %d) is not JSON: %v\n%s", code, err, out)
	}
	if rep.Go != runtime.Version() || rep.ORT.Path != onnxrun.LibraryPath() || rep.ORT.Version != onnxrun.Version() || (rep.ORT.Error == "") != (initErr == nil) {
		t.Errorf("version --json: %+v", rep)
	}
	// A build with cgo has both backends, ONNX Runtime the default.
	if !reflect.DeepEqual(rep.Backends, []string{"go", "ort"}) || rep.Default != "go" || (rep.Kernels != kernel.Accelerated() || !strings.HasPrefix(rep.Kernels, "avx2+fma") && rep.Kernels != "go") {
		t.Errorf("version --json: backends %v, default %q, kernels %q; want [go ort], go, %q", rep.Backends, rep.Default, rep.Kernels, kernel.Accelerated())
	}
	if code, _, errs := attnx("version", "extra"); code != 2 || !strings.Contains(errs, `unexpected argument "extra"`) {
		t.Errorf("version extra: exit %d, stderr %q", code, errs)
	}
}

// TestVersionMissingORT runs `attnx version` in a subprocess whose
// ATTNX_ORT_LIB names no file: the report is printed all the same and
// names the missing library; the exit status is 0, the default backend
// (the native one) needing no library.
func TestVersionMissingORT(t *testing.T) {
	const lib = "/nonexistent/libonnxruntime.so.1"
	for _, args := range []string{`["version"]`, `["version","--json"]`} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBadInputHelperProcess$")
		cmd.Env = append(os.Environ(), "ATTNX_BADINPUT_ARGS="+args, "ATTNX_ORT_LIB="+lib)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, io.Discard
		err := cmd.Run()
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("attnx %s: exit %d (%v), want 0\n%s", args, code, err, out.String())
		}
		s := out.String()
		if strings.Contains(args, "json") {
			var rep versionReport
			if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.ORT.Path != "" || !strings.Contains(rep.ORT.Error, "ATTNX_ORT_LIB="+lib) || rep.Go == "" {
				t.Errorf("attnx %s: %+v, %v\n%s", args, rep, err, s)
			}
			continue
		}
		if !strings.HasPrefix(s, "attnx ") || !strings.Contains(s, "\n  go           go") || !strings.Contains(s, "\n  onnxruntime  not loaded: ") || !strings.Contains(s, "ATTNX_ORT_LIB="+lib+": stat "+lib+": no such file") {
			t.Errorf("attnx %s: stdout\n%s", args, s)
		}
		badNoTrace(t, s)
	}
}

// TestKernelPathEnv runs attnx with ATTNX_KERNELS set (it is read when the
// process starts): version reports the path, a path this CPU runs decodes
// as the default does, and a bad value fails the native backend with the
// variable and the paths named.
func TestKernelPathEnv(t *testing.T) {
	model := demoLuong(t)
	run := func(env string, args ...string) (int, string) {
		cmd := attnxProcess(t, args, env)
		out, err := cmd.CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, string(out)
	}
	for _, p := range kernel.Paths() {
		code, out := run("ATTNX_KERNELS="+p, "translate", "--model", model, "3rd of March 2021")
		if code != 0 || !strings.Contains(out, "3rd of March 2021 -> 2021-03-03") {
			t.Errorf("ATTNX_KERNELS=%s: exit %d, %s", p, code, out)
		}
		code, out = run("ATTNX_KERNELS="+p, "version", "--json")
		var rep versionReport
		if i := strings.Index(out, "{"); code != 0 || i < 0 || json.Unmarshal([]byte(out[i:]), &rep) != nil || rep.KernelPath != p || rep.KernelError != "" {
			t.Errorf("ATTNX_KERNELS=%s version: exit %d, %s", p, code, out)
		}
	}
	code, out := run("ATTNX_KERNELS=sse4", "translate", "--model", model, "3rd of March 2021")
	if code != 1 || !strings.Contains(out, `ATTNX_KERNELS="sse4": want auto, avx512-vnni, avx512f, avx-vnni, avx2, go`) {
		t.Errorf("ATTNX_KERNELS=sse4: exit %d, %s", code, out)
	}
}
