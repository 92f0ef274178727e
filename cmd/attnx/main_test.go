package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/conformance"
	"github.com/attnx/attnx/export"
	"github.com/attnx/attnx/runtime"
)

// attnx runs the CLI in-process and returns its exit status and output.
func attnx(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	stdout, stderr = &out, &errb
	defer func() { stdout, stderr = os.Stdout, os.Stderr }()
	code := run(args)
	return code, out.String(), errb.String()
}

func TestDispatch(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{nil, 2, "", "Commands:"},
		{[]string{"help"}, 0, "conformance  run the ONNX backend test data", ""},
		{[]string{"help", "conformance"}, 0, "Usage: attnx conformance [flags] [dir...]", ""},
		{[]string{"conformance", "-h"}, 0, "-strict", ""},
		{[]string{"help", "nope"}, 2, "", `unknown command "nope"`},
		{[]string{"nope"}, 2, "", `attnx: unknown command "nope"`},
		{[]string{"conformance", "-bogus"}, 2, "", "unknown flag: -bogus (arguments that begin with - go after --)\nRun 'attnx help conformance' for usage."},
		{[]string{"conformance", "-workers", "0"}, 2, "", "-workers must be at least 1"},
		{[]string{"conformance", "-run", "("}, 2, "", "-run: error parsing regexp"},
		{[]string{"conformance", "/no/such/dir"}, 1, "", "attnx conformance: conformance: stat /no/such/dir"},
	}
	for _, c := range cases {
		code, out, errs := attnx(c.args...)
		if code != c.code || !strings.Contains(out, c.out) || !strings.Contains(errs, c.err) {
			t.Errorf("attnx %q: exit %d, stdout %q, stderr %q; want exit %d, %q, %q", c.args, code, out, errs, c.code, c.out, c.err)
		}
		if strings.Contains(errs, "goroutine ") {
			t.Errorf("attnx %q printed a stack trace", c.args)
		}
	}
}

func TestPanicIsReportedCleanly(t *testing.T) {
	saved := commands
	defer func() { commands = saved }()
	commands = append(commands, command{name: "boom", summary: "panics", run: func([]string) error { panic("kaboom") }},
		command{name: "fail", summary: "fails", run: func([]string) error { return errors.New("it broke") }})
	code, _, errs := attnx("boom")
	if code != 1 || !strings.Contains(errs, "attnx: internal error: kaboom") || strings.Contains(errs, "goroutine") {
		t.Errorf("panic: exit %d, stderr %q", code, errs)
	}
	code, _, errs = attnx("fail")
	if code != 1 || errs != "attnx fail: it broke\n" {
		t.Errorf("error: exit %d, stderr %q", code, errs)
	}
}

func needData(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(conformance.DefaultRoot, "node", "test_abs")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("ONNX backend test data not installed: %v", err)
	}
	if err := runtime.Init(); err != nil {
		t.Skipf("ONNX Runtime not available: %v", err)
	}
	return dir
}

func TestConformanceJSON(t *testing.T) {
	needData(t)
	code, out, errs := attnx("conformance", "-json", "-run", "test_(abs|relu|sequence_insert_at_back|loop13_seq)$",
		filepath.Join(conformance.DefaultRoot, "node"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Total, Passed, Failed, Skipped int
		Cases                          []struct {
			Name, Status, Reason string
			MaxAbsErr            float64 `json:"max_abs_err"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if rep.Total != 4 || rep.Passed != 3 || rep.Skipped != 1 || rep.Failed != 0 || len(rep.Cases) != 4 {
		t.Errorf("report %+v", rep)
	}
	if c := rep.Cases[1]; c.Name != "node/test_loop13_seq" || c.Status != "skipped" || !strings.Contains(c.Reason, "empty sequence") {
		t.Errorf("case %+v", c)
	}
	if c := rep.Cases[3]; c.Name != "node/test_sequence_insert_at_back" || c.Status != "passed" {
		t.Errorf("case %+v", c)
	}
	code, out, _ = attnx("conformance", "-run", "test_abs$", filepath.Join(conformance.DefaultRoot, "node"))
	if code != 0 || !strings.Contains(out, "  node      1       1       0        0") {
		t.Errorf("table (exit %d):\n%s", code, out)
	}
}

func TestConformanceFailsOnCorruptedOutput(t *testing.T) {
	src := needData(t)
	dst := filepath.Join(t.TempDir(), "node", "test_abs")
	os.MkdirAll(filepath.Join(dst, "test_data_set_0"), 0o755)
	for _, f := range []string{"model.onnx", "test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dst, f), b, 0o644)
	}
	out := filepath.Join(dst, "test_data_set_0", "output_0.pb")
	tn, err := export.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(tn.Raw, math.Float32bits(-7))
	b, _ := export.MarshalTensor(tn)
	os.WriteFile(out, b, 0o644)

	code, stdout, errs := attnx("conformance", "-strict", "-json", dst)
	if code != 1 {
		t.Fatalf("exit %d, want 1: %s", code, errs)
	}
	if !strings.Contains(stdout, `"status": "failed"`) || !strings.Contains(stdout, `"failed": 1`) || !strings.Contains(stdout, "want -7") {
		t.Errorf("JSON does not report the failure:\n%s", stdout)
	}
	// By default ORT fails the same way on the original file, so the case
	// is skipped with the mismatch as its reason (exit 0).
	code, stdout, _ = attnx("conformance", "-v", dst)
	if code != 0 || !strings.Contains(stdout, "skipped node/test_abs: ONNX Runtime fails on the original file too") {
		t.Errorf("default mode (exit %d):\n%s", code, stdout)
	}
}
