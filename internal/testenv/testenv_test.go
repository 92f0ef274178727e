package testenv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestChild is the child half of TestMissingSkipsOrFails: it only does
// something when re-executed with TESTENV_CHILD naming a case.
func TestChild(t *testing.T) {
	switch os.Getenv("TESTENV_CHILD") {
	case "":
		t.Skip("helper process for TestMissingSkipsOrFails")
	case "missing":
		Missing(t, "the frobnicator", "apt-get install frob", errors.New("frob: not found"))
	case "ort-absent":
		ORT(t, fmt.Errorf("runtime: library not found: %w", fs.ErrNotExist))
	case "ort-broken":
		ORT(t, errors.New("runtime: /x/libonnxruntime.so.1 is not a loadable ONNX Runtime library"))
	case "ort-ok":
		ORT(t, nil)
	case "module":
		PythonModule(t, "attnx_no_such_module", "python3-attnx-none")
	case "command":
		Command(t, "attnx-no-such-command", "attnx-none")
	case "part":
		MissingPart(t, "the widget", "apt-get install widget", nil)
	}
	fmt.Println("CHILD-CONTINUED")
}

// TestMissingSkipsOrFails runs each probe in a child test with CI unset and
// with CI=true: a missing thing skips the child outside CI and fails it
// under CI, with the same message naming it and how to install it; a
// broken (not missing) ONNX Runtime fails either way.
func TestMissingSkipsOrFails(t *testing.T) {
	cases := []struct {
		child     string
		skips     bool   // outside CI (under CI every case but ort-ok fails)
		continues bool   // the test goes on (nothing missing)
		message   string // in the output either way
	}{
		{child: "missing", skips: true, message: "the frobnicator is missing (frob: not found); install it with: apt-get install frob"},
		{child: "ort-absent", skips: true, message: "the ONNX Runtime shared library is missing (runtime: library not found: file does not exist); install it with: make deps"},
		{child: "ort-broken", message: "ONNX Runtime: runtime: /x/libonnxruntime.so.1 is not a loadable ONNX Runtime library"},
		{child: "ort-ok", continues: true},
		{child: "module", skips: true, message: "Python module attnx_no_such_module for /usr/bin/python3"},
		{child: "command", skips: true, message: "attnx-no-such-command is missing"},
		{child: "part", message: "the widget is missing; install it with: apt-get install widget"},
	}
	for _, c := range cases {
		for _, ci := range []string{"", "true"} {
			t.Run(c.child+"/CI="+ci, func(t *testing.T) {
				cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.v")
				env := []string{"TESTENV_CHILD=" + c.child}
				for _, kv := range os.Environ() {
					if !strings.HasPrefix(kv, "CI=") {
						env = append(env, kv)
					}
				}
				if ci != "" {
					env = append(env, "CI="+ci)
				}
				cmd.Env = env
				out, err := cmd.CombinedOutput()
				got := string(out)
				if c.message != "" && !strings.Contains(got, c.message) {
					t.Errorf("output lacks %q:\n%s", c.message, got)
				}
				switch {
				case c.child == "part" && ci == "":
					if err != nil || !strings.Contains(got, "CHILD-CONTINUED") || !strings.Contains(got, "the test goes on without it") {
						t.Errorf("want the test to go on, saying what it leaves out (%v):\n%s", err, got)
					}
				case c.continues:
					if err != nil || !strings.Contains(got, "CHILD-CONTINUED") {
						t.Errorf("nothing is missing, yet the test stopped (%v):\n%s", err, got)
					}
				case ci == "" && c.skips:
					if err != nil || !strings.Contains(got, "--- SKIP: TestChild") {
						t.Errorf("want a skip outside CI, got (%v):\n%s", err, got)
					}
				default:
					if err == nil || !strings.Contains(got, "--- FAIL: TestChild") {
						t.Errorf("want a failure, got (%v):\n%s", err, got)
					}
					if ci != "" && c.skips && !strings.Contains(got, "[CI=true: a missing dependency fails the test instead of skipping it]") {
						t.Errorf("the CI failure does not say why it is not a skip:\n%s", got)
					}
				}
				if strings.Contains(got, "CHILD-CONTINUED") && !c.continues && !(c.child == "part" && ci == "") {
					t.Errorf("the test went on after its dependency was found missing:\n%s", got)
				}
			})
		}
	}
}

func TestInCI(t *testing.T) {
	for v, want := range map[string]bool{"": false, "0": false, "false": false, "FALSE": false, "true": true, "1": true, "yes": true} {
		t.Setenv("CI", v)
		if got := InCI(); got != want {
			t.Errorf("CI=%q: InCI() = %v, want %v", v, got, want)
		}
	}
}
