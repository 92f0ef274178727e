package main

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/internal/conformance"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/onnxfile"
	"github.com/attnx/attnx/onnxrun"
)

// needData returns node/test_abs of the backend test data; it skips when
// the data or ONNX Runtime is missing, and fails under CI=true.
func needData(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(testenv.Backend(t, "node"), "test_abs")
	testenv.ORT(t, onnxrun.Init())
	return dir
}

// conformanceReport is the part of `attnx conformance --json` the tests read.
type conformanceReport struct {
	Total               int `json:"total"`
	Passed              int `json:"passed"`
	Failed              int `json:"failed"`
	ExpectedFailures    int `json:"expected_failures"`
	UnexpectedlyPassing int `json:"unexpectedly_passing"`
	ExpectedList        struct {
		Source  string `json:"source"`
		Entries int    `json:"entries"`
	} `json:"expected_list"`
	Cases []struct {
		Name, Status, Stage, Reason string
		Expected                    *struct{ Stage, Category string }
	}
}

func decodeReport(t *testing.T, out string) conformanceReport {
	t.Helper()
	var rep conformanceReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	return rep
}

func TestConformanceJSON(t *testing.T) {
	needData(t)
	code, out, errs := attnx("conformance", "--backend", "ort", "-json", "-run", "test_(abs|relu|sequence_insert_at_back|loop13_seq)$",
		filepath.Join(conformance.DefaultRoot, "node"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	rep := decodeReport(t, out)
	if rep.Total != 4 || rep.Passed != 3 || rep.ExpectedFailures != 1 || rep.Failed != 0 || rep.UnexpectedlyPassing != 0 || len(rep.Cases) != 4 ||
		rep.ExpectedList.Source != "built-in "+conformance.BuiltinListPath || rep.ExpectedList.Entries < 50 {
		t.Errorf("report %+v", rep)
	}
	if c := rep.Cases[1]; c.Name != "node/test_loop13_seq" || c.Status != "expected-failure" || c.Stage != "feed" ||
		c.Expected == nil || c.Expected.Category != "binding-empty-sequence" || !strings.Contains(c.Reason, "empty sequence") {
		t.Errorf("case %+v", c)
	}
	if c := rep.Cases[3]; c.Name != "node/test_sequence_insert_at_back" || c.Status != "passed" || c.Stage != "" {
		t.Errorf("case %+v", c)
	}
	code, out, _ = attnx("conformance", "--backend", "ort", "-run", "test_abs$", filepath.Join(conformance.DefaultRoot, "node"))
	if code != 0 || !strings.Contains(out, "  node      1       1       0                  0                     0") {
		t.Errorf("table (exit %d):\n%s", code, out)
	}
}

// corruptedAbs copies node/test_abs with its first expected output value
// flipped to -7 (|x| never is) and returns the case directory.
func corruptedAbs(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "node", "test_abs")
	if err := os.MkdirAll(filepath.Join(dst, "test_data_set_0"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.onnx", "test_data_set_0/input_0.pb", "test_data_set_0/output_0.pb"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dst, "test_data_set_0", "output_0.pb")
	tn, err := onnxfile.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(tn.Raw, math.Float32bits(-7))
	b, err := onnxfile.MarshalTensor(tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestConformanceExits1: a flipped value in a copied case's expected output
// fails the run, naming the case; so does a case on the expected-failure
// list that passes, so that the list cannot rot.
func TestConformanceExits1(t *testing.T) {
	src := needData(t)
	list := filepath.Join(t.TempDir(), "failures.tsv")
	if err := os.WriteFile(list, []byte("# test list\nnode/test_abs\tload\tno-kernel\t-\tno Abs kernel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name          string
		args          []string
		status, stage string
		reason, table string
		failed, xpass int
		listSource    string
	}{
		{"corrupted output", []string{corruptedAbs(t, src)}, "failed", "compare",
			"worst at [0 0 0] (got 1.7640524, want -7)", `FAILED node/test_abs at compare: test_data_set_0: output 0 "y": `, 1, 0,
			"built-in " + conformance.BuiltinListPath},
		{"listed case passes", []string{"--expected", list, src}, "unexpectedly-passing", "",
			"expects it to fail at load (no-kernel: no Abs kernel)", "UNEXPECTEDLY PASSING node/test_abs: passes, but", 0, 1,
			list},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, errs := attnx(append([]string{"conformance", "--backend", "ort", "--json"}, tc.args...)...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, errs)
			}
			rep := decodeReport(t, stdout)
			if rep.Failed != tc.failed || rep.UnexpectedlyPassing != tc.xpass || rep.Passed != 0 || len(rep.Cases) != 1 || rep.ExpectedList.Source != tc.listSource {
				t.Fatalf("report %+v", rep)
			}
			if c := rep.Cases[0]; c.Name != "node/test_abs" || c.Status != tc.status || c.Stage != tc.stage || !strings.Contains(c.Reason, tc.reason) {
				t.Errorf("case %+v", c)
			}
			code, stdout, _ = attnx(append([]string{"conformance", "--backend", "ort"}, tc.args...)...)
			if code != 1 || !strings.Contains(stdout, tc.table) {
				t.Errorf("table (exit %d):\n%s", code, stdout)
			}
		})
	}
}

func TestConformanceBadExpectedList(t *testing.T) {
	src := needData(t)
	list := filepath.Join(t.TempDir(), "failures.tsv")
	if err := os.WriteFile(list, []byte("node/test_abs\tsometime\tno-kernel\t-\tno Abs kernel\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, errs := attnx("conformance", "--backend", "ort", "-expected", list, src)
	if code != 1 || stdout != "" || !strings.Contains(errs, list+`:1: node/test_abs: stage "sometime", want one of compare, data, feed, load, run`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, errs)
	}
}
