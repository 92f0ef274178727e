package conformance

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attnx/attnx/export"
	"github.com/attnx/attnx/internal/testenv"
	"github.com/attnx/attnx/runtime"
)

// needData ends the test when the backend test data or ONNX Runtime is
// missing (a skip, or a failure under CI: see package testenv).
func needData(t *testing.T) {
	t.Helper()
	testenv.Backend(t, "node")
	testenv.ORT(t, runtime.Init())
}

// copyCase copies a backend test case into a temporary folder "node".
func copyCase(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join(DefaultRoot, "node", name)
	dst := filepath.Join(t.TempDir(), "node", name)
	err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func TestSmallCases(t *testing.T) {
	needData(t)
	want := map[string]struct {
		status Status
		reason string
	}{
		"node/test_abs":                          {Passed, ""},
		"node/test_add_bcast":                    {Passed, ""},
		"node/test_argmax_default_axis_example":  {Passed, ""}, // int64 output, exact
		"node/test_equal":                        {Passed, ""}, // bool output
		"node/test_if":                           {Passed, ""}, // subgraphs
		"simple/test_single_relu_model":          {Passed, ""},
		"pytorch-operator/test_operator_exp":     {Passed, ""},
		"node/test_sequence_insert_at_back":      {Passed, ""}, // int64 sequence in and out
		"node/test_sequence_map_add_2_sequences": {Passed, ""}, // two float sequences in and out
		"node/test_loop13_seq":                   {Skipped, "empty sequence"},
		"node/test_cast_FLOAT16_to_FLOAT":        {Passed, ""}, // float16 input
		"node/test_cast_FLOAT_to_FLOAT16":        {Passed, ""}, // float16 output
		"node/test_cast_BFLOAT16_to_FLOAT":       {Passed, ""}, // bfloat16 input stored as uint16
		// The expected bfloat16s were truncated, ORT rounds to nearest.
		"node/test_cast_FLOAT_to_BFLOAT16":        {Skipped, "on the original file too"},
		"node/test_lstm_batchwise":                {Skipped, "layout == 1"},
		"node/test_bernoulli":                     {Skipped, "on the original file too"},
		"node/test_optional_get_element_sequence": {Skipped, "an optional"},
	}
	var cases []Case
	for name := range want {
		cs, err := Discover(filepath.Join(DefaultRoot, name))
		if err != nil {
			t.Fatal(err)
		}
		cases = append(cases, cs...)
	}
	rep, err := Run(cases, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total != len(want) || rep.Failed != 0 || rep.RoundTripEqual != len(want) {
		t.Errorf("report: total %d failed %d round trips %d", rep.Total, rep.Failed, rep.RoundTripEqual)
	}
	for _, r := range rep.Cases {
		w, ok := want[r.Name]
		if !ok {
			t.Errorf("unexpected case %s", r.Name)
			continue
		}
		if r.Status != w.status || !strings.Contains(r.Reason, w.reason) {
			t.Errorf("%s: %s (%s), want %s with %q", r.Name, r.Status, r.Reason, w.status, w.reason)
		}
		if r.Status == Passed && (r.DataSets < 1 || r.MaxAbsErr > 1e-3) {
			t.Errorf("%s: %d data sets, max abs err %g", r.Name, r.DataSets, r.MaxAbsErr)
		}
	}
	if rep.OriginalRuns != 3 { // lstm_batchwise, bernoulli, cast_FLOAT_to_BFLOAT16
		t.Errorf("%d original runs, want 3", rep.OriginalRuns)
	}
	var sb strings.Builder
	if err := rep.WriteTable(&sb, false); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"node", "total", "skipped by reason:", "runtime cannot feed an empty sequence"} {
		if !strings.Contains(sb.String(), s) {
			t.Errorf("table lacks %q:\n%s", s, sb.String())
		}
	}
}

func TestCorruptedExpectedOutputIsCaught(t *testing.T) {
	needData(t)
	dir := copyCase(t, "test_abs")
	out := filepath.Join(dir, "test_data_set_0", "output_0.pb")
	tn, err := export.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	// Element [1 2 3] += 0.5.
	i := 1*20 + 2*5 + 3
	v := math.Float32frombits(binary.LittleEndian.Uint32(tn.Raw[4*i:]))
	binary.LittleEndian.PutUint32(tn.Raw[4*i:], math.Float32bits(v+0.5))
	b, err := export.MarshalTensor(tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Discover(filepath.Dir(dir))
	if err != nil || len(cases) != 1 || cases[0].Name != "node/test_abs" {
		t.Fatalf("Discover: %v %v", cases, err)
	}
	rep, err := Run(cases, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != Failed || rep.Failed != 1 || !strings.Contains(r.Reason, "worst at [1 2 3]") || math.Abs(r.MaxAbsErr-0.5) > 1e-6 {
		t.Errorf("strict: %s %q max abs %g, want failed at [1 2 3] by 0.5", r.Status, r.Reason, r.MaxAbsErr)
	}
	// Without Strict the original file fails the same way, so the case
	// is excused as ORT's failure, but never passed.
	rep, err = Run(cases, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r = rep.Cases[0]
	if r.Status != Skipped || !r.RanOriginal || !strings.Contains(r.Reason, "original file too") || !strings.Contains(r.Reason, "worst at [1 2 3]") {
		t.Errorf("default: %s %q", r.Status, r.Reason)
	}
	// A tighter tolerance than the data's own error fails too.
	rep, _ = Run(cases, Options{Strict: true, ATol: 1e-9, RTol: 1e-9})
	if rep.Cases[0].Status != Failed {
		t.Errorf("tight tolerance: %s", rep.Cases[0].Status)
	}
}

// TestCorruptedFloat16OutputIsCaught: float16 outputs are compared by
// value, not passed unchecked.
func TestCorruptedFloat16OutputIsCaught(t *testing.T) {
	needData(t)
	dir := copyCase(t, "test_cast_FLOAT_to_FLOAT16")
	out := filepath.Join(dir, "test_data_set_0", "output_0.pb")
	tn, err := export.ReadTensorProto(out)
	if err != nil {
		t.Fatal(err)
	}
	// Element [1 2] of the [3,4] output becomes the half 1000.0 (0x63d0).
	binary.LittleEndian.PutUint16(tn.Raw[2*(1*4+2):], 0x63d0)
	b, err := export.MarshalTensor(tn)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := Discover(dir)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(cases, Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != Failed || !strings.Contains(r.Reason, "worst at [1 2]") || !strings.Contains(r.Reason, "want 1000") || r.MaxAbsErr < 990 {
		t.Errorf("strict: %s %q max abs %g, want failed at [1 2] against 1000", r.Status, r.Reason, r.MaxAbsErr)
	}
}

// A model that export cannot read is attnx's failure, never excused by
// ONNX Runtime.
func TestUnreadableModelFails(t *testing.T) {
	needData(t)
	dir := copyCase(t, "test_abs")
	if err := os.WriteFile(filepath.Join(dir, "model.onnx"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases, _ := Discover(dir)
	rep, err := Run(cases, Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := rep.Cases[0]
	if r.Status != Failed || !strings.Contains(r.Reason, "not an ONNX model") || r.RoundTripEqual {
		t.Errorf("unreadable model: %s %q", r.Status, r.Reason)
	}
}

func TestDiscover(t *testing.T) {
	needData(t)
	cs, err := Discover(filepath.Join(DefaultRoot, "simple"))
	if err != nil || len(cs) != 23 || cs[0].Folder != "simple" || !strings.HasPrefix(cs[0].Name, "simple/test_") {
		t.Errorf("simple: %d cases %v", len(cs), err)
	}
	all, err := DiscoverDefault()
	if err != nil || len(all) != 1072 {
		t.Errorf("default: %d cases, want 1072: %v", len(all), err)
	}
	if _, err := Discover(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no test cases") {
		t.Errorf("empty dir: %v", err)
	}
	if _, err := Discover("/no/such/dir"); err == nil {
		t.Error("missing dir accepted")
	}
}

// TestSequenceOutputsAreCompared: sequence outputs are compared element by
// element; a wrong length or a wrong element fails.
func TestSequenceOutputsAreCompared(t *testing.T) {
	needData(t)
	tests := []struct {
		name, from, to string
		want           string
	}{
		// input_0 is the sequence before the insertion: 3 tensors, not 4.
		{"test_sequence_insert_at_back", "input_0.pb", "output_0.pb", `output 0 "output_sequence": sequence of 4 tensors, want 3`},
		// y0 and y1 swapped: element 0 is [6], y1's is [2].
		{"test_sequence_map_identity_2_sequences", "output_1.pb", "output_0.pb", `output 0 "y0": sequence element 0: shape [6], want [2]`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyCase(t, tc.name)
			set := filepath.Join(dir, "test_data_set_0")
			b, err := os.ReadFile(filepath.Join(set, tc.from))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(set, tc.to), b, 0o644); err != nil {
				t.Fatal(err)
			}
			cases, err := Discover(dir)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := Run(cases, Options{Strict: true})
			if err != nil {
				t.Fatal(err)
			}
			if r := rep.Cases[0]; r.Status != Failed || !strings.Contains(r.Reason, tc.want) {
				t.Errorf("%s (%s), want failed with %q", r.Status, r.Reason, tc.want)
			}
		})
	}
}
